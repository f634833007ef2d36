r"""Sums over all label pairs without forming them (numba): the implicit pairs of MMC.

For labels, the similar pairs are the same-label pairs ``i < j`` and the dissimilar ones
the others (Xing et al. 2002; JMLR 2009, sec. 2.3.1). With the points sorted by class,
the dissimilar partners ``j > i`` of row ``i`` are the rows ``class_end[i]..n-1`` and its
similar partners ``i+1..class_end[i]-1``: two contiguous ranges, so a pass over the
1.2e8 dissimilar pairs of letters (16,000 rows) walks rows and holds no pair in memory.

A pass runs over ``LabelLayout.n_chunks`` chunks of consecutive rows with about equal
pair counts, fixed by the data alone; each chunk writes its own sums, added afterwards
in a fixed order, so no running sum has more than ``LabelLayout.depth`` terms (the
depth in the rounding allowance of ``lmnn_sdp.mmc.bound``). Partners are taken in
blocks of ``BLOCK`` with the features in rows (``XT``, (d, n)), and sums within a
chunk may be reassociated (numba ``fastmath`` reassoc and contract only) so that they
vectorise; the error bounds below hold for any order of summation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from lmnn_sdp.core.loops import compiled, count_below, in_row_blocks

MAX_CHUNKS = 256
BLOCK = 128  # partners per block
_FAST = {"reassoc", "contract"}


@dataclass(frozen=True)
class LabelLayout:
    """The points sorted by class and the row chunks of the passes.

    Attributes
    ----------
    order : ndarray of int64, shape (n,)
        Stable sort of the points by class code: sorted row ``a`` is point ``order[a]``.
    class_start, class_end : ndarray of int64, shape (n,)
        First row, and one past the last row, of the class of sorted row ``a``.
    dissimilar_chunks, similar_chunks : ndarray of int64, shape (n_chunks + 1,)
        Row boundaries of the chunks of the dissimilar and the similar passes.
    depth : int
        Most terms a pass adds into one sum: the largest chunk's pair count plus the
        number of chunks.
    """

    order: np.ndarray
    class_start: np.ndarray
    class_end: np.ndarray
    dissimilar_chunks: np.ndarray
    similar_chunks: np.ndarray
    depth: int


def label_layout(codes: np.ndarray) -> LabelLayout:
    """The layout of class codes (n,) in ``0..C-1``, at most ``MAX_CHUNKS`` chunks a pass."""
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    end = np.cumsum(counts)[codes[order]]
    start = end - counts[codes[order]]
    n = len(codes)
    n_chunks = min(MAX_CHUNKS, n)
    dissimilar, dissimilar_depth = _balanced_chunks(n - end, n_chunks)
    similar, similar_depth = _balanced_chunks(end - np.arange(n) - 1, n_chunks)
    return LabelLayout(order=order.astype(np.int64), class_start=start.astype(np.int64),
                       class_end=end.astype(np.int64),
                       dissimilar_chunks=dissimilar, similar_chunks=similar,
                       depth=int(max(dissimilar_depth, similar_depth) + n_chunks))


def _balanced_chunks(work: np.ndarray, n_chunks: int) -> tuple[np.ndarray, int]:
    """Row boundaries (n_chunks + 1,) splitting rows of ``work`` (n,) pairs into
    ``n_chunks`` runs of about equal total, and the largest total."""
    total = np.r_[0, np.cumsum(work)]
    cuts = np.searchsorted(total, total[-1] * np.arange(1, n_chunks) / n_chunks)
    bounds = np.r_[0, cuts, len(work)].astype(np.int64)
    return bounds, int(np.max(total[bounds[1:]] - total[bounds[:-1]]))


def pair_sums(XT, factor, weights, slack, class_end, chunks, similar, floors, diagonal):
    """Sums over the similar or the dissimilar pairs ``u = x_i - x_j`` of sorted inputs
    ``XT`` (d, n), with ``D = |factor u|^2`` (diagonal: ``sum_k factor[0, k] u_k^2``) and
    ``e = slack sum_k weights[k] u_k^2``.

    Returns per chunk ``sums`` (n_chunks, 5): ``D``, ``e``, ``sqrt(D+)``, ``sqrt((D - e)+)``
    and the largest ``sqrt(D+)``; and, when ``floors`` (ascending, >= 0) is not empty,
    the tangent sums of ``lmnn_sdp.mmc.bound`` (step 1) for every floor at once. Pairs
    fall into buckets ``b`` = how many floors lie below their root ``r = sqrt(D+)``; per
    chunk and bucket, ``roots`` (sum of r), ``counts``, ``over_roots`` (sum of
    ``u u^T / (2 r)``, b >= 1) and ``plain`` (sum of ``u u^T``, b < len(floors)), outer
    products packed by rows ``k <= l`` (d (d + 1) / 2 entries) or diagonal (d). The chunks
    run in blocks on threads (``lmnn_sdp.core.loops.in_row_blocks``)."""
    d, n = XT.shape
    n_chunks = len(chunks) - 1
    n_buckets = len(floors) + 1
    width = d if diagonal else d * (d + 1) // 2
    sums = np.zeros((n_chunks, 5))
    roots = np.zeros((n_chunks, n_buckets))
    counts = np.zeros((n_chunks, n_buckets))
    over_roots = np.zeros((n_chunks, n_buckets, width))
    plain = np.zeros((n_chunks, n_buckets, width))
    in_row_blocks(_pair_sums, n_chunks, XT, factor, weights, slack, class_end, chunks, similar, floors,
                  diagonal, sums, roots, counts, over_roots, plain, work=n * n * d // 2)
    return sums, roots, counts, over_roots, plain


@compiled(fastmath=_FAST)
def _pair_sums(start, stop, XT, factor, weights, slack, class_end, chunks, similar, floors, diagonal, sums,
               roots, counts, over_roots, plain):  # pragma: no cover - compiled
    d, n = XT.shape
    n_buckets = len(floors) + 1
    U = np.empty((d, BLOCK))
    D = np.empty(BLOCK)
    norms = np.empty(BLOCK)
    weight = np.empty(BLOCK)
    for c in range(start, stop):
        for i in range(chunks[c], chunks[c + 1]):
            first = i + 1 if similar else class_end[i]
            end = class_end[i] if similar else n
            for begin in range(first, end, BLOCK):
                size = min(BLOCK, end - begin)
                differences(XT, i, begin, size, U)
                _squared_norms(factor, weights, U, size, diagonal, D, norms, weight)
                _add_block_sums(sums[c], D, norms, size, slack)
                if n_buckets > 1:
                    _add_tangent_block(U, D, size, floors, weight, roots[c], counts[c],
                                       over_roots[c], plain[c], diagonal)


@njit(inline="always", fastmath=_FAST)
def differences(XT, i, start, size, U):  # pragma: no cover - compiled
    """``U[:, :size] = x_i - x_j`` for partners ``j = start..start+size-1``."""
    for k in range(XT.shape[0]):
        xi = XT[k, i]
        for b in range(size):
            U[k, b] = xi - XT[k, start + b]


@njit(inline="always", fastmath=_FAST)
def _squared_norms(factor, weights, U, size, diagonal, D, norms, scratch):  # pragma: no cover
    """``D[:size] = |factor u|^2`` (diagonal: ``sum_k factor[0, k] u_k^2``) and
    ``norms[:size] = sum_k weights[k] u_k^2`` for the columns ``u`` of ``U``."""
    for b in range(size):
        D[b] = 0.0
        norms[b] = 0.0
    for k in range(U.shape[0]):
        for b in range(size):
            norms[b] += weights[k] * (U[k, b] * U[k, b])
            if diagonal:
                D[b] += factor[0, k] * (U[k, b] * U[k, b])
    if diagonal:
        return
    for a in range(factor.shape[0]):
        for b in range(size):
            scratch[b] = 0.0
        for k in range(factor.shape[1]):
            f = factor[a, k]
            for b in range(size):
                scratch[b] += f * U[k, b]
        for b in range(size):
            D[b] += scratch[b] * scratch[b]


@njit(inline="always", fastmath=_FAST)
def _add_block_sums(out, D, norms, size, slack):  # pragma: no cover - compiled
    """Add one block's ``D``, ``e = slack norms``, ``sqrt(D+)``, ``sqrt((D - e)+)`` and
    largest root to ``out``."""
    total = 0.0
    errors = 0.0
    root_sum = 0.0
    low_sum = 0.0
    top = out[4]
    for b in range(size):
        error = slack * norms[b]
        root = np.sqrt(max(D[b], 0.0))
        total += D[b]
        errors += error
        root_sum += root
        low_sum += np.sqrt(max(D[b] - error, 0.0))
        top = max(top, root)
    out[0] += total
    out[1] += errors
    out[2] += root_sum
    out[3] += low_sum
    out[4] = top


@njit(inline="always", fastmath=_FAST)
def _add_tangent_block(U, D, size, floors, weight, roots, counts, over_roots, plain,
                       diagonal):  # pragma: no cover - compiled
    """One block's tangent sums: pairs above every floor (the last bucket) weighted by
    ``1 / (2 r)`` in one vectorised sum, the others (few, near collapse) one by one."""
    last = len(floors)
    ceiling = floors[last - 1]
    for b in range(size):
        root = np.sqrt(max(D[b], 0.0))
        weight[b] = 0.5 / root if root > ceiling else 0.0
    add_weighted_outer(over_roots[last], U, weight, size, diagonal)
    for b in range(size):
        root = np.sqrt(max(D[b], 0.0))
        bucket = last if root > ceiling else count_below(floors, root, False)
        roots[bucket] += root
        counts[bucket] += 1.0
        if bucket == last:
            continue
        if bucket > 0:
            _add_one_outer(over_roots[bucket], U, b, 0.5 / root, diagonal)
        _add_one_outer(plain[bucket], U, b, 1.0, diagonal)


@njit(inline="always", fastmath=_FAST)
def add_weighted_outer(packed, U, weight, size, diagonal):  # pragma: no cover - compiled
    """``packed += sum_b weight[b] u_b u_b^T`` over the first ``size`` columns of ``U``."""
    d = U.shape[0]
    index = 0
    for k in range(d):
        for l in range(k, k + 1 if diagonal else d):
            s = 0.0
            for b in range(size):
                s += weight[b] * U[k, b] * U[l, b]
            packed[index] += s
            index += 1


@njit(inline="always")
def _add_one_outer(packed, U, b, weight, diagonal):  # pragma: no cover - compiled
    """``packed += weight u_b u_b^T`` for column ``b`` of ``U``."""
    d = U.shape[0]
    index = 0
    for k in range(d):
        for l in range(k, k + 1 if diagonal else d):
            packed[index] += weight * U[k, b] * U[l, b]
            index += 1
