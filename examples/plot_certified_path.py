"""
A certified path over mu
========================

The push weight ``mu`` of eq. 14 trades the pull of the target neighbours against the hinge
on impostors. :func:`fast_solver.lmnn.path.certified_path` solves eq. 14 on a grid of ``mu``
with the same data and targets, each solve warm-started from the previous metric, and every
point of the path keeps its own certificate.
"""

import numpy as np
from sklearn.datasets import load_iris

from fast_solver.lmnn.path import certified_path
from lmnn_sdp import LMNNProblem

X, y = load_iris(return_X_y=True)
problem = LMNNProblem(X, y, k=3, mu=0.5)  # its own mu is not used by the path

path = certified_path(problem, [0.1, 0.3, 0.5, 0.7, 0.9])
print("   mu    objective   lower bound   relative gap   certified")
for mu, result in zip(path.mus, path.results):
    print(f"{mu:5.2f} {result.upper:12.6f} {result.lower:13.6f} {result.relative_gap:14.2e}   {result.certified}")
print(f"every point certified: {path.certified}")

# %%
# The metrics along the path, for example their traces.
print("traces:", np.round(np.trace(path.metrics, axis1=1, axis2=2), 4))
