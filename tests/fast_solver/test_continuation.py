"""The estimate that steers the stages (``continuation.scaled_bound``) against brute force: the
largest scale of the multipliers into the dual cone, found by bisection on the PSD condition
with each cluster's whitened pull matrix as it is."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from fast_solver.lmnn.continuation import scaled_bound
from fast_solver.lmnn.smoothed import SmoothedObjective, WorkingSet
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.whitening import whiten_clusters


def bisected_scale(mu: float, pull: np.ndarray, G: np.ndarray) -> float:
    """Largest ``alpha`` in [0, 1] with ``(1 - alpha)(1 - mu) pull + alpha G`` PSD, 60 halvings."""
    def feasible(alpha):
        return np.linalg.eigvalsh((1 - alpha) * (1 - mu) * pull + alpha * G)[0] >= -1e-12
    if feasible(1.0):
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
    return lo


@pytest.mark.parametrize("mu", [0.0, 0.3, 0.9, 1.0])
@pytest.mark.parametrize("class_metrics", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scaled_bound_is_the_largest_scale_into_the_dual_cone(mu, class_metrics, seed):
    X, y = make_blobs(40, 3, centers=3, cluster_std=3.0, random_state=seed)
    problem = LMNNProblem(X, y, k=2, mu=mu)
    whitening = whiten_clusters(problem.with_clusters(problem.label_codes if class_metrics else None))
    pairs = np.unique(problem.all_triplets()[:, [0, 2]], axis=0)
    objective = SmoothedObjective(whitening, problem.targets, mu, WorkingSet.from_pairs(pairs[:, 0], pairs[:, 1],
                                                                                       problem.n_samples))
    r = whitening.rank
    L = np.random.default_rng(seed).normal(size=(whitening.n_clusters, r, r))
    ev = objective.evaluate(L, 0.5)
    scales = []
    for space, G in zip(whitening.spaces, ev.dual_matrix):
        m = space.pull_rank
        scales.append(bisected_scale(mu, space.pull[:m, :m], G[:m, :m]))
    expected = min(scales) * ev.multiplier_sum
    assert scaled_bound(mu, whitening, ev) == pytest.approx(expected, rel=1e-8, abs=1e-8 * ev.multiplier_sum)
    if mu > 0.0:
        assert min(scales) < 1.0  # random L: G is indefinite, the scale is the formula's, not 1
