"""The starting metric: the best multiple of a base metric, judged on a sample of anchors.

``starting_factors`` is where ``fast_solver.solve`` starts: ``M0``, by default the Euclidean
metric on the inputs' principal directions (``euclidean_start``), rescaled by ``best_scale``.

eq. 14 at ``s M`` is convex in ``s``, and its scale matters more than its shape
at the start: too small a metric makes every near point an impostor, too large a one
wastes stages growing the margin back. The sampled objective takes ``anchors`` evenly
spaced points ``i`` and all their triplets ``(i, j, l)`` exactly:

    e(s) = (1-mu) s sum_{i, j} D(i, j) + mu sum_{i, j, l} [1 + s (D(i, j) - D(i, l))]_+,

and a golden-section search over ``log s`` (``search_steps`` steps within
``scale_range`` of the scale where target distances average 1, three values of
``SolverOptions``) minimises it.
Measurements: ``docs/design/fast-lmnn-solver.md``, "The starting scale".
"""

from __future__ import annotations

import numpy as np

from fast_solver.lmnn.factors import square_factors
from fast_solver.lmnn.options import SolverOptions
from lmnn_sdp.core.line_search import golden_section
from lmnn_sdp.core.principal import principal_axes
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import check_psd
from lmnn_sdp.core.whitening import ClusterWhitening


def starting_factors(problem: LMNNProblem, whitening: ClusterWhitening, M0,
                     options: SolverOptions) -> np.ndarray:
    """``L`` (C, r, r) of the starting metrics in whitened coordinates (``solve``'s ``M0``,
    by default ``euclidean_start``); one metric is rescaled by ``best_scale``, class metrics
    start as given."""
    C = whitening.n_clusters
    M0 = euclidean_start(problem, options) if M0 is None else np.asarray(M0)
    if M0.ndim == 3 and len(M0) != C:
        raise ValueError(f"M0 has {len(M0)} metrics for {C} clusters; give one metric (d, d) "
                         f"or one per cluster ({C}, {problem.n_features}, {problem.n_features}).")
    M0 = np.broadcast_to(M0, (C, *M0.shape[-2:]))
    checked = []
    for c, M in enumerate(M0):
        M = check_psd(problem.check_metric(M), "M0" if C == 1 else f"M0[{c}]")[0]
        if not M.any():
            raise ValueError("M0 is the zero matrix; start from a metric with at least one positive eigenvalue.")
        checked.append(best_scale(problem, M, options) * M if C == 1 else M)
    return square_factors(whitening.whitened(np.stack(checked)))


def euclidean_start(problem: LMNNProblem, options: SolverOptions) -> np.ndarray:
    """The default starting metric (d, d): Euclidean on the principal directions of the centred
    inputs that hold all but ``start_tail`` of their variance, at least ``min_start_rank`` of
    them; the identity when that keeps more than ``narrow_below`` of the d directions.

    A learned metric has fewer directions than d, and a start on the rest costs Newton
    iterations at full width (design note, "The starting rank")."""
    d = problem.n_features
    U, s = principal_axes(problem.X_centered, options.start_tail)
    q = max(options.min_start_rank, s)
    if q > options.narrow_below * d:
        return np.eye(d)
    return U[:, :q] @ U[:, :q].T


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
