"""Alg. 1 (App. A): the solver's result, its verification and its degenerate cases."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris

import fast_solver
from fast_solver.active_set import solve
from lmnn_sdp import LMNNProblem


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return LMNNProblem((X - X.mean(0)) / X.std(0), y, k=3, mu=0.5)


@pytest.fixture(scope="module")
def unpolished(iris):
    return solve(iris, polish=False)


def test_result_reports_exact_objective_and_active_set(iris, unpolished):
    r = unpolished
    assert r.converged and not r.polished
    assert r.objective == pytest.approx(iris.objective(r.M), rel=1e-12)
    assert r.objective < 0.8 * iris.objective(np.eye(4))
    assert r.n_active == len(iris.active_triplets(r.M))
    np.testing.assert_allclose(r.L.T @ r.L, r.M, atol=1e-10)
    assert r.n_full_checks >= 2 and r.n_iter > 0
    assert set(r.timings) >= {"search", "gradient", "steps", "polish", "objective", "total"}


def test_working_set_holds_every_triplet_near_the_margin(iris, unpolished):
    ws = {tuple(t) for t in unpolished.working_set}
    assert all(tuple(t) in ws for t in iris.active_triplets(unpolished.M))
    near = iris.active_triplets(unpolished.M, band=0.4)  # the default band is 0.5
    assert np.mean([tuple(t) in ws for t in near]) > 0.9
    margins = iris.triplet_margins(unpolished.M, unpolished.working_set)
    assert margins.min() > -0.5


def test_polishing_lowers_the_objective_to_the_optimum(iris, unpolished):
    polished = solve(iris)
    assert polished.polished and polished.converged
    assert polished.objective <= unpolished.objective
    assert polished.objective == pytest.approx(234.1110425, rel=1e-8)  # certified optimum (lmnn_sdp)


def test_budget_exhausted_is_not_converged(iris):
    r = solve(iris, max_iter=3, polish=False)
    assert not r.converged and r.n_iter == 3
    assert "max_iter" in r.message
    assert r.objective == pytest.approx(iris.objective(r.M), rel=1e-12)


def test_mu_changes_the_solution(iris):
    low = solve(LMNNProblem(iris.X, iris.y, k=3, mu=0.2))
    high = solve(LMNNProblem(iris.X, iris.y, k=3, mu=0.8))
    assert np.trace(high.M) > 1.5 * np.trace(low.M)


def test_callback_sees_every_iteration(iris):
    seen = []
    solve(iris, max_iter=25, polish=False, callback=seen.append)
    assert [info.iteration for info in seen] == list(range(1, 26))
    assert seen[0].full_check is False and any(info.full_check for info in seen)


def test_no_impostors_shrinks_to_the_margin():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(15, 2)) * 0.1, [10.0, 0.0] + rng.normal(size=(15, 2)) * 0.1])
    y = np.repeat([0, 1], 15)
    problem = LMNNProblem(X, y, k=2, mu=0.5)
    r = solve(problem)
    assert r.converged
    assert r.objective < 0.05 * problem.objective(np.eye(2))
    assert r.objective == pytest.approx(problem.objective(r.M), rel=1e-12)


def test_duplicate_points_in_two_classes_are_handled():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(24, 3))
    X = np.vstack([X, X[:3]])
    y = np.array([0] * 12 + [1] * 12 + [1] * 3)
    problem = LMNNProblem(X, y, k=2, mu=0.5)
    r = solve(problem)
    assert r.converged and np.isfinite(r.objective)
    # each duplicate pair keeps every hinge of its point at >= 1: eq. 14 >= mu * k * 2 * 3 pairs
    assert r.objective >= problem.mu * 2 * 6 - 1e-9
    assert r.objective == pytest.approx(problem.objective(r.M), rel=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    ({"max_iter": -1}, "max_iter"), ({"tol": -1.0}, "tol"), ({"step_size": 0.0}, "step_size"),
    ({"search": "kd"}, "search"), ({"polish": "yes"}, "polish"), ({"band": -0.1}, "band"),
])
def test_bad_options_raise(iris, kwargs, match):
    with pytest.raises(ValueError, match=match):
        solve(iris, **kwargs)


def test_non_psd_start_is_rejected(iris):
    with pytest.raises(ValueError, match="positive semidefinite"):
        solve(iris, M0=np.diag([1.0, 1.0, 1.0, -1.0]))


def test_package_exports_solver_and_estimator():
    assert fast_solver.solve is solve
    assert {"LMNN", "solve", "active_triplets", "project_psd"} <= set(fast_solver.__all__)
