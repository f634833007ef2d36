"""Exact, memory-bounded impostor search in the transformed space ``L x`` (sec. 3.1, 6.2, App. A).

An impostor of ``x_i`` is a differently labelled ``x_l`` that violates (or
nearly violates) the margin of one of ``x_i``'s target neighbours ``x_j``:
``D(i, l) < D(i, j) + 1`` (eq. 10). The solver keeps a working set of
candidate pairs ``(i, l)`` found with the per-point radius

    impostor_radius(i) = max_j D(i, j) + 1 + band            (App. A)

so every triplet ``(i, j, l)`` whose hinge ``1 + D(i, j) - D(i, l)`` exceeds
``-band`` has its pair in the set, for all ``k`` target ranks at once.

Two exact search paths, both one class at a time (sec. 6.2: impostors of
``x_i`` lie in the other classes, so each class is searched as one block):

* ``"blockwise"``: squared distances ``|z_i|^2 + |z_l|^2 - 2 z_i.z_l`` between
  a block of rows and the points of the other classes, with the block size set
  by a memory budget (``_BLOCK_BYTES`` a thread), so memory never grows with ``n^2``; a distance
  serves both of its pairs, so a full search measures each pair once;
* ``"balltree"``: one ``sklearn.neighbors.BallTree`` per class over the points
  ``L x_l`` of that class, queried with the per-point radius by every point of
  the other classes (sec. 6.2).

Rule for ``method="auto"``: ball trees prune well only in low dimension (Fig.
12 of the paper), so ``"balltree"`` is used when the rank of ``M`` (the
dimension of ``L x``) is at most ``BALLTREE_MAX_RANK = 8`` and ``"blockwise"``
otherwise (timings: ``docs/design/fast-lmnn-solver.md``, "The impostor search").
Both paths run one class per thread (``SEARCH_THREADS``, the usable cores); with a
metric per cluster (eq. 16), one cluster per thread, its classes in turn.
The blockwise path compares distances in the principal coordinates of ``L x``
(``lmnn_sdp.core.principal``), which never exceed the true ones, so it finds every
pair while its matrix products shrink with the metric's effective rank.
Its candidates whose single-precision distance, with its rounding bound and the
part left out, proves them inside their radius are pairs; the others, and all of
the ball trees', are re-measured with exact differences ``|z_i - z_l|^2`` before
the strict comparison, so the two paths return the same pairs.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.neighbors import BallTree

from lmnn_sdp.core.checks import check_tol
from lmnn_sdp.core.hits import below, float32_tiles
from lmnn_sdp.core.machine import available_cores
from lmnn_sdp.core.principal import float32_above, gram_factors, principal_coordinates, unit_scale

BALLTREE_MAX_RANK = 8
SEARCH_METHODS = ("auto", "blockwise", "balltree")
_BLOCK_BYTES = 8 * 2**20  # per thread: a block of distances stays in the last-level cache for its scans
_PANEL_BYTES = 4 * 2**20  # per thread: the columns' factors that a block's product reads for every
# block of rows stay in cache, however many points there are (design note, "Block sizes")
SEARCH_THREADS = available_cores()
_PAIR_CHUNK = 1 << 15
_MIN_CHUNK = 1 << 11
_POOL = None  # (pid, executor) of _thread_pool
_WORKER = threading.local()  # ``inside`` is True on a thread of the pool while it runs a task


def map_rows(X: np.ndarray, L: np.ndarray) -> np.ndarray:
    """``X L^T`` for ``X`` (n, d) and ``L`` (r, d), shape (n, r), in row chunks on threads."""
    out = np.empty((len(X), len(L)))
    in_chunks(len(X), lambda start, stop: np.matmul(X[start:stop], L.T, out=out[start:stop]))
    return out


def map_clusters(X: np.ndarray, L: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``X[c] L[c]^T`` for every cluster ``c``: ``X`` (C, n, r) and ``L`` (C, s, r) give (C, n, s),
    into ``out`` when given."""
    if out is None:
        out = np.empty((len(X), X.shape[1], L.shape[1]))
    for Xc, Lc, out_c in zip(X, L, out):
        in_chunks(len(Xc), lambda start, stop: np.matmul(Xc[start:stop], Lc.T, out=out_c[start:stop]))
    return out


