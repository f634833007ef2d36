"""The searches over pairs of points that every computation over triplets rests on: the
target neighbours of each point (``nearest_same_class``) and the impostor pairs within a reach
(``impostor_pairs``), blockwise in ``BLOCK_BYTES`` and ``PANEL_BYTES``, so that tens of
thousands of points need no ``n x n`` array. ``LMNNProblem`` calls them; the block sizes serve
the other blockwise loops of the library too.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from lmnn_sdp.core import rounding
from lmnn_sdp.core.hits import below, float32_tiles
from lmnn_sdp.core.principal import float32_above, gram_factors, metric_coordinates

BLOCK_BYTES = 8 * 2**20  # memory budget of one block of pairwise distances, which stays in the
# last-level cache for the passes after its matrix product (design note, "Block sizes")
PANEL_BYTES = 2 * 2**20  # inputs of the columns of one block: the panel its matrix product
# reads for every block of rows stays in cache, however many points there are (same note)


def nearest_same_class(X: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` nearest same-class points of each point, shape (n, k).

    Euclidean distance, ties broken by the smaller index. Candidates come from
    the Gram-matrix distances with a small slack; their order is then decided on
    exact sums of squared differences."""
    n = len(X)
    targets = np.empty((n, k), dtype=np.intp)
    Xc = X - X.mean(axis=0)
    sq = np.einsum("nd,nd->n", Xc, Xc)
    for c in np.unique(codes):
        members = np.flatnonzero(codes == c)
        block = max(1, BLOCK_BYTES // (8 * len(members)))
        for start in range(0, len(members), block):
            rows = members[start:start + block]
            D = sq[rows, None] + sq[None, members] - 2.0 * (Xc[rows] @ Xc[members].T)
            D[np.arange(len(rows)), np.arange(start, start + len(rows))] = np.inf
            kth = np.partition(D, k - 1, axis=1)[:, k - 1]
            slack = 1e-9 * (sq[rows] + sq[members].max()) + 1e-300
            r, m = np.nonzero(D <= (kth + slack)[:, None])
            m = members[m]
            keep = m != rows[r]
            r, m = r[keep], m[keep]
            exact = np.sum((X[rows[r]] - X[m]) ** 2, axis=1)
            order = np.lexsort((m, exact, r))
            r, m = r[order], m[order]
            rank = np.arange(len(r)) - np.searchsorted(r, r)
            take = rank < k
            targets[rows[r[take]], rank[take]] = m[take]
    return targets


def impostor_pairs(codes: np.ndarray, metrics: np.ndarray, owner: np.ndarray, Xo: np.ndarray, reach: np.ndarray,
               sizes: tuple) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Yield ``(i, l, D_il)``, together every pair with ``y_l != y_i`` and computed
    ``D(x_i, x_l) < reach[i]``, each once; ``D`` measured by ``M_{c(l)}`` (eq. 16) on
    ``Xo`` (n, d), the inputs less an origin, ``reach`` (n,); ``sizes`` are
    ``rounding_sizes(metrics, Xo)``; ``codes`` (n,) the points' class codes 0..

    One metric at a time (its coordinates alone in memory), one class of rows against its
    points of the other classes, in tiles of as many columns as ``PANEL_BYTES`` of factors
    and as many rows as ``BLOCK_BYTES`` of distances allow. First a lower bound: float32 distances between the principal
    coordinates of each metric (``lmnn_sdp.core.principal.metric_coordinates``), which err
    by at most ``(h + 4) 2^-24 * 2 (|w_a|^2 + |w_b|^2)`` (Higham sec. 3.1), against
    ``reach`` raised by that with a factor 2 of margin and by the allowances of the bound
    (with the largest point sizes of the other side). Only the pairs below are measured,
    by the Gram identity ``x_i^T M x_i + x_l^T M x_l - 2 x_i^T M x_l`` in float64, one inner
    product a pair; the rounding bound of ``lmnn_sdp.core.rounding`` holds for any order of
    summation. With one metric ``D`` is symmetric: a class meets only the classes after
    it, and each product serves both ``(i, l)`` and ``(l, i)``."""
    symmetric = len(metrics) == 1
    s, _, rho, sigma, tau = sizes
    for c, M in enumerate(metrics):  # one metric's coordinates in memory at a time
        sq, cross = np.einsum("nd,nd->n", Xo @ M, Xo), -2.0 * M  # x^T M_c x; the columns are c's
        coords = metric_coordinates(M, s[c], Xo, sigma[c])
        rows_aug, cols_aug = gram_factors(coords.W, coords.norms)
        unit = 4.0 * (coords.W.shape[1] + 4) * 2.0**-24

        def threshold(points, others, c=c, coords=coords, unit=unit):
            """float32 thresholds of ``points`` against any of ``others`` in metric ``c``."""
            size = sigma[c, points] + sigma[c, others].max()
            e = rho * size**2 + (tau[c, points] + tau[c, others].max()) ** 2
            room = np.sqrt(np.maximum((1 + 1e-10) * (reach[points] + coords.kappa * size**2 + e), 0.0))
            bound = (room + coords.error[points] + coords.error[others].max()) ** 2 * coords.scale
            bound += unit * (coords.norms[points] + coords.norms[others].max()) + 1e-40
            return float32_above(bound * (1 + 1e-12))

        for a in range(codes.max() + 1):
            members = np.flatnonzero(codes == a)
            cols = np.flatnonzero((codes > a if symmetric else codes != a) & (owner == c))
            if len(members) == 0 or len(cols) == 0:
                continue
            forward = threshold(members, cols)[:, None]
            for start, first, v, flags in float32_tiles(rows_aug[members], cols_aug[cols], BLOCK_BYTES,
                                                        PANEL_BYTES):
                rows, tile = members[start:start + len(v)], cols[first:first + v.shape[1]]
                if first == 0:  # a new block of rows
                    left = Xo[rows] @ cross
                    back = threshold(cols, rows)[None, :] if symmetric else None
                b, m = below(v, forward[start:start + len(v)], flags)
                D = _gram_distances(sq[rows[b]] + sq[tile[m]], left, b, Xo, tile[m])
                keep = D < reach[rows[b]]
                yield rows[b[keep]], tile[m[keep]], D[keep]
                if symmetric:
                    b, m = below(v, back[:, first:first + len(tile)], flags)
                    D = _gram_distances(sq[rows[b]] + sq[tile[m]], left, b, Xo, tile[m])
                    keep = D < reach[tile[m]]
                    yield tile[m[keep]], rows[b[keep]], D[keep]


def _gram_distances(squares: np.ndarray, left: np.ndarray, b: np.ndarray, Xo: np.ndarray,
                    m: np.ndarray) -> np.ndarray:
    """``squares + left[b_p] . Xo[m_p]`` for each pair ``p``: the Gram identity's distances of
    ``impostor_pairs``, ``left`` (B, d) the rows' ``-2 x^T M``. In chunks whose gathered rows
    fit in ``BLOCK_BYTES``: a tile's candidates may be most of its pairs (several metrics early
    in a solve), and all their rows at once would take ``2 d`` times the tile's memory."""
    chunk = max(1, BLOCK_BYTES // (8 * max(Xo.shape[1], 1)))
    out = np.empty(len(squares))
    for start in range(0, len(squares), chunk):
        part = slice(start, start + chunk)
        out[part] = squares[part] + np.einsum("pd,pd->p", left[b[part]], Xo[m[part]])
    return out


def rounding_sizes(metrics: np.ndarray, Xo: np.ndarray) -> tuple:
    """``(s, t, rho, sigma, tau)`` of ``lmnn_sdp.core.rounding`` for ``metrics`` (C, d, d) and the
    inputs less an origin ``Xo`` (n, d): ``s``, ``t`` (C, d), ``sigma``, ``tau`` (C, n)."""
    s, t, rho = rounding.metric_scales(metrics)
    return s, t, rho, rounding.point_sizes(Xo, s), rounding.point_sizes(Xo, t)


def largest_sizes(sigma: np.ndarray, tau: np.ndarray, owner: np.ndarray) -> tuple[float, float]:
    """The largest ``sigma`` and ``tau`` of a point ``l`` in its own cluster's metric: with any
    row's largest size they bound ``e_il`` (``distance_rounding`` grows with each size)."""
    every = np.arange(sigma.shape[1])
    return float(sigma[owner, every].max()), float(tau[owner, every].max())
