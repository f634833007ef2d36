"""MMC (Xing et al. 2002; JMLR 2009 sec. 2.3.1): evaluators, bounds, solves, refinement,
bad inputs."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import load_iris, load_wine

from lmnn_sdp import (
    MMCCertificate,
    MMCResult,
    certify_mmc,
    label_pairs,
    mmc_objective,
    pair_distances,
    solve_mmc,
    xing_objective,
)
from lmnn_sdp.mmc import solve
from lmnn_sdp.mmc.refine import Refinement

LOG_HALF = 0.5 + 0.5 * np.log(2.0)
IRIS_FULL = 781.17184612  # certified optimum of (MMC) on iris, relative gap 1e-10
IRIS_DIAGONAL = -5.4717610373  # of (XING) on iris
LOOSE = {"tol_gap_abs": 1e-3, "tol_gap_rel": 1e-3, "tol_feas": 1e-3, "tol_ktratio": 1e-3}


# -- helpers ------------------------------------------------------------------
def tiny_instance(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """8-12 points in 2-4 dimensions, 2-3 classes of at least 2 points, random scales."""
    rng = np.random.default_rng(seed)
    n, d, k = rng.integers(8, 13), rng.integers(2, 5), rng.integers(2, 4)
    y = np.r_[np.repeat(np.arange(k), 2), rng.integers(0, k, n - 2 * k)]
    X = rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-2, 2, size=d) + y[:, None]
    return X, y


def random_psd(rng, d: int) -> np.ndarray:
    L = rng.normal(size=(d, d))
    return L @ L.T


def brute_pairs(y):
    similar, dissimilar = [], []
    for i in range(len(y)):
        for j in range(i + 1, len(y)):
            (similar if y[i] == y[j] else dissimilar).append((i, j))
    return similar, dissimilar


def brute_distance(X, i, j, M) -> float:
    diff = X[i] - X[j]
    return float(sum(diff[a] * M[a, b] * diff[b] for a in range(len(diff)) for b in range(len(diff))))


def brute_upper_bound(X, similar, dissimilar, metric) -> float:
    """(UB) at tangent points sqrt(D_A(p)), by loops and a generalised eigenvalue."""
    s = [np.sqrt(brute_distance(X, i, j, metric)) for i, j in dissimilar]
    G = sum(np.outer(X[i] - X[j], X[i] - X[j]) / (2 * sp) for (i, j), sp in zip(dissimilar, s))
    Sigma = sum(np.outer(X[i] - X[j], X[i] - X[j]) for i, j in similar)
    lam = scipy.linalg.eigh(G, Sigma, eigvals_only=True)[-1]
    return 2 * np.sqrt(sum(s) / 2 * lam)


def iris():
    return load_iris(return_X_y=True)  # raw


def wine_standardised():
    X, y = load_wine(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


# -- evaluators against loops --------------------------------------------------
def test_label_pairs_are_all_pairs_split_by_label():
    y = np.array([0, 1, 0, 2, 1, 0])
    similar, dissimilar = label_pairs(y)
    brute_similar, brute_dissimilar = brute_pairs(y)
    assert similar.tolist() == [list(p) for p in brute_similar]
    assert dissimilar.tolist() == [list(p) for p in brute_dissimilar]
    assert (len(similar), len(dissimilar)) == (4, 11)


@pytest.mark.parametrize("seed", range(5))
def test_evaluators_match_loops_over_pairs(seed):
    X, y = tiny_instance(seed)
    rng = np.random.default_rng(seed)
    M = random_psd(rng, X.shape[1])
    a = rng.uniform(0, 2, size=X.shape[1])
    similar, dissimilar = brute_pairs(y)
    distances = [brute_distance(X, i, j, M) for i, j in dissimilar]
    assert np.allclose(pair_distances(X, dissimilar, M), distances, rtol=1e-12)
    assert mmc_objective(X, dissimilar, M) == pytest.approx(sum(np.sqrt(distances)), rel=1e-12)
    A = np.diag(a)
    xing = (sum(brute_distance(X, i, j, A) for i, j in similar)
            - np.log(sum(np.sqrt(brute_distance(X, i, j, A)) for i, j in dissimilar)))
    assert xing_objective(X, similar, dissimilar, a) == pytest.approx(xing, rel=1e-12)


def test_certificate_objective_is_that_of_the_feasible_rescaling():
    X, y = tiny_instance(7)
    M = random_psd(np.random.default_rng(7), X.shape[1])
    similar, dissimilar = label_pairs(y)
    cert = certify_mmc(X, M, y)
    scale = np.sum(pair_distances(X, similar, M))
    assert np.allclose(cert.metric, M / scale)
    assert np.sum(pair_distances(X, similar, cert.metric)) == pytest.approx(1.0, rel=1e-12)
    assert cert.objective == pytest.approx(mmc_objective(X, dissimilar, M) / np.sqrt(scale), rel=1e-12)
    assert cert.lower <= cert.objective <= cert.upper and cert.sense == "maximize"
    assert cert.lower == pytest.approx(cert.objective, rel=1e-14)  # well scaled: tiny rounding
    assert cert.min_eigenvalue > 0


@pytest.mark.parametrize("seed", range(5))
def test_upper_bound_is_at_most_the_closed_form_at_the_candidate(seed):
    """The certificate minimises (UB) over tangent floors, floor 0 included."""
    X, y = tiny_instance(seed)
    M = random_psd(np.random.default_rng(seed), X.shape[1])
    similar, dissimilar = brute_pairs(y)
    brute = brute_upper_bound(X, similar, dissimilar, M)
    assert certify_mmc(X, M, y).upper <= brute * (1 + 1e-9)


# -- closed forms in one dimension --------------------------------------------
def test_one_dimensional_optimum_is_the_closed_form():
    """d = 1: A = 1 / sum_S v^2, P* = sum_D |u| / sqrt(sum_S v^2), g* = 1/2 + log(2)/2 - log P*."""
    X = np.array([[0.0], [1.0], [3.0], [7.0], [8.5]])
    y = np.array([0, 0, 1, 1, 1])
    similar, dissimilar = label_pairs(y)
    v2 = np.sum((X[similar[:, 0]] - X[similar[:, 1]]) ** 2)
    best = np.sum(np.abs(X[dissimilar[:, 0]] - X[dissimilar[:, 1]])) / np.sqrt(v2)
    full = solve_mmc(X, y)
    assert full.objective == pytest.approx(best, rel=1e-9)
    assert full.metric == pytest.approx(np.array([[1 / v2]]), rel=1e-9)
    diag = solve_mmc(X, y, diagonal=True)
    assert diag.objective == pytest.approx(LOG_HALF - np.log(best), abs=1e-9)
    assert diag.metric == pytest.approx(np.array([[0.5 / v2]]), rel=1e-7)
    exact = certify_mmc(X, [[1 / v2]], y)
    assert exact.relative_gap <= 1e-12 and exact.upper == pytest.approx(best, rel=1e-12)


# -- bounds bracket the optimum -----------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_full_bounds_bracket_every_feasible_value(seed):
    """Every upper bound is >= every feasible value (the solver's, random metrics');
    a separate cvxpy solve of (MMC) on the raw data agrees with the optimum."""
    X, y = tiny_instance(seed)
    rng = np.random.default_rng(seed)
    certs = [solve_mmc(X, y)] + [certify_mmc(X, random_psd(rng, X.shape[1]), y) for _ in range(4)]
    assert max(c.lower for c in certs) <= min(c.upper for c in certs)
    assert all(c.lower <= c.objective <= c.upper for c in certs)
    assert certs[0].certified and certs[0].relative_gap <= 1e-6
    similar, dissimilar = label_pairs(y)
    A = cp.Variable((X.shape[1],) * 2, PSD=True)
    U, V = X[dissimilar[:, 0]] - X[dissimilar[:, 1]], X[similar[:, 0]] - X[similar[:, 1]]
    direct = cp.Problem(cp.Maximize(cp.sum(cp.sqrt(cp.sum(cp.multiply(U @ A, U), axis=1)))),
                        [cp.sum(cp.multiply(V @ A, V)) <= 1])
    direct.solve(solver="CLARABEL")  # fine at these sizes, not on iris or wine
    assert direct.value == pytest.approx(certs[0].objective, rel=1e-5)


@pytest.mark.parametrize("seed", range(20))
def test_diagonal_lower_bound_is_below_every_xing_value(seed):
    """The lower bound on g* is <= g at the solver's answer, at random weights, and
    at Xing's program written literally (exponential cone) in cvxpy."""
    X, y = tiny_instance(seed)
    rng = np.random.default_rng(seed)
    result = solve_mmc(X, y, diagonal=True)
    assert result.certified and result.relative_gap <= 1e-6 and result.sense == "minimize"
    similar, dissimilar = label_pairs(y)
    for _ in range(4):
        a = rng.uniform(0, 1, size=X.shape[1]) * rng.integers(0, 2, size=X.shape[1])
        if a.any():
            assert xing_objective(X, similar, dissimilar, a) >= result.lower
            assert certify_mmc(X, np.diag(a), y, diagonal=True).lower <= result.upper
    U, V = X[dissimilar[:, 0]] - X[dissimilar[:, 1]], X[similar[:, 0]] - X[similar[:, 1]]
    a = cp.Variable(X.shape[1], nonneg=True)
    literal = cp.Problem(cp.Minimize(cp.sum(V**2 @ a) - cp.log(cp.sum(cp.sqrt(U**2 @ a)))))
    literal.solve(solver="CLARABEL")
    assert xing_objective(X, similar, dissimilar, np.maximum(a.value, 0)) >= result.lower
    assert literal.value == pytest.approx(result.objective, abs=1e-5)


