"""The certified solver: converged only when proved, evidence that re-verifies, edge cases."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine, make_blobs

import fast_solver
from fast_solver import solve
from fast_solver.lmnn import solver
from fast_solver.lmnn.factors import narrowed
from fast_solver.lmnn.start import best_scale, euclidean_start
from lmnn_sdp import LMNNProblem, solve_lmnn
from lmnn_sdp.certificates.bounds import dual_lower_bound

IRIS_OPTIMUM = 226.7394142  # iris, k=3, mu=0.5 (validation/corpus, certified to 3e-11)


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return LMNNProblem(X, y, k=3, mu=0.5)


@pytest.fixture(scope="module")
def iris_solve(iris):
    """The default solve of iris, and the stages its callback saw."""
    stages = []
    return solve(iris, callback=stages.append), stages


@pytest.fixture(scope="module")
def iris_result(iris_solve):
    return iris_solve[0]


def test_converges_to_the_certified_optimum(iris, iris_result):
    r = iris_result
    assert r.converged and r.certified and r.status == "converged"
    assert r.relative_gap <= 1e-6
    assert r.lower <= IRIS_OPTIMUM * (1 + 1e-9) <= r.upper * (1 + 1e-9)
    assert r.upper == pytest.approx(iris.objective(r.metric), rel=1e-10)
    assert r.upper == pytest.approx(IRIS_OPTIMUM, rel=1e-6)
    np.testing.assert_allclose(r.components.T @ r.components, r.metric, atol=1e-8 * np.abs(r.metric).max())


def test_evidence_re_derives_the_lower_bound(iris, iris_result):
    c = iris_result.certificate
    # lmnn_sdp re-proves it in its own coordinates: the same bound up to rounding, and at least
    # as much with every basis tried (``prove`` stops at the one allowance when that suffices)
    fresh = c.verify()
    assert fresh.lower == pytest.approx(c.lower, rel=1e-10)
    assert fresh.dual_scale == pytest.approx(c.dual_scale, rel=1e-10)
    assert dual_lower_bound(iris, c.triplets, c.multipliers).lower >= c.lower * (1 - 1e-10)
    assert np.all((c.multipliers > 0) & (c.multipliers <= iris.mu))
    # each evidence triplet is active at the solver's metric, and the multipliers sum to the bound
    assert np.all(iris.triplet_margins(iris_result.metric, c.triplets) > -0.05)
    assert c.lower == pytest.approx(c.dual_scale * c.multipliers.sum(), rel=1e-12)


def test_tampered_evidence_does_not_keep_the_bound(iris, iris_result):
    c = iris_result.certificate
    doubled = dual_lower_bound(iris, c.triplets, 2 * c.multipliers)  # clipped at mu, then scaled
    assert doubled.lower <= IRIS_OPTIMUM * (1 + 1e-9)
    assert dual_lower_bound(iris, c.triplets, -c.multipliers).lower == 0.0
    shuffled = np.random.default_rng(0).permutation(c.multipliers)  # on the wrong triplets
    assert dual_lower_bound(iris, c.triplets, shuffled).lower < 0.99 * c.lower


def test_budget_stops_early_without_converging(iris):
    r = solve(iris, max_iter=2)
    assert not r.converged and r.status == "max_iter" and r.relative_gap > 1e-6
    assert "max_iter=2" in r.message and r.n_iter <= 2
    assert r.lower <= IRIS_OPTIMUM * (1 + 1e-9) <= r.upper * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_bounds_bracket_the_exact_optimum_on_random_instances(seed):
    rng = np.random.default_rng(seed)
    n, d, classes = rng.integers(20, 40), rng.integers(2, 5), rng.integers(2, 4)
    X, y = make_blobs(int(n), int(d), centers=int(classes), cluster_std=rng.uniform(1, 4), random_state=seed)
    problem = LMNNProblem(X, y, k=int(rng.integers(1, 4)), mu=float(rng.choice([0.2, 0.5, 0.8])))
    exact = solve_lmnn(problem, method="full", tol=1e-8)
    fast = solve(problem, max_iter=int(rng.choice([3, 1000])))
    assert fast.lower <= exact.certificate.upper * (1 + 1e-9)
    assert fast.upper >= exact.certificate.lower * (1 - 1e-9)
    if fast.converged:
        assert fast.upper <= exact.certificate.upper * (1 + 1e-6)


def test_optimum_is_invariant_to_feature_scales(iris, iris_result):
    mapped = LMNNProblem(iris.X @ np.diag([1e3, 1.0, 1e-3, 7.0]), iris.y, mu=iris.mu,
                         targets=iris.targets)
    r = solve(mapped)
    assert r.converged and r.upper == pytest.approx(iris_result.upper, rel=2e-6)


def test_an_ill_conditioned_map_finds_the_optimum_but_claims_only_what_float64_proves(iris, iris_result):
    # cond(A) = 2.3e6: eq. 14 at the mapped metric, evaluated in float64 on the mapped
    # inputs, errs by about 1e-5 of its value (an 80-bit reference gives 226.7394901 where
    # float64 gives 226.73741), so a gap of 1e-6 cannot be proved in these coordinates.
    A = np.diag([1e3, 1.0, 1e-3, 7.0]) @ np.random.default_rng(3).normal(size=(4, 4))
    mapped = LMNNProblem(iris.X @ A, iris.y, mu=iris.mu, targets=iris.targets)
    r = solve(mapped, max_iter=100)
    c = r.certificate
    assert abs(c.upper - iris_result.upper) <= c.upper_error + iris_result.certificate.upper_error
    assert not r.converged and "known only to" in r.message
    c.verify()


def test_mu_zero_is_solved_by_the_zero_metric(iris):
    r = solve(LMNNProblem(iris.X, iris.y, k=3, mu=0.0))
    assert r.converged and r.upper == 0.0 and r.lower == 0.0 and not r.metric.any()


@pytest.mark.parametrize("mu", [5e-324, 1e-300, 1e-12])
def test_a_mu_so_small_that_the_zero_metric_is_within_atol_is_solved_by_it(iris, mu):
    # 5e-324 and 1e-300 overflowed the smoothing's gamma / mu into NaN before
    problem = LMNNProblem(iris.X, iris.y, k=3, mu=mu)
    r = solve(problem)
    assert r.converged and r.n_iter == 0 and not r.metric.any() and "so small" in r.message
    assert r.upper == pytest.approx(mu * problem.n_triplets) and r.certificate.proves_zero
    assert r.certificate.verify().certified


def test_just_above_the_atol_floor_mu_is_iterated_and_proved_by_its_gap(iris):
    problem = LMNNProblem(iris.X, iris.y, k=3, mu=1e-6 / iris.n_triplets * 4)
    r = solve(problem)
    assert r.converged and r.n_iter > 0 and r.relative_gap <= 1e-6


def test_mu_one_reports_honest_bounds(iris):
    problem = LMNNProblem(iris.X[::3], iris.y[::3], k=2, mu=1.0)
    r = solve(problem, max_iter=200)
    assert 0.0 <= r.lower <= r.upper * (1 + 1e-9)
    assert r.converged == (r.relative_gap <= 1e-6)


def test_callback_sees_every_stage_with_growing_bounds(iris_solve):
    r, stages = iris_solve
    assert len(stages) == r.n_stages >= 2
    assert [s.stage for s in stages] == list(range(len(stages)))
    assert all(b.upper <= a.upper and b.lower >= a.lower for a, b in zip(stages, stages[1:]))
    assert all(b.gamma <= a.gamma for a, b in zip(stages, stages[1:]))


def test_every_search_that_finds_a_better_metric_extends_the_upper_path(iris, iris_solve):
    r, stages = iris_solve
    seconds, uppers = map(np.array, zip(*r.upper_path))
    assert np.all(np.diff(seconds) >= 0) and np.all(np.diff(uppers) < 0)
    start = best_scale(iris, np.eye(4)) * np.eye(4)
    assert uppers[0] == pytest.approx(iris.objective(start), rel=1e-9)  # the first search, at the start
    ends = {s.upper for s in stages}
    assert ends <= set(uppers) and uppers[-1] == stages[-1].upper
    assert len(uppers) > len(ends) + 1  # searches within the stages found better metrics too


@pytest.mark.parametrize("data, class_metrics, widenings", [
    ("blobs", False, 0), ("iris", True, 0), ("blobs", True, 3), ("wine", True, 3)])
def test_the_first_width_of_class_metrics_widens_while_fewer_triplets_are_in_transition_than_parameters(
        data, class_metrics, widenings):
    X, y = {"iris": lambda: load_iris(return_X_y=True), "wine": lambda: load_wine(return_X_y=True),
            "blobs": lambda: make_blobs(60, 8, centers=3, cluster_std=4.0, random_state=0)}[data]()
    problem = LMNNProblem(X, y, k=2 if data == "blobs" else 3, mu=0.5)
    d = problem.n_features
    if class_metrics:  # from the LMNN optimum, as by default
        clusters, start = problem.label_codes, solve(problem).metric
        metrics, parameters = np.stack([start] * 3), 3 * d * d
    else:  # blobs: 24 triplets in transition at 0.1, fewer than its 64 parameters
        clusters, start = None, None
        metrics, parameters = best_scale(problem, np.eye(d)) * np.eye(d), d * d
    h = problem.triplet_margins(metrics, problem.all_triplets(), clusters)  # brute force, every triplet
    expected = 0.1
    for _ in range(3 if class_metrics else 0):  # one metric is not widened
        if np.count_nonzero((h > 0) & (h < expected)) >= parameters:
            break
        expected /= 0.3
    first = solve(problem, start, clusters=clusters, max_iter=1).stages[0].gamma
    assert first == pytest.approx(expected, rel=1e-12)
    assert first == pytest.approx(0.1 / 0.3 ** widenings, rel=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    ({"max_iter": -1}, "max_iter"), ({"tol": -1.0}, "tol"), ({"tol": float("nan")}, "tol"),
    ({"search": "kd"}, "search"), ({"band": -0.1}, "band"),
])
def test_bad_options_raise(iris, kwargs, match):
    with pytest.raises(ValueError, match=match):
        solve(iris, **kwargs)


def test_non_psd_start_is_rejected(iris):
    with pytest.raises(ValueError, match="positive semidefinite"):
        solve(iris, M0=np.diag([1.0, 1.0, 1.0, -1.0]))


@pytest.mark.slow
def test_importing_the_fast_solver_does_not_load_cvxpy():
    code = "import sys, fast_solver; fast_solver.solve; assert 'cvxpy' not in sys.modules, 'cvxpy loaded'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_package_exports():
    assert fast_solver.solve is solve
    assert {"LMNN", "solve", "FastLMNNResult", "impostor_pairs"} <= set(fast_solver.__all__)


def test_binary_features_with_a_singular_pull_matrix_run_and_say_why_they_stop():
    # Thresholded iris (every third point): many points coincide with their targets, so the
    # pull matrix is singular on the data range. The solver must run (no LinAlgError), stay
    # honest (a lower bound below the exact optimum, not converged) and say why.
    X, y = load_iris(return_X_y=True)
    problem = LMNNProblem((X[::3] > 3).astype(float), y[::3], k=3, mu=0.5)
    r = solve(problem, max_iter=200)
    exact = solve_lmnn(problem, method="aggregated")
    assert not r.converged and 0 <= r.lower <= exact.upper and exact.lower <= r.upper
    assert "is singular in float64 on the data range" in r.message


@pytest.mark.parametrize("clusters", [None, np.arange(30) % 3])
def test_fewer_points_than_features_end_at_once_at_the_zero_optimum(clusters):
    """30 points in 40 dimensions: within-class differences leave a null space of the pull
    matrix on which every pair of different labels differs, so a metric there puts every
    impostor beyond the margin with every target distance 0, and eq. 14's optimum is 0. No
    relative gap proves 0, but eq. 14 at the metric within the certificate's atol does: the
    solve ends at once, converged, instead of iterating (it had spun 60 stages and ended
    claiming max_iter spent), and the exact side certifies the same zero optimum."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 40)), np.arange(30) % 3
    problem = LMNNProblem(X, y, k=3, mu=0.5)
    r = solve(problem, clusters=clusters)
    assert r.status == "converged" and r.n_iter == 0 and r.lower == 0.0
    assert "optimum is 0" in r.message and r.certificate.proves_zero
    assert r.certificate.verify().certified
    metrics = r.metric if clusters is not None else np.broadcast_to(r.metric, (1, 40, 40))
    owner = np.zeros(30, int) if clusters is None else clusters
    D = np.einsum("ilp,lpq,ilq->il", X[:, None] - X[None], metrics[owner], X[:, None] - X[None])
    i = np.repeat(np.arange(30), 3)
    target_d = D[i, problem.targets.ravel()]
    assert np.abs(target_d).max() < 1e-9
    other = y[i][:, None] != y[None, :]
    assert np.all(D[i][other] >= 1.0 + target_d.max())  # every hinge is 0
    exact = solve_lmnn(problem.with_clusters(clusters), method="cutting-plane")
    assert exact.certified and exact.certificate.proves_zero and exact.upper < 1e-6


