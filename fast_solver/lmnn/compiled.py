"""Compiled loops over target pairs, impostor pairs and triplets (numba, parallel over points).

Points live in the coordinates of every cluster's metric: ``Z`` (C, n, r), and the
distance to point ``b`` is measured in its cluster's, ``|Z[c(b), a] - Z[c(b), b]|^2``
(eq. 16; LMNN is ``C = 1``).

Each kernel walks one point's rows at a time, so threads never write the same
output row; none allocates more than its outputs. Sums over coordinates may add in any
order (``SUMS``), so they run in SIMD lanes (design note: docs/design/fast-lmnn-solver.md,
"Preconditioned conjugate gradients"). ``fast_solver.lmnn.smoothed`` wraps
them; the formulas they compute are written out there and tested against
brute-force numpy in ``tests/fast_solver/test_smoothed.py``.
"""

from __future__ import annotations

from contextlib import contextmanager

import numba
import numpy as np
from numba import njit, prange

SUMS = {"reassoc", "contract"}  # numba fastmath flags: reassociation and fused multiply-adds only


@njit(parallel=True, cache=True, fastmath=SUMS)
def target_distances(Z, targets, clusters):  # pragma: no cover - compiled
    """``|z_i - z_j|^2`` in the coordinates of ``j``'s cluster for every target pair, shape (n, k)."""
    n, k = targets.shape
    r = Z.shape[2]
    out = np.empty((n, k))
    for i in prange(n):
        for a in range(k):
            j = targets[i, a]
            g = clusters[j]
            s = 0.0
            for c in range(r):
                d = Z[g, i, c] - Z[g, j, c]
                s += d * d
            out[i, a] = s
    return out


@njit(parallel=True, cache=True, fastmath=SUMS)
def pair_distances(Z, clusters, ptr, impostors, out):  # pragma: no cover - compiled
    """``|z_i - z_l|^2`` in the coordinates of ``l``'s cluster for every working-set pair
    ``p`` of point ``i`` (``ptr[i]:ptr[i+1]``, ``l = impostors[p]``), into ``out`` (P,)."""
    n = len(ptr) - 1
    r = Z.shape[2]
    for i in prange(n):
        for p in range(ptr[i], ptr[i + 1]):
            l = impostors[p]
            g = clusters[l]
            s = 0.0
            for c in range(r):
                d = Z[g, i, c] - Z[g, l, c]
                s += d * d
            out[p] = s
    return out


@njit(parallel=True, cache=True)
def smoothed_hinge(target_d, pair_d, ptr, gamma, mu, scale, prior, target_w, pair_w, transition):  # pragma: no cover
    """The smoothed hinge of every working-set triplet ``(i, rank, l)``, at ``h + shift``,
    ``h = 1 + target_d[i, rank] - pair_d[p]``, ``shift = scale * prior[p, rank]``.

    Point ``i`` owns pairs ``ptr[i]:ptr[i+1]``.
    Writes the multipliers ``lambda = mu s'(h + shift)`` summed per target pair into
    ``target_w`` (n, k) and, negated, per impostor pair into ``pair_w`` (P,);
    ``0 < h + shift < gamma`` into ``transition`` (P, k).
    Returns per-point sums (n, 6): smoothed hinge, hinge ``[h]_+``, multipliers,
    complementarity ``mu [h]_+ - lambda h``, active (``h > 0``) and transition counts."""
    n, k = target_d.shape
    sums = np.zeros((n, 6))
    for i in prange(n):
        smooth = 0.0
        hinge = 0.0
        lam_sum = 0.0
        comp = 0.0
        active = 0.0
        n_transition = 0.0
        for a in range(k):
            target_w[i, a] = 0.0
        for p in range(ptr[i], ptr[i + 1]):
            s = pair_d[p]
            w = 0.0
            for a in range(k):
                h = 1.0 + target_d[i, a] - s
                transition[p, a] = False
                if h > 0.0:
                    active += 1.0
                    hinge += h
                e = h + scale * prior[p, a]
                if e <= 0.0:
                    continue
                if e >= gamma:
                    lam = mu
                    smooth += e - 0.5 * gamma
                else:
                    lam = mu * e / gamma
                    smooth += 0.5 * e * e / gamma
                    transition[p, a] = True
                    n_transition += 1.0
                comp += (mu - lam) * h if h > 0.0 else -lam * h
                lam_sum += lam
                target_w[i, a] += lam
                w += lam
            pair_w[p] = -w
        sums[i, 0] = smooth
        sums[i, 1] = hinge
        sums[i, 2] = lam_sum
        sums[i, 3] = comp
        sums[i, 4] = active
        sums[i, 5] = n_transition
    return sums


