"""The starting scale: the minimiser of eq. 14 along s M, estimated on evenly spaced anchors."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_wine

from fast_solver.lmnn.start import best_scale
from lmnn_sdp.core.problem import LMNNProblem


def test_on_all_anchors_the_scale_minimises_eq14_along_the_ray():
    X, y = load_wine(return_X_y=True)
    problem = LMNNProblem(X[::2], y[::2], k=3, mu=0.5)  # 89 points: every point is an anchor
    M = np.diag(1.0 / X.var(axis=0))
    s = best_scale(problem, M)
    values = {f: problem.objective(f * s * M) for f in (0.9, 1.0, 1.1)}
    assert values[1.0] <= min(values[0.9], values[1.1])
    assert best_scale(problem, 7.0 * M) == pytest.approx(s / 7.0, rel=1e-6)  # a scale, not a shape
