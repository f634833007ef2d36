"""Constraint generation for multi-metric LMNN (sec. 5.2): certified solves past the full SDP.

Both schemes of single-metric LMNN carry over unchanged, because the dual of
sec. 5.2 (``multi_metric``) has the same shape: box-constrained multipliers, one
per triplet, now with one PSD matrix per cluster.

``mm_cutting_plane`` solves the SDP on a working set of triplets, adds every
triplet outside it with margin above ``-add_band`` (exact blockwise search with
eq. 16 distances), drops those far inside the margin with a zero multiplier,
and stops when no triplet outside the working set is violated: the omitted
hinges are then zero, the restricted optimum is the full one, and the
working set's multipliers (padded with zeros) certify it (``cutting_plane.py``).

``mm_aggregated`` keeps only the triplets near the margin in the SDP: at the
metrics of round ``r`` those with margin above ``band`` get tied multipliers
``beta_g * mu``, those within the band their own, the rest none
(``multi_metric_certificate.mm_complementary_multipliers``). The PSD duals of
that SDP minimise a lower model of eps (``aggregated.py``); a line search on
``mm_objective`` between the current metrics and that minimiser gives the next
round. Every round's multipliers are dual feasible for the whole problem once
scaled, so each round's lower bound is valid; the answer is judged only by
the certificate.

How the multipliers are tied decides the speed. One ``beta`` for all (as in
``aggregated.py``) lets the model trade hinges across 26 metrics, and on Letter
Recognition (n=500) it was still at a relative gap of 0.94 after 50 rounds.
One ``beta`` per cluster pair ``(c(j), c(l))`` reached 8.7e-3 in 50 rounds; one
per anchor and cluster pair ``(i, c(j), c(l))`` (``multi_metric_sdp.FixedGroups``,
the default) reached the optimum in 22 rounds (157 s). Starting from the
single-metric optimum, as the paper does, did not help.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize_scalar
from tqdm.auto import tqdm

from lmnn_sdp.aggregated import AggregatedRound
from lmnn_sdp.bounds import relative_gap
from lmnn_sdp.cutting_plane import best_scaled_identity, generate_constraints, unique_rows
from lmnn_sdp.formulation import ReducedSpace, reduced_space
from lmnn_sdp.multi_metric import MMResult, formulation_solver, lift_psd, mm_certified_result
from lmnn_sdp.multi_metric_certificate import (
    certify_mm,
    check_candidate_metrics,
    mm_complementary_multipliers,
    mm_dual_lower_bound,
)
from lmnn_sdp.multi_metric_objective import mm_active_triplets, mm_objective, mm_triplet_margins
from lmnn_sdp.multi_metric_sdp import push_out_of_null_spaces
from lmnn_sdp.problem import LMNNProblem, check_triplets


def mm_cutting_plane(problem: LMNNProblem, clusters: np.ndarray, solver: str = "CLARABEL", *,
                     working_set=None, start=None, tol: float = 1e-6, add_band: float = 0.05,
                     drop_band: float | None = 0.5, max_rounds: int = 30,
                     formulation: str = "dual", solver_options: dict | None = None,
                     progress: bool = False) -> MMResult:
    """Multi-metric LMNN by cutting planes; ``clusters`` (n,) validated, 0..C-1.

    ``working_set`` (T, 3) is the starting set; default: the triplets within
    ``add_band`` of the margin at ``start`` (metrics (C, d, d); default the best
    scaled identity of ``cutting_plane`` for every cluster)."""
    solve = formulation_solver(formulation)
    space = reduced_space(problem)
    if working_set is None:
        metrics = starting_metrics(problem, space, clusters, start)
        working_set = mm_active_triplets(problem, metrics, clusters, band=add_band)
    working = unique_rows(check_triplets(working_set, problem.n_samples))

    def solve_round(triplets):
        solution = solve(problem, space, clusters, triplets, solver, solver_options=solver_options)
        return solution, mm_certified_result(problem, space, clusters, solution, triplets, solver,
                                             "cutting-plane", tol)

    return generate_constraints(
        working, solve_round, lambda M: mm_active_triplets(problem, M, clusters, band=add_band),
        lambda M, t: mm_triplet_margins(problem, M, clusters, t), problem.mu, drop_band,
        max_rounds, "multi-metric cutting plane", progress)


def mm_aggregated(problem: LMNNProblem, clusters: np.ndarray, solver: str = "CLARABEL", *,
                  start=None, tol: float = 1e-6, band: float = 0.05, max_rounds: int = 100,
                  solver_options: dict | None = None, progress: bool = False) -> MMResult:
    """Multi-metric LMNN by aggregated active sets (module docstring).

    ``start`` is metrics (C, d, d), e.g. a single-metric optimum repeated per
    cluster as the paper initialises; default the best scaled identity. Stops at
    ``tol``, after ``max_rounds``, or once three rounds in a row shrank the gap by
    less than 1%. A cap on the free triplets per round (tried: 2,000 and 5,000 on
    Letter Recognition, n=1000, where the optimum has about 3,500) slowed it down."""
    space = reduced_space(problem)
    metrics = starting_metrics(problem, space, clusters, start)
    objective = lambda m: mm_objective(problem, m, clusters)  # noqa: E731
    upper, lower, best = objective(metrics), 0.0, None
    rounds, build, solve_time, stalled = [], 0.0, 0.0, 0
    bar = tqdm(total=max_rounds, desc="multi-metric aggregated", disable=not progress,
               leave=False)
    for _ in range(max_rounds):
        begin = time.perf_counter()
        triplets, multipliers, n_free, sol = mm_complementary_multipliers(
            problem, space, clusters, metrics, band, solver, solver_options)
        build, solve_time = build + sol.build_time, solve_time + sol.solve_time
        multipliers = np.nan_to_num(multipliers)
        bound = mm_dual_lower_bound(problem, clusters, triplets, multipliers, space)
        if bound.lower > lower:
            lower, best = bound.lower, (triplets, multipliers)
        target = push_out_of_null_spaces(problem, space, clusters, lift_psd(space, sol.M_reduced))
        step, metrics, upper = line_search(objective, metrics, upper, target)
        gap = relative_gap(upper, lower)
        rounds.append(AggregatedRound(len(triplets) - n_free, n_free, step, upper, lower, gap,
                                      sol.status, time.perf_counter() - begin))
        bar.update()
        bar.set_postfix(free=n_free, gap=f"{gap:.2g}")
        stalled = stalled + 1 if len(rounds) > 1 and gap > 0.99 * rounds[-2].relative_gap else 0
        if gap <= tol or stalled == 3:
            break
    bar.close()
    return _aggregated_result(problem, space, clusters, metrics, best, rounds, solver, tol,
                              build, solve_time)


def _aggregated_result(problem, space, clusters, metrics, best, rounds, solver, tol, build,
                       solve_time) -> MMResult:
    """Certify the final metrics with the best round's multipliers or by complementary
    slackness, whichever bounds higher; the margin band of the latter is widened
    (1e-3, 3e-3, 1e-2) until the gap is certified, since the split near the margin
    decides how much of Clarabel's last digits the scaling into the dual cone costs
    (Letter Recognition, n=500: relative gap 3e-6 at 1e-3, 8e-7 at 3e-3)."""
    certificates = []
    if best is not None and best[0].size:
        certificates.append(certify_mm(problem, metrics, clusters, triplets=best[0],
                                       multipliers=best[1], tol=tol, space=space))
    for band in (1e-3, 3e-3, 1e-2):
        if any(c.certified for c in certificates):
            break
        certificates.append(certify_mm(problem, metrics, clusters, tol=tol, band=band,
                                       solver=solver, space=space))
    certificate = max(certificates, key=lambda c: c.lower)
    triplets, multipliers = best if best is not None else (np.empty((0, 3), np.intp), np.zeros(0))
    return MMResult(M=metrics, objective=certificate.upper, certificate=certificate,
                    certificates={"aggregated rounds": certificate}, status=rounds[-1].status,
                    solver=solver, method="aggregated", n_triplets=len(triplets),
                    triplets=triplets, multipliers=multipliers, build_time=build,
                    solve_time=solve_time, rounds=rounds, clusters=clusters)


def line_search(objective: Callable[[np.ndarray], float], start: np.ndarray, value: float,
                target: np.ndarray) -> tuple[float, np.ndarray, float]:
    """Least ``objective`` on the segment from ``start`` to ``target`` (any array shape).

    ``value`` is ``objective(start)``; the objective is convex on the segment.
    Returns ``(step, point, objective(point))``; the full step when it does not
    increase the objective, no step when nothing on the segment improves."""
    full = objective(target)
    if full <= value:
        return 1.0, target, full
    found = minimize_scalar(lambda t: objective(start + t * (target - start)), bounds=(0.0, 1.0),
                            method="bounded", options={"xatol": 1e-9})
    if found.fun >= value:
        return 0.0, start, value
    return float(found.x), start + found.x * (target - start), float(found.fun)


def starting_metrics(problem: LMNNProblem, space: ReducedSpace, clusters: np.ndarray,
                     start=None) -> np.ndarray:
    """``start`` validated (C, d, d), or the best scaled identity for every cluster; then
    killable impostors are pushed out (``multi_metric_sdp.push_out_of_null_spaces``)."""
    if start is not None:
        metrics = check_candidate_metrics(problem, start, clusters)[0]
    else:
        identity = best_scaled_identity(problem, space)
        metrics = np.repeat(identity[None], int(clusters.max()) + 1, axis=0)
    return push_out_of_null_spaces(problem, space, clusters, metrics)
