"""The exact solvers: primal, dual and constraint generation agree and certify."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_iris

from lmnn_sdp import LMNNProblem, solve_lmnn, solve_lmnn_dual


def reference_optimum(p: LMNNProblem) -> float:
    """Eq. 14 as a plain cvxpy program: one distance per target pair and one hinge per triplet,
    no tricks."""
    X, d = p.X, p.n_features
    M = cp.Variable((d, d), PSD=True)

    def D(a, b):  # (x_a - x_b)^T M (x_a - x_b) for arrays of pairs (a, b)
        return cp.sum(cp.multiply((X[a] - X[b]) @ M, X[a] - X[b]), axis=1)

    t = p.all_triplets()
    pull = cp.sum(D(np.repeat(np.arange(p.n_samples), p.k), p.targets.ravel()))
    push = cp.sum(cp.pos(1 + D(t[:, 0], t[:, 1]) - D(t[:, 0], t[:, 2])))
    problem = cp.Problem(cp.Minimize((1 - p.mu) * pull + p.mu * push))
    problem.solve(solver="CLARABEL")
    return problem.value


def tiny(seed: int, mu: float, k: int = 2, n: int = 10, d: int = 2) -> LMNNProblem:
    rng = np.random.default_rng(seed)
    return LMNNProblem(rng.normal(size=(n, d)), np.arange(n) % 2, k=k, mu=mu)


@pytest.mark.parametrize("seed,mu", [(0, 0.2), (1, 0.5)])
def test_full_dual_and_cutting_plane_match_reference(seed, mu):
    p = tiny(seed, mu)
    expected = reference_optimum(p)
    solves = (solve_lmnn(p, method="full"), solve_lmnn_dual(p), solve_lmnn(p, method="cutting-plane"),
              solve_lmnn(p, method="aggregated"))
    for result in solves:
        assert result.certificate.certified, result
        assert result.upper == pytest.approx(expected, rel=1e-6)
        assert result.lower <= result.upper
        assert result.upper == pytest.approx(p.objective(result.metric), rel=1e-14)
        assert np.allclose(result.metric, result.metric.T) and np.linalg.eigvalsh(result.metric)[0] >= -1e-12


IRIS_OPTIMUM = 226.739414  # iris, k=3, mu=0.5: the full SDP's certified optimum (test_iris_full_..._agree)


def iris_cut_and_aggregated() -> tuple[LMNNProblem, object, object]:
    X, y = load_iris(return_X_y=True)
    p = LMNNProblem(X, y, k=3, mu=0.5)
    return p, solve_lmnn(p), solve_lmnn(p, method="aggregated")


def test_iris_cutting_plane_and_aggregated_agree():
    """The quick loop's iris test: constraint generation and aggregation certify the optimum of
    the full SDP (its value recorded in IRIS_OPTIMUM) from a fraction of its 45,000 triplets."""
    p, cut, aggregated = iris_cut_and_aggregated()
    for result in (cut, aggregated):
        assert result.relative_gap <= 1e-6
        assert result.lower <= IRIS_OPTIMUM * (1 + 1e-6) and result.upper >= IRIS_OPTIMUM * (1 - 1e-6)
        assert result.upper == pytest.approx(IRIS_OPTIMUM, rel=1e-6)
    assert cut.n_triplets < p.n_triplets  # the working set stays a fraction of 45,000
    assert cut.rounds[-1].violated_outside == 0
    assert aggregated.rounds[-1].sdp_triplets < 200  # only triplets near the margin


@pytest.mark.slow  # the full SDP on iris, about 11 s; the test above keeps the other methods on iris quick
def test_iris_full_cutting_plane_and_aggregated_agree():
    p, cut, aggregated = iris_cut_and_aggregated()
    full = solve_lmnn(p, method="full")
    for result in (full, cut, aggregated):
        assert result.relative_gap <= 1e-6
        assert result.upper == pytest.approx(full.upper, rel=1e-6)
    assert full.upper == pytest.approx(IRIS_OPTIMUM, rel=1e-6)


def test_aggregated_from_a_given_start_and_every_round_bound_is_valid():
    p = tiny(9, 0.2, n=16)
    optimum = reference_optimum(p)
    result = solve_lmnn(p, method="aggregated", start=np.eye(2), band=0.02)
    assert result.upper == pytest.approx(optimum, rel=1e-6)
    assert all(r.lower <= optimum * (1 + 1e-9) for r in result.rounds)
    assert all(r.upper >= optimum * (1 - 1e-9) for r in result.rounds)


def test_cutting_plane_from_a_given_working_set():
    p = tiny(3, 0.5, n=14)
    full = solve_lmnn(p, method="full")
    start = full.triplets[full.multipliers > 1e-6]
    warm = solve_lmnn(p, method="cutting-plane", working_set=start)
    assert warm.upper == pytest.approx(full.upper, rel=1e-6)
    assert len(warm.rounds) <= 2


def test_scs_is_available_and_reported_honestly():
    p = tiny(4, 0.5)
    result = solve_lmnn(p, solver="SCS", solver_options={"eps_abs": 1e-9, "eps_rel": 1e-9})
    assert result.solver == "SCS"
    assert result.lower <= result.upper
    assert result.upper == pytest.approx(reference_optimum(p), rel=1e-4)


def test_mu_zero_and_one():
    p0 = tiny(5, 0.0)
    assert solve_lmnn(p0).upper == pytest.approx(0.0, abs=1e-6)
    p1 = tiny(5, 1.0)
    r1 = solve_lmnn(p1)
    assert r1.upper == pytest.approx(reference_optimum(p1), abs=1e-6)
    assert r1.lower <= r1.upper + 1e-12


def test_duplicate_points():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(6, 2))
    X = np.vstack([X, X])
    p = LMNNProblem(X, np.arange(12) % 3, k=2, mu=0.5)
    result = solve_lmnn(p, method="cutting-plane")
    assert result.certificate.certified
    assert result.upper == pytest.approx(reference_optimum(p), rel=1e-6)


def test_rank_deficient_inputs_are_solved_on_the_data_range():
    rng = np.random.default_rng(7)
    Z = rng.normal(size=(12, 2))
    X = np.column_stack([Z, Z[:, 0] + Z[:, 1], np.zeros(12)])  # rank 2 in 4 dimensions
    p = LMNNProblem(X, np.arange(12) % 2, k=2, mu=0.5)
    result = solve_lmnn(p)
    assert result.certificate.certified
    assert result.upper == pytest.approx(reference_optimum(LMNNProblem(Z, p.y, targets=p.targets)), rel=1e-6)


def test_no_impostors_at_all():
    X = np.array([[0.0, 0], [0.3, 0], [0, 0.3], [5, 5], [5.3, 5], [5, 5.3]])
    p = LMNNProblem(X, [0, 0, 0, 1, 1, 1], k=2, mu=0.5)
    assert len(p.active_triplets(np.eye(2))) == 0
    result = solve_lmnn(p, method="cutting-plane")
    assert result.certificate.certified
    assert result.upper == pytest.approx(reference_optimum(p), rel=1e-6)


def test_bad_solver_and_method():
    p = tiny(8, 0.5)
    with pytest.raises(ValueError, match="solver must be one of"):
        solve_lmnn(p, solver="MOSEK")
    with pytest.raises(ValueError, match="method must be"):
        solve_lmnn(p, method="newton")
    with pytest.raises(ValueError, match="cutting-plane"):
        solve_lmnn(p, method="full", working_set=np.zeros((1, 3), dtype=int))


def test_golden_section_finds_the_minimum_of_a_convex_kink():
    from lmnn_sdp.core.line_search import golden_section

    x, fx = golden_section(lambda t: abs(t - 0.3) + 0.1 * t, 0.0, 1.0, iterations=40)
    assert x == pytest.approx(0.3, abs=1e-6) and fx == pytest.approx(0.03, abs=1e-6)


def test_best_scaled_identity_beats_every_other_scale():
    from lmnn_sdp.core.space import reduced_space
    from lmnn_sdp.generation.start import best_scaled_identity

    p = tiny(10, 0.5, n=20)
    space = reduced_space(p)
    best = p.objective(best_scaled_identity(p, space))
    for e in np.linspace(-6, 10, 33):
        assert best <= p.objective(space.lift(2.0**e * np.eye(space.rank))) * (1 + 1e-6)


def test_ray_minimum_finds_the_least_change_within_the_bound():
    from lmnn_sdp.core.line_search import ray_minimum

    t, change = ray_minimum(lambda t: (t - 3.0) ** 2 - 9.0, 1.0, xtol=1e-8)  # doubling to 4, then Brent
    assert t == pytest.approx(3.0, abs=1e-6) and change == pytest.approx(-9.0)
    t, change = ray_minimum(lambda t: (t - 3.0) ** 2 - 9.0, 1.0, t_max=2.5)
    assert t == pytest.approx(2.5, abs=1e-3) and change < 0
    t, change = ray_minimum(lambda t: abs(t - 1e-4) - 1e-4, 1.0, xtol=1e-8)  # far inside the first bracket
    assert t == pytest.approx(1e-4, rel=1e-3) and change == pytest.approx(-1e-4, rel=1e-3)
    assert ray_minimum(lambda t: t, 1.0) == (0.0, 0.0)  # nothing decreases
