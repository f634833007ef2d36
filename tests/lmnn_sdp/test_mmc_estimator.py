"""The scikit-learn MMC transformer: API conformance and agreement with solve_mmc."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.utils.estimator_checks import check_estimator

from lmnn_sdp import MMC, MMCCertificate, MMCResult


def test_passes_check_estimator():
    results = check_estimator(MMC(), on_fail=None)
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []
    assert sum(r["status"] == "passed" for r in results) >= 40


@pytest.fixture(scope="module")
def fitted():
    """``fit(diagonal)``: MMC fitted on raw iris, once a module."""
    X, y = load_iris(return_X_y=True)
    models = {}

    def fit(diagonal: bool) -> MMC:
        if diagonal not in models:
            models[diagonal] = MMC(diagonal=diagonal).fit(X, y)
        return models[diagonal]

    return fit


@pytest.mark.parametrize("diagonal", [False, True])
def test_fit_is_the_certified_solve_and_transform_is_l(diagonal, fitted, iris_mmc):
    X, y = load_iris(return_X_y=True)
    model = fitted(diagonal)
    reference = iris_mmc(diagonal)  # solve_mmc(X, y, diagonal=diagonal)
    assert isinstance(model.certificate_, MMCCertificate) and isinstance(model.result_, MMCResult)
    assert model.certificate_ is model.result_.certificate and model.certificate_.certified
    assert model.certificate_.objective == pytest.approx(reference.objective, rel=1e-8)
    assert model.objective_ == model.certificate_.objective
    np.testing.assert_array_equal(model.metric_, model.certificate_.metric)
    assert model.certificate_.verify().certified
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_,
                               atol=1e-9 * np.abs(model.metric_).max())
    eigenvalues = np.linalg.norm(model.components_, axis=1) ** 2
    assert np.all(np.diff(eigenvalues) <= 1e-12 * eigenvalues[0])  # decreasing order
    Z = model.transform(X[:5])
    D = np.sum((Z[0] - Z[1]) ** 2)
    assert D == pytest.approx((X[0] - X[1]) @ model.metric_ @ (X[0] - X[1]), rel=1e-9)


def test_one_class_has_no_dissimilar_pairs():
    X = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match="dissimilar"):
        MMC().fit(X, np.zeros(10, dtype=int))


def test_transform_checks_the_number_of_features(fitted):
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="features"):
        fitted(diagonal=True).transform(X[:, :3])
