"""Gradient of eq. 18 against finite differences, and the incremental update of eq. 19."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_wine

from fast_solver.gradient import incremental_gradient, lmnn_gradient, pair_scatter, pull_gradient
from lmnn_sdp import LMNNProblem


@pytest.fixture(scope="module", params=[0.2, 0.8])
def problem(request):
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return LMNNProblem(X[:, :5], y, k=3, mu=request.param)


def _metric(seed, d=5):
    A = np.random.default_rng(seed).standard_normal((d, d))
    return A @ A.T / d + 0.1 * np.eye(d)


def test_gradient_matches_finite_differences(problem):
    M = _metric(0)
    G = lmnn_gradient(problem, problem.active_triplets(M))
    rng = np.random.default_rng(1)
    for _ in range(3):
        E = rng.standard_normal((5, 5))
        E = (E + E.T) / 2
        h = 1e-7  # small enough that no hinge changes sign along the segment
        numeric = (problem.objective(M + h * E) - problem.objective(M - h * E)) / (2 * h)
        assert np.sum(G * E) == pytest.approx(numeric, rel=1e-6)


def test_gradient_equals_dual_formula(problem):
    M = _metric(2)
    N = problem.active_triplets(M)
    expected = (1 - problem.mu) * problem.pull_matrix() - problem.mu * problem.triplet_scatter(N)
    np.testing.assert_allclose(lmnn_gradient(problem, N), expected, rtol=1e-12, atol=1e-9)


def test_incremental_gradient_equals_full_gradient(problem):
    M_old, M_new = _metric(3), _metric(3) * 0.9 + 0.05 * _metric(4)
    old, new = problem.active_triplets(M_old), problem.active_triplets(M_new)
    assert len(old) != len(new)
    G = incremental_gradient(problem, lmnn_gradient(problem, old), old, new)
    np.testing.assert_allclose(G, lmnn_gradient(problem, new), rtol=1e-10, atol=1e-8)


def test_pull_gradient_weights_pull_matrix(problem):
    np.testing.assert_allclose(pull_gradient(problem), (1 - problem.mu) * problem.pull_matrix())


def test_pair_scatter_equals_loop_over_outer_products():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 4))
    a, b = rng.integers(0, 30, 50), rng.integers(0, 30, 50)
    w = rng.normal(size=50)
    expected = sum(wp * np.outer(X[p] - X[q], X[p] - X[q]) for p, q, wp in zip(a, b, w))
    np.testing.assert_allclose(pair_scatter(X, a, b, w), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(pair_scatter(X, a[:0], b[:0], w[:0]), np.zeros((4, 4)))
