"""RCA (Bar-Hillel et al. 2003): the within-chunklet covariance and its whitening, by brute force."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.utils.estimator_checks import check_estimator

from fast_solver import RCA, rca_components
from fast_solver.rca import within_chunklet_covariance


def covariance_by_loops(X, chunklets):
    """C = (1/p) sum_j sum_{i in j} (x_i - m_j)(x_i - m_j)^T, one point at a time."""
    C, p = np.zeros((X.shape[1], X.shape[1])), 0
    for j in set(chunklets.tolist()) - {-1}:
        rows = [i for i in range(len(X)) if chunklets[i] == j]
        mean = sum(X[i] for i in rows) / len(rows)
        for i in rows:
            C += np.outer(X[i] - mean, X[i] - mean)
            p += 1
    return C / p


def test_covariance_and_whitening_match_the_brute_force_formula():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4)) @ rng.normal(size=(4, 4))
    chunklets = rng.integers(-1, 6, size=40)  # some points in no chunklet
    C = covariance_by_loops(X, chunklets)
    np.testing.assert_allclose(within_chunklet_covariance(X, chunklets), C, rtol=1e-12, atol=1e-14)
    L = rca_components(X, chunklets)
    assert L.shape == (4, 4)
    np.testing.assert_allclose(L.T @ L, np.linalg.inv(C), rtol=1e-9)
    np.testing.assert_allclose(L @ C @ L.T, np.eye(4), atol=1e-10)  # whitened chunklets
    eigenvalues_of_M = np.linalg.norm(L, axis=1) ** 2
    assert np.all(np.diff(eigenvalues_of_M) <= 1e-12)  # rows by decreasing eigenvalue of M


def test_estimator_whitens_each_class_and_its_distances_are_mahalanobis_with_inverse_C():
    X, y = load_iris(return_X_y=True)
    rca = RCA().fit(X, y)
    Z = rca.transform(X)
    within = covariance_by_loops(Z, y)
    np.testing.assert_allclose(within, np.eye(4), atol=1e-10)
    C = covariance_by_loops(X, y)
    v = X[3] - X[77]
    assert np.sum((Z[3] - Z[77]) ** 2) == pytest.approx(v @ np.linalg.solve(C, v), rel=1e-10)
    np.testing.assert_allclose(rca.metric_, np.linalg.inv(C), rtol=1e-9)


def test_distances_do_not_depend_on_an_invertible_map_of_the_inputs():
    X, y = load_iris(return_X_y=True)
    A = np.random.default_rng(1).normal(size=(4, 4))
    Z, ZA = RCA().fit_transform(X, y), RCA().fit_transform(X @ A.T, y)
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    DA = ((ZA[:, None] - ZA[None]) ** 2).sum(-1)
    np.testing.assert_allclose(DA, D, rtol=1e-8, atol=1e-9)


def test_one_class_whitens_by_the_total_covariance():
    X = np.random.default_rng(2).normal(size=(30, 3)) * [1.0, 5.0, 0.2]
    Z = RCA().fit_transform(X, np.zeros(30, dtype=int))
    np.testing.assert_allclose(np.cov(Z.T, bias=True), np.eye(3), atol=1e-10)


def test_rank_deficient_covariance_drops_the_flat_direction_with_a_warning():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 3))
    X[:, 2] = 7.0  # constant: no within-chunklet variance
    y = np.repeat([0, 1], 10)
    with pytest.warns(UserWarning, match="rank 2 of 3"):
        rca = RCA().fit(X, y)
    assert rca.components_.shape == (2, 3)
    C = covariance_by_loops(X, y)
    np.testing.assert_allclose(rca.metric_, np.linalg.pinv(C, rcond=1e-10, hermitian=True), atol=1e-10)


def test_duplicate_points_are_counted_as_points():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [2.0, 1.0], [1.0, 3.0], [1.0, 3.0], [4.0, 0.0]])
    chunklets = np.array([0, 0, 0, 1, 1, 1])
    np.testing.assert_allclose(within_chunklet_covariance(X, chunklets), covariance_by_loops(X, chunklets))


@pytest.mark.parametrize("chunklets, message", [
    (np.array([0, 1, 2, 3]), "no chunklet holds two points"),
    (np.array([0, 0, 1]), "shape"),
    (np.array([0.0, 0.0, 1.0, 1.0]), "integers"),
])
def test_bad_chunklets_raise_naming_the_fix(chunklets, message):
    with pytest.raises(ValueError, match=message):
        rca_components(np.arange(8.0).reshape(4, 2), chunklets)


def test_chunklets_of_identical_points_raise():
    X = np.array([[1.0, 2.0], [1.0, 2.0], [3.0, 0.0], [3.0, 0.0]])
    with pytest.raises(ValueError, match="identical points"):
        rca_components(X, np.array([0, 0, 1, 1]))


def test_check_estimator_passes():
    results = check_estimator(RCA(), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert failed == []
    assert sum(r["status"] == "passed" for r in results) >= 40
