"""Certificates for any metric: ``certify`` (DESIGN.md, "Certificates").

The bound itself (multipliers clipped into the box, scaled into the dual cone,
rounding allowance) is ``lmnn_sdp.bounds``, numpy only; this module adds the
multipliers of complementary slackness at a given metric, found by a small dual
SDP over the triplets near the margin (``dual.complementary_multipliers``).
"""

from __future__ import annotations

import numpy as np

from lmnn_sdp.bounds import Certificate, check_candidate_metric, dual_lower_bound, relative_gap
from lmnn_sdp.dual import complementary_multipliers
from lmnn_sdp.formulation import ReducedSpace, reduced_space
from lmnn_sdp.problem import LMNNProblem

__all__ = ["Certificate", "certify"]


def certify(problem: LMNNProblem, M, *, triplets=None, multipliers=None, tol: float = 1e-6,
            band: float = 1e-3, solver: str = "CLARABEL", solver_options: dict | None = None,
            space: ReducedSpace | None = None) -> Certificate:
    """Certify how close the metric ``M`` (d, d) is to the LMNN optimum.

    With ``triplets`` (T, 3) and ``multipliers`` (T,) (for example from an SDP
    solve) the lower bound uses those. Otherwise the multipliers come from
    complementary slackness at ``M`` (``dual.complementary_multipliers``): fixed
    at ``mu`` above the margin band, 0 below it, free within ``band``."""
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol}.")
    M, min_eig = check_candidate_metric(problem, M)
    space = space or reduced_space(problem)
    upper = problem.objective(M)
    n_free = 0
    if (triplets is None) != (multipliers is None):
        raise ValueError("pass triplets and multipliers together, or neither.")
    if triplets is None:
        triplets, multipliers, n_free = complementary_multipliers(
            problem, space, M, band, solver, solver_options)
    lower, alpha, min_eig_dual = dual_lower_bound(problem, triplets, multipliers, space)
    gap = relative_gap(upper, lower)
    return Certificate(upper=upper, lower=lower, relative_gap=gap, certified=bool(gap <= tol),
                       tol=float(tol), min_eig_metric=min_eig, min_eig_dual=min_eig_dual,
                       dual_scale=alpha, n_multipliers=len(triplets), n_free=n_free,
                       triplets=np.asarray(triplets), multipliers=np.asarray(multipliers, dtype=float))
