"""Compiled loops over target pairs, impostor pairs and triplets (numba, on threads over points).

Points live in the coordinates of every cluster's metric: ``Z`` (C, n, r), and the
distance to point ``b`` is measured in its cluster's, ``|Z[c(b), a] - Z[c(b), b]|^2``
(eq. 16; LMNN is ``C = 1``).

Each function runs a compiled loop over blocks of points' rows
(``lmnn_sdp.core.loops.in_row_blocks``: one block per thread when the work pays for
threads), so threads never write the same output row; the loops allocate nothing, the
functions around them allocate their outputs. Sums over
coordinates may add in any order (``SUMS``), so they run in SIMD lanes (design note:
docs/design/fast-lmnn-solver.md, "Preconditioned conjugate gradients"); what a first call
compiles: docs/design/cold-start.md. ``fast_solver.lmnn.smoothed`` wraps them; the formulas
they compute are written out there and tested against brute-force numpy in
``tests/fast_solver/test_smoothed.py``.
"""

from __future__ import annotations

import numpy as np

from lmnn_sdp.core.loops import compiled, in_row_blocks

SUMS = {"reassoc", "contract"}  # numba fastmath flags: reassociation and fused multiply-adds only


def target_distances(Z, targets, clusters):
    """``|z_i - z_j|^2`` in the coordinates of ``j``'s cluster for every target pair, shape (n, k)."""
    n, k = targets.shape
    out = np.empty((n, k))
    in_row_blocks(_target_distances, n, Z, targets, clusters, out, work=n * k * Z.shape[2])
    return out


@compiled(fastmath=SUMS)
def _target_distances(start, stop, Z, targets, clusters, out):  # pragma: no cover - compiled
    k = targets.shape[1]
    r = Z.shape[2]
    for i in range(start, stop):
        for a in range(k):
            j = targets[i, a]
            g = clusters[j]
            s = 0.0
            for c in range(r):
                d = Z[g, i, c] - Z[g, j, c]
                s += d * d
            out[i, a] = s


def pair_distances(Z, clusters, ptr, impostors, out):
    """``|z_i - z_l|^2`` in the coordinates of ``l``'s cluster for every working-set pair
    ``p`` of point ``i`` (``ptr[i]:ptr[i+1]``, ``l = impostors[p]``), into ``out`` (P,)."""
    in_row_blocks(_pair_distances, len(ptr) - 1, Z, clusters, ptr, impostors, out,
                  work=len(impostors) * Z.shape[2])
    return out


@compiled(fastmath=SUMS)
def _pair_distances(start, stop, Z, clusters, ptr, impostors, out):  # pragma: no cover - compiled
    r = Z.shape[2]
    for i in range(start, stop):
        for p in range(ptr[i], ptr[i + 1]):
            l = impostors[p]
            g = clusters[l]
            s = 0.0
            for c in range(r):
                d = Z[g, i, c] - Z[g, l, c]
                s += d * d
            out[p] = s


def smoothed_hinge(target_d, pair_d, ptr, gamma, mu, scale, prior, target_w, pair_w, transition):
    """The smoothed hinge of every working-set triplet ``(i, rank, l)``, at ``h + shift``,
    ``h = 1 + target_d[i, rank] - pair_d[p]``, ``shift = scale * prior[p, rank]``.

    Point ``i`` owns pairs ``ptr[i]:ptr[i+1]``.
    Writes the multipliers ``lambda = mu s'(h + shift)`` summed per target pair into
    ``target_w`` (n, k) and, negated, per impostor pair into ``pair_w`` (P,);
    ``0 < h + shift < gamma`` into ``transition`` (P, k).
    Returns per-point sums (n, 6): smoothed hinge, hinge ``[h]_+``, multipliers,
    complementarity ``mu [h]_+ - lambda h``, active (``h > 0``) and transition counts."""
    n = target_d.shape[0]
    sums = np.empty((n, 6))
    in_row_blocks(_smoothed_hinge, n, target_d, pair_d, ptr, gamma, mu, scale, prior, target_w, pair_w,
                  transition, sums, work=transition.size)
    return sums


@compiled()
def _smoothed_hinge(start, stop, target_d, pair_d, ptr, gamma, mu, scale, prior, target_w, pair_w, transition,
                    sums):  # pragma: no cover - compiled
    k = target_d.shape[1]
    for i in range(start, stop):
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


def laplacian_rows(indptr, neighbours, weights, X, out):
    """``out[u] = sum_e w_e (x_u - x_v)`` over the edges ``e = (u, v)`` of row ``u`` of a
    CSR graph: the rows of ``Lap X`` for a graph Laplacian with symmetric weights; ``X`` and
    ``out`` (n, r). An edge of weight 0 is not read (most working-set pairs carry no multiplier)."""
    in_row_blocks(_laplacian_rows, X.shape[0], indptr, neighbours, weights, X, out,
                  work=len(neighbours) * X.shape[1])
    return out


