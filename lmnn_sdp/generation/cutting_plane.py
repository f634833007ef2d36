"""Constraint generation for the SDP of LMNN and multi-metric LMNN (DESIGN.md, "Certificates").

Solve the SDP on a working set ``W`` of triplets, search every triplet for a
margin violation at the solution, add the violated ones (and those within
``add_band`` of the margin), repeat. The multipliers of ``W`` padded with zeros
are dual feasible for the full problem, so every round's lower bound is valid
for it; once no triplet outside ``W`` is violated, the omitted hinge terms are
zero at the solution, ``eps(M)`` equals the restricted optimum and the
certificate carries over to the whole problem.

The restricted SDPs weigh the push by ``sdp.search_mu(mu)`` (``mu`` itself below
``1 - sdp.PULL_FLOOR``): at ``mu = 1`` their minimisers form a face and the least-pull one
is the one that carries over. The final metric is moved to its best multiple
(``scaling.best_scale``) when that gains more than ``tol``, so a metric that clears every
hinge (``mu = 1``) or vanishes (``mu = 0``) up to the solver's accuracy does so exactly.

Design note: ``docs/design/constraint-generation.md`` ("The ends of mu's range").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
from tqdm.auto import tqdm

from lmnn_sdp.core.checks import check_max_iter, check_tol, check_triplets, triplet_keys
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import ReducedSpace, reduced_space
from lmnn_sdp.formulations.sdp import FORMULATIONS, search_mu
from lmnn_sdp.generation.scaling import best_scale
from lmnn_sdp.generation.start import starting_metrics
from lmnn_sdp.result import SDPResult, certificates_of, certified_result, snapped_certificate, stop_status


@dataclass(frozen=True)
class Round:
    """One constraint-generation round."""

    sdp_triplets: int  # the working set: triplets in the SDP of this round
    added: int  # violated or near-margin triplets found outside it
    violated_outside: int  # of which violated (margin > 0)
    upper: float  # the objective of the full problem at this round's metric
    lower: float
    relative_gap: float
    solver_status: str
    seconds: float  # wall time of the round (build, solve, search, certificate)


def solve_cutting_plane(problem: LMNNProblem, solver: str = "CLARABEL", *, working_set=None, start=None,
                        tol: float = 1e-6, add_band: float = 0.05, drop_band: float | None = 0.5,
                        max_rounds: int = 30, formulation: str = "dual",
                        solver_options: dict | None = None, progress: bool = False) -> SDPResult:
    """LMNN, or multi-metric LMNN for a problem with clusters, by constraint generation.

    ``working_set`` (T, 3) is the starting set; default: the triplets within
    ``add_band`` of the margin at ``start`` (a metric (d, d), or metrics (C, d, d);
    default the best scaled identity). Each round solves the restricted SDP in the
    given ``formulation`` ("dual", the default, or "primal"), adds the triplets
    outside the working set with margin above ``-add_band`` and drops those with a
    multiplier below ``1e-9`` of the largest and a margin below ``-drop_band``
    (``None`` keeps every triplet). Stops when no triplet outside the working set is
    violated (the restricted optimum is then the full one), when the certificate
    proves the gap, or after ``max_rounds`` rounds (an integer >= 1). The bands are real
    numbers >= 0 (the rule of tolerances, ``check_tol``)."""
    check_max_iter(max_rounds, "max_rounds")
    check_tol(add_band, "add_band")
    if drop_band is not None:
        check_tol(drop_band, "drop_band")
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {tuple(FORMULATIONS)}, got {formulation!r}.")
    space = reduced_space(problem)
    if working_set is None:
        metrics = starting_metrics(problem, space, start)
        working_set = problem.active_triplets(metrics, band=add_band)
    working = unique_rows(check_triplets(working_set, problem.n_samples))
    mu_s = search_mu(problem.mu)
    rounds, build, solve = [], 0.0, 0.0
    bar = tqdm(total=max_rounds, desc="cutting plane", disable=not progress, leave=False)
    for _ in range(max_rounds):
        begin = time.perf_counter()
        solution = FORMULATIONS[formulation](problem, space, working, solver,
                                             solver_options=solver_options, mu=mu_s)
        result = certified_result(problem, space, solution, working, solver, "cutting-plane", tol, final=False)
        build, solve = build + solution.build_time, solve + solution.solve_time
        found = problem.active_triplets(result.metric, band=add_band)
        fresh = new_rows(found, working)
        margins = lambda t: problem.triplet_margins(result.metric, t)  # noqa: E731
        violated = int(np.sum(margins(fresh) > 0)) if len(fresh) else 0
        rounds.append(Round(len(working), len(fresh), violated, result.upper, result.lower,
                            result.relative_gap, solution.status, time.perf_counter() - begin))
        bar.update()
        bar.set_postfix(working=len(working), added=len(fresh), gap=f"{result.relative_gap:.2g}")
        if violated == 0 or result.certified:
            break
        kept = result.triplets
        if drop_band is not None:
            positive = result.multipliers > 1e-9 * result.multipliers.max(initial=0.0)
            kept = kept[positive | (margins(kept) > -drop_band)]
        working = np.concatenate([kept, fresh])
    bar.close()
    result = _scaled(problem, space, result, solver, tol)
    result.rounds, result.timings = rounds, {"build": build, "solve": solve}
    return replace(result, **stop_status(result.certificate, budget_spent=violated > 0))


def _scaled(problem: LMNNProblem, space: ReducedSpace, result: SDPResult, solver: str,
            tol: float) -> SDPResult:
    """The last round's ``result`` certified as the answer: at the best multiple of its metric
    (``scaling.best_scale``) when that lowers eq. 14 by more than ``tol`` of it (the SDP's metric
    clears every hinge (``mu = 1``) or vanishes (``mu = 0``) only up to the solver's accuracy),
    and with the snapped multipliers where it proves no gap within ``tol`` (``certificates_of``)."""
    _, metrics, value = best_scale(problem, problem.objective, result.metrics, result.upper)
    if value < (1.0 - tol) * result.upper:
        metric = metrics if problem.clusters is not None else metrics[0]
        certificates = certificates_of(problem, space, metric, result.triplets, result.multipliers, solver, tol)
    elif result.certified:
        return result
    else:
        certificates = {**result.certificates, "snapped multipliers": snapped_certificate(
            problem, space, result.metric, result.triplets, result.multipliers, tol)}
    return replace(result, certificates=certificates,
                   certificate=max(certificates.values(), key=lambda c: c.lower))


def unique_rows(triplets: np.ndarray) -> np.ndarray:
    """The distinct rows of ``triplets`` (T, 3), sorted."""
    return np.unique(triplets, axis=0) if len(triplets) else triplets.reshape(0, 3)


def new_rows(candidates: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Rows of ``candidates`` (T, 3) not in ``known`` (K, 3)."""
    if not len(candidates):
        return candidates
    if not len(known):
        return unique_rows(candidates)
    n = int(max(candidates.max(), known.max())) + 1
    return candidates[~np.isin(triplet_keys(candidates, n), triplet_keys(known, n))]
