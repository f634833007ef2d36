"""The continuation of ``fast_solver.solve``: each stage's smoothing width, and the estimate
of the lower bound that decides when a stage ends and the next one shrinks the width
(module docstring of ``fast_solver.lmnn.solver``, steps 4 and 5).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from fast_solver.lmnn.options import SolverOptions
from fast_solver.lmnn.smoothed import Evaluation, SmoothedObjective
from lmnn_sdp.core.whitening import ClusterWhitening, Whitening


def first_width(objective: SmoothedObjective, L: np.ndarray, options: SolverOptions) -> float:
    """The first stage's width: ``initial_gamma``, and for several metrics (``L`` (C, r, r),
    C > 1) widened by ``1 / shrink`` (at most ``max_widenings`` times) while fewer triplets
    are in transition at ``L`` than ``L`` has entries. The Hessian of ``F_gamma`` has curvature
    only along the triplets in transition (``0 < h < gamma``) and ``G``; each class metric
    keeps the parameters of one metric but sees only its cluster's triplets, so with too few
    in transition the conjugate gradients meet the trust radius after a few products and the
    Newton steps are little more than gradient steps. One metric starts at ``initial_gamma``:
    widened, it took as many iterations or more (design note, "Multi-metric LMNN at image
    scale")."""
    gamma = options.initial_gamma
    for _ in range(options.max_widenings if len(L) > 1 else 0):
        if objective.evaluate(L, gamma).n_transition >= L.size:
            break
        gamma /= options.shrink
    return gamma


def next_width(gamma: float, gap: float, aim: float, shrink: float) -> float:
    """The next stage's width after a stage at ``gamma`` that ended at the estimated relative
    ``gap`` above ``aim``: ``gamma max(shrink, sqrt(aim / (2 gap)))``, and ``gamma shrink``
    when the gap is already within the aim (what is left to prove is not the smoothing).
    With the multipliers carried over, the gap at a stage's end fell faster than ``gamma^2``
    in the measured solves; so a stage that ends just above the aim needs a shrink to about
    half of it, not a whole factor ``shrink`` whose narrower Hessian costs a stage of
    Newton iterations (design note, "Multi-metric LMNN at image scale").

    Examples
    --------
    >>> round(next_width(0.03, 1.21e-4, 1e-4, 0.3) / 0.03, 3)
    0.643
    >>> next_width(0.1, 0.05, 1e-4, 0.3) == 0.1 * 0.3
    True
    """
    if not gap > aim:
        return gamma * shrink
    return gamma * max(shrink, float(np.sqrt(aim / (2.0 * gap))))


def smoothing_limits(mu: float, ev: Evaluation, bound) -> bool:
    """Whether the smoothing, not the optimisation, limits the estimated gap at a stage's end
    ``ev``: its complementarity is at least half of ``ev.objective - bound()``. At ``mu = 1``, and
    where ``1 - mu`` is float64's resolution of 1, the estimate has no pull to scale the
    multipliers by and cannot tell (it is 0 or their sum), so the width shrinks after every stage: a stage ends before the budget only where its Newton
    iterations found no descent of ``F_gamma`` (or the gap was the complementarity's)."""
    if 1.0 - mu <= np.finfo(float).eps:  # mu = 1, or 1 - mu at float64's resolution of 1
        return True
    return ev.complementarity >= 0.5 * max(ev.objective - bound(), 0.0)


def scaled_bound(mu: float, whitening: ClusterWhitening, ev: Evaluation) -> float:
    """``alpha sum(lambda)`` at the evaluation ``ev`` in whitened coordinates, ``alpha`` the
    smallest over the clusters of their scales into the dual cone: the estimate of the lower
    bound that steers the stages (the certificate scales each cluster by its own)."""
    alpha = min(_feasible_scale(mu, space, G) for space, G in zip(whitening.spaces, ev.dual_matrix))
    return alpha * ev.multiplier_sum


def _feasible_scale(mu: float, space: Whitening, G: np.ndarray) -> float:
    """Largest ``alpha`` in [0, 1] with ``(1 - alpha)(1 - mu) P + alpha G`` PSD on the range
    of one cluster's pull matrix ``P`` (whitened, ``G`` of shape (r, r)). There ``P`` is the
    identity (``Whitening.pull``), so ``alpha = (1 - mu) / ((1 - mu) - lambda)`` with ``lambda``
    the smallest eigenvalue of ``G`` on that range, and 1 where ``lambda >= 0``: one eigenvalue,
    not the generalized problem of ``bounds.largest_feasible_scale`` (design note:
    docs/design/high-dimension.md)."""
    m = space.pull_rank
    smallest = scipy.linalg.eigh(G[:m, :m], eigvals_only=True, subset_by_index=[0, 0])[0]
    if smallest >= 0:
        return 1.0
    return float((1.0 - mu) / ((1.0 - mu) - smallest))
