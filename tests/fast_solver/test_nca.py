"""NCA's objectives and gradients (eq. 3, 5, 6, 7) against a literal brute force, finite
differences and scikit-learn's ``_loss_grad_lbfgs``; blockwise results, memory, bad input."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.datasets import load_iris, load_wine
from sklearn.neighbors import NeighborhoodComponentsAnalysis

import fast_solver.nca.objective as nca_module
from fast_solver.nca.objective import minimize_nca, nca_objective


def brute_force(A, X, y, objective):
    """Eq. 1-7 literally: p_ij by loops, outer products x_ij x_ij^T as an n x n x d x d array."""
    n = len(X)
    diffs = X[:, None, :] - X[None, :, :]
    squared = np.einsum("ijr,ijr->ij", diffs @ A.T, diffs @ A.T)
    p = np.zeros((n, n))
    for i in range(n):
        denominator = sum(np.exp(-squared[i, k]) for k in range(n) if k != i)
        for j in range(n):
            if j != i:
                p[i, j] = np.exp(-squared[i, j]) / denominator
    same = y[:, None] == y[None, :]
    p_i = (p * same).sum(axis=1)  # eq. 2
    outer = diffs[:, :, :, None] * diffs[:, :, None, :]
    all_k = np.einsum("ik,ikab->iab", p, outer)  # sum_k p_ik x_ik x_ik^T
    in_class = np.einsum("ij,ijab->iab", p * same, outer)  # sum_{j in C_i} p_ij x_ij x_ij^T
    if objective == "f":
        value = p_i.sum()  # eq. 3
        inner = np.einsum("i,iab->ab", p_i, all_k) - in_class.sum(axis=0)  # eq. 5
    else:
        value = np.log(p_i).sum()  # eq. 6
        inner = all_k.sum(axis=0) - np.einsum("iab,i->ab", in_class, 1.0 / p_i)  # eq. 7
    return value, 2.0 * A @ inner


def tiny(seed=0, n=14, d=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.array([0, 1, 2] * n)[:n]
    return X, y, rng


@pytest.mark.parametrize("objective", ["f", "g"])
@pytest.mark.parametrize("rows", [4, 2, 1], ids=["full", "rank-2", "rank-1"])
def test_value_and_gradient_match_the_brute_force(objective, rows):
    X, y, rng = tiny()
    A = 0.7 * rng.standard_normal((rows, 4))
    value, gradient = nca_objective(A, X, y, objective)
    expected_value, expected_gradient = brute_force(A, X, y, objective)
    assert gradient.shape == A.shape
    assert value == pytest.approx(expected_value, rel=1e-12)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-10,
                               atol=1e-12 * np.abs(expected_gradient).max())


@pytest.mark.parametrize("objective", ["f", "g"])
@pytest.mark.parametrize("rows", [4, 2])
def test_gradient_matches_finite_differences(objective, rows):
    X, y, rng = tiny(seed=1)
    A = 0.5 * rng.standard_normal((rows, 4))
    _, gradient = nca_objective(A, X, y, objective)
    step = 1e-6
    numeric = np.zeros_like(A)
    for index in np.ndindex(A.shape):
        E = np.zeros_like(A)
        E[index] = step
        numeric[index] = (nca_objective(A + E, X, y, objective)[0]
                          - nca_objective(A - E, X, y, objective)[0]) / (2 * step)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-8 * np.abs(numeric).max())


def sklearn_f(A, X, y):
    """scikit-learn's f and gradient: ``_loss_grad_lbfgs`` returns ``(-f, -grad)`` with sign=-1,
    the quantity its L-BFGS-B minimises."""
    reference = NeighborhoodComponentsAnalysis()
    reference.n_iter_ = 1  # skips its verbose header
    loss, gradient = reference._loss_grad_lbfgs(A.ravel(), X, y[:, None] == y[None, :], -1.0)
    return -loss, -gradient.reshape(A.shape)


@pytest.mark.parametrize("load", [load_iris, load_wine])
def test_f_matches_scikit_learn_to_1e8(load):
    X, y = load(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    rng = np.random.default_rng(2)
    d = X.shape[1]
    for A in (np.eye(d), 0.3 * rng.standard_normal((d, d)), rng.standard_normal((2, d))):
        value, gradient = nca_objective(A, X, y, "f")
        expected_value, expected_gradient = sklearn_f(A, X, y)
        assert value == pytest.approx(expected_value, rel=1e-8)
        assert np.linalg.norm(gradient - expected_gradient) <= 1e-8 * np.linalg.norm(expected_gradient)


def budget_for(rows, n, threads):
    """working_memory (MiB) that gives blocks of ``rows`` rows with ``threads`` threads."""
    return rows * threads * nca_module.BLOCK_ARRAYS * 8 * n / 2**20


@pytest.mark.parametrize("objective", ["f", "g"])
def test_blockwise_result_is_independent_of_block_size_and_threads(objective, monkeypatch):
    X, y = load_iris(return_X_y=True)
    A = np.random.default_rng(3).standard_normal((3, 4))
    one_block = nca_objective(A, X, y, objective, working_memory=1e6)
    for threads in (1, 2, 3):
        monkeypatch.setattr(nca_module, "THREADS", threads)
        for rows in (1, 7, 49, 150):  # blocks cut classes (50 points each) anywhere
            value, gradient = nca_objective(A, X, y, objective, working_memory=budget_for(rows, 150, threads))
            assert value == pytest.approx(one_block[0], rel=1e-13)
            np.testing.assert_allclose(gradient, one_block[1], rtol=1e-11, atol=1e-12)


def test_memory_stays_within_the_budget_not_n_squared(monkeypatch):
    monkeypatch.setattr(nca_module, "THREADS", 2)
    rng = np.random.default_rng(4)
    n, d = 3000, 5
    X, y = rng.standard_normal((n, d)), rng.integers(0, 4, n)
    A = rng.standard_normal((d, d))
    for objective in ("f", "g"):
        tracemalloc.start()
        nca_objective(A, X, y, objective, working_memory=1.0)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        # the 1 MiB budget plus about 25 arrays of n x (d + 1) floats (inputs, Z, sums);
        # one n x n matrix would be 72 MB
        assert peak < 2.5 * 2**20


def test_g_stays_finite_when_p_i_underflows():
    # the last point lies among class 1, 40 units from its own class: p_i = exp(-1600)
    X = np.array([[0.0], [0.1], [40.0], [40.2], [40.1]])
    y = np.array([0, 0, 1, 1, 0])
    A = np.eye(1)
    value, gradient = nca_objective(A, X, y, "g")
    squared = (X - X.T) ** 2
    np.fill_diagonal(squared, np.inf)
    same = y[:, None] == y[None, :]
    expected = sum(logsumexp(-squared[i][same[i]]) - logsumexp(-squared[i]) for i in range(5))
    assert value == pytest.approx(expected, rel=1e-12) and value < -1000
    assert np.all(np.isfinite(gradient))
    # f: points 0 and 1 are sure; 2 and 3 pick each other (0.04 away) or point 4 (0.01 away)
    near = np.exp(-0.04) / (np.exp(-0.04) + np.exp(-0.01))
    assert nca_objective(A, X, y, "f")[0] == pytest.approx(2 + 2 * near, rel=1e-12)


def test_duplicate_points_match_the_brute_force():
    X, y, rng = tiny(seed=5, n=10)
    X[3] = X[0]  # same class (0)
    X[4] = X[0]  # another class (1)
    A = rng.standard_normal((2, 4))
    for objective in ("f", "g"):
        value, gradient = nca_objective(A, X, y, objective)
        expected_value, expected_gradient = brute_force(A, X, y, objective)
        assert value == pytest.approx(expected_value, rel=1e-12)
        np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-10, atol=1e-12)


def test_a_class_of_one_point_counts_zero_in_f_and_is_refused_by_g():
    X, y, rng = tiny(seed=6, n=10)
    y[7] = 9  # alone in its class
    A = rng.standard_normal((4, 4))
    value, gradient = nca_objective(A, X, y, "f")
    expected_value, expected_gradient = brute_force(A, X, y, "f")
    assert value == pytest.approx(expected_value, rel=1e-12)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"objective='g' needs two points in every class: classes \[9\]"):
        nca_objective(A, X, y, "g")


@pytest.mark.parametrize("change, error, match", [
    (lambda A, X, y: (A, X, np.zeros(len(y))), ValueError, "at least two classes, got 1"),
    (lambda A, X, y: (A, np.where(X > 1, np.nan, X), y), ValueError, "X contains NaN"),
    (lambda A, X, y: (A[:, :3], X, y), ValueError, r"A must have shape \(n_components, 4\)"),
    (lambda A, X, y: (A[0], X, y), ValueError, r"A must have shape \(n_components, 4\)"),
    (lambda A, X, y: (A * np.nan, X, y), ValueError, "A contains NaN"),
    (lambda A, X, y: (A + 1j, X, y), TypeError, r"A must be real numbers"),
    (lambda A, X, y: (A, X, y[:-1]), ValueError, "rows but y has"),
], ids=["one-class", "nan-X", "A-columns", "A-1d", "nan-A", "complex-A", "y-length"])
def test_bad_input_is_named(change, error, match):
    X, y, rng = tiny()
    A, X, y = change(rng.standard_normal((2, 4)), X, y)
    with pytest.raises(error, match=match):
        nca_objective(A, X, y)


def test_unknown_objective_is_named():
    X, y, _ = tiny()
    with pytest.raises(ValueError, match="objective must be 'f'"):
        nca_objective(np.eye(4), X, y, "h")


@pytest.mark.parametrize("objective", ["f", "g"])
def test_minimize_nca_climbs_and_reports_its_point(objective):
    X, y = load_iris(return_X_y=True)
    A0 = np.eye(2, 4)
    seen = []
    result = minimize_nca(X, y, A0, objective, max_iter=30, callback=lambda A, v, n_iter: seen.append((v, n_iter)))
    assert result.components.shape == (2, 4) and [n for _, n in seen] == list(range(1, result.nit + 1))
    assert result.objective == pytest.approx(nca_objective(result.components, X, y, objective)[0], rel=1e-12)
    assert result.objective > nca_objective(A0, X, y, objective)[0]
    assert seen[-1][0] == pytest.approx(result.objective, rel=1e-12)
