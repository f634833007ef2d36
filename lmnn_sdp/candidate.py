"""Certify a candidate metric (or metrics): ``certify`` (DESIGN.md, "Certificates").

The bound itself (genuine triplets, multipliers clipped into the box, scaled into
the dual cone, rounding allowance) is ``lmnn_sdp.certificates.bounds`` and the certificate with
its evidence ``lmnn_sdp.certificates.certificate``, both numpy only; this module
adds the multipliers of complementary slackness at given metrics, found by a
small dual SDP over the triplets near the margin (``sdp.complementary_multipliers``).
"""

from __future__ import annotations

import numpy as np

from lmnn_sdp.certificates.bounds import check_candidate_metric
from lmnn_sdp.certificates.certificate import Certificate, prove
from lmnn_sdp.core.problem import LMNNProblem, check_clusters, cluster_owner
from lmnn_sdp.core.space import ReducedSpace, reduced_space
from lmnn_sdp.formulations.sdp import complementary_multipliers

__all__ = ["Certificate", "certify"]


def certify(problem: LMNNProblem, M, *, clusters=None, triplets=None, multipliers=None,
            tol: float = 1e-6, band: float = 1e-3, solver: str = "CLARABEL",
            solver_options: dict | None = None, space: ReducedSpace | None = None) -> Certificate:
    """Certify how close the metric ``M`` (d, d) is to the LMNN optimum, or the metrics
    ``M`` (C, d, d) with ``clusters`` (n,) to the multi-metric optimum (sec. 5.2).

    With ``triplets`` (T, 3) and ``multipliers`` (T,) (for example from an SDP
    solve) the lower bound uses those. Otherwise the multipliers come from
    complementary slackness at ``M`` (``sdp.complementary_multipliers``): tied at
    ``beta mu`` above the margin band, 0 below it, free within ``band``."""
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol}.")
    if (triplets is None) != (multipliers is None):
        raise ValueError("pass triplets and multipliers together, or neither.")
    space = space or reduced_space(problem)
    if triplets is None:
        clusters = None if clusters is None else check_clusters(problem, clusters)
        M = check_candidate_metric(problem, M, clusters)[0]
        owner, metrics = cluster_owner(problem, clusters), M if clusters is not None else M[None]
        triplets, multipliers, _, _ = complementary_multipliers(
            problem, space, owner, metrics, band, solver, solver_options)
    return prove(problem, M, triplets, multipliers, clusters=clusters, tol=tol)
