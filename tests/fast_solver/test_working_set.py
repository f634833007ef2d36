"""The working set: restricted eq. 14 and the solver's own eq. 18 / eq. 19 path."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_wine

from fast_solver.gradient import lmnn_gradient, pull_gradient
from fast_solver.impostors import impostor_pairs, impostor_radius, transformed_inputs, target_distances
from fast_solver.working_set import WorkingSet, evaluate, push_scatter, target_difference_vectors


@pytest.fixture(scope="module")
def setting():
    from lmnn_sdp import LMNNProblem

    X, y = load_wine(return_X_y=True)
    problem = LMNNProblem((X - X.mean(0)) / X.std(0), y, k=3, mu=0.3)
    A = np.random.default_rng(0).standard_normal((13, 13))
    M = A @ A.T / 13
    Z = transformed_inputs(problem, M)
    radius = impostor_radius(target_distances(Z, problem.targets), band=2.0)
    i, l, _ = impostor_pairs(Z, problem.label_codes, radius)
    ws = WorkingSet.empty().replace(i, l, problem.n_samples)[0]
    return problem, M, ws


@pytest.mark.parametrize("with_differences", [False, True])
def test_restricted_objective_is_exact_when_the_set_holds_every_violation(setting, with_differences):
    problem, M, ws = setting
    if with_differences:
        ws = ws.with_differences(problem.X_centered)
        assert ws.diff is not None
    diff = target_difference_vectors(problem.X_centered, problem.targets) if with_differences else None
    point = evaluate(problem.X_centered, problem.targets, diff, problem.mu, M, ws)
    assert point.objective == pytest.approx(problem.objective(M), rel=1e-12)
    active = ws.triplets(problem.targets, point.active)
    np.testing.assert_array_equal(np.unique(active, axis=0), np.unique(problem.active_triplets(M), axis=0))


def test_solver_gradient_and_its_eq19_update_match_eq18(setting):
    problem, M, ws = setting
    Xc, targets = problem.X_centered, problem.targets
    old = evaluate(Xc, targets, None, problem.mu, M, ws)
    new = evaluate(Xc, targets, None, problem.mu, 0.8 * M, ws)
    pair, rank = np.nonzero(old.active)
    G = pull_gradient(problem) + problem.mu * push_scatter(Xc, targets, ws, pair, rank, np.ones(len(pair)))
    np.testing.assert_allclose(G, lmnn_gradient(problem, problem.active_triplets(M)), rtol=1e-10, atol=1e-8)
    pair, rank = np.nonzero(new.active != old.active)
    assert len(pair) > 10
    sign = np.where(new.active[pair, rank], 1.0, -1.0)
    G_new = G + problem.mu * push_scatter(Xc, targets, ws, pair, rank, sign)
    np.testing.assert_allclose(G_new, lmnn_gradient(problem, problem.active_triplets(0.8 * M)),
                               rtol=1e-10, atol=1e-8)


def test_replace_reports_the_pairs_that_are_new(setting):
    problem, _, ws = setting
    half = WorkingSet(ws.i[::2], ws.l[::2])
    renewed, added = half.replace(ws.i, ws.l, problem.n_samples)
    np.testing.assert_array_equal(renewed.i, ws.i)
    assert added.sum() == len(ws) - len(half)