def test_a_solve_that_runs_out_of_stages_says_so(monkeypatch):
    X, y = load_iris(return_X_y=True)
    monkeypatch.setattr(solver, "OPTIONS", replace(solver.OPTIONS, max_stages=2))
    r = solve(LMNNProblem(X[::3], y[::3], k=3, mu=0.5), tol=1e-9)
    assert len(r.stages) == 2 and r.n_iter < 1000
    assert r.status == "stalled" and r.message.startswith("not converged: 2 stages ended")


def test_timings_name_every_part_of_the_solve():
    """Multi-metric LMNN on ten classes of digits, where saddle escapes run: search, the first
    phase, Newton, escapes and bounds are timed, and together they take no more than the whole."""
    from validation.instances import builtin_instances

    problem = next(i for i in builtin_instances() if i.name.startswith("ten-classes")).problem()
    result = solve(problem, clusters=problem.label_codes, max_iter=80)  # escapes within the first 80
    parts = ("search", "quasi_newton", "newton", "escape", "bounds")
    assert set(result.timings) == {*parts, "total"}
    assert result.timings["escape"] > 0
    assert sum(result.timings[p] for p in parts) <= result.timings["total"]


@pytest.mark.parametrize("clusters", [None, np.arange(14) % 2])
def test_targets_that_all_coincide_are_solved_in_closed_form(clusters):
    # One binary feature, each value at least three times per class: with k=2 every target
    # distance is exactly 0, so eq. 14 is mu times the triplets whose impostor equals its
    # point (2 targets x 25 such pairs x 2 classes = 100 triplets, 0.2 each), at any metric
    # large enough (found by the property-based tests, where the solver ran to a NaN metric).
    X = np.array([1, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1], float)[:, None]
    problem = LMNNProblem(X, np.repeat([0, 1], 7), k=2, mu=0.2)
    r = solve(problem, clusters=clusters)
    assert r.converged and r.message.startswith("converged: every point coincides")
    assert r.upper == pytest.approx(20.0, abs=1e-9) and r.lower == pytest.approx(20.0, abs=1e-9)
    r.certificate.verify()
    assert solve_lmnn(problem).upper == pytest.approx(20.0, abs=1e-6)