def test_a_poor_candidate_is_not_certified():
    X, y = iris()
    euclidean = certify_mmc(X, np.eye(4), y)
    similar, dissimilar = label_pairs(y)
    norms = [np.linalg.norm(X[i] - X[j]) for i, j in dissimilar]
    scale = sum(np.sum((X[i] - X[j]) ** 2) for i, j in similar)
    assert euclidean.objective == pytest.approx(sum(norms) / np.sqrt(scale), rel=1e-12)
    assert euclidean.objective == pytest.approx(372.9357, abs=1e-4)
    assert not euclidean.certified and euclidean.relative_gap > 0.5
    assert euclidean.upper >= IRIS_FULL
    assert "NOT certified" in repr(euclidean)


# -- tight on iris and wine ---------------------------------------------------
def test_iris_full_is_certified(iris_mmc):
    X, y = iris()
    result = iris_mmc(diagonal=False)  # solve_mmc(X, y)
    assert isinstance(result, MMCResult) and isinstance(result.certificate, MMCCertificate)
    assert result.certified and result.relative_gap <= 1e-9  # a margin of 1000 under tol
    assert result.objective == pytest.approx(IRIS_FULL, rel=1e-9)
    assert result.lower <= result.objective <= result.upper
    similar, dissimilar = label_pairs(y)
    assert np.sum(pair_distances(X, similar, result.metric)) == pytest.approx(1.0, rel=1e-12)
    assert np.linalg.eigvalsh(result.metric)[0] >= 0
    again = certify_mmc(X, result.metric, y)  # from the metric alone
    assert again.certified and again.objective == pytest.approx(result.objective, rel=1e-12)


