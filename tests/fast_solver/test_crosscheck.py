"""Cross-check: the fast solver against the certified optimum of lmnn_sdp (issue 4 acceptance).

On every instance the fast solver's eq. 14 value must lie within 1e-4 relative
of the optimum certified by the exact SDP (cutting plane, warm-started from the
fast solver's working set), and never below its rigorous lower bound.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine, make_blobs
from sklearn.decomposition import PCA

import fast_solver
from lmnn_sdp import LMNNProblem, solve_lmnn

RTOL = 1e-4


def _standardised(X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


def _subset(X, y, n, seed):
    """A stratified random subset of n points of (X, y)."""
    rng = np.random.default_rng(seed)
    picks = [rng.permutation(np.flatnonzero(y == c)) for c in np.unique(y)]
    per_class = n // len(picks)
    idx = np.sort(np.concatenate([p[:per_class] for p in picks]))
    return X[idx], y[idx]


def _real(name, n, d, seed):
    loader = {"iris": load_iris, "wine": load_wine, "cancer": load_breast_cancer, "digits": load_digits}[name]
    X, y = loader(return_X_y=True)
    X = _standardised(X[:, np.std(X, axis=0) > 0])
    if d < X.shape[1]:
        X = PCA(d, random_state=seed).fit_transform(X)
    return _subset(X, y, n, seed)


def _blobs(n, d, centers, seed, spread):
    X, y = make_blobs(n, d, centers=centers, cluster_std=spread, random_state=seed)
    return X, y


SMALL_INSTANCES = [
    # (id, data factory, k, mu)
    ("iris-sub-k1-mu0.2", lambda: _real("iris", 45, 4, 0), 1, 0.2),
    ("iris-sub-k2-mu0.8", lambda: _real("iris", 45, 4, 1), 2, 0.8),
    ("iris-sub-k5-mu0.5", lambda: _real("iris", 60, 4, 2), 5, 0.5),
    ("wine-pca3-k1-mu0.5", lambda: _real("wine", 45, 3, 3), 1, 0.5),
    ("wine-pca4-k3-mu0.2", lambda: _real("wine", 45, 4, 4), 3, 0.2),
    ("wine-pca5-k4-mu0.8", lambda: _real("wine", 48, 5, 5), 4, 0.8),
    ("cancer-pca3-k2-mu0.5", lambda: _real("cancer", 40, 3, 6), 2, 0.5),
    ("cancer-pca4-k3-mu0.8", lambda: _real("cancer", 40, 4, 7), 3, 0.8),
    ("cancer-pca5-k5-mu0.2", lambda: _real("cancer", 40, 5, 8), 5, 0.2),
    ("digits-pca4-k1-mu0.8", lambda: _real("digits", 50, 4, 9), 1, 0.8),
    ("digits-pca5-k2-mu0.2", lambda: _real("digits", 50, 5, 10), 2, 0.2),
    ("digits-pca6-k3-mu0.5", lambda: _real("digits", 50, 6, 11), 3, 0.5),
    ("blobs2d-k1-mu0.5", lambda: _blobs(40, 2, 3, 12, 2.0), 1, 0.5),
    ("blobs2d-k3-mu0.2", lambda: _blobs(40, 2, 2, 13, 3.0), 3, 0.2),
    ("blobs3d-k2-mu0.8", lambda: _blobs(45, 3, 3, 14, 2.5), 2, 0.8),
    ("blobs3d-k4-mu0.5", lambda: _blobs(45, 3, 3, 15, 1.5), 4, 0.5),
    ("blobs4d-k5-mu0.8", lambda: _blobs(48, 4, 4, 16, 2.0), 5, 0.8),
    ("blobs4d-k1-mu0.2", lambda: _blobs(40, 4, 2, 17, 4.0), 1, 0.2),
    ("blobs5d-k3-mu0.5", lambda: _blobs(45, 5, 3, 18, 3.0), 3, 0.5),
    ("blobs5d-k2-mu0.2", lambda: _blobs(40, 5, 4, 19, 2.0), 2, 0.2),
    ("blobs6d-k4-mu0.8", lambda: _blobs(50, 6, 5, 20, 2.5), 4, 0.8),
    ("blobs6d-k5-mu0.5", lambda: _blobs(60, 6, 3, 21, 3.5), 5, 0.5),
]


def _certified_optimum(problem, fast):
    exact = solve_lmnn(problem, method="cutting-plane", working_set=fast.working_set)
    assert exact.certificate.certified, exact.certificate
    return exact


def _assert_matches_optimum(problem, fast, exact):
    optimum_upper, optimum_lower = exact.objective, exact.lower_bound
    assert fast.converged, fast.message
    assert fast.objective == pytest.approx(problem.objective(fast.M), rel=1e-12)
    assert fast.objective >= optimum_lower * (1 - 1e-9)
    assert (fast.objective - optimum_lower) / optimum_lower <= RTOL, (fast.objective, optimum_upper, optimum_lower)


@pytest.mark.parametrize("loader", [load_iris, load_wine], ids=["iris", "wine"])
def test_full_bundled_sets_match_certified_optimum(loader):
    X, y = loader(return_X_y=True)
    problem = LMNNProblem(_standardised(X), y, k=3, mu=0.5)
    fast = fast_solver.solve(problem)
    _assert_matches_optimum(problem, fast, _certified_optimum(problem, fast))


@pytest.mark.parametrize("make, k, mu", [case[1:] for case in SMALL_INSTANCES],
                         ids=[case[0] for case in SMALL_INSTANCES])
def test_small_instances_match_certified_optimum(make, k, mu):
    X, y = make()
    problem = LMNNProblem(X, y, k=k, mu=mu)
    fast = fast_solver.solve(problem)
    _assert_matches_optimum(problem, fast, _certified_optimum(problem, fast))


def test_instances_cover_k_and_mu_grid():
    assert len(SMALL_INSTANCES) >= 20
    assert {case[2] for case in SMALL_INSTANCES} == {1, 2, 3, 4, 5}
    assert {case[3] for case in SMALL_INSTANCES} == {0.2, 0.5, 0.8}
