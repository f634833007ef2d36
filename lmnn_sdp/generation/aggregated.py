"""Exact LMNN and multi-metric LMNN through aggregated active sets: SDPs as small as the margin.

At an optimum of eq. 14 most violated triplets sit strictly above the margin
(their multiplier is ``mu``) and most others strictly below it (multiplier 0);
only the triplets *at* the margin need an individual multiplier.

Round ``r`` at the metric ``M_r`` splits the triplets by their margin
``h_t = 1 + D_ij - D_il``: the working set ``W`` and the triplets within ``band``
of the margin, ``N``, are free; the others above the band, ``A``, are tied in
groups ``A_g``, one per anchor ``i`` (and cluster pair ``(c(j), c(l))`` with several
metrics); the rest are omitted. It then solves the model

    min_M  (1-mu_s) <P, M> + mu_s sum_g [sum_{t in A_g} h_t(M)]_+ + mu_s sum_{t in N u W} [h_t(M)]_+,

a lower model of eq. 14 (a hinge of a sum is at most the sum of hinges, and
omitted hinges are >= 0) that equals eq. 14 near ``M_r``; ``mu_s = mu`` except
within ``sdp.PULL_FLOOR`` of 1 (``sdp.search_mu``). Its dual is the SDP of
``sdp.complementary_multipliers``: tied multipliers ``beta_g mu_s`` on ``A_g``, free
ones on ``N u W``, so the SDP holds only ``|N u W|`` triplets and one ``beta`` per
group. Its multipliers lie in
``[0, mu]``; scaled into the dual cone (``bounds.dual_lower_bound``) they bound the
whole problem every round, and the PSD constraint's dual is the model's minimiser
``M'``.

``M'`` shows where the model is wrong: tied triplets with a negative margin at
``M'`` (the hinge of their group's sum credits them) and omitted ones violated
there. Where the pull is cheap (``mu`` near 1) the model turns the metric to clear
part of a group at the expense of the rest and of omitted triplets, so these
*misjudged* triplets are many and the line search stalls on short steps. They join
``W``, largest error ``|h_t(M')|`` first and at most ``max(add_ratio |N u W|,
add_floor)`` a round, unless they lie below ``-drop_band`` at the next metric
(more makes fewer rounds with larger SDPs); free triplets
stay in ``W`` while their multiplier is strictly inside ``(0, mu_s)`` (at the
margin of ``M'``). A line search on eq. 14 between ``M_r`` and ``M'``, then along
the ray ``s M`` (``scaling.best_scale``), gives ``M_{r+1}``. When the model is right
the step lands on the optimum and the bounds meet. The answer is judged only by
the certificate.

With several metrics the hinges are those of eq. 16 and killable impostors of
singular clusters are pushed out of the margin after every step
(``sdp.push_out_of_null_spaces``). The loop stops at ``tol``, after
``max_rounds``, or once three rounds in a row shrank the gap ``upper - lower``
by less than 1% and misjudged no triplet. The band is the same in every round.

Design note: docs/design/constraint-generation.md ("Aggregated active sets", "The ends of
mu's range").
"""


from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from lmnn_sdp.candidate import certify
from lmnn_sdp.certificates.bounds import dual_lower_bound, relative_gap, snap_multipliers
from lmnn_sdp.certificates.certificate import prove
from lmnn_sdp.core.checks import check_max_iter, check_tol
from lmnn_sdp.core.clusters import lift_metrics
from lmnn_sdp.core.line_search import segment_search
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import reduced_space
from lmnn_sdp.formulations.sdp import complementary_multipliers, search_mu
from lmnn_sdp.generation.cutting_plane import new_rows, unique_rows
from lmnn_sdp.generation.scaling import best_scale
from lmnn_sdp.generation.start import starting_metrics
from lmnn_sdp.result import SDPResult, stop_status

CERTIFY_BANDS = (1e-3, 3e-3, 1e-2)
INTERIOR = 1e-6  # a multiplier within this fraction of 0 or mu_s counts as at the box's end


@dataclass(frozen=True)
class AggregatedRound:
    """One round: the split, the SDP, and the bounds after it."""

    aggregated: int  # |A|, triplets with tied multipliers
    sdp_triplets: int  # |N u W|, triplets with their own multiplier in the SDP
    misjudged: int  # triplets the model got wrong at its minimiser, at most max(add_ratio |N u W|, add_floor)
    step: float  # line-search step towards the model's minimiser
    scale: float  # then the best multiple of the metric (``scaling.best_scale``)
    upper: float  # the objective after the step
    lower: float  # best lower bound so far
    relative_gap: float
    solver_status: str
    seconds: float