def test_each_pair_of_candidates_is_proved_once(iris, monkeypatch):
    """The certificate that ends the solve is the result's, not proved again; every proof
    is of a different (metric, multipliers) pair."""

    proved = []

    def counting_prove(problem, metric, triplets, multipliers, **kwargs):
        proved.append((np.asarray(metric).copy(), np.asarray(multipliers).copy()))
        return original(problem, metric, triplets, multipliers, **kwargs)

    original = solver.prove_projected
    monkeypatch.setattr(solver, "prove_projected", counting_prove)
    result = solve(iris, tol=1e-6)
    assert result.converged and len(proved) >= 1
    np.testing.assert_array_equal(proved[-1][0], result.certificate.metric)
    for a, b in zip(proved, proved[1:]):
        assert not (np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))


def test_only_multipliers_that_can_reach_tol_are_proved(iris, monkeypatch):
    """No scale or repair raises the bound above the sum of the multipliers, so a certificate
    whose multipliers sum to less than (1 - tol) of the upper bound is not attempted (on iris
    the stage before the last one was, and failed: 6.6e-6 against tol 1e-6)."""
    from lmnn_sdp.certificates.bounds import relative_gap

    reach = []

    def recording_prove(problem, metric, triplets, multipliers, **kwargs):
        certificate = original(problem, metric, triplets, multipliers, **kwargs)
        reach.append(relative_gap(certificate.upper, np.clip(multipliers, 0, problem.mu).sum()))
        return certificate

    original = solver.prove_projected
    monkeypatch.setattr(solver, "prove_projected", recording_prove)
    result = solve(iris, tol=1e-6)
    assert result.converged
    assert reach and max(reach) <= 1e-6 * (1 + solver.OPTIONS.provable_margin)


