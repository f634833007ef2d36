"""Exact LMNN: the SDP of Weinberger & Saul (JMLR 2009), its dual and certificates."""
from lmnn_sdp.problem import LMNNProblem

__all__ = ["LMNNProblem"]
