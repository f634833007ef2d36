"""The starting metric: the best multiple of a base metric, judged on a sample of anchors.

eq. 14 at ``s M`` is convex in ``s``, and its scale matters more than its shape
at the start: too small a metric makes every near point an impostor, too large a one
wastes stages growing the margin back. The sampled objective takes ``anchors`` evenly
spaced points ``i`` and all their triplets ``(i, j, l)`` exactly:

    e(s) = (1-mu) s sum_{i, j} D(i, j) + mu sum_{i, j, l} [1 + s (D(i, j) - D(i, l))]_+,

and a golden-section search over ``log s`` (``search_steps`` steps within
``scale_range`` of the scale where target distances average 1) minimises it (the three values are ``SolverOptions``').
Measurements: ``docs/design/fast-lmnn-solver.md``, "The starting scale".
"""

from __future__ import annotations

import numpy as np

from fast_solver.lmnn.options import SolverOptions
from lmnn_sdp.core.line_search import golden_section
from lmnn_sdp.core.problem import LMNNProblem


def best_scale(problem: LMNNProblem, M: np.ndarray, options: SolverOptions = SolverOptions()) -> float:
    """The ``s > 0`` minimising the sampled eq. 14 of ``s M`` (module docstring); M (d, d) PSD, non-zero,
    the metric of a problem with one cluster.

    Each anchor's distances to the other classes are sorted once, with prefix
    sums, so ``e(s)`` costs a binary search per target pair."""
    Xc = problem.X_centered
    n = problem.n_samples
    anchors = np.unique(np.linspace(0, n - 1, min(options.anchors, n)).astype(np.intp))
    target_d = problem.target_distances(M[None])
    unit = n * problem.k / max(float(target_d.sum()), np.finfo(float).tiny)
    XM = Xc @ M
    sq = np.einsum("nd,nd->n", XM, Xc)
    D = sq[anchors, None] + sq[None, :] - 2.0 * (XM[anchors] @ Xc.T)
    D[problem.label_codes[None, :] == problem.label_codes[anchors, None]] = np.inf
    D.sort(axis=1)  # other classes first, ascending; inf for the own class
    prefix = np.cumsum(np.where(np.isfinite(D), D, 0.0), axis=1)
    anchor_d = target_d[anchors]

    def sampled(log_s: float) -> float:
        s = np.exp(log_s)
        push = 0.0
        for row, (distances, sums) in enumerate(zip(D, prefix)):
            counts = np.searchsorted(distances, anchor_d[row] + 1.0 / s)  # hinge > 0 below this
            within = np.where(counts > 0, sums[np.maximum(counts - 1, 0)], 0.0)
            push += float(np.sum(counts * (1.0 + s * anchor_d[row]) - s * within))
        return (1.0 - problem.mu) * s * float(anchor_d.sum()) + problem.mu * push

    log_s, _ = golden_section(sampled, np.log(unit / options.scale_range),
                              np.log(unit * options.scale_range), options.search_steps)
    return float(np.exp(log_s))

