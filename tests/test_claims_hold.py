"""Property-based: on random small degenerate problems every claim of the fast and the exact
solver holds against a brute force of eq. 14 in exact rational arithmetic.

Problems mix binary and integer features, duplicated points, collinear features, features of
very different scales, singular pull matrices and one-point clusters. A run of the default
profile is bounded and deterministic (CI); ``HYPOTHESIS_PROFILE=long`` tries many more.
"""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fast_solver import solve
from lmnn_sdp import solve_lmnn, solve_mm_lmnn
from lmnn_sdp.core.problem import LMNNProblem

settings.register_profile("ci", max_examples=40, derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=2000, derandomize=False, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
SLOW_EXAMPLES = settings().max_examples // 5  # the solvers that take longer per example

KINDS = ("gaussian", "binary", "integers", "duplicates", "collinear", "scales", "tiny", "huge")


def features(kind: str, rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Inputs (n, d) of one degenerate kind."""
    if kind == "binary":
        return (rng.random((n, d)) > 0.5).astype(float)
    if kind == "integers":
        return rng.integers(-2, 3, size=(n, d)).astype(float)
    X = rng.normal(size=(n, d))
    if kind == "duplicates":
        X[n // 2:] = X[: n - n // 2]
    elif kind == "collinear":
        X[:, -1] = 2.0 * X[:, 0] - X[:, min(1, d - 1)]
    elif kind == "scales":
        X *= 10.0 ** rng.integers(-4, 5, size=d)
    elif kind == "tiny":
        X *= 1e-7
    elif kind == "huge":
        X *= 1e7
    return X


@st.composite
def problems(draw):
    kind = draw(st.sampled_from(KINDS))
    classes = draw(st.integers(2, 3))
    per_class = draw(st.integers(3, 7))
    d = draw(st.integers(1, 4))
    k = draw(st.integers(1, min(2, per_class - 1)))
    mu = draw(st.sampled_from([0.2, 0.5, 0.8]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = np.repeat(np.arange(classes), per_class)
    X = features(kind, rng, len(y), d)
    try:
        problem = LMNNProblem(X, y, k=k, mu=mu)
    except ValueError:  # e.g. all inputs identical: a clear error, not a claim
        event("refused by LMNNProblem")
        return None
    return problem


def assert_claims_hold(certificate, converged: bool, exact_objective) -> None:
    """The stated upper bound is eq. 14 within its rounding bound, the lower bound is below
    it (at the metric, or at its PSD neighbour within the same bound), and a claim
    (converged/certified) verifies."""
    problem, clusters = certificate.problem, certificate.clusters
    exact = exact_objective(problem, certificate.metric, clusters)
    error = Fraction(certificate.upper_error)
    assert abs(Fraction(certificate.upper) - exact) <= error
    assert Fraction(certificate.lower) - Fraction(certificate.lower_error) <= exact + 2 * error
    assert converged == certificate.certified
    if certificate.certified:
        certificate.verify()
        assert certificate.upper_error <= max(certificate.tol * certificate.upper, certificate.atol)  # atol: a zero optimum


def solved(problem, solver):
    try:
        return solver(problem)
    except ValueError as err:  # a cluster without a pull term: a clear error, not a claim
        assert "pull term" in str(err)
        return None


@given(problem=problems())
def test_fast_solver_claims_hold(problem, exact_objective):
    if problem is None:
        return
    r = solved(problem, lambda p: solve(p, max_iter=60))
    if r is not None:
        assert_claims_hold(r.certificate, r.converged, exact_objective)
        event(f"converged={r.converged}")


@given(problem=problems())
@settings(max_examples=SLOW_EXAMPLES)
def test_fast_multi_metric_claims_hold_with_one_point_clusters(problem, exact_objective):
    if problem is None:
        return
    clusters = problem.label_codes.copy()
    clusters[0] = clusters.max() + 1  # a cluster of one point
    r = solved(problem, lambda p: solve(p, clusters=clusters, max_iter=40))
    if r is not None:
        assert_claims_hold(r.certificate, r.converged, exact_objective)
        event(f"converged={r.converged}")


@given(problem=problems())
@settings(max_examples=SLOW_EXAMPLES)
def test_exact_solver_claims_hold(problem, exact_objective):
    if problem is None:
        return
    r = solve_lmnn(problem, method="aggregated", progress=False)
    assert_claims_hold(r.certificate, r.certified, exact_objective)
    event(f"certified={r.certified}")


def fast_claim(problem):
    r = solve(problem, max_iter=200)
    return r.certificate, r.converged


def exact_claim(problem):
    e = solve_lmnn(problem, method="aggregated")
    return e.certificate, e.certified


@pytest.mark.parametrize("solver", [
    pytest.param(fast_claim, id="fast"),
    # test_exact_solver_claims_hold keeps the exact solver's claims on binary and duplicated points quick
    pytest.param(exact_claim, id="exact", marks=pytest.mark.slow),  # 45,000 triplets: 1-2 s each
])
@pytest.mark.parametrize("threshold", [2, 3, 4])
def test_thresholded_iris_never_claims_what_float64_cannot_prove(threshold, solver):
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    problem = LMNNProblem((X > threshold).astype(float), y, k=3, mu=0.5)
    certificate, claim = solver(problem)
    assert np.linalg.eigvalsh(certificate.metric)[-1] < 1e3  # bounded, not run away
    other = problem.evaluate(certificate.metric, origin=problem.independent_origin())
    assert abs(other.value - certificate.upper) <= certificate.upper_error + other.rounding
    assert claim == certificate.certified
    if claim:
        certificate.verify()


def test_multi_metric_exact_claims_hold_on_duplicated_iris(exact_objective):
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    rows = np.r_[0:10, 50:60, 100:110]
    X = np.vstack([X[rows], X[rows[::2]]])
    y = np.concatenate([y[rows], y[rows[::2]]])
    problem = LMNNProblem(X, y, k=2, mu=0.5)
    r = solve_mm_lmnn(problem)
    assert_claims_hold(r.certificate, r.certified, exact_objective)