def test_iris_diagonal_is_certified(iris_mmc):
    X, y = iris()
    result = iris_mmc(diagonal=True)  # solve_mmc(X, y, diagonal=True)
    assert result.certified and result.relative_gap <= 1e-9
    assert result.objective == pytest.approx(IRIS_DIAGONAL, abs=1e-9)
    assert result.lower <= result.objective <= result.upper
    weights = np.diag(result.metric)
    assert np.count_nonzero(result.metric - np.diag(weights)) == 0 and weights.min() >= 0
    similar, dissimilar = label_pairs(y)
    g = xing_objective(X, similar, dissimilar, weights)
    assert g == pytest.approx(result.objective, abs=1e-12)
    assert np.sum(pair_distances(X, similar, result.metric)) == pytest.approx(0.5, rel=1e-12)


@pytest.mark.slow  # wine's full SDP, about 15 s; test_iris_full_is_certified keeps the behaviour in the quick loop
def test_wine_full_is_certified():
    X, y = wine_standardised()
    result = solve_mmc(X, y)
    assert result.certified and result.relative_gap <= 1e-9
    assert result.objective == pytest.approx(492.740210, rel=1e-7)


def test_wine_diagonal_is_certified_and_invariant_to_feature_scales():
    X, y = wine_standardised()
    result = solve_mmc(X, y, diagonal=True)
    assert result.certified and result.relative_gap <= 1e-9
    assert result.objective == pytest.approx(-4.7967629, abs=1e-7)
    raw = solve_mmc(load_wine(return_X_y=True)[0], y, diagonal=True)
    assert raw.certified and raw.objective == pytest.approx(result.objective, abs=1e-9)