@compiled()
def _laplacian_rows(start, stop, indptr, neighbours, weights, X, out):  # pragma: no cover - compiled
    r = X.shape[1]
    for u in range(start, stop):
        for c in range(r):
            out[u, c] = 0.0
        for e in range(indptr[u], indptr[u + 1]):
            w = weights[e]
            if w == 0.0:
                continue
            v = neighbours[e]
            for c in range(r):
                out[u, c] += w * (X[u, c] - X[v, c])


def map_stacked_rows(rows, nodes, n, V, out, compact):
    """``rows[g] V[u // n]^T`` for the rows (N, r) of the stacked coordinates (C n, r) at the
    nodes ``u = nodes[g]`` (N,), each by its cluster's ``V`` (C, s, r): into ``out[g]`` of
    ``out`` (N, s) when ``compact``, else into ``out[u]`` of ``out`` (C n, s), whose other
    rows stay."""
    in_row_blocks(_map_stacked_rows, len(nodes), rows, nodes, n, V, out, compact,
                  work=len(nodes) * V.shape[1] * V.shape[2])
    return out


@compiled(fastmath=SUMS)
def _map_stacked_rows(start, stop, rows, nodes, n, V, out, compact):  # pragma: no cover - compiled
    s = V.shape[1]
    r = rows.shape[1]
    for g in range(start, stop):
        u = nodes[g]
        c = u // n
        at = g if compact else u
        for a in range(s):
            acc = 0.0
            for q in range(r):
                acc += rows[g, q] * V[c, a, q]
            out[at, a] = acc


def add_rows(Z, Y, nodes, t):
    """``Z[u] += t Y[u]`` for the rows ``u`` in ``nodes`` of ``Z`` and ``Y`` (N, r), in place:
    the update of ``Z[nodes] += t Y[nodes]`` without its gathered copies."""
    in_row_blocks(_add_rows, len(nodes), Z, Y, nodes, t, work=len(nodes) * Z.shape[1])
    return Z


@compiled()
def _add_rows(start, stop, Z, Y, nodes, t):  # pragma: no cover - compiled
    r = Z.shape[1]
    for g in range(start, stop):
        u = nodes[g]
        for c in range(r):
            Z[u, c] += t * Y[u, c]


def block_cross(X, Y, starts, out):
    """``out[b] = X[starts[b]:starts[b+1]]^T Y[starts[b]:starts[b+1]]`` for ``X`` (N, r),
    ``Y`` (N, s) and every block ``b``, into ``out`` (B, r, s); blocks may be empty."""
    in_row_blocks(_block_cross, len(starts) - 1, X, Y, starts, out,
                  work=(starts[-1] - starts[0]) * X.shape[1] * Y.shape[1])
    return out


@compiled(fastmath=SUMS)
def _block_cross(start, stop, X, Y, starts, out):  # pragma: no cover - compiled
    r, s = X.shape[1], Y.shape[1]
    for b in range(start, stop):
        for p in range(r):
            for q in range(s):
                out[b, p, q] = 0.0
        for g in range(starts[b], starts[b + 1]):
            for p in range(r):
                x = X[g, p]
                for q in range(s):
                    out[b, p, q] += x * Y[g, q]


def triplet_products(Z, Y, position, clusters, triplets):
    """``(z_i - z_j).(y_i - y_j) - (z_i - z_l).(y_i - y_l)`` per triplet ``(i, j, l)`` of
    ``triplets`` (m, 3), shape (m,), the first product in the coordinates of ``j``'s cluster,
    the second in ``l``'s; ``Z`` (C, n, r), and ``Y`` (N, r) holds point ``u`` of cluster ``c``
    in row ``position[c n + u]``."""
    out = np.empty(len(triplets))
    in_row_blocks(_triplet_products, len(triplets), Z, Y, position, clusters, triplets, out,
                  work=len(triplets) * Z.shape[2])
    return out


@compiled(fastmath=SUMS)
def _triplet_products(start, stop, Z, Y, position, clusters, triplets, out):  # pragma: no cover - compiled
    n, r = Z.shape[1], Z.shape[2]
    for t in range(start, stop):
        a, b, c_ = triplets[t, 0], triplets[t, 1], triplets[t, 2]
        gb, gl = clusters[b], clusters[c_]
        ya, yb = position[gb * n + a], position[gb * n + b]
        yla, yl = position[gl * n + a], position[gl * n + c_]
        s = 0.0
        for c in range(r):
            s += ((Z[gb, a, c] - Z[gb, b, c]) * (Y[ya, c] - Y[yb, c])
                  - (Z[gl, a, c] - Z[gl, c_, c]) * (Y[yla, c] - Y[yl, c]))
        out[t] = s


