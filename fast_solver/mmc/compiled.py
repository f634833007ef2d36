r"""Compiled passes of the fast MMC solver over all label pairs (numba), in whitened
coordinates ``z`` (``lmnn_sdp.mmc.bound``, step 3) sorted by class.

Notation of ``lmnn_sdp.mmc.refine``: ``w = z_i - z_j`` for a dissimilar pair,
``s = sqrt(w^T B w)``, ``f = sum s`` and ``G = sum_{s > 0} w w^T / (2 s)``. Neither pass
forms a pair; both take partners in blocks (``lmnn_sdp.mmc.compiled``), and a pair with
``s = 0`` adds nothing (the subgradient 0 of ``refine``). They serve the solver, not a
proof: their sums are not bounded in rounding, the certificate re-derives its own.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from lmnn_sdp.core.loops import compiled, in_row_blocks
from lmnn_sdp.mmc.compiled import BLOCK, add_weighted_outer, differences

_FAST = {"reassoc", "contract"}


def gradient_rows(ZT, TT, class_start, class_end, H, values):
    """Per sorted row ``i``, over every dissimilar partner ``j`` (both orders), with
    ``s = |t_i - t_j|`` for ``TT`` (k, n) = ``L^T z`` and ``B = L L^T``: ``values[i] = sum s``
    and ``H[i] = sum_{s > 0} (z_i - z_j) / (2 s)`` (``ZT`` (r, n)). Then ``f = sum(values) / 2``
    and ``G = ZT @ H`` (each pair seen from both ends; Laplacian identity). Returns per
    row the pairs with ``s = 0`` and ``z_i != z_j`` (collapsed by ``B``). Rows run in blocks
    on threads (``lmnn_sdp.core.loops.in_row_blocks``)."""
    r, n = ZT.shape
    collapsed = np.zeros(n, dtype=np.int64)
    in_row_blocks(_gradient_rows, n, ZT, TT, class_start, class_end, H, values, collapsed,
                  work=n * n * (r + TT.shape[0]))
    return collapsed


@compiled(fastmath=_FAST)
def _gradient_rows(start, stop, ZT, TT, class_start, class_end, H, values, collapsed):  # pragma: no cover
    r, n = ZT.shape
    S = np.empty(BLOCK)
    weight = np.empty(BLOCK)
    h = np.empty(r)
    for i in range(start, stop):
        for c in range(r):
            h[c] = 0.0
        value = 0.0
        for part in range(2):
            first = 0 if part == 0 else class_end[i]
            end = class_start[i] if part == 0 else n
            for begin in range(first, end, BLOCK):
                size = min(BLOCK, end - begin)
                _distances(TT, i, begin, size, S)
                total = 0.0
                for b in range(size):
                    root = np.sqrt(S[b])
                    value += root
                    weight[b] = 0.5 / root if root > 0 else 0.0
                    total += weight[b]
                for c in range(r):
                    acc = 0.0
                    for b in range(size):
                        acc += weight[b] * ZT[c, begin + b]
                    h[c] += total * ZT[c, i] - acc
                collapsed[i] += _collapsed(ZT, i, begin, size, S)
        values[i] = value
        for c in range(r):
            H[i, c] = h[c]


def xing_sums(ZT, weights, class_end, chunks, hessian):
    """Per chunk of rows, over the dissimilar pairs ``i < j`` with ``a = w * w`` (r,) and
    ``s = sqrt(<a, weights>)``: ``f = sum s``, ``g = sum a / (2 s)``, when ``hessian``
    ``sum a a^T / (4 s^3)`` packed by rows ``k <= l``, and the collapsed mass
    ``sum |w|`` over the pairs with ``s = 0``. Returns ``(f, g, packed, collapsed)`` per
    chunk, shapes (n_chunks,), (n_chunks, r), (n_chunks, r (r + 1) / 2), (n_chunks, r). The
    chunks run in blocks on threads (``lmnn_sdp.core.loops.in_row_blocks``)."""
    r, n = ZT.shape
    n_chunks = len(chunks) - 1
    values = np.zeros(n_chunks)
    gradients = np.zeros((n_chunks, r))
    hessians = np.zeros((n_chunks, r * (r + 1) // 2 if hessian else 0))
    collapsed = np.zeros((n_chunks, r))
    in_row_blocks(_xing_sums, n_chunks, ZT, weights, class_end, chunks, hessian, values, gradients, hessians,
                  collapsed, work=n * n * r // 2)
    return values, gradients, hessians, collapsed


@compiled(fastmath=_FAST)
def _xing_sums(start, stop, ZT, weights, class_end, chunks, hessian, values, gradients, hessians,
               collapsed):  # pragma: no cover - compiled
    r, n = ZT.shape
    A = np.empty((r, BLOCK))
    S = np.empty(BLOCK)
    half = np.empty(BLOCK)
    quarter = np.empty(BLOCK)
    for c in range(start, stop):
        for i in range(chunks[c], chunks[c + 1]):
            for begin in range(class_end[i], n, BLOCK):
                size = min(BLOCK, n - begin)
                differences(ZT, i, begin, size, A)
                for b in range(size):
                    S[b] = 0.0
                for k in range(r):
                    for b in range(size):
                        A[k, b] = A[k, b] * A[k, b]
                        S[b] += weights[k] * A[k, b]
                for b in range(size):
                    root = np.sqrt(S[b])
                    values[c] += root
                    half[b] = 0.5 / root if root > 0 else 0.0
                    quarter[b] = 0.25 / (root * S[b]) if root > 0 else 0.0
                for k in range(r):
                    acc = 0.0
                    for b in range(size):
                        acc += half[b] * A[k, b]
                    gradients[c, k] += acc
                if hessian:
                    add_weighted_outer(hessians[c], A, quarter, size, False)
                for b in range(size):
                    if S[b] == 0:
                        for k in range(r):
                            collapsed[c, k] += np.sqrt(A[k, b])


@njit(inline="always", fastmath=_FAST)
def _distances(TT, i, start, size, S):  # pragma: no cover - compiled
    """``S[:size] = |t_i - t_j|^2`` for partners ``j = start..start+size-1``."""
    for b in range(size):
        S[b] = 0.0
    for a in range(TT.shape[0]):
        ti = TT[a, i]
        for b in range(size):
            diff = ti - TT[a, start + b]
            S[b] += diff * diff


@njit(inline="always")
def _collapsed(ZT, i, start, size, S):  # pragma: no cover - compiled
    """How many of the ``size`` partners from ``start`` have ``S = 0`` though their column
    of ``ZT`` differs from column ``i``."""
    count = 0
    for b in range(size):
        if S[b] > 0:
            continue
        for c in range(ZT.shape[0]):
            if ZT[c, start + b] != ZT[c, i]:
                count += 1
                break
    return count
