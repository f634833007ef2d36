"""Exact LMNN and multi-metric LMNN through aggregated active sets: SDPs as small as the margin.

At an optimum of eq. 14 most violated triplets sit strictly above the margin
(their multiplier is ``mu``) and most others strictly below it (multiplier 0);
only the triplets *at* the margin need an individual multiplier.

Round ``r`` at the metric ``M_r`` splits the triplets by their margin
``h_t = 1 + D_ij - D_il``: ``A`` (``h_t > band``), ``N`` (``|h_t| <= band``), rest.
It then solves the model

    min_M  (1-mu) <P, M> + mu [sum_{t in A} h_t(M)]_+ + mu sum_{t in N} [h_t(M)]_+,

a lower model of eq. 14 (a hinge of a sum is at most the sum of hinges, and
omitted hinges are >= 0) that equals eq. 14 near ``M_r`` when the split is
right. Its dual is the SDP of ``sdp.complementary_multipliers``: tied
multipliers ``beta_g mu`` on ``A`` (one ``beta`` with one metric, one per anchor and
cluster pair with several), free ones on ``N``, so the SDP holds only ``|N|``
triplets. Its multipliers are dual feasible for the whole problem (a valid
lower bound every round) and the PSD constraint's dual is the model's
minimiser ``M'``. A line search on eq. 14 between ``M_r`` and ``M'`` gives
``M_{r+1}``; when the split is right the step lands on the optimum and the
bounds meet. The answer is judged only by the certificate.

With several metrics the model is the same with hinges of eq. 16 and one
``beta`` per group (``sdp.FixedGroups``), and killable impostors of singular
clusters are pushed out of the margin after every step
(``sdp.push_out_of_null_spaces``). The loop stops at ``tol``, after
``max_rounds``, or once three rounds in a row shrank the gap by less than 1%.
The band is the same in every round and the number of free triplets is not capped.

Design note: docs/design/constraint-generation.md.
"""


from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from lmnn_sdp.candidate import certify
from lmnn_sdp.certificates.bounds import dual_lower_bound, relative_gap
from lmnn_sdp.certificates.certificate import prove
from lmnn_sdp.core.clusters import lift_metrics
from lmnn_sdp.core.line_search import segment_search
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import reduced_space
from lmnn_sdp.formulations.sdp import complementary_multipliers
from lmnn_sdp.generation.start import starting_metrics
from lmnn_sdp.result import SDPResult, stop_status

CERTIFY_BANDS = (1e-3, 3e-3, 1e-2)


@dataclass(frozen=True)
class AggregatedRound:
    """One round: the split, the SDP, and the bounds after it."""

    aggregated: int  # |A|, triplets with tied multipliers
    sdp_triplets: int  # |N|, triplets with their own multiplier in the SDP
    step: float  # line-search step towards the model's minimiser
    upper: float  # the objective after the step
    lower: float  # best lower bound so far
    relative_gap: float
    solver_status: str
    seconds: float


def solve_aggregated(problem: LMNNProblem, solver: str = "CLARABEL", *, start=None, tol: float = 1e-6,
                     band: float = 0.05, max_rounds: int = 100, solver_options: dict | None = None,
                     progress: bool = False) -> SDPResult:
    """LMNN, or multi-metric LMNN for a problem with clusters, by aggregated active sets
    (module docstring); ``start`` is a metric (d, d), or metrics (C, d, d) with clusters."""
    space = reduced_space(problem)
    metrics = starting_metrics(problem, space, start)
    objective = problem.objective
    upper, lower, best = objective(metrics), 0.0, None
    rounds, build, solve, stalled = [], 0.0, 0.0, 0
    bar = tqdm(total=max_rounds, desc="aggregated SDP", disable=not progress, leave=False)
    for _ in range(max_rounds):
        begin = time.perf_counter()
        triplets, multipliers, n_free, sol = complementary_multipliers(
            problem, space, metrics, band, solver, solver_options)
        build, solve = build + sol.build_time, solve + sol.solve_time
        multipliers = np.nan_to_num(multipliers)
        bound = dual_lower_bound(problem, triplets, multipliers, space).lower
        if bound > lower:
            lower, best = bound, (triplets, multipliers)
        target = lift_metrics(problem, space, sol.metrics_reduced)
        step, metrics, upper = segment_search(objective, metrics, upper, target)
        gap = relative_gap(upper, lower)
        rounds.append(AggregatedRound(len(triplets) - n_free, n_free, step, upper, lower, gap,
                                      sol.status, time.perf_counter() - begin))
        bar.update()
        bar.set_postfix(free=n_free, gap=f"{gap:.2g}")
        stalled = stalled + 1 if len(rounds) > 1 and gap > 0.99 * rounds[-2].relative_gap else 0
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
    return certificates
