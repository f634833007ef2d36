"""Exact LMNN: the SDP of Weinberger & Saul (JMLR 2009), its dual and certificates."""
from lmnn_sdp.certificate import Certificate, certify
from lmnn_sdp.lmnn import SDPResult, solve_lmnn, solve_lmnn_dual
from lmnn_sdp.problem import LMNNProblem

__all__ = ["Certificate", "LMNNProblem", "SDPResult", "certify", "solve_lmnn", "solve_lmnn_dual"]