def cross_product(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``X^T Y`` for ``X`` (n, r) and ``Y`` (n, s), shape (r, s): one product per row chunk
    on ``SEARCH_THREADS`` threads, summed (BLAS runs single-threaded inside the solver)."""
    chunk = -(-len(X) // SEARCH_THREADS)
    if SEARCH_THREADS == 1 or len(X) < 2 * _MIN_CHUNK:
        return X.T @ Y
    return sum(_on_threads(lambda start: X[start:start + chunk].T @ Y[start:start + chunk], range(0, len(X), chunk),
                           len(X)))


def impostor_radius(target_d: np.ndarray, band: float = 0.0) -> np.ndarray:
    """Return the squared search radius of every point for its impostors.

    The radius ``max_j D(i, j) + 1 + band`` of Appendix A (Weinberger & Saul,
    JMLR 2009): a point ``l`` of another class within it may violate the margin of
    one of ``i``'s target neighbours (eq. 10), or come within ``band`` of doing so.

    Parameters
    ----------
    target_d : ndarray of shape (n, k)
        Squared distances ``D(i, j)`` of every point to its ``k`` target neighbours.
    band : float, default=0.0
        Slack added to the radius.

    Returns
    -------
    radius : ndarray of shape (n,)
        ``target_d.max(axis=1) + 1 + band``.

    See Also
    --------
    impostor_pairs : The pairs within these radii.

    Examples
    --------
    >>> import numpy as np
    >>> from fast_solver import impostor_radius
    >>> impostor_radius(np.array([[0.25, 1.0], [0.5, 0.5]]), band=0.5)
    array([2.5, 2. ])
    """
    return target_d.max(axis=1) + 1.0 + band


def pair_distances(Z: np.ndarray, i: np.ndarray, l: np.ndarray) -> np.ndarray:
    """Exact ``|z_i - z_l|^2`` for pairs, shape (P,), in chunks of bounded memory."""
    out = np.empty(len(i))

    def fill(start, stop):
        diff = Z[i[start:stop]] - Z[l[start:stop]]
        out[start:stop] = np.einsum("pr,pr->p", diff, diff)

    in_chunks(len(i), fill)
    return out


def cluster_pair_distances(Z: np.ndarray, clusters: np.ndarray, i: np.ndarray, l: np.ndarray) -> np.ndarray:
    """``pair_distances`` with each pair measured in the coordinates ``Z[c(l)]`` (eq. 16):
    ``Z`` (C, n, r), ``clusters`` (n,); shape (P,)."""
    if len(Z) == 1:
        return pair_distances(Z[0], i, l)
    out = np.empty(len(i))
    for c, Zc in enumerate(Z):
        mine = clusters[l] == c
        out[mine] = pair_distances(Zc, i[mine], l[mine])
    return out


def in_chunks(size: int, fill) -> None:
    """``fill(start, stop)`` over chunks covering ``range(size)`` on ``SEARCH_THREADS``
    threads (numpy releases the GIL in its gathers and products): at most
    ``_PAIR_CHUNK`` rows a chunk, and four chunks a thread when there are enough
    rows (``_MIN_CHUNK`` at least)."""
    chunk = min(_PAIR_CHUNK, max(_MIN_CHUNK, -(-size // (4 * SEARCH_THREADS))))
    starts = range(0, size, chunk)
    if SEARCH_THREADS == 1 or len(starts) <= 1:
        for start in starts:
            fill(start, min(start + chunk, size))
        return
    _on_threads(lambda start: fill(start, min(start + chunk, size)), starts, size)


def _thread_pool() -> ThreadPoolExecutor:
    """One pool of ``SEARCH_THREADS`` threads per process (a forked child makes its own)."""
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        _POOL = (os.getpid(), ThreadPoolExecutor(SEARCH_THREADS))
    return _POOL[1]


def cluster_impostor_pairs(Z: np.ndarray, clusters: np.ndarray, codes: np.ndarray, radius: np.ndarray,
                           method: str = "auto", searched=None):
    """The pairs ``(i, l)`` of ``impostor_pairs`` (without distances) with each candidate ``l``
    measured in its cluster's coordinates ``Z[c(l)]`` (eq. 16): ``Z`` (C, n, r), ``clusters``
    (n,); one search per cluster over its own members as impostors."""
    if len(Z) == 1:
        return impostor_pairs(Z[0], codes, radius, method, searched, return_distance=False)
    parts = _on_threads(lambda c: impostor_pairs(Z[c], codes, radius, method, searched, columns=clusters == c,
                                                 return_distance=False), range(len(Z)), Z.shape[1])
    i, l = (np.concatenate(part) for part in zip(*parts))
    order = np.argsort(pair_keys(i, l, Z.shape[1]), kind="stable")
    return i[order], l[order]


def impostor_pairs(
    Z: np.ndarray, codes: np.ndarray, radius: np.ndarray, method: str = "auto", searched=None,
    columns=None, return_distance: bool = True,
) -> tuple[np.ndarray, ...]:
    """Return every pair of differently labelled points within a point's radius.

    The exact impostor search of Weinberger & Saul (JMLR 2009, sec. 3.1, 6.2 and
    Appendix A): all pairs ``(i, l)`` with ``codes[l] != codes[i]`` and
    ``|z_i - z_l|^2 < radius[i]``, searched one class at a time by blockwise
    distances or ball trees (module docstring); both paths return the same pairs.

    Parameters
    ----------
    Z : ndarray of shape (n, r)
        Inputs in the transformed space ``L x``.
    codes : ndarray of int, shape (n,)
        Class codes.
    radius : ndarray of shape (n,)
        Squared search radius of every point (``impostor_radius``).
    method : {"auto", "blockwise", "balltree"}, default="auto"
        Search path; ``"auto"`` takes ball trees for ``r <= BALLTREE_MAX_RANK``.
    searched : ndarray of bool, shape (n,), optional
        Search only the points ``i`` where this is true (default: all).
    columns : ndarray of bool, shape (n,), optional
        Only the points ``l`` where this is true are candidates (default: all).
    return_distance : bool, default=True
        Whether to return the pairs' distances too (the blockwise path proves most pairs
        inside their radius without measuring them exactly).

    Returns
    -------
    i, l : ndarray of int, shape (P,)
        Pairs ordered by ``i`` then ``l``.
    dist : ndarray of shape (P,)
        Their exact squared distances, when ``return_distance``.

    Raises
    ------
    ValueError
        If ``method`` is not one of the search paths.

    See Also
    --------
    impostor_radius : The radius of Appendix A.

    Examples
    --------
    >>> import numpy as np
    >>> from fast_solver import impostor_pairs
    >>> Z = np.array([[0.0], [0.5], [3.0], [3.2]])
    >>> codes = np.array([0, 1, 0, 1])
    >>> i, l, dist = impostor_pairs(Z, codes, np.full(4, 1.0))
    >>> i, l
    (array([0, 1, 2, 3]), array([1, 0, 3, 2]))
    >>> dist
    array([0.25, 0.25, 0.04, 0.04])
    """
    method = choose_search_method(Z.shape[1], method)
    search = _balltree_candidates if method == "balltree" else _blockwise_candidates
    everyone = np.ones(len(Z), dtype=bool)
    searched = everyone if searched is None else np.asarray(searched, dtype=bool)
    columns = everyone if columns is None else np.asarray(columns, dtype=bool)
    i, l, unsure = search(Z, codes, radius, searched, columns)
    check = np.flatnonzero(unsure)
    inside = np.ones(len(i), dtype=bool)
    inside[check] = pair_distances(Z, i[check], l[check]) < radius[i[check]]
    i, l = i[inside], l[inside]
    order = np.argsort(pair_keys(i, l, len(Z)), kind="stable")
    i, l = i[order], l[order]
    return (i, l, pair_distances(Z, i, l)) if return_distance else (i, l)


def pair_keys(i: np.ndarray, l: np.ndarray, n: int) -> np.ndarray:
    """``i n + l`` in int64 (P,): one key per pair ``(i, l)`` of ``n`` points, ordered as ``(i, l)``
    (one sort instead of a lexicographic sort on two keys)."""
    return np.asarray(i, dtype=np.int64) * n + np.asarray(l, dtype=np.int64)


def choose_search_method(rank: int, method: str = "auto") -> str:
    """``"balltree"`` for ``rank <= BALLTREE_MAX_RANK``, else ``"blockwise"`` (when ``"auto"``)."""
    if method not in SEARCH_METHODS:
        raise ValueError(f"method must be one of {SEARCH_METHODS}, got {method!r}.")
    if method != "auto":
        return method
    return "balltree" if rank <= BALLTREE_MAX_RANK else "blockwise"


def _blockwise_candidates(Z, codes, radius, searched, columns):
    """Candidate pairs from single-precision distances, one class of rows at a time, each
    marked unsure unless its distance is proved below its radius.

    ``[w_i, 1, |w_i|^2] . [-2 w_l, |w_l|^2, 1] = D_W(i, l) <= D(i, l)`` is one float32 GEMM
    per block (``gram_factors``), ``W`` the principal coordinates of ``Z``
    (``principal_coordinates``, ``s`` columns), all lengths in the units of ``unit_scale``
    (float32 holds their squares and products at any scale of ``Z``). Rounding the factors and
    the product errs by at most ``(s + 4) 2^-24 * 2 (|w_i|^2 + |w_l|^2)``; ``slack`` is that
    with a factor 2 of margin (which covers the float64 rotation to ``W``, below
    ``1e-8 (|z_i - m|^2 + |z_l - m|^2)`` for ``r <= 10^4``; ``|w_i| <= |z_i - m|``) and the
    thresholds are rounded up, so no true pair is lost. The columns left out add
    ``|t_i - t_l|^2 <= (tau_i + tau_l)^2`` to a distance, ``tau_i^2 = |z_i - m|^2 - |w_i|^2``
    (plus ``1e-10 |z_i - m|^2`` for its rounding), so a candidate whose float32 distance plus
    slack plus that is below the radius is a pair; the caller re-measures the others exactly.
    The distance is symmetric: rows both searched and candidates meet such points of the
    classes after theirs once, for both directions; every other pair is measured one way."""
    W, sq_bound = principal_coordinates(Z)
    scale = unit_scale(sq_bound)  # a power of 4: distances and radii in units that float32 holds
    W, sq_bound, radius = W * np.sqrt(scale), sq_bound * scale, radius * scale
    sq = np.einsum("nr,nr->n", W, W)
    tau = np.sqrt(np.maximum(sq_bound - sq, 0.0) + 1e-10 * sq_bound)
    rows_aug, cols_aug = gram_factors(W, sq)
    unit = 4.0 * (W.shape[1] + 4) * 2.0**-24
    both = searched & columns

    def threshold(points, other_top):
        """Float32 radii of ``points`` against partners whose largest ``|z - m|^2`` is ``other_top``."""
        slack = unit * (sq_bound[points] + other_top) + 1e-12
        return float32_above(radius[points] + slack)

    def pairs(i, l, value):
        """``(i, l)`` found at float32 distances ``value``, and which are not proved inside."""
        upper = value + unit * (sq_bound[i] + sq_bound[l]) + (tau[i] + tau[l]) ** 2 + 1e-12
        return i, l, upper * (1.0 + 1e-12) >= radius[i]

    def measure(rows, cols, n_both, found):
        """Pairs (i, l) of ``rows`` x ``cols``, and (l, i) of ``rows`` x ``cols[:n_both]``."""
        if len(rows) == 0 or len(cols) == 0:
            return
        forward = threshold(rows, sq_bound[cols].max())[:, None]
        for start, first, product, flags in float32_tiles(rows_aug[rows], cols_aug[cols], _BLOCK_BYTES,
                                                          _PANEL_BYTES):
            part, last = rows[start:start + len(product)], first + product.shape[1]
            if first == 0:  # a new block of rows
                back = threshold(cols[:n_both], sq_bound[part].max())[None, :]
            r, o = below(product, forward[start:start + len(part)], flags)
            found.append(pairs(part[r], cols[first + o], product[r, o]))
            if first < n_both:
                r, o = below(product[:, :min(last, n_both) - first], back[:, first:last], flags)
                found.append(pairs(cols[first + o], part[r], product[r, o]))

    def one_class(c):
        own, other = codes == c, codes != c
        found = []
        measure(np.flatnonzero(own & both), np.concatenate([np.flatnonzero((codes > c) & both),
                                                            np.flatnonzero(other & columns & ~both)]),
                np.count_nonzero((codes > c) & both), found)
        measure(np.flatnonzero(other & searched & ~columns), np.flatnonzero(own & columns), 0, found)
        return _gather(found)

    return _gather(_on_threads(one_class, np.unique(codes[columns]), len(Z)))  # a class without candidates: no pairs


def _balltree_candidates(Z, codes, radius, searched, columns):
    """Candidate pairs from one ball tree per class and per-point radius queries (sec. 6.2),
    all unsure (the tree's distances are not rigorous bounds)."""
    reach = np.sqrt(radius) * (1 + 1e-9) + 1e-12

    def one_class(c):
        members = np.flatnonzero((codes == c) & columns)
        others = np.flatnonzero((codes != c) & searched)
        if len(others) == 0 or len(members) == 0:
            return _concatenate([]), _concatenate([]), np.zeros(0, dtype=bool)
        hits = BallTree(Z[members]).query_radius(Z[others], r=reach[others])
        counts = np.fromiter((len(h) for h in hits), dtype=np.intp, count=len(hits))
        return np.repeat(others, counts), members[_concatenate(list(hits))], np.ones(counts.sum(), dtype=bool)

    return _gather(_on_threads(one_class, np.unique(codes[columns]), len(Z)))


def _on_threads(task, items, rows: int) -> list:
    """``[task(item) for item in items]`` on ``SEARCH_THREADS`` threads (numpy, BLAS and the ball
    tree release the GIL): the clusters of a search, or the classes of one, or a search's
    chunks of ``rows`` rows in all. A search of fewer than ``_MIN_CHUNK`` rows runs on the
    calling thread (handing it to the pool costs more than it saves), and so does a task
    already on a thread of the pool (waiting on the pool there could leave every thread
    waiting)."""
    items = list(items)
    if (SEARCH_THREADS == 1 or len(items) <= 1 or rows < _MIN_CHUNK
            or getattr(_WORKER, "inside", False)):
        return [task(item) for item in items]

    def run(item):
        _WORKER.inside = True
        try:
            return task(item)
        finally:
            _WORKER.inside = False
    return list(_thread_pool().map(run, items))


def _gather(parts):
    """The candidates ``(i, l, unsure)`` of ``parts`` in one set of arrays."""
    unsure = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, dtype=bool)
    return _concatenate([p[0] for p in parts]), _concatenate([p[1] for p in parts]), unsure


def _concatenate(parts) -> np.ndarray:
    return np.concatenate(parts).astype(np.intp) if parts else np.empty(0, dtype=np.intp)


def check_band(band) -> float:
    """``band`` as a float by the rule of tolerances (``lmnn_sdp.core.checks.check_tol``): a
    real number, finite and >= 0; a TypeError for ``True`` or ``"0.5"``, a ValueError out of range."""
    return check_tol(band, "band")
