r"""Corpus entries of MMC (Xing et al. 2002; JMLR 2009, sec. 2.3.1), full and diagonal.

Each entry is a ``lmnn_sdp.MMCCertificate`` saved in the corpus format: the data
(``X`` (n, d), ``y`` (n,), all label pairs ``similar`` (S, 2) and ``dissimilar`` (P, 2)),
the certified metric ``M`` (d, d) with ``<M, Sigma> = 1``, and the evidence: tangent
points ``tangents`` (P,) > 0 and one ``multiplier``, from which
``MMCCertificate.verify`` re-derives the upper bound by weak duality
(``lmnn_sdp.mmc.bound``): ``sqrt(t) <= t / (2 s_p) + s_p / 2`` gives
``f(A) <= <A, G_s> + sum(s) / 2`` with ``G_s = sum_p u_p u_p^T / (2 s_p)``, and
``lambda Sigma - G_s`` PSD gives ``<A, G_s> <= lambda``, so the maximum is at most
``sum(s) / 2 + lambda``. Diagonal metrics need only ``lambda Sigma_kk >= (G_s)_kk``.
Both kinds are stored as the maximisation of ``f``; the diagonal one is Xing et al.'s
problem through ``g* = 1/2 + log(2)/2 - log(max f)`` (``lmnn_sdp.mmc.problem``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp import MMCCertificate, solve_mmc
from validation.instances import bundled_subset

OBJECTIVE = ("f(A) = sum_{(i, j) dissimilar} sqrt((x_i-x_j)^T A (x_i-x_j)), maximised subject "
             "to sum_{(i, j) similar} (x_i-x_j)^T A (x_i-x_j) <= 1, A PSD (Xing et al. 2002; "
             "JMLR 2009, sec. 2.3.1)")
OBJECTIVE_DIAGONAL = OBJECTIVE.replace("A PSD", "A diagonal >= 0")


@dataclass(frozen=True)
class MMCInstance:
    """MMC on all label pairs of ``X`` (n, d), ``y`` (n,); full or diagonal metric."""

    name: str
    X: np.ndarray
    y: np.ndarray
    diagonal: bool
    source: str


def mmc_instances() -> list[MMCInstance]:
    """Iris (all rows) and a wine subset (standardised), each full and diagonal."""
    out = []
    for data, n, seed in [("iris", 150, 0), ("wine", 100, 6)]:
        X, y, source = bundled_subset(data, n, seed)
        for diagonal in (False, True):
            name = f"mmc{'-diagonal' if diagonal else ''}-{data}-n{n}"
            out.append(MMCInstance(name, X, y, diagonal, f"{source}, all label pairs"))
    return out


def certify(instance: MMCInstance, tol: float) -> tuple[MMCCertificate, str]:
    """Solve, refine and certify one instance to ``tol``; returns ``(certificate, solver)``."""
    result = solve_mmc(instance.X, instance.y, diagonal=instance.diagonal, tol=tol)
    if not result.certified:
        raise RuntimeError(f"{instance.name}: certified only to {result.relative_gap:.2g}")
    return result.certificate, (f"lmnn_sdp.solve_mmc, {result.solver} (status {result.solver_status}),"
                                " refined by the generalised power method")
