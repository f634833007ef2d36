"""Exact searches with skipping: the working set always holds every active triplet."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris

from fast_solver.lmnn.working_set import ExactSearch, contraction_factor
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.whitening import whiten, whiten_clusters


def _active_in_set(problem, whitening, ws, L):
    """The active triplets of eq. 14 at L (brute force) and whether each is in the set."""
    active = problem.active_triplets(whitening.lift(L.T @ L))
    keys = set(zip(ws.owner.tolist(), ws.impostors.tolist()))
    return active, [(i, l) in keys for i, _, l in active.tolist()]


def test_searches_keep_every_active_triplet_and_skip_points_proved_clean():
    X, y = load_iris(return_X_y=True)
    problem = LMNNProblem(X, y, k=3, mu=0.5)
    whitening = whiten(problem)
    search = ExactSearch(whiten_clusters(problem), problem.targets,
                         problem.label_codes, band=0.5)
    L = 3.0 * np.eye(whitening.rank)
    ws = search.search(L[None])
    assert search.points_searched == problem.n_samples
    active, inside = _active_in_set(problem, whitening, ws, L)
    assert len(active) and all(inside)
    L2 = L * 1.01  # distances grow: the floors still cover every point
    ws = search.search(L2[None])
    assert search.points_searched == problem.n_samples
    assert all(_active_in_set(problem, whitening, ws, L2)[1])
    rng = np.random.default_rng(0)
    L3 = L2 + 0.3 * rng.normal(size=L2.shape)  # a real move: some points searched again
    ws = search.search(L3[None])
    assert problem.n_samples < search.points_searched < 2 * problem.n_samples + 1
    assert all(_active_in_set(problem, whitening, ws, L3)[1])
    assert search.drift((L3.T @ L3)[None]) == 0.0 and search.drift((2 * L3.T @ L3)[None]) > 0.9


def test_drift_is_the_largest_change_over_the_largest_norm_of_the_searched_metrics():
    """With several clusters, ``drift`` is ``max_c |M_c - S_c|_2 / max_c |S_c|_2`` at the metrics
    ``S`` of the last search, also after a restore."""
    X, y = load_iris(return_X_y=True)
    problem = LMNNProblem(X, y, k=3, mu=0.5).with_clusters(np.arange(150) % 3)
    search = ExactSearch(whiten_clusters(problem), problem.targets, problem.label_codes, band=0.0)
    assert search.drift(np.zeros((3, 4, 4))) == np.inf
    rng = np.random.default_rng(2)
    L = rng.normal(size=(3, 4, 4)) * np.array([1.0, 0.2, 3.0])[:, None, None]
    search.search(L)
    S = np.matmul(L.transpose(0, 2, 1), L)
    V = rng.normal(size=(3, 4, 4))
    M = S + np.matmul(V.transpose(0, 2, 1), V) - 0.5 * np.eye(4)
    expected = max(np.linalg.norm(m - s, 2) for m, s in zip(M, S)) / max(np.linalg.norm(s, 2) for s in S)
    assert search.drift(M) == pytest.approx(expected, rel=1e-12)
    search.restore({**search.state(), "metric": 2.0 * S})
    assert search.drift(M) == pytest.approx(max(np.linalg.norm(m - 2 * s, 2) for m, s in zip(M, S))
                                            / max(np.linalg.norm(2 * s, 2) for s in S), rel=1e-12)


def test_contraction_factor_is_the_largest_feasible_scale():
    rng = np.random.default_rng(4)
    for rank in (6, 3):
        A = rng.standard_normal((6, rank))
        M_old = A @ A.T
        B = rng.standard_normal((6, 6))
        M_new = 0.8 * M_old + 0.1 * B @ B.T
        c = contraction_factor(M_old, M_new)
        assert c > 0.5
        assert np.linalg.eigvalsh(M_new - c * M_old)[0] >= -1e-9
        assert np.linalg.eigvalsh(M_new - 1.001 * c * M_old)[0] < 0


def test_contraction_factor_is_zero_when_new_metric_loses_a_direction():
    M_old = np.eye(3)
    M_new = np.diag([1.0, 1.0, 0.0])
    assert contraction_factor(M_old, M_new) == 0.0
