"""Exact LMNN: the SDP of Weinberger & Saul (JMLR 2009), its dual and certificates;
exact multi-metric LMNN (sec. 5.2) and MMC (Xing et al. 2002), each certified."""
from lmnn_sdp.certificate import Certificate, certify
from lmnn_sdp.lmnn import SDPResult, solve_lmnn, solve_lmnn_dual
from lmnn_sdp.mmc import (
    MMCCertificate,
    MMCResult,
    certify_mmc,
    label_pairs,
    mmc_objective,
    pair_distances,
    solve_mmc,
    xing_objective,
)
from lmnn_sdp.mmc_estimator import MMC
from lmnn_sdp.multi_metric import MMResult, solve_mm_lmnn
from lmnn_sdp.multi_metric_certificate import MMCertificate, certify_mm
from lmnn_sdp.multi_metric_objective import mm_objective
from lmnn_sdp.problem import LMNNProblem

__all__ = [
    "MMC", "Certificate", "LMNNProblem", "MMCCertificate", "MMCResult", "MMCertificate",
    "MMResult", "SDPResult", "certify", "certify_mm", "certify_mmc", "label_pairs",
    "mm_objective", "mmc_objective", "pair_distances", "solve_lmnn", "solve_lmnn_dual",
    "solve_mm_lmnn", "solve_mmc", "xing_objective",
]
