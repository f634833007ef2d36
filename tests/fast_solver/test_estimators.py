"""The scikit-learn estimator: check_estimator, warnings, progress table, validation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import check_estimator

from fast_solver import LMNN

# check_fit2d_1feature fits 10 points whose labels include a class of 3 members
# with k=3: LMNN cannot give those points 3 target neighbours of their class, and
# DESIGN.md asks for a clear ValueError naming k instead of silently lowering k;
# the check accepts only messages about "1 feature".
EXPECTED_FAILURES = {
    "check_fit2d_1feature": "a class of 3 points cannot supply k=3 target neighbours; "
                            "LMNN raises a ValueError naming k (DESIGN.md)",
}


def test_passes_sklearn_estimator_checks():
    # API conformance on scikit-learn's small random data: a short budget keeps
    # this fast (accuracy is pinned elsewhere).
    estimator = LMNN(max_iter=50)
    results = check_estimator(estimator, expected_failed_checks=EXPECTED_FAILURES, on_fail=None)
    failed = [r["check_name"] for r in results if r["status"] == "failed"]
    assert failed == []
    assert sum(r["status"] == "passed" for r in results) >= 45


def test_fit_learns_a_metric_that_helps_knn():
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    model = LMNN(k=3, mu=0.5).fit(X, y)
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_, atol=1e-10)
    assert model.converged_ and model.n_iter_ > 0
    assert model.lower_bound_ <= model.objective_ <= model.lower_bound_ * (1 + 1e-6)
    assert model.transform(X).shape == (150, 4)
    knn = lambda Z: KNeighborsClassifier(3).fit(Z[::2], y[::2]).score(Z[1::2], y[1::2])
    assert knn(model.transform(X)) >= knn(X)


def test_budget_exhausted_warns():
    X, y = load_iris(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model = LMNN(max_iter=2).fit(X, y)
    assert not model.converged_ and model.n_iter_ <= 2


def test_verbose_prints_one_row_per_stage(capsys):
    X, y = load_iris(return_X_y=True)
    model = LMNN(verbose=1).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert "Upper" in out[1] and "Lower" in out[1] and "Gap" in out[1]
    rows = [line.split() for line in out[3:]]
    assert [int(r[1]) for r in rows] == list(range(model.result_.n_stages))
    assert float(rows[-1][6]) <= 1e-6 and all(float(r[2]) > 0 for r in rows)


def test_random_init_is_seeded():
    X, y = load_iris(return_X_y=True)
    a = LMNN(init="random", random_state=0, max_iter=5)
    b = LMNN(init="random", random_state=0, max_iter=5)
    with pytest.warns(ConvergenceWarning):
        np.testing.assert_array_equal(a.fit(X, y).metric_, b.fit(X, y).metric_)


@pytest.mark.parametrize("params, match", [
    ({"mu": 1.5}, "mu"), ({"k": 0}, "k"), ({"init": "pca"}, "init"), ({"search": "kd"}, "search"),
])
def test_bad_parameters_raise(params, match):
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match=match):
        LMNN(**params).fit(X, y)


def test_bad_data_raises_clear_errors():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="two classes"):
        LMNN().fit(X, np.zeros(150))
    with pytest.raises(ValueError, match="k="):
        LMNN(k=3).fit(X[:53], y[:53])  # class 1 has 3 members
    with pytest.raises(ValueError, match="shape"):
        LMNN(init=np.eye(3)).fit(X, y)


@pytest.fixture(scope="module")
def iris_model():
    """Iris and an LMNN fitted on it."""
    X, y = load_iris(return_X_y=True)
    return X, y, LMNN().fit(X, y)


@pytest.mark.parametrize("make", [lambda X: X + 1j, lambda X: X + 0j, lambda X: (X + 1j).tolist()],
                         ids=["complex", "complex-zero-imaginary", "complex-list"])
def test_complex_inputs_name_x_and_the_fix(make, iris_model):
    X, y, model = iris_model
    match = r"X must be real numbers, got complex128; pass X\.real if the imaginary part is zero"
    for call in (lambda: LMNN().fit(make(X), y), lambda: model.transform(make(X))):
        with pytest.raises(TypeError, match=match) as raised:
            call()
        # scikit-learn's check_complex_data expects this ValueError and phrase
        assert isinstance(raised.value, ValueError)
        assert "Complex data not supported" in str(raised.value)


@pytest.mark.parametrize("dtype, match", [
    ("datetime64[s]", r"X must be real numbers, got datetime64\[s\]; convert dates"),
    ("timedelta64[s]", r"X must be real numbers, got timedelta64\[s\]; convert durations"),
])
def test_dates_are_not_numbers(dtype, match, iris_model):
    # scikit-learn's numeric validation lets dates through; LMNN must not
    X, y, model = iris_model
    dates = (X * 1000).astype(dtype)
    with pytest.raises(TypeError, match=match):
        LMNN().fit(dates, y)
    with pytest.raises(TypeError, match=match):
        model.transform(dates)


@pytest.mark.parametrize("make, match", [
    (lambda X: X.astype(str), "not compatible with arrays of bytes/strings"),
    (lambda X: np.where(X > 5, "a", X).astype(object), "could not convert string to float"),
], ids=["str", "object-with-text"])
def test_text_inputs_are_rejected_by_sklearn_validation(make, match, iris_model):
    X, y, model = iris_model
    with pytest.raises(ValueError, match=match):
        LMNN().fit(make(X), y)
    with pytest.raises(ValueError, match=match):
        model.transform(make(X))


def test_boolean_features_are_zero_one_numbers(iris_model):
    X, y, model = iris_model
    flags = X > np.median(X, axis=0)
    np.testing.assert_array_equal(model.transform(flags), flags.astype(float) @ model.components_.T)
    with pytest.warns(ConvergenceWarning):  # a short budget: only the inputs matter here
        on_flags = LMNN(max_iter=3).fit(flags, y).metric_
        on_numbers = LMNN(max_iter=3).fit(flags.astype(float), y).metric_
    np.testing.assert_array_equal(on_flags, on_numbers)


def test_complex_init_is_rejected():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(TypeError, match=r"init must be real numbers, got complex128; pass init\.real"):
        LMNN(init=np.eye(4) + 0j).fit(X, y)


def test_mahalanobis_matrix_and_pair_distances(iris_model):
    # metric-learn's API: M = L^T L and sqrt((x - x')^T M (x - x')) for pairs (n_pairs, 2, d)
    X, _, model = iris_model
    np.testing.assert_allclose(model.get_mahalanobis_matrix(), model.metric_, rtol=1e-10,
                               atol=1e-12 * np.abs(model.metric_).max())
    pairs = np.stack([X[:20], X[20:40]], axis=1)
    expected = [np.sqrt((a - b) @ model.metric_ @ (a - b)) for a, b in zip(X[:20], X[20:40])]
    np.testing.assert_allclose(model.pair_distance(pairs), expected, rtol=1e-10)
    np.testing.assert_array_equal(model.pair_distance(pairs[:, ::-1]), model.pair_distance(pairs))


@pytest.mark.parametrize("pairs, error, match", [
    (np.zeros((5, 3, 4)), ValueError, r"pairs must have shape \(n_pairs, 2, 4\)"),
    (np.zeros((5, 2, 3)), ValueError, r"pairs must have shape \(n_pairs, 2, 4\)"),
    (np.zeros((5, 4)), ValueError, r"pairs must have shape \(n_pairs, 2, 4\)"),
    (np.full((5, 2, 4), np.nan), ValueError, "NaN"),
    (np.zeros((5, 2, 4)) + 1j, TypeError, r"pairs must be real numbers, got complex128; pass pairs\.real"),
], ids=["three-points", "three-features", "2d", "nan", "complex"])
def test_bad_pairs_are_named(pairs, error, match, iris_model):
    with pytest.raises(error, match=match):
        iris_model[2].pair_distance(pairs)


def test_mahalanobis_methods_need_a_fitted_model():
    with pytest.raises(NotFittedError):
        LMNN().get_mahalanobis_matrix()
    with pytest.raises(NotFittedError):
        LMNN().pair_distance(np.zeros((1, 2, 4)))