@njit(parallel=True, cache=True)
def _laplacian_rows(indptr, neighbours, weights, X, out):  # pragma: no cover - compiled
    """``out[u] = sum_e w_e (x_u - x_v)`` over the edges ``e = (u, v)`` of row ``u`` of a
    CSR graph: the rows of ``Lap X`` for a graph Laplacian with symmetric weights."""
    n, r = X.shape
    for u in prange(n):
        for c in range(r):
            out[u, c] = 0.0
        for e in range(indptr[u], indptr[u + 1]):
            v = neighbours[e]
            w = weights[e]
            for c in range(r):
                out[u, c] += w * (X[u, c] - X[v, c])
    return out


@njit(parallel=True, cache=True, fastmath=SUMS)
def map_stacked_rows(rows, nodes, n, V, out, compact):  # pragma: no cover - compiled
    """``rows[g] V[u // n]^T`` for the rows (N, r) of the stacked coordinates (C n, r) at the
    nodes ``u = nodes[g]`` (N,), each by its cluster's ``V`` (C, s, r): into ``out[g]`` of
    ``out`` (N, s) when ``compact``, else into ``out[u]`` of ``out`` (C n, s), whose other
    rows stay."""
    s = V.shape[1]
    r = rows.shape[1]
    for g in prange(len(nodes)):
        u = nodes[g]
        c = u // n
        at = np.intp(g) if compact else np.intp(u)
        for a in range(s):
            acc = 0.0
            for q in range(r):
                acc += rows[g, q] * V[c, a, q]
            out[at, a] = acc
    return out


@njit(parallel=True, cache=True)
def add_rows(Z, Y, nodes, t):  # pragma: no cover - compiled
    """``Z[u] += t Y[u]`` for the rows ``u`` in ``nodes`` of ``Z`` and ``Y`` (N, r), in place:
    the update of ``Z[nodes] += t Y[nodes]`` without its gathered copies."""
    r = Z.shape[1]
    for g in prange(len(nodes)):
        u = nodes[g]
        for c in range(r):
            Z[u, c] += t * Y[u, c]
    return Z


@njit(parallel=True, cache=True, fastmath=SUMS)
def block_cross(X, Y, starts, out):  # pragma: no cover - compiled
    """``out[b] = X[starts[b]:starts[b+1]]^T Y[starts[b]:starts[b+1]]`` for ``X`` (N, r),
    ``Y`` (N, s) and every block ``b``, into ``out`` (B, r, s); blocks may be empty."""
    r, s = X.shape[1], Y.shape[1]
    for b in prange(len(starts) - 1):
        for p in range(r):
            for q in range(s):
                out[b, p, q] = 0.0
        for g in range(starts[b], starts[b + 1]):
            for p in range(r):
                x = X[g, p]
                for q in range(s):
                    out[b, p, q] += x * Y[g, q]
    return out


PARALLEL_WORK = 1 << 16  # edges x coordinates below which starting threads costs more than it saves


