"""The best multiple of a metric: a line search of eq. 14 along the ray ``s M``, ``s >= 0``.

Every distance of eq. 14 scales with the metric, so ``eps(s M) = (1-mu) s <P, M> + mu
sum_t [1 + s a_t]_+`` (``a_t = h_t(M) - 1``) is convex and piecewise linear in ``s``. Its
least value is at ``s = 0`` when the pull dominates (``mu = 0``: the optimum ``M = 0``),
and at a finite ``s`` where every hinge with ``a_t < 0`` has cleared when the push does
(``mu = 1``: a metric that clears every hinge up to the solver's accuracy clears them
exactly once scaled). With several metrics (eq. 16) all are scaled together.

Design note: docs/design/constraint-generation.md, "The ends of mu's range".
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lmnn_sdp.core.line_search import ray_minimum
from lmnn_sdp.core.problem import LMNNProblem

PROBE = 2.0**-20  # relative change of the scale that decides whether scaling pays


def best_scale(problem: LMNNProblem, objective: Callable[[np.ndarray], float], metrics: np.ndarray,
               value: float) -> tuple[float, np.ndarray, float]:
    """The least ``eps(s M)`` over ``s >= 0`` for metrics ``M`` (C, d, d) with ``eps(M) = value``.

    ``eps(0) = mu T`` (every margin is 1, ``T`` triplets) needs no evaluation. Two probes
    ``eps((1 +- PROBE) M)`` pick the direction in which ``eps`` falls (it is convex); the
    ray in that direction is searched by ``core.line_search.ray_minimum``. Returns
    ``(s, s M, eps(s M))``; ``s = 1`` when neither probe falls below ``value``."""
    best = (1.0, metrics, value)
    zero = problem.mu * problem.n_triplets
    if zero < value:
        best = (0.0, np.zeros_like(metrics), zero)
    for sign, t_max in ((1.0, np.inf), (-1.0, 1.0)):
        change = lambda t, sign=sign: objective((1.0 + sign * t) * metrics) - value  # noqa: E731
        if change(PROBE) < 0.0:
            t, _ = ray_minimum(change, PROBE, t_max)
            scaled = (1.0 + sign * t) * metrics
            found = objective(scaled)
            if found < best[2]:
                best = (1.0 + sign * t, scaled, found)
            break
    return best
