"""Certification for other libraries' test suites: assertions, the certified corpus as cases,
a solver check and a pytest plugin (``lmnn_sdp.testing.plugin``).

numpy and scipy only at import; cvxpy is loaded only when an assertion must compute a
bound (the multipliers of complementary slackness, or the certified optimum).
"""

from __future__ import annotations

from lmnn_sdp.testing.assertions import assert_lmnn_optimal
from lmnn_sdp.testing.corpus_cases import CorpusCase, MMCCase, corpus_cases, corpus_dir
from lmnn_sdp.testing.mmc_assertion import assert_mmc_optimal
from lmnn_sdp.testing.solver_check import SolverCheck, check_lmnn_solver

__all__ = ["CorpusCase", "MMCCase", "SolverCheck", "assert_lmnn_optimal", "assert_mmc_optimal",
           "check_lmnn_solver", "corpus_cases", "corpus_dir"]
