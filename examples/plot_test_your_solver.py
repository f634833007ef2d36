"""
Test your LMNN solver
=====================

:mod:`lmnn_sdp.testing` turns the certified corpus into regression tests for any LMNN solver:
:func:`~lmnn_sdp.testing.check_lmnn_solver` runs a solver on corpus cases and measures each
answer against the case's certified lower bound, and
:func:`~lmnn_sdp.testing.assert_lmnn_optimal` fails a test, with the reason, unless a
certificate proves a metric optimal. Here the solver under test is :func:`fast_solver.solve`;
a library puts its own in its place.
"""

import numpy as np

import fast_solver
from lmnn_sdp import LMNNProblem
from lmnn_sdp.testing import assert_lmnn_optimal, check_lmnn_solver, corpus_cases


def fit(X, y, k, mu):
    """The solver under test: inputs, labels, k and mu in, a metric (d, d) out."""
    return fast_solver.solve(LMNNProblem(X, y, k=k, mu=mu)).metric


# %%
# A few certified cases of the corpus (all of them: ``corpus_cases()``). The gap of each
# answer is ``(eps(M) - lower) / eps(M)`` against the case's certified lower bound.
cases = [case for case in corpus_cases() if case.id.startswith("iris")]
check = check_lmnn_solver(fit, cases=cases)
print(check)
assert check.passed

# %%
# In a test suite, one line per case: ``assert_lmnn_optimal`` returns the certificate that
# proves the metric, and raises ``AssertionError`` otherwise. The Euclidean metric is far from
# the optimum; the first line of the message says so.
case = cases[0]
certificate = assert_lmnn_optimal(case.X, case.y, fit(case.X, case.y, case.k, case.mu), k=case.k,
                                  mu=case.mu)
print(f"{case.id}: certified gap {certificate.relative_gap:.1e}")
try:
    assert_lmnn_optimal(case.X, case.y, np.eye(case.X.shape[1]), k=case.k, mu=case.mu, excess=False)
except AssertionError as failure:
    print(str(failure).splitlines()[0])

# %%
# With the project installed, pytest has the fixtures ``lmnn_case`` and ``mm_lmnn_case``
# (the plugin ``lmnn_sdp.testing.plugin``), one test per corpus case::
#
#     from lmnn_sdp.testing import assert_lmnn_optimal
#
#     def test_my_solver(lmnn_case):
#         c = lmnn_case
#         assert_lmnn_optimal(c.X, c.y, my_fit(c.X, c.y, c.k, c.mu), k=c.k, mu=c.mu,
#                             targets=c.targets)
