"""Exact LMNN: the SDP of Weinberger & Saul (JMLR 2009), its dual and certificates."""
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
from lmnn_sdp.problem import LMNNProblem

__all__ = [
    "Certificate", "LMNNProblem", "MMCCertificate", "MMCResult", "SDPResult", "certify",
    "certify_mmc", "label_pairs", "mmc_objective", "pair_distances", "solve_lmnn",
    "solve_lmnn_dual", "solve_mmc", "xing_objective",
]