def test_a_certificate_that_cannot_prove_tol_ends_the_solve_as_stalled(iris, monkeypatch):
    """When every certificate falls short although the estimated gap is far below tol, the
    solve stops (stalled, not converged) instead of spending max_iter."""
    import dataclasses


    original = solver.prove_projected

    def short_of_tol(*args, **kwargs):
        cert = original(*args, **kwargs)
        return dataclasses.replace(cert, certified=False, relative_gap=max(cert.relative_gap, 5e-6))

    monkeypatch.setattr(solver, "prove_projected", short_of_tol)
    result = solve(iris, tol=1e-6, max_iter=1000)
    assert result.status == "stalled" and not result.converged and not result.certified
    assert result.n_iter < 1000
    assert result.message.startswith("not converged: the estimated gap ")
    assert "is below tol, but the certificate proves only 5e-06" in result.message


def test_after_a_failed_proof_the_next_waits_for_half_the_estimated_gap(iris, monkeypatch):
    """A failed proof is not retried stage after stage at the same estimate: the stages
    aim at half the estimated gap it failed at before the next proof."""
    import dataclasses


    original, stages, proofs = solver.prove_projected, [], []

    def short_of_tol(*args, **kwargs):
        proofs.append(stages[-1].relative_gap)  # the estimate of the stage just recorded
        cert = original(*args, **kwargs)
        return dataclasses.replace(cert, certified=False, relative_gap=max(cert.relative_gap, 5e-6))

    monkeypatch.setattr(solver, "prove_projected", short_of_tol)
    result = solve(iris, tol=1e-6, max_iter=1000, callback=stages.append)
    assert result.status == "stalled"
    assert len(proofs) >= 3
    assert all(later <= solver.OPTIONS.retry_below * earlier for earlier, later in zip(proofs, proofs[1:]))