def test_full_optimum_is_invariant_to_linear_maps(iris_mmc):
    """X -> X T maps the optimal metric A to T^{-1} A T^{-T}; the optimum is unchanged.

    T scales features by 1e3 to 1e-2: the optimal metric then cancels on similar pairs
    (|v|^T |A| |v| is 3e9 times v^T A v), so a float metric in these coordinates is
    feasible only to about 1e-6, and the certificate says so (gap 1.1e-6, not 1e-10)."""
    X, y = iris()
    rotation = scipy.linalg.expm(np.random.default_rng(0).normal(size=(4, 4)) / 3)
    T = np.diag([1e3, 1.0, 1e-2, 5.0]) @ rotation
    base, mapped = iris_mmc(diagonal=False), solve_mmc(X @ T, y, tol=1e-5)
    assert mapped.certified and 1e-9 < mapped.relative_gap <= 1e-5
    assert mapped.objective == pytest.approx(base.objective, rel=1e-7)
    assert mapped.lower <= base.upper and base.lower <= mapped.upper
    Tinv = np.linalg.inv(T)
    assert np.allclose(Tinv @ base.metric @ Tinv.T, mapped.metric, rtol=1e-3,
                       atol=1e-5 * np.abs(mapped.metric).max())


# -- refinement: certified whatever the solver's luck -------------------------
@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("solver, options", [("CLARABEL", LOOSE), ("CLARABEL", {"max_iter": 1}),
                                             ("SCS", {"max_iters": 5})])
def test_refinement_certifies_a_loose_start(diagonal, solver, options):
    """A solve stopped far from the optimum is refined to a certified answer by the
    first attempt; its own metric is not certifiable."""
    X, y = iris()
    result = solve_mmc(X, y, diagonal=diagonal, solver=solver, solver_options=options)
    first = result.attempts[0]
    assert first.solver == solver and first.options == options and first.solver_gap > 1e-6
    assert len(result.attempts) == 1 and first.steps > 0
    assert result.certified and result.relative_gap == first.relative_gap <= 1e-9
    expected = IRIS_DIAGONAL if diagonal else IRIS_FULL
    assert result.objective == pytest.approx(expected, rel=1e-9)


def test_ladder_re_solves_when_the_refinement_stalls(monkeypatch):
    """Without refinement (stubbed out) and with an unreachable tol, every rung runs:
    the solver as asked, then tight, then the other solver; the best is reported."""
    def no_refinement(Uw, start, diagonal, target):
        return Refinement(start, 0, np.inf)

    monkeypatch.setattr(solve, "refine", no_refinement)
    X, y = tiny_instance(3)
    result = solve_mmc(X, y, tol=1e-15, solver_options={"max_iter": 3})
    assert [(a.solver, a.options) for a in result.attempts] == [
        ("CLARABEL", {"max_iter": 3}),
        ("CLARABEL", {"max_iter": 3, **solve.TIGHT_OPTIONS["CLARABEL"]}),
        ("SCS", solve.TIGHT_OPTIONS["SCS"])]
    assert not result.certified
    assert result.relative_gap == min(a.relative_gap for a in result.attempts) > 1e-15
    assert result.attempts[1].relative_gap < result.attempts[0].relative_gap


def test_an_unreachable_tolerance_is_reported_not_claimed():
    """The refinement reaches the rounding floor; no re-solve can do better, so the
    ladder stops there and says certified=False with the gap it proved."""
    X, y = tiny_instance(3)
    result = solve_mmc(X, y, tol=1e-15)
    assert not result.certified and 1e-15 < result.relative_gap < 1e-9
    assert len(result.attempts) == 1
    assert "NOT certified" in repr(result)


def test_scs_answers_are_bracketed():
    X, y = tiny_instance(3)
    reference = solve_mmc(X, y)
    other = solve_mmc(X, y, solver="SCS")
    assert other.lower <= reference.upper and reference.lower <= other.upper
    assert other.certified and other.solver == "SCS"