def ray_coefficients(Z, Y, clusters, targets, ptr, impostors, target_c, pair_c):
    """Distances along ``Z + t Y``: for every target pair ``(i, targets[i, a])`` into
    ``target_c`` (n, k, 3) and every impostor pair ``p`` of the working set into ``pair_c``
    (P, 3), the products ``|z|^2, z.y, |y|^2`` of the differences ``z = z_a - z_b`` and
    ``y = y_a - y_b`` in the coordinates of ``b``'s cluster."""
    n, k = targets.shape
    in_row_blocks(_ray_coefficients, n, Z, Y, clusters, targets, ptr, impostors, target_c, pair_c,
                  work=(n * k + len(impostors)) * Z.shape[2])
    return target_c, pair_c


@compiled(fastmath=SUMS)
def _ray_coefficients(start, stop, Z, Y, clusters, targets, ptr, impostors, target_c,
                      pair_c):  # pragma: no cover - compiled
    k = targets.shape[1]
    r = Z.shape[2]
    for i in range(start, stop):
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


@compiled(inline="always")
def _huber(h, gamma):  # pragma: no cover - compiled
    """The smoothed hinge ``s(h)``: 0, ``h^2 / (2 gamma)`` on ``(0, gamma)``, ``h - gamma / 2``."""
    if h <= 0.0:
        return 0.0
    return h - 0.5 * gamma if h >= gamma else 0.5 * h * h / gamma


@compiled(inline="always")
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


@compiled(inline="always")
def _ray_terms(target_c, pair_c, i, p, a, scale, prior):  # pragma: no cover - compiled
    """``h_0``, ``beta``, ``kappa`` of triplet ``(i, a, p)`` along a ray (``ray_pieces``)."""
    return (1.0 + target_c[i, a, 0] - pair_c[p, 0] + scale * prior[p, a], target_c[i, a, 1] - pair_c[p, 1],
            target_c[i, a, 2] - pair_c[p, 2])


def ray_pieces(target_c, pair_c, ptr, t_hi, quadratic, gamma, scale, prior, kink, count):
    """Sort the triplets of a ray (``ray_coefficients``) by the pieces of the smoothed hinge
    their ``h(t) = h_0 + lin(t) beta + q(t) kappa`` meets on ``[0, t_hi]`` (``h_0 = 1 + zz_ij -
    zz_il + scale prior``; ``lin = 2 t``, ``q = t^2`` along ``L + t V``; ``lin = 0``, ``q = t``
    along ``M + t V^T V``), from its least and largest value there: at most 0 throughout, the
    hinge's change is 0; at least ``gamma`` throughout, it is ``h(t) - h_0``, whose ``beta`` and
    ``kappa`` are summed per point into the returned (n, 2); otherwise ``kink[p, a]`` is set
    (P, k), and ``count`` (n,) counts each point's triplets so set."""
    n, k = target_c.shape[0], target_c.shape[1]
    linear = np.zeros((n, 2))
    in_row_blocks(_ray_pieces, n, target_c, pair_c, ptr, t_hi, quadratic, gamma, scale, prior, kink, count,
                  linear, work=(len(kink) + n) * k)
    return linear


@compiled()
def _ray_pieces(start, stop, target_c, pair_c, ptr, t_hi, quadratic, gamma, scale, prior, kink, count,
                linear):  # pragma: no cover - compiled
    k = target_c.shape[1]
    for i in range(start, stop):
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


def kink_terms(target_c, pair_c, ptr, scale, prior, kink, start):
    """``h_0``, ``beta`` and ``kappa`` (``ray_pieces``) of the triplets ``kink`` sets, in the
    order of ``np.nonzero(kink)``, point ``i``'s from ``start[i]`` (the running sum of
    ``ray_pieces``'s ``count``), each shape (``start[-1]``,)."""
    n = target_c.shape[0]
    h0, beta, kappa = np.empty(start[n]), np.empty(start[n]), np.empty(start[n])
    in_row_blocks(_kink_terms, n, target_c, pair_c, ptr, scale, prior, kink, start, h0, beta, kappa,
                  work=kink.size)
    return h0, beta, kappa


@compiled()
def _kink_terms(first, stop, target_c, pair_c, ptr, scale, prior, kink, start, h0, beta,
                kappa):  # pragma: no cover - compiled
    k = target_c.shape[1]
    for i in range(first, stop):
        t = start[i]
        for p in range(ptr[i], ptr[i + 1]):
            for a in range(k):
                if kink[p, a]:
                    h0[t], beta[t], kappa[t] = _ray_terms(target_c, pair_c, i, p, a, scale, prior)
                    t += 1


def kink_change(h0, beta, kappa, lin, q, gamma):
    """``sum_t s(h0_t + lin beta_t + q kappa_t) - s(h0_t)`` over the triplets of ``ray_pieces``'s
    ``kink``, each term free of cancellation (``_huber_change``)."""
    return sum(in_row_blocks(_kink_change, len(h0), h0, beta, kappa, lin, q, gamma, work=len(h0)))


@compiled()
def _kink_change(start, stop, h0, beta, kappa, lin, q, gamma):  # pragma: no cover - compiled
    total = 0.0
    for t in range(start, stop):
        total += _huber_change(h0[t], lin * beta[t] + q * kappa[t], gamma)
    return total
