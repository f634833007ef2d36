"""mu = 1 (push only): the bound proves a zero optimum or nothing, so a solve whose objective
stops falling above 0 ends stalled at once (``degenerate.push_only_stop``; design note
docs/design/certificates.md, "Push only")."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning

from fast_solver import LMNN, solve
from fast_solver.lmnn import solver
from lmnn_sdp import LMNNProblem
from lmnn_sdp.status import push_only

HALF_IRIS_OPTIMUM = 21.6782124  # iris[::2], k=2, mu=1: solve_lmnn's upper 21.678212400899458, lower 0


@pytest.fixture(scope="module")
def half_iris():
    X, y = load_iris(return_X_y=True)
    return LMNNProblem(X[::2], y[::2], k=2, mu=1.0)


@pytest.fixture(scope="module")
def half_iris_result(half_iris):
    return solve(half_iris)


def test_a_positive_optimum_ends_stalled_long_before_the_budget(half_iris, half_iris_result):
    r, c = half_iris_result, half_iris_result.certificate
    assert r.status == "stalled" and not r.converged and not r.certified
    assert r.n_iter < 300 and r.n_stages < solver.OPTIONS.max_stages  # of max_iter=1000 and 60 stages
    assert r.message.startswith("not converged: the best objective stopped falling")
    assert push_only(c.lower, c.upper) in r.message
    assert "pull matrix is singular" not in r.message  # the pull term is 0 by mu, not by the data
    # the best metric found: eq. 14's optimum as the exact methods reach it
    assert r.upper == pytest.approx(HALF_IRIS_OPTIMUM, rel=1e-8)
    assert r.upper == pytest.approx(half_iris.objective(r.metric), rel=1e-10)
    # the certificate claims nothing, and its evidence re-derives that
    assert c.lower == 0.0 and c.relative_gap == 1.0
    assert not c.verify().certified
    # the last push_only_window stages did not lower the best objective
    window = solver.OPTIONS.push_only_window
    uppers = [s.upper for s in r.stages[-1 - window:]]
    assert uppers[0] - uppers[-1] <= solver.OPTIONS.push_only_decrease * uppers[-1]


def test_the_width_shrinks_after_every_stage_at_mu_one(half_iris_result):
    gammas = [s.gamma for s in half_iris_result.stages]
    assert all(b == pytest.approx(a * solver.OPTIONS.shrink, rel=1e-12) for a, b in zip(gammas, gammas[1:]))


def test_a_zero_optimum_at_mu_one_still_converges():
    X, y = load_wine(return_X_y=True)
    problem = LMNNProblem((X - X.mean(0)) / X.std(0), y, k=3, mu=1.0)
    r = solve(problem)
    assert r.status == "converged" and r.certified and r.upper <= r.certificate.atol
    assert r.certificate.verify().certified


def test_an_objective_that_keeps_falling_is_capped_at_the_width_floor(half_iris, monkeypatch):
    # never stalled: the stages run until the width is below float64's resolution of the margin,
    # reached at the third stage from a first width of 1e-15
    monkeypatch.setattr(solver, "OPTIONS", replace(solver.OPTIONS, push_only_decrease=-np.inf, initial_gamma=1e-15))
    r = solve(half_iris)
    assert r.status == "stalled" and r.n_stages == 3 and r.stages[-1].gamma <= np.finfo(float).eps
    assert "stopped at a cap" in r.message and "infimum that is not attained" in r.message
    assert push_only(r.lower, r.upper) in r.message
    r.certificate.verify()


def test_the_estimator_warns_that_more_iterations_would_not_help(half_iris):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lmnn = LMNN(k=2, mu=1.0).fit(half_iris.X, half_iris.y)
    [warning] = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert "more would not help" in str(warning.message) and "push only" in str(warning.message)
    assert "raise max_iter" not in str(warning.message)
    assert lmnn.result_.status == "stalled" and lmnn.objective_ == pytest.approx(HALF_IRIS_OPTIMUM, rel=1e-8)


def test_an_ended_push_only_checkpoint_returns_the_same_result(half_iris, half_iris_result, tmp_path):
    first = solve(half_iris, checkpoint=tmp_path / "push.ckpt")
    again = solve(half_iris, checkpoint=tmp_path / "push.ckpt")
    assert first.message == again.message == half_iris_result.message
    assert again.n_iter == first.n_iter == half_iris_result.n_iter
    np.testing.assert_array_equal(again.metric, half_iris_result.metric)