def test_a_stage_that_ends_just_above_tol_is_followed_by_a_lighter_shrink():
    """Each stage's width is the last one's times ``max(SHRINK, sqrt(tol / (2 gap)))``, the gap
    estimated at the last one's end: wine to 1e-4 ends its second stage at 1.4e-4, so the third
    shrinks by about 0.59, not 0.3, and proves tol."""
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    result = solve(LMNNProblem(X, y, k=3, mu=0.5), tol=1e-4)
    assert result.converged
    widths = [(stage.gamma, stage.relative_gap) for stage in result.stages]
    for (gamma, gap), (width, _) in zip(widths, widths[1:]):
        assert width == pytest.approx(gamma * max(solver.OPTIONS.shrink, np.sqrt(1e-4 / (2 * gap))), rel=1e-12)
    assert widths[-1][0] / widths[-2][0] > 0.5  # a lighter shrink than shrink = 0.3


def test_a_newton_call_that_raises_the_objective_over_all_triplets_is_taken_back(iris, monkeypatch):
    """Within a stage, ``F_gamma`` over all triplets never rises from one Newton call's start to
    the next (where the set holds every triplet with a loss): a call that raised it once the
    search after it found the pairs it had activated starts again from where it began (iris with
    class metrics and Newton from the start, no first phase: one such call, at the first width)."""
    starts, newton = [], solver._Run._newton

    def spy(self, objective, L, gamma, budget, bar, radius=None):
        if radius is not None or self._searched_at(objective, L):
            starts.append((gamma, objective.evaluate(L, gamma).value, radius is not None))
        return newton(self, objective, L, gamma, budget, bar, radius)

    monkeypatch.setattr(solver._Run, "_newton", spy)
    monkeypatch.setattr(solver, "OPTIONS", replace(solver.OPTIONS, quasi_newton_window=0))  # Newton from the start
    result = solve(iris, np.eye(4), clusters=iris.label_codes, tol=1e-6)
    for (gamma, before, _), (width, after, retracted) in zip(starts, starts[1:]):
        if width == gamma:
            assert after <= before * (1 + 1e-12)
            assert not retracted or after == pytest.approx(before, rel=1e-12)
    assert result.converged and result.n_retreats == sum(retracted for _, _, retracted in starts) >= 1


