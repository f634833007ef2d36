"""The certified path over mu: warm-started solves agree with cold ones, each certified."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine

import fast_solver
import fast_solver.lmnn.path
from fast_solver.lmnn.path import CertifiedPath, certified_path
from lmnn_sdp.core.problem import LMNNProblem

TOL = 1e-6


def iris_problem():
    X, y = load_iris(return_X_y=True)
    return LMNNProblem(X[::3], y[::3], k=3, mu=0.5)  # 50 rows


def wine_problem():
    X, y = load_wine(return_X_y=True)
    return LMNNProblem(X[::3], y[::3], k=3, mu=0.5)  # 60 rows, raw (13 scales)


@pytest.mark.parametrize("make, mus", [(iris_problem, [0.8, 0.3]), (wine_problem, [0.6, 0.2])])
def test_path_agrees_with_cold_solves(make, mus):
    problem = make()
    path = certified_path(problem, mus, tol=TOL)
    assert path.certified and np.all(path.relative_gaps <= TOL)
    np.testing.assert_array_equal(path.mus, mus)
    for mu, result in zip(mus, path.results):
        at_mu = LMNNProblem(problem.X, problem.y, k=3, mu=mu)
        cold = fast_solver.solve(at_mu, tol=TOL)
        assert result.certificate.problem.mu == mu
        np.testing.assert_array_equal(result.certificate.problem.targets, problem.targets)
        assert at_mu.objective(result.metric) == pytest.approx(result.upper, rel=1e-9)
        # both within their proved gaps of the same optimum
        assert result.upper >= cold.lower * (1 - 1e-12) and cold.upper >= result.lower * (1 - 1e-12)
        assert result.upper == pytest.approx(cold.upper, rel=2 * TOL)


def fake_solve(calls):
    """A stand-in for ``solve`` that records its start and returns ``mu * I`` (0 at mu = 0)."""
    def solve(problem, M0, **options):
        calls.append((problem.mu, None if M0 is None else np.array(M0), options))
        return SimpleNamespace(metric=problem.mu * np.eye(problem.n_features), certified=True,
                               relative_gap=1e-7 * problem.mu)
    return solve


def test_each_solve_starts_from_the_previous_metric_unless_zero(monkeypatch):
    calls = []
    monkeypatch.setattr(fast_solver.lmnn.path, "solve", fake_solve(calls))
    path = certified_path(iris_problem(), [0.5, 0.0, 0.25], tol=1e-3)
    starts = [start for _, start, _ in calls]
    assert [mu for mu, _, _ in calls] == [0.5, 0.0, 0.25]
    assert starts[0] is None and starts[2] is None  # nothing before; zero metric is no start
    np.testing.assert_array_equal(starts[1], 0.5 * np.eye(4))
    assert all(options == {"tol": 1e-3} for _, _, options in calls)
    assert path.certified and path.metrics.shape == (3, 4, 4)
    assert path.relative_gaps.tolist() == [5e-8, 0.0, 2.5e-8]
    assert "max_relative_gap=5e-08" in repr(path) and isinstance(path, CertifiedPath)


def test_cold_path_never_passes_a_start(monkeypatch):
    calls = []
    monkeypatch.setattr(fast_solver.lmnn.path, "solve", fake_solve(calls))
    certified_path(iris_problem(), [0.3, 0.7], warm_start=False)
    assert [start for _, start, _ in calls] == [None, None]


@pytest.mark.parametrize("mus, message", [
    ([], "non-empty"), ([[0.1, 0.2]], "non-empty 1-D"), (0.5, "non-empty 1-D"),
    ([0.5, 1.5], r"in \[0, 1\].*1.5"), ([-0.1], r"-0.1"), ([np.nan], "nan"),
    (["0.5"], "'0.5'"), ([True], "True"), ([0.3, 0.3], "repeated"),
])
def test_bad_grid_is_named(mus, message):
    with pytest.raises(ValueError, match=message):
        certified_path(iris_problem(), mus)


def test_bad_problem_and_start_are_named():
    with pytest.raises(TypeError, match="problem must be an LMNNProblem"):
        certified_path(np.eye(3), [0.5])
    with pytest.raises(TypeError, match="no M0"):
        certified_path(iris_problem(), [0.5], M0=np.eye(4))
