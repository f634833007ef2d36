"""The solver's iterates: factors ``L`` (C, p, r) of one metric per cluster, ``M_c = L_c^T L_c``,
and the two steps that change their number of rows.

- ``escape``: when the negative eigenvalues of the dual matrix ``G`` (what the scale into the
  dual cone loses) dominate the gap for ``saddle_patience`` Newton iterations, line searches
  along ``M_c + t P_S(-G_c)`` move the metrics in ``M``: from a saddle of ``L -> L^T L`` on
  directions ``M`` lacks, and, as measured, from points where the steps in ``L`` end on
  negative curvature within ``M``'s range (design note, "Where ``G`` is indefinite").
- ``narrowed``: before the first search, every later one, every escape and at the end of every
  stage the rows of ``L`` (square at the start unless the starting metric has a low rank, as
  ``start.euclidean_start``'s may) are cut to the metrics' rank and a margin when that saves a
  quarter of them, so that at a low-rank optimum the products cost ``O(n p r)``, not
  ``O(n r^2)``; escapes add rows.

Every iterate is C-contiguous: reductions such as ``np.linalg.norm`` sum in memory order, and
a resumed solve's arrays come back C-contiguous from its checkpoint.
"""

from __future__ import annotations

import numpy as np

from fast_solver.lmnn.options import SolverOptions
from fast_solver.lmnn.smoothed import SmoothedObjective
from lmnn_sdp.core.line_search import ray_minimum
from lmnn_sdp.core.psd import project_psd, psd_factor


def escape(objective: SmoothedObjective) -> np.ndarray | None:
    """A step in ``M`` at the objective's last evaluated point (where Newton's iterations
    stopped): move each ``M_c`` along ``D_c = P_S(-G_c)``; the new ``L``, or None when nothing
    decreases ``F_gamma``.

    Where ``G_c`` has negative eigenvalues on directions that ``M_c`` lacks (a saddle of
    ``L -> F_gamma(L)``), the gradient ``2 L_c G_c`` vanishes along them and Newton's method
    on ``L`` can stop; where they lie within ``M_c``'s range, the steps in ``L`` can end on
    negative curvature long before they vanish (design note, "Where ``G`` is indefinite").
    ``F_gamma`` is convex in ``M``: an exact line search finds each cluster's best step
    ``t_c`` along ``M_c + t D_c`` (the clusters' metrics differ in scale), and a last one
    the best multiple ``s`` of all of them together (all from one pass over the working
    set, ``SmoothedObjective.metric_rays``), so the
    move ``M_c + s t_c D_c`` decreases ``F_gamma`` although triplets join clusters. With
    ``L`` narrow (p rows, p < r), ``D_c`` is cut to its ``p`` largest eigenvalues (still a
    direction of descent) and the new ``L`` stacks its factor under ``L`` while that stays
    narrow."""
    ev = objective.current
    L = ev.L
    C, p, r = L.shape
    D = projected(-ev.dual_matrix)
    M = gram(L)
    moving = np.flatnonzero(np.linalg.norm(D, axis=(1, 2)) > 0)
    if not len(moving):
        return None
    directions = np.zeros_like(L)
    for c in moving:
        directions[c] = psd_factor(D[c])[:p]
    along = objective.metric_rays(directions)
    steps = np.zeros(C)
    for c in moving:
        t0 = 1e-3 * max(np.linalg.norm(M[c]), 1.0) / np.linalg.norm(D[c])
        steps[c], _ = ray_minimum(along(np.eye(C)[c]), t0, xtol=1e-6)
    if not steps.any():
        return None
    s, _ = ray_minimum(along(steps), 1.0, xtol=1e-6)
    if s == 0.0:
        return None
    factors = np.sqrt(steps)[:, None, None] * directions
    norms = np.linalg.norm(factors, axis=2).max(axis=0)  # rows by decreasing eigenvalue of D_c
    added = 1 + int(np.flatnonzero(norms > 1e-8 * norms.max()).max())
    if p + added > r:
        return square_factors(M + s * gram(factors))
    return np.ascontiguousarray(np.concatenate([L, np.sqrt(s) * factors[:, :added]], axis=1))


def narrowed(L: np.ndarray, options: SolverOptions) -> np.ndarray:
    """``L`` (C, p, r) cut to the rows that the metrics ``M_c = L_c^T L_c`` use: the singular
    directions of each ``L_c`` by decreasing singular value, as many as the largest rank over
    the clusters (eigenvalues above ``rank_floor`` of their largest) plus a margin; ``L``
    itself when that keeps more than ``narrow_below`` of its rows (``options``).

    ``F_gamma`` is convex in ``M``, so a minimiser of it over ``L`` with fewer rows than ``r``
    that leaves ``L`` rank-deficient is a minimiser over every metric (Burer & Monteiro 2005);
    the margin keeps ``L`` rank-deficient, and where the rank the metrics need grows beyond
    it, the escape steps (``escape``) add rows. A narrow ``L`` makes every
    Hessian product, line search and search cost ``O(p)`` instead of ``O(r)`` per point and
    coordinate."""
    _, s, Wt = np.linalg.svd(L, full_matrices=False)
    rank = max(int(np.count_nonzero(sc * sc > options.rank_floor * sc[0] * sc[0])) for sc in s)
    width = rank + max(options.min_margin, int(np.ceil(options.rank_margin * rank)))
    if width > options.narrow_below * L.shape[1]:
        return L
    return np.ascontiguousarray(s[:, :width, None] * Wt[:, :width])


def gram(L: np.ndarray) -> np.ndarray:
    """``L_c^T L_c`` for every cluster: (C, r, r)."""
    return np.matmul(L.transpose(0, 2, 1), L)


def square_factors(M: np.ndarray) -> np.ndarray:
    """Square factors ``L_c`` of ``P_S(M_c)`` for every cluster: (C, r, r), C-contiguous."""
    return np.ascontiguousarray(np.stack([psd_factor(m) for m in M]))


def projected(M: np.ndarray) -> np.ndarray:
    """``P_S(M_c)`` for every cluster: (C, r, r), C-contiguous."""
    return np.ascontiguousarray(np.stack([project_psd(m) for m in M]))
