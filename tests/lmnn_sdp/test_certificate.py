"""Certificates: bounds checked against brute force and never overstated."""

from __future__ import annotations

import numpy as np
import pytest

from lmnn_sdp import LMNNProblem, certify, solve_lmnn
from lmnn_sdp.bounds import dual_lower_bound, largest_feasible_scale, relative_gap


def small_problem(seed: int, n: int = 12, d: int = 3, k: int = 2, mu: float = 0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return LMNNProblem(X, np.arange(n) % 3, k=k, mu=mu)


def brute_dual_matrix(p: LMNNProblem, triplets, lam) -> np.ndarray:
    """Z(lambda) of DESIGN.md by explicit outer products on the raw inputs."""
    C = lambda a, b: np.outer(p.X[a] - p.X[b], p.X[a] - p.X[b])  # noqa: E731
    Z = (1 - p.mu) * sum(C(i, j) for i in range(p.n_samples) for j in p.targets[i])
    return Z - sum(w * (C(i, l) - C(i, j)) for w, (i, j, l) in zip(lam, triplets))


@pytest.fixture(scope="module")
def solved():
    p = small_problem(0)
    return p, solve_lmnn(p)


def test_scaled_multipliers_are_dual_feasible_and_scale_is_maximal():
    for seed in range(10):
        p = small_problem(seed, mu=[0.2, 0.5, 0.8][seed % 3])
        rng = np.random.default_rng(seed)
        t = p.all_triplets()
        lam = rng.uniform(0, p.mu, size=len(t)) * (rng.uniform(size=len(t)) < 0.3)
        lower, alpha, _ = dual_lower_bound(p, t, lam)
        assert lower == pytest.approx(alpha * lam.sum())
        assert np.linalg.eigvalsh(brute_dual_matrix(p, t, alpha * lam))[0] >= -1e-9
        if alpha < 1:  # a slightly larger scale leaves the dual cone
            assert np.linalg.eigvalsh(brute_dual_matrix(p, t, alpha * 1.001 * lam))[0] < 0


def test_lower_bound_never_exceeds_optimum_or_upper_bound(solved):
    p, result = solved
    rng = np.random.default_rng(1)
    t = p.all_triplets()
    for _ in range(30):
        lam = rng.uniform(0, 2 * p.mu, size=len(t)) * (rng.uniform(size=len(t)) < rng.uniform())
        lower, _, _ = dual_lower_bound(p, t, lam)
        assert lower <= result.objective * (1 + 1e-9)
        M = result.M + rng.uniform() * np.diag(rng.uniform(size=3))
        assert certify(p, M).lower <= p.objective(M)


def test_bounds_bracket_over_many_random_instances():
    for seed in range(25):
        p = small_problem(100 + seed, n=9, d=2, k=1 + seed % 2, mu=[0.2, 0.5, 0.8][seed % 3])
        rng = np.random.default_rng(seed)
        L = rng.normal(size=(2, 2))
        cert = certify(p, L.T @ L)
        assert 0 <= cert.lower <= cert.upper
        assert cert.upper == pytest.approx(p.objective(L.T @ L))


def test_certify_closes_gap_at_optimum_and_not_at_identity(solved):
    p, result = solved
    at_optimum = certify(p, result.M)
    assert at_optimum.certified and at_optimum.relative_gap <= 1e-6
    at_identity = certify(p, np.eye(3))
    assert not at_identity.certified and at_identity.relative_gap > 0.05
    assert at_identity.lower <= result.objective * (1 + 1e-9)


def test_certificate_from_solver_multipliers(solved):
    p, result = solved
    cert = certify(p, result.M, triplets=result.triplets, multipliers=result.multipliers)
    assert cert.relative_gap <= 1e-6
    assert cert.n_multipliers == p.n_triplets


def test_multipliers_outside_the_box_are_clipped_not_trusted(solved):
    p, result = solved
    inflated = certify(p, result.M, triplets=result.triplets, multipliers=10 * result.multipliers)
    assert inflated.lower <= result.objective * (1 + 1e-9)


def test_largest_feasible_scale_closed_form_and_bisection_agree():
    rng = np.random.default_rng(3)
    A = np.diag([1.0, 2.0, 3.0])
    Q = rng.normal(size=(3, 3))
    Q = Q + Q.T
    alpha = largest_feasible_scale(A, Q)
    assert np.linalg.eigvalsh(A - alpha * Q)[0] == pytest.approx(0, abs=1e-10) or alpha == 1
    singular = np.diag([0.0, 2.0, 3.0])
    negative_on_null = np.diag([1.0, 0.0, 0.0])
    assert largest_feasible_scale(singular, -negative_on_null) == 1.0
    assert largest_feasible_scale(singular, negative_on_null) == 0.0


def test_relative_gap_definition():
    assert relative_gap(2.0, 1.0) == 0.5
    assert relative_gap(1.0, 1.0 + 1e-12) == 0.0
    assert relative_gap(0.0, 0.0) == 0.0


@pytest.mark.parametrize("M,match", [
    (np.array([[1.0, 0.5, 0], [0, 1, 0], [0, 0, 1]]), "not symmetric"),
    (np.diag([1.0, -0.5, 1.0]), "not positive semidefinite"),
    (np.eye(2), "shape"),
    (np.full((3, 3), np.nan), "NaN"),
])
def test_certify_rejects_bad_metrics(M, match):
    with pytest.raises(ValueError, match=match):
        certify(small_problem(0), M)


def test_certify_rejects_half_a_multiplier_set(solved):
    p, result = solved
    with pytest.raises(ValueError, match="together"):
        certify(p, result.M, triplets=result.triplets)
    with pytest.raises(ValueError, match="shape"):
        certify(p, result.M, triplets=result.triplets, multipliers=result.multipliers[:-1])


def test_rounding_level_negative_eigenvalues_are_clipped_for_the_upper_bound():
    p = small_problem(0)
    cert = certify(p, np.diag([1.0, 1.0, -1e-12]))
    assert cert.min_eig_metric == pytest.approx(-1e-12)
    assert cert.upper == pytest.approx(p.objective(np.diag([1.0, 1.0, 0.0])), rel=1e-14)


def test_the_box_caps_multipliers_that_the_cone_cannot():
    # Target at 3, impostor at 1: C_il - C_ij = -8 is negative, so Z stays PSD for any
    # multiplier on this triplet and only the box lambda <= mu keeps the bound honest.
    p = LMNNProblem(np.array([[0.0], [3.0], [1.0], [1.1]]), [0, 0, 1, 1], k=1, mu=0.5)
    optimum = solve_lmnn(p).objective
    assert optimum <= 8 * p.mu  # eps(0) = mu * (number of triplets)
    lower, alpha, _ = dual_lower_bound(p, np.array([[0, 1, 2]]), np.array([100.0]))
    assert alpha == 1.0 and lower == pytest.approx(p.mu)
    assert lower <= optimum
