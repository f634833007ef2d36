"""
Certify another library's metric
================================

Fit scikit-learn's :class:`~sklearn.neighbors.NeighborhoodComponentsAnalysis` on iris, turn
its linear map into a Mahalanobis metric, and ask :func:`lmnn_sdp.certify` how far that metric
is from the LMNN optimum. NCA optimises its own objective, not eq. 14, so a nonzero gap is
expected: the certificate says how large it is, with a proof.
"""

import numpy as np
from sklearn.datasets import load_iris
from sklearn.neighbors import NeighborhoodComponentsAnalysis

from lmnn_sdp import LMNNProblem, certify

X, y = load_iris(return_X_y=True)
problem = LMNNProblem(X, y, k=3, mu=0.5)  # targets: the 3 nearest same-class points

# %%
# scikit-learn's NCA learns a map ``L`` (``components_``); the metric is ``M = L^T L``.
nca = NeighborhoodComponentsAnalysis(random_state=0).fit(X, y)
M = nca.components_.T @ nca.components_

# %%
# The certificate: eq. 14 at ``M`` (an upper bound on the optimum), a lower bound proved by
# dual multipliers, and the relative gap between them.
cert = certify(problem, M)
print(f"upper        {cert.upper:.6f}")
print(f"lower        {cert.lower:.6f}")
print(f"relative gap {cert.relative_gap:.3e}")
print(f"certified    {cert.certified} (tol {cert.tol:g})")

# %%
# The same question for the Euclidean metric, for comparison.
euclidean = certify(problem, np.eye(X.shape[1]))
print(f"Euclidean: upper {euclidean.upper:.6f}, lower {euclidean.lower:.6f}, "
      f"relative gap {euclidean.relative_gap:.3e}")
