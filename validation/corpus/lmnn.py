"""Corpus entries of single-metric LMNN (Weinberger & Saul, JMLR 2009, eq. 14).

Each entry is a ``lmnn_sdp.Certificate`` saved in the corpus format: the data
(``X``, ``y``, ``targets``, ``mu``), the certified metric ``M`` (d, d), and the
evidence ``triplets`` (T, 3) with ``multipliers`` (T,) in ``[0, mu]``, from which
``Certificate.verify`` re-derives the lower bound by weak duality.
"""

from __future__ import annotations

from lmnn_sdp import Certificate, solve_lmnn
from validation.instances import Instance

OBJECTIVE = ("eps(M) = (1-mu) sum_{i, j~>i} D_M(x_i, x_j) + mu sum_{i, j~>i, l: y_l != y_i} "
             "[1 + D_M(x_i, x_j) - D_M(x_i, x_l)]_+ with D_M(a, b) = (a-b)^T M (a-b) "
             "(Weinberger & Saul, JMLR 2009, eq. 14; linear hinge, unit margin)")


def certify(instance: Instance, tol: float) -> tuple[Certificate, str]:
    """Solve and certify one instance to ``tol``; returns ``(certificate, solver)``."""
    result = solve_lmnn(instance.problem(), method="aggregated", tol=tol)
    if not result.certificate.certified:
        raise RuntimeError(f"{instance.name}: certified only to {result.relative_gap:.2g}")
    return result.certificate, f"lmnn_sdp aggregated active sets, {result.solver}"
