"""
Exact and fast LMNN agree
=========================

Solve LMNN on iris twice: exactly, with the SDP of :func:`lmnn_sdp.solve_lmnn` (aggregated
active sets, cvxpy and Clarabel), and with the scalable estimator :class:`fast_solver.LMNN`
(numpy, scipy and numba). Each proves its own gap; both optima are compared.
"""

import numpy as np
from sklearn.datasets import load_iris

from fast_solver import LMNN
from lmnn_sdp import LMNNProblem, solve_lmnn

X, y = load_iris(return_X_y=True)
problem = LMNNProblem(X, y, k=3, mu=0.5)

# %%
# The exact solve: an SDP on the triplets near the margin, certified on all of them.
exact = solve_lmnn(problem, method="aggregated")
print(f"exact: objective {exact.upper:.7f}, lower bound {exact.lower:.7f}, "
      f"relative gap {exact.relative_gap:.2e}, certified {exact.certified}")

# %%
# The fast solver stops only when its own certificate proves the requested gap.
fast = LMNN(k=3, mu=0.5).fit(X, y)
print(f"fast:  objective {fast.objective_:.7f}, lower bound {fast.lower_bound_:.7f}, "
      f"relative gap {fast.result_.relative_gap:.2e}, converged {fast.converged_}")

# %%
# Agreement: the two objectives, and the distance between the two metrics. The fast
# certificate is re-checked from its evidence by ``lmnn_sdp``.
difference = abs(fast.objective_ - exact.upper) / exact.upper
metrics = np.linalg.norm(fast.result_.metric - exact.metric) / np.linalg.norm(exact.metric)
print(f"relative difference of the objectives {difference:.2e}")
print(f"relative difference of the metrics    {metrics:.2e}")
checked = fast.result_.certificate.verify()  # raises if the evidence does not reproduce a number
print(f"fast certificate re-derived: lower bound {checked.lower:.7f}, certified {checked.certified}")