@contextmanager
def threads_for(work: int):
    """The compiled loops called inside run on one thread when ``work`` (loop iterations
    times coordinates) is below ``PARALLEL_WORK`` (numba's thread count is per calling
    thread). Design note: docs/design/fast-lmnn-solver.md, "Threads for small graphs"."""
    if work >= PARALLEL_WORK:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def laplacian_rows(indptr, neighbours, weights, X, out):
    """``_laplacian_rows`` on threads when the graph is large enough to pay for them
    (``PARALLEL_WORK``; docs/design/fast-lmnn-solver.md, "Threads for small graphs")."""
    with threads_for(len(neighbours) * X.shape[1]):
        return _laplacian_rows(indptr, neighbours, weights, X, out)


@njit(parallel=True, cache=True, fastmath=SUMS)
def triplet_products(Z, Y, position, clusters, i, j, l):  # pragma: no cover - compiled
    """``(z_i - z_j).(y_i - y_j) - (z_i - z_l).(y_i - y_l)`` per triplet, shape (m,), the
    first product in the coordinates of ``j``'s cluster, the second in ``l``'s; ``Z`` (C, n, r),
    and ``Y`` (N, r) holds point ``u`` of cluster ``c`` in row ``position[c n + u]``."""
    m = len(i)
    n, r = Z.shape[1], Z.shape[2]
    out = np.empty(m)
    for t in prange(m):
        a, b, c_ = i[t], j[t], l[t]
        gb, gl = clusters[b], clusters[c_]
        ya, yb = position[gb * n + a], position[gb * n + b]
        yla, yl = position[gl * n + a], position[gl * n + c_]
        s = 0.0
        for c in range(r):
            s += ((Z[gb, a, c] - Z[gb, b, c]) * (Y[ya, c] - Y[yb, c])
                  - (Z[gl, a, c] - Z[gl, c_, c]) * (Y[yla, c] - Y[yl, c]))
        out[t] = s
    return out


@njit(parallel=True, cache=True, fastmath=SUMS)
def ray_coefficients(Z, Y, clusters, targets, ptr, impostors, target_c, pair_c):  # pragma: no cover
    """Distances along ``Z + t Y``: for every target pair ``(i, targets[i, a])`` into
    ``target_c`` (n, k, 3) and every impostor pair ``p`` of the working set into ``pair_c``
    (P, 3), the products ``|z|^2, z.y, |y|^2`` of the differences ``z = z_a - z_b`` and
    ``y = y_a - y_b`` in the coordinates of ``b``'s cluster."""
    n, k = targets.shape
    r = Z.shape[2]
    for i in prange(n):
        for a in range(k + ptr[i + 1] - ptr[i]):
            b = targets[i, a] if a < k else impostors[ptr[i] + a - k]
            g = clusters[b]
            zz = zy = yy = 0.0
            for c in range(r):
                z = Z[g, i, c] - Z[g, b, c]
                y = Y[g, i, c] - Y[g, b, c]
                zz += z * z
                zy += z * y
                yy += y * y
            out = target_c[i, a] if a < k else pair_c[ptr[i] + a - k]
            out[0] = zz
            out[1] = zy
            out[2] = yy
    return target_c, pair_c


@njit(cache=True)
def _huber(h, gamma):  # pragma: no cover - compiled
    """The smoothed hinge ``s(h)``: 0, ``h^2 / (2 gamma)`` on ``(0, gamma)``, ``h - gamma / 2``."""
    if h <= 0.0:
        return 0.0
    return h - 0.5 * gamma if h >= gamma else 0.5 * h * h / gamma


@njit(cache=True)
def _huber_change(h, dh, gamma):  # pragma: no cover - compiled
    """``s(h + dh) - s(h)`` for the smoothed hinge ``s`` (``fast_solver.lmnn.smoothed``), free of
    cancellation when both ends lie on one piece."""
    e = h + dh
    if h <= 0.0 and e <= 0.0:
        return 0.0
    if h >= gamma and e >= gamma:
        return dh
    if 0.0 < h < gamma and 0.0 < e < gamma:
        return dh * (h + 0.5 * dh) / gamma
    return _huber(e, gamma) - _huber(h, gamma)


