"""Exact LMNN: the SDP of Weinberger & Saul (JMLR 2009), its dual and certificates;
exact multi-metric LMNN (sec. 5.2) and MMC (Xing et al. 2002), each certified.

Names are imported on first use, so ``import lmnn_sdp.problem`` (the numpy core
that ``fast_solver`` builds on) never loads cvxpy.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "Certificate": "lmnn_sdp.bounds",
    "certify": "lmnn_sdp.certificate",
    "LMNNProblem": "lmnn_sdp.problem",
    "SDPResult": "lmnn_sdp.lmnn",
    "solve_lmnn": "lmnn_sdp.lmnn",
    "solve_lmnn_dual": "lmnn_sdp.lmnn",
    "MMCCertificate": "lmnn_sdp.mmc",
    "MMCResult": "lmnn_sdp.mmc",
    "certify_mmc": "lmnn_sdp.mmc",
    "label_pairs": "lmnn_sdp.mmc",
    "mmc_objective": "lmnn_sdp.mmc",
    "pair_distances": "lmnn_sdp.mmc",
    "solve_mmc": "lmnn_sdp.mmc",
    "xing_objective": "lmnn_sdp.mmc",
    "MMC": "lmnn_sdp.mmc_estimator",
    "MMResult": "lmnn_sdp.multi_metric",
    "solve_mm_lmnn": "lmnn_sdp.multi_metric",
    "MMCertificate": "lmnn_sdp.multi_metric_certificate",
    "certify_mm": "lmnn_sdp.multi_metric_certificate",
    "mm_objective": "lmnn_sdp.multi_metric_objective",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'lmnn_sdp' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