def solve_aggregated(problem: LMNNProblem, solver: str = "CLARABEL", *, start=None, tol: float = 1e-6,
                     band: float = 0.05, drop_band: float = 0.5, add_ratio: float = 1.0,
                     add_floor: int = 1000, max_rounds: int = 100,
                     solver_options: dict | None = None, progress: bool = False) -> SDPResult:
    """LMNN, or multi-metric LMNN for a problem with clusters, by aggregated active sets
    (module docstring); ``start`` is a metric (d, d), or metrics (C, d, d) with clusters;
    ``max_rounds`` an integer >= 1; ``band``, ``drop_band`` and ``add_ratio`` real numbers >= 0
    (the rule of tolerances, ``check_tol``)."""
    check_max_iter(max_rounds, "max_rounds")
    for name, value in (("band", band), ("drop_band", drop_band), ("add_ratio", add_ratio)):
        check_tol(value, name)
    space = reduced_space(problem)
    metrics = starting_metrics(problem, space, start)
    objective, mu_s = problem.objective, search_mu(problem.mu)
    upper, lower, best = objective(metrics), 0.0, None
    working = np.empty((0, 3), dtype=np.intp)
    rounds, build, solve, stalled = [], 0.0, 0.0, 0
    bar = tqdm(total=max_rounds, desc="aggregated SDP", disable=not progress, leave=False)
    for _ in range(max_rounds):
        begin = time.perf_counter()
        triplets, multipliers, n_free, sol = complementary_multipliers(
            problem, space, metrics, band, solver, solver_options, free=working, mu=mu_s, by_anchor=True)
        build, solve = build + sol.build_time, solve + sol.solve_time
        multipliers = np.nan_to_num(multipliers)
        bound = dual_lower_bound(problem, triplets, multipliers, space).lower
        if bound > lower:
            lower, best = bound, (triplets, multipliers)
        target = lift_metrics(problem, space, sol.metrics_reduced)
        misjudged = _misjudged(problem, triplets, n_free, target, int(max(add_ratio * n_free, add_floor)))
        step, metrics, upper = segment_search(objective, metrics, upper, target)
        scale, metrics, upper = best_scale(problem, objective, metrics, upper)
        free = slice(len(triplets) - n_free, None)
        working = _working_set(problem, triplets[free], multipliers[free], mu_s, misjudged, metrics, drop_band)
        gap = relative_gap(upper, lower)
        rounds.append(AggregatedRound(len(triplets) - n_free, n_free, len(misjudged), step, scale,
                                      upper, lower, gap, sol.status, time.perf_counter() - begin))
        bar.update()
        bar.set_postfix(free=n_free, gap=f"{gap:.2g}")
        shrank = len(rounds) == 1 or upper - lower < 0.99 * (rounds[-2].upper - rounds[-2].lower)
        stalled = 0 if shrank or len(misjudged) else stalled + 1
        if gap <= tol or stalled == 3:
            break
    bar.close()
    metric = metrics if problem.clusters is not None else metrics[0]
    certificates = _final_certificates(problem, space, metric, best, solver, tol)
    certificate = max(certificates.values(), key=lambda c: c.lower)
    triplets, multipliers = best if best is not None else (np.empty((0, 3), np.intp), np.zeros(0))
    budget_spent = len(rounds) == max_rounds and rounds[-1].relative_gap > tol and stalled < 3
    return SDPResult(certificate=certificate, certificates=certificates,
                     **stop_status(certificate, budget_spent), solver_status=rounds[-1].solver_status, solver=solver,
                     method="aggregated", n_triplets=len(triplets), triplets=triplets,
                     multipliers=multipliers, timings={"build": build, "solve": solve},
                     rounds=rounds)


def _misjudged(problem: LMNNProblem, triplets: np.ndarray, n_free: int, target: np.ndarray,
               most: int) -> np.ndarray:
    """At most ``most`` triplets (m, 3) whose hinge the model got wrong at its minimiser
    ``target`` (C, d, d), largest error ``|h_t(target)|`` first: tied ones (the first
    ``len(triplets) - n_free`` rows) with a negative margin there, which the hinge of the
    sum credits, and triplets outside the model violated there, which it does not charge.
    None when hinges weigh nothing (``mu = 0``)."""
    if problem.mu == 0:
        return triplets[:0]
    tied = triplets[:len(triplets) - n_free]
    margins = problem.triplet_margins(target, tied)
    violated = new_rows(problem.active_triplets(target), triplets)
    found = np.concatenate([tied[margins < 0.0], violated])
    error = np.concatenate([-margins[margins < 0.0], problem.triplet_margins(target, violated)])
    return found[np.argsort(-error, kind="stable")[:max(most, 0)]]


def _working_set(problem: LMNNProblem, free: np.ndarray, multipliers: np.ndarray, mu_s: float,
                 misjudged: np.ndarray, metrics: np.ndarray, drop_band: float) -> np.ndarray:
    """The working set (W, 3) of the next model: the ``free`` triplets whose ``multipliers``
    lie strictly inside (0, mu_s) (at the margin of the model's minimiser), and the
    ``misjudged`` ones with a margin above ``-drop_band`` at the next ``metrics`` (C, d, d)."""
    inside = (multipliers > INTERIOR * mu_s) & (multipliers < (1.0 - INTERIOR) * mu_s)
    if len(misjudged):
        misjudged = misjudged[problem.triplet_margins(metrics, misjudged) > -drop_band]
    return unique_rows(np.concatenate([free[inside], misjudged]).astype(np.intp))


def _final_certificates(problem, space, metric, best, solver, tol) -> dict:
    """Certify the final metric(s) with the best round's multipliers and by complementary
    slackness, whose margin band is widened (``CERTIFY_BANDS``) until the gap is
    certified: the split near the margin decides how much of the solver's last digits
    the scaling into the dual cone costs."""
    certificates = {}
    if best is not None and len(best[0]):
        certificates["best round"] = prove(problem, metric, *best, tol=tol)
    for band in CERTIFY_BANDS:
        if any(c.certified for c in certificates.values()):
            break
        certificates[f"complementary slackness, band {band:g}"] = certify(
            problem, metric, tol=tol, band=band, solver=solver, space=space)
    if best is not None and len(best[0]) and not any(c.certified for c in certificates.values()):
        triplets, multipliers = best
        certificates["best round, snapped"] = prove(problem, metric, triplets,
                                                    snap_multipliers(multipliers, problem.mu), tol=tol)
    return certificates