@njit(cache=True)
def _ray_terms(target_c, pair_c, i, p, a, scale, prior):  # pragma: no cover - compiled
    """``h_0``, ``beta``, ``kappa`` of triplet ``(i, a, p)`` along a ray (``ray_pieces``)."""
    return (1.0 + target_c[i, a, 0] - pair_c[p, 0] + scale * prior[p, a], target_c[i, a, 1] - pair_c[p, 1],
            target_c[i, a, 2] - pair_c[p, 2])


@njit(parallel=True, cache=True)
def ray_pieces(target_c, pair_c, ptr, t_hi, quadratic, gamma, scale, prior, kink, count):  # pragma: no cover
    """Sort the triplets of a ray (``ray_coefficients``) by the pieces of the smoothed hinge
    their ``h(t) = h_0 + lin(t) beta + q(t) kappa`` meets on ``[0, t_hi]`` (``h_0 = 1 + zz_ij -
    zz_il + scale prior``; ``lin = 2 t``, ``q = t^2`` along ``L + t V``; ``lin = 0``, ``q = t``
    along ``M + t V^T V``), from its least and largest value there: at most 0 throughout, the
    hinge's change is 0; at least ``gamma`` throughout, it is ``h(t) - h_0``, whose ``beta`` and
    ``kappa`` are summed per point into the returned (n, 2); otherwise ``kink[p, a]`` is set
    (P, k), and ``count`` (n,) counts each point's triplets so set."""
    n, k = target_c.shape[0], target_c.shape[1]
    linear = np.zeros((n, 2))
    for i in prange(n):
        count[i] = 0
        for p in range(ptr[i], ptr[i + 1]):
            for a in range(k):
                h0, beta, kappa = _ray_terms(target_c, pair_c, i, p, a, scale, prior)
                if quadratic:
                    end = h0 + 2.0 * t_hi * beta + t_hi * t_hi * kappa
                    low, high = min(h0, end), max(h0, end)
                    if kappa != 0.0 and 0.0 < -beta / kappa < t_hi:
                        vertex = h0 - beta * beta / kappa
                        low, high = min(low, vertex), max(high, vertex)
                else:
                    end = h0 + t_hi * kappa
                    low, high = min(h0, end), max(h0, end)
                kink[p, a] = False
                if high <= 0.0:
                    continue
                if low >= gamma:
                    linear[i, 0] += beta
                    linear[i, 1] += kappa
                    continue
                kink[p, a] = True
                count[i] += 1
    return linear


@njit(parallel=True, cache=True)
def kink_terms(target_c, pair_c, ptr, scale, prior, kink, start):  # pragma: no cover - compiled
    """``h_0``, ``beta`` and ``kappa`` (``ray_pieces``) of the triplets ``kink`` sets, in the
    order of ``np.nonzero(kink)``, point ``i``'s from ``start[i]`` (the running sum of
    ``ray_pieces``'s ``count``), each shape (``start[-1]``,)."""
    n, k = target_c.shape[0], target_c.shape[1]
    m = start[n]
    h0, beta, kappa = np.empty(m), np.empty(m), np.empty(m)
    for i in prange(n):
        t = start[i]
        for p in range(ptr[i], ptr[i + 1]):
            for a in range(k):
                if kink[p, a]:
                    h0[t], beta[t], kappa[t] = _ray_terms(target_c, pair_c, i, p, a, scale, prior)
                    t += 1
    return h0, beta, kappa


@njit(parallel=True, cache=True)
def kink_change(h0, beta, kappa, lin, q, gamma):  # pragma: no cover - compiled
    """``sum_t s(h0_t + lin beta_t + q kappa_t) - s(h0_t)`` over the triplets of ``ray_pieces``'s
    ``kink``, each term free of cancellation (``_huber_change``)."""
    total = 0.0
    for t in prange(len(h0)):
        total += _huber_change(h0[t], lin * beta[t] + q * kappa[t], gamma)
    return total