# -- pairs given explicitly, singular similar scatter --------------------------
def test_explicit_pairs_give_the_same_problem_as_labels():
    X, y = tiny_instance(11)
    similar, dissimilar = label_pairs(y)
    by_labels = solve_mmc(X, y)
    by_pairs = solve_mmc(X, similar=similar, dissimilar=dissimilar[::-1])
    assert by_pairs.objective == pytest.approx(by_labels.objective, rel=1e-7)


def test_data_in_a_subspace_is_solved_on_it():
    """A constant feature makes Sigma singular; the metric lives on the data's span."""
    X, y = tiny_instance(5)
    X = np.column_stack([X, np.full(len(X), 4.0)])
    result = solve_mmc(X, y)
    assert result.certified and result.metric.shape == (X.shape[1],) * 2
    assert np.allclose(result.metric[-1], 0.0)
    assert solve_mmc(X, y, diagonal=True).certified


def test_mmc_with_a_few_explicit_pairs():
    X = np.array([[0.0, 0.0], [1.0, 0.2], [0.0, 1.0], [3.0, 2.0], [2.5, 3.0]])
    result = solve_mmc(X, similar=[[0, 1], [0, 2]], dissimilar=[[1, 3], [2, 4], [0, 4]])
    assert result.certified
    assert result.lower <= result.objective <= result.upper


# -- bad inputs ---------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error, message", [
    ({"y": [0, 1, 2, 3]}, ValueError, "no similar pairs"),
    ({"y": [5, 5, 5, 5]}, ValueError, "no dissimilar pairs"),
    ({"y": [0, 0, 1]}, ValueError, "labels"),
    ({"y": [0, 0, 1, 1], "similar": [[0, 1]]}, ValueError, "not both"),
    ({"similar": [[0, 1]]}, ValueError, "both similar and dissimilar"),
    ({"similar": np.empty((0, 2), int), "dissimilar": [[0, 2]]}, ValueError, "no similar pairs"),
    ({"similar": [[0, 1]], "dissimilar": np.empty((0, 2), int)}, ValueError, "no dissimilar pairs"),
    ({"similar": [[0, 1, 2]], "dissimilar": [[0, 2]]}, ValueError, r"shape \(P, 2\)"),
    ({"similar": [0, 1], "dissimilar": [[0, 2]]}, ValueError, r"shape \(P, 2\)"),
    ({"similar": [[0, 1]], "dissimilar": [[0, 4]]}, ValueError, r"lie in \[0, 3\]"),
    ({"similar": [[-1, 1]], "dissimilar": [[0, 2]]}, ValueError, r"lie in \[0, 3\]"),
    ({"similar": [[0.0, 1.0]], "dissimilar": [[0, 2]]}, TypeError, "integer"),
    ({"similar": [[1, 1]], "dissimilar": [[0, 2]]}, ValueError, "itself"),
])
def test_bad_pairs_raise_clear_errors(kwargs, error, message):
    X = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 2.0], [0.5, 3.0]])
    with pytest.raises(error, match=message):
        solve_mmc(X, **kwargs)
    with pytest.raises(error, match=message):
        certify_mmc(X, np.eye(2), **kwargs)


@pytest.mark.parametrize("X, message", [
    ([[0.0, np.nan], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0]], "NaN"),
    ([[0.0, np.inf], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0]], "NaN or infinity"),
    ([0.0, 1.0, 2.0, 3.0], "2-D"),
])
def test_bad_inputs_raise_clear_errors(X, message):
    with pytest.raises(ValueError, match=message):
        solve_mmc(X, [0, 0, 1, 1])


@pytest.mark.parametrize("diagonal", [False, True])
def test_unbounded_problems_are_refused(diagonal):
    """Similar pairs differ only along x; a dissimilar pair also differs along y."""
    X = np.array([[0.0, 0.0], [1.0, 0.0], [5.0, 1.0], [6.0, 0.0]])
    with pytest.raises(ValueError, match="unbounded"):
        solve_mmc(X, similar=[[0, 1]], dissimilar=[[0, 2]], diagonal=diagonal)
    with pytest.raises(ValueError, match="unbounded"):
        certify_mmc(X, np.eye(2), similar=[[0, 1]], dissimilar=[[0, 2]], diagonal=diagonal)


def test_dissimilar_pairs_of_identical_points_only_are_refused():
    with pytest.raises(ValueError, match="identical points"):
        solve_mmc(np.array([[0.0], [1.0], [1.0]]), similar=[[0, 1]], dissimilar=[[1, 2]])


