"""Exact LMNN: the SDP of Weinberger & Saul (JMLR 2009), its dual and certificates;
exact multi-metric LMNN (sec. 5.2) and MMC (Xing et al. 2002), each certified.

Names are imported on first use, so ``import lmnn_sdp.core.problem`` (the numpy core
that ``fast_solver`` builds on) never loads cvxpy.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "Certificate": "lmnn_sdp.certificates.certificate",
    "certify": "lmnn_sdp.candidate",
    "LMNNProblem": "lmnn_sdp.core.problem",
    "SDPResult": "lmnn_sdp.result",
    "solve_lmnn": "lmnn_sdp.lmnn",
    "solve_lmnn_dual": "lmnn_sdp.lmnn",
    "MMCCertificate": "lmnn_sdp.mmc.certificate",
    "MMCResult": "lmnn_sdp.mmc.solve",
    "certify_mmc": "lmnn_sdp.mmc.certificate",
    "label_pairs": "lmnn_sdp.mmc.problem",
    "mmc_objective": "lmnn_sdp.mmc.problem",
    "pair_distances": "lmnn_sdp.mmc.problem",
    "solve_mmc": "lmnn_sdp.mmc.solve",
    "xing_objective": "lmnn_sdp.mmc.problem",
    "MMC": "lmnn_sdp.mmc.estimator",
    "solve_mm_lmnn": "lmnn_sdp.lmnn",
    "Excess": "lmnn_sdp.excess",
    "excess_over_optimum": "lmnn_sdp.excess",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name == "status":  # the vocabulary of ``status`` (lmnn_sdp.status)
        return importlib.import_module("lmnn_sdp.status")
    if name not in _EXPORTS:
        raise AttributeError(f"module 'lmnn_sdp' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
