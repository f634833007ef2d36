"""Exact searches with skipping: the working set always holds every active triplet."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_iris

from fast_solver.working_set import ExactSearch
from fast_solver.whitening import whiten
from lmnn_sdp.problem import LMNNProblem


def _active_in_set(problem, whitening, ws, L):
    """The active triplets of eq. 14 at L (brute force) and whether each is in the set."""
    active = problem.active_triplets(whitening.metric(L.T @ L))
    keys = set(zip(ws.owner.tolist(), ws.impostors.tolist()))
    return active, [(i, l) in keys for i, _, l in active.tolist()]


def test_searches_keep_every_active_triplet_and_skip_points_proved_clean():
    X, y = load_iris(return_X_y=True)
    problem = LMNNProblem(X, y, k=3, mu=0.5)
    whitening = whiten(problem)
    search = ExactSearch(whitening.inputs, problem.targets, problem.label_codes, band=0.5)
    L = 3.0 * np.eye(whitening.rank)
    ws = search.search(L)
    assert search.points_searched == problem.n_samples
    active, inside = _active_in_set(problem, whitening, ws, L)
    assert len(active) and all(inside)
    L2 = L * 1.01  # distances grow: the floors still cover every point
    ws = search.search(L2)
    assert search.points_searched == problem.n_samples
    assert all(_active_in_set(problem, whitening, ws, L2)[1])
    rng = np.random.default_rng(0)
    L3 = L2 + 0.3 * rng.normal(size=L2.shape)  # a real move: some points searched again
    ws = search.search(L3)
    assert problem.n_samples < search.points_searched < 2 * problem.n_samples + 1
    assert all(_active_in_set(problem, whitening, ws, L3)[1])
    assert search.drift(L3.T @ L3) == 0.0 and search.drift(2 * L3.T @ L3) > 0.9