@pytest.mark.parametrize("metric, diagonal, message", [
    (np.eye(3), False, r"shape \(2, 2\)"),
    ([[1.0, 0.5], [0.0, 1.0]], False, "not symmetric"),
    ([[1.0, 0.0], [0.0, -1.0]], False, "not positive semidefinite"),
    ([[1.0, 0.0], [0.0, np.nan]], False, "NaN"),
    ([[1.0, 0.1], [0.1, 1.0]], True, "diagonal metric"),
])
def test_bad_candidate_metrics_raise_clear_errors(metric, diagonal, message):
    X, y = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 2.0], [0.5, 3.0]]), [0, 0, 1, 1]
    with pytest.raises(ValueError, match=message):
        certify_mmc(X, metric, y, diagonal=diagonal)


def test_evaluators_refuse_bad_metrics():
    X = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 2.0]])
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        pair_distances(X, [[0, 1]], np.eye(3))
    with pytest.raises(ValueError, match="non-negative"):
        xing_objective(X, [[0, 1]], [[0, 2]], [1.0, -0.5])


def test_bad_tolerance_and_solver_raise_clear_errors():
    X, y = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 2.0], [0.5, 3.0]]), [0, 0, 1, 1]
    for tol, error in ((-1.0, ValueError), (np.nan, ValueError), (np.inf, ValueError),
                       ("small", TypeError), (True, TypeError)):
        with pytest.raises(error, match="tol"):
            solve_mmc(X, y, tol=tol)
    with pytest.raises(ValueError, match="solver"):
        solve_mmc(X, y, solver="MOSEKK")


def test_rounding_sized_asymmetry_and_negative_eigenvalues_are_accepted():
    X, y = tiny_instance(2)
    M = random_psd(np.random.default_rng(2), X.shape[1])
    w, V = np.linalg.eigh(M)
    w[0] = -1e-12 * w[-1]
    noisy = V @ np.diag(w) @ V.T
    noisy[0, 1] += 1e-13 * w[-1]
    cert = certify_mmc(X, noisy, y)
    assert cert.min_eigenvalue < 0 and np.linalg.eigvalsh(cert.metric)[0] >= -1e-15 * w[-1]
    assert cert.upper >= solve_mmc(X, y).lower


def test_low_rank_candidates_get_finite_bounds():
    """A rank-one metric collapses some pairs to distance 0 (or -rounding)."""
    X, y = iris()
    z = np.random.default_rng(4).normal(size=4)
    for metric in (np.outer(z, z), np.diag([0.0, 0.0, 1.0, 0.0])):
        cert = certify_mmc(X, metric, y)
        assert np.isfinite([cert.objective, cert.lower, cert.upper]).all()
        assert cert.lower <= IRIS_FULL <= cert.upper and not cert.certified
    diag = certify_mmc(X, np.diag([0.0, 0.0, 1.0, 0.0]), y, diagonal=True)
    assert np.isfinite(diag.objective) and diag.lower <= IRIS_DIAGONAL <= diag.upper


def test_result_speaks_the_certificates_vocabulary_and_times_each_stage():
    X, y = tiny_instance(1)
    result = solve_mmc(X, y)
    cert = result.certificate
    for name in ("metric", "objective", "sense", "upper", "lower", "relative_gap", "certified",
                 "tol"):
        assert np.all(getattr(result, name) == getattr(cert, name)), name
    assert result.solver_status == result.attempts[-1].solver_status in {"optimal", "optimal_inaccurate"}
    assert result.status == "converged" and result.converged
    assert result.solver == "CLARABEL" and cert.provenance == "computed"
    stages = ("build", "solve", "refine", "certify")
    assert set(result.timings) == {*stages, "total"} and result.timings["solve"] > 0
    assert sum(result.timings[s] for s in stages) <= result.timings["total"]
    assert repr(result).startswith("MMCResult(certified, full: objective=")


@pytest.mark.parametrize("metric, error", [(np.eye(2) + 0j, TypeError), (np.full((2, 2), np.nan), ValueError)])
def test_pair_distances_refuse_a_complex_or_nan_metric(metric, error):
    with pytest.raises(error, match="metric"):
        pair_distances(np.eye(2), [[0, 1]], metric)