def test_renewed_working_sets_keep_the_multipliers_of_the_pairs_they_share(iris):
    """After a multiplier update, an objective on another working set shifts each pair it
    shares with the update by that pair's multipliers, and the others by none."""
    from fast_solver.checkpoint import as_checkpoint
    from fast_solver.lmnn.smoothed import WorkingSet
    from fast_solver.lmnn.solver import _Run

    run = _Run(iris, 0.5, "auto", 1e-6, as_checkpoint(None, kind="lmnn", fingerprint=""), solver.OPTIONS)
    n, k = iris.n_samples, iris.k
    old = WorkingSet.from_pairs(np.array([0, 0, 3, 7]), np.array([20, 25, 40, 11]), n)
    multipliers = np.arange(4 * k, dtype=float).reshape(4, k) / (4 * k) * iris.mu
    run.state.prior = (old.keys(), multipliers)
    new = WorkingSet.from_pairs(np.array([0, 3, 5, 7]), np.array([25, 40, 1, 12]), n)
    objective = run._objective(new)
    np.testing.assert_array_equal(objective.prior, [multipliers[1], multipliers[2], np.zeros(k), np.zeros(k)])


@pytest.fixture(scope="module")
def cancer():
    """150 points of 30 features (every other one of the first 300) whose LMNN optimum has low
    rank: ``L`` is cut to 11 rows (k=3, mu=0.5)."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return LMNNProblem(X[:300:2], y[:300:2], k=3, mu=0.5)


def _widths(monkeypatch):
    """The rows of every ``L`` evaluated from now on, and the widths before and after every escape."""
    from fast_solver.lmnn.smoothed import SmoothedObjective

    widths, escapes = [], []
    evaluate, escape = SmoothedObjective.evaluate, solver.escape

    def spy_evaluate(self, L, gamma, dual=True):
        widths.append(L.shape[1])
        return evaluate(self, L, gamma, dual)

    def spy_escape(objective):
        moved = escape(objective)
        escapes.append((objective.current.L.shape[1], None if moved is None else moved.shape[1]))
        return moved

    monkeypatch.setattr(SmoothedObjective, "evaluate", spy_evaluate)
    monkeypatch.setattr(solver, "escape", spy_escape)
    return widths, escapes


@pytest.mark.parametrize("clusters", [False, True], ids=["lmnn", "class metrics"])
def test_a_low_rank_optimum_is_reached_on_narrow_factors_and_escapes_stay_narrow(cancer, monkeypatch, clusters):
    """With low-rank metrics of 30 coordinates, ``L`` is cut to fewer rows, escapes from a narrow
    ``L`` add rows, and the certified optimum is the one of square factors."""
    start = solve(cancer, tol=1e-6).metric if clusters else None  # the LMNN optimum, of low rank
    options = dict(clusters=cancer.label_codes if clusters else None, tol=1e-6)
    widths, escapes = _widths(monkeypatch)
    narrow = solve(cancer, start, **options)
    assert narrow.converged
    assert min(widths) < 0.75 * 30
    assert (widths[0] < 30) == clusters  # class metrics start narrow, from the LMNN optimum
    assert any(before < after < 30 for before, after in escapes if after is not None)
    monkeypatch.undo()
    monkeypatch.setattr(solver, "OPTIONS", replace(solver.OPTIONS, narrow_below=0.0))  # never narrowed
    widths, _ = _widths(monkeypatch)
    square = solve(cancer, start, **options)
    assert square.converged and set(widths) == {30}
    assert narrow.upper == pytest.approx(square.upper, rel=2e-6)
    assert max(narrow.lower, square.lower) <= min(narrow.upper, square.upper) * (1 + 1e-12)


@pytest.mark.parametrize("decay, expected", [(0.955, "cut"), (0.999, "identity")])
def test_the_default_start_is_euclidean_on_the_principal_directions_that_hold_the_variance(decay, expected):
    """Brute force: the fewest leading principal directions whose variance reaches 97% of the
    total (at least 32); the identity when they are more than three quarters of d = 48."""
    rng = np.random.default_rng(1)
    d = 48
    X = rng.normal(size=(300, d)) * decay ** np.arange(d) @ np.linalg.qr(rng.normal(size=(d, d)))[0]
    y = np.arange(300) % 3
    problem = LMNNProblem(X, y, k=2)
    Xc = X - X.mean(0)
    _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    share = np.cumsum(s**2) / np.sum(s**2)
    q = max(32, next(i + 1 for i in range(d) if share[i] >= 0.97))
    M0 = euclidean_start(problem, solver.OPTIONS)
    if expected == "cut":
        assert 32 < q <= 36  # the data leave out more than a quarter of the directions
        np.testing.assert_allclose(M0, Vt[:q].T @ Vt[:q], atol=1e-10)
        assert np.linalg.matrix_rank(M0, tol=1e-8) == q
    else:
        assert q > 36
        np.testing.assert_array_equal(M0, np.eye(d))
    result = solve(problem, tol=1e-3)  # the default start, certified from it
    assert result.converged and result.certificate.verify().certified


def test_the_default_start_keeps_every_direction_of_few_features(iris):
    np.testing.assert_array_equal(euclidean_start(iris, solver.OPTIONS), np.eye(4))


def test_narrowed_keeps_the_rank_and_a_margin_and_changes_the_metric_below_the_floor():
    rng = np.random.default_rng(0)
    W = np.linalg.qr(rng.normal(size=(40, 40)))[0]
    singular = np.concatenate([np.geomspace(1.0, 1e-3, 10), np.full(30, 1e-6)])  # rank 10 above the floor
    L = (singular[:, None] * W.T)[None]  # (1, 40, 40)
    cut = narrowed(L, solver.OPTIONS)
    assert cut.shape == (1, 10 + solver.OPTIONS.min_margin, 40)
    M, M_cut = L[0].T @ L[0], cut[0].T @ cut[0]
    assert np.abs(M - M_cut).max() <= 1e-11
    np.testing.assert_allclose(np.linalg.svd(cut[0], compute_uv=False), singular[:18], rtol=1e-9)
    assert narrowed(cut, solver.OPTIONS) is cut  # already narrow: another cut would save under a quarter
    wide = (np.concatenate([np.ones(32), np.full(8, 1e-6)])[:, None] * W.T)[None]
    assert narrowed(wide, solver.OPTIONS) is wide  # 32 + 8 rows would be kept

