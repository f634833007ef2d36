"""Cross-check: the fast solver against lmnn_sdp's exact optimum on small instances of every kind.

Beyond the built-in suite (``tests/validation``), these instances are drawn at
random from the bundled data sets and blobs over a grid of k and mu; on each the
fast solver must say converged, prove a gap of at most 1e-6 itself, and agree
with the optimum certified by the exact SDP (cutting plane, warm-started from
the fast solver's active triplets) to 1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine, make_blobs
from sklearn.decomposition import PCA

import fast_solver
from lmnn_sdp import LMNNProblem, solve_lmnn

RTOL = 1e-6


def _subset(X, y, n, seed):
    """A stratified random subset of n points of (X, y)."""
    rng = np.random.default_rng(seed)
    picks = [rng.permutation(np.flatnonzero(y == c)) for c in np.unique(y)]
    idx = np.sort(np.concatenate([p[:n // len(picks)] for p in picks]))
    return X[idx], y[idx]


def _real(name, n, d, seed):
    loader = {"iris": load_iris, "wine": load_wine, "cancer": load_breast_cancer, "digits": load_digits}[name]
    X, y = loader(return_X_y=True)
    X = X[:, np.std(X, axis=0) > 0]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    if d < X.shape[1]:
        X = PCA(d, random_state=seed).fit_transform(X)
    return _subset(X, y, n, seed)


INSTANCES = [  # (id, data, k, mu)
    ("iris-sub-k1-mu0.2", lambda: _real("iris", 45, 4, 0), 1, 0.2),
    ("iris-sub-k5-mu0.5", lambda: _real("iris", 60, 4, 2), 5, 0.5),
    ("wine-pca4-k3-mu0.2", lambda: _real("wine", 45, 4, 4), 3, 0.2),
    ("wine-pca5-k4-mu0.8", lambda: _real("wine", 48, 5, 5), 4, 0.8),
    ("cancer-pca3-k2-mu0.5", lambda: _real("cancer", 40, 3, 6), 2, 0.5),
    ("digits-pca6-k3-mu0.5", lambda: _real("digits", 50, 6, 11), 3, 0.5),
    ("blobs2d-k1-mu0.5", lambda: make_blobs(40, 2, centers=3, cluster_std=2.0, random_state=12), 1, 0.5),
    ("blobs4d-k5-mu0.8", lambda: make_blobs(48, 4, centers=4, cluster_std=2.0, random_state=16), 5, 0.8),
    ("blobs6d-k4-mu0.8", lambda: make_blobs(50, 6, centers=5, cluster_std=2.5, random_state=20), 4, 0.8),
]


@pytest.mark.parametrize("make, k, mu", [case[1:] for case in INSTANCES], ids=[case[0] for case in INSTANCES])
def test_fast_solver_proves_the_exact_optimum(make, k, mu):
    X, y = make()
    problem = LMNNProblem(X, y, k=k, mu=mu)
    fast = fast_solver.solve(problem)
    assert fast.converged and fast.relative_gap <= RTOL, fast
    exact = solve_lmnn(problem, method="cutting-plane", working_set=fast.active_triplets, tol=1e-8)
    assert exact.certificate.certified, exact.certificate
    assert fast.lower <= exact.upper * (1 + 1e-9) and exact.lower <= fast.upper * (1 + 1e-9)
    assert fast.upper == pytest.approx(exact.upper, rel=RTOL)
