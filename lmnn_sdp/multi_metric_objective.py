"""The multi-metric LMNN objective (JMLR 2009, sec. 5.2, eq. 16), numpy only.

Each point ``x_j`` belongs to a cluster ``c(j)`` (by default its class, as in the
paper's experiments; or any assignment such as k-means) and the distance *to*
``x_j`` is measured by that cluster's metric (eq. 16):

    D^(x_i, x_j) = (x_i - x_j)^T M_{c(j)} (x_i - x_j).

The objective of the SDP of sec. 5.2, with the linear hinge and unit margin of
eq. 14, is

    eps(M_1..M_C) = (1-mu) * sum_{i, j~>i} D^(x_i, x_j)
                  +    mu  * sum_{i, j~>i, l: y_l != y_i} [1 + D^(x_i, x_j) - D^(x_i, x_l)]_+ ,

so the target term uses ``M_{c(j)}`` and the impostor term ``M_{c(l)}``. With a
single cluster it is ``LMNNProblem.objective``. Everything here is blockwise
(never an ``n x n x k`` array), like ``lmnn_sdp.problem``.

``metrics`` is always an array of shape (C, d, d) and ``clusters`` an integer
array (n,) with values 0..C-1, each used.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from lmnn_sdp.problem import BLOCK_BYTES, LMNNProblem, check_triplets


def mm_objective(problem: LMNNProblem, metrics, clusters=None) -> float:
    """eps(M_1..M_C) of sec. 5.2 (module docstring), computed blockwise.

    Parameters
    ----------
    problem : LMNNProblem
        Data, targets and ``mu``.
    metrics : array-like of shape (C, d, d)
        One metric per cluster (eq. 16); only shape and finiteness are checked.
    clusters : array-like of int, shape (n,), optional
        Cluster of each point, values 0..C-1; default: the class labels.

    Returns
    -------
    float
    """
    clusters = check_clusters(problem, clusters)
    metrics = check_metrics(problem, metrics, clusters)
    pull = float(np.sum(mm_target_distances(problem, metrics, clusters)))
    push = sum(float(np.sum(np.maximum(hinge, 0.0)))
               for _, hinge in _hinge_blocks(problem, metrics, clusters))
    return (1.0 - problem.mu) * pull + problem.mu * push


def mm_target_distances(problem: LMNNProblem, metrics: np.ndarray,
                        clusters: np.ndarray) -> np.ndarray:
    """``D^(x_i, x_j)`` of eq. 16 for every target pair, shape (n, k)."""
    V = problem.X_centered[:, None, :] - problem.X_centered[problem.targets]
    owner = clusters[problem.targets]
    out = np.empty(problem.targets.shape)
    for c, M in enumerate(metrics):
        mask = owner == c
        out[mask] = np.einsum("pd,de,pe->p", V[mask], M, V[mask])
    return out


def mm_pair_distances(problem: LMNNProblem, metrics: np.ndarray, clusters: np.ndarray,
                      a, b) -> np.ndarray:
    """``D^(x_a, x_b)`` of eq. 16 (metric of ``b``'s cluster) for index arrays (P,); shape (P,).

    Computed from difference vectors, in chunks of 65,536 pairs."""
    a, b = np.asarray(a, dtype=np.intp), np.asarray(b, dtype=np.intp)
    Xc = problem.X_centered
    out = np.empty(len(a))
    for start in range(0, len(a), 65536):
        s = slice(start, start + 65536)
        V, owner = Xc[a[s]] - Xc[b[s]], clusters[b[s]]
        chunk = np.empty(len(V))
        for c, M in enumerate(metrics):
            mask = owner == c
            chunk[mask] = np.einsum("pd,de,pe->p", V[mask], M, V[mask])
        out[s] = chunk
    return out


def mm_triplet_margins(problem: LMNNProblem, metrics, clusters, triplets) -> np.ndarray:
    """``1 + D^(x_i, x_j) - D^(x_i, x_l)`` for triplets (T, 3); shape (T,)."""
    clusters = check_clusters(problem, clusters)
    metrics = check_metrics(problem, metrics, clusters)
    t = check_triplets(triplets, problem.n_samples)
    return (1.0 + mm_pair_distances(problem, metrics, clusters, t[:, 0], t[:, 1])
            - mm_pair_distances(problem, metrics, clusters, t[:, 0], t[:, 2]))


def mm_active_triplets(problem: LMNNProblem, metrics, clusters, band: float = 0.0) -> np.ndarray:
    """All triplets with margin ``1 + D^_ij - D^_il > -band``, shape (T, 3), exact and blockwise."""
    band = float(band)
    if not np.isfinite(band) or band < 0:
        raise ValueError(f"band must be a finite number >= 0, got {band}.")
    clusters = check_clusters(problem, clusters)
    metrics = check_metrics(problem, metrics, clusters)
    found = [np.empty((0, 3), dtype=np.intp)]
    for rows, hinge in _hinge_blocks(problem, metrics, clusters):
        b, r, l = np.nonzero(hinge > -band)
        found.append(np.column_stack([rows[b], problem.targets[rows[b], r], l]).astype(np.intp))
    return np.concatenate(found)


def mm_distance_matrix(X, metrics, clusters) -> np.ndarray:
    """All cluster-dependent distances ``D^(x_a, x_b)`` of eq. 16, shape (n, n).

    Not symmetric: column ``b`` uses ``M_{clusters[b]}``. ``X`` (n, d), ``metrics``
    (C, d, d), ``clusters`` (n,). Exact differences, O(n^2 d) memory: for small data."""
    X = np.asarray(X, dtype=float)
    out = np.empty((len(X), len(X)))
    for c, M in enumerate(np.asarray(metrics, dtype=float)):
        cols = np.flatnonzero(np.asarray(clusters) == c)
        V = X[:, None, :] - X[None, cols, :]
        out[:, cols] = np.einsum("abd,de,abe->ab", V, M, V)
    return out


def leave_one_out_error(X, y, metrics, clusters) -> float:
    """Leave-one-out 1-NN error with the distance of eq. 16 (the measure of Fig. 7).

    Each point takes the label of the other point ``j`` nearest to it under
    ``M_{c(j)}``; ties go to the smaller index. Returns the fraction misclassified."""
    D = mm_distance_matrix(X, metrics, clusters)
    np.fill_diagonal(D, np.inf)
    y = np.asarray(y)
    return float(np.mean(y[np.argmin(D, axis=1)] != y))


def cluster_pull_matrices(problem: LMNNProblem, clusters: np.ndarray) -> np.ndarray:
    """``P_c = sum_{i, j~>i, c(j)=c} C_ij`` for every cluster, shape (C, d, d)."""
    rows = np.repeat(np.arange(problem.n_samples), problem.k)
    targets = problem.targets.ravel()
    return _cluster_scatter(problem, clusters, rows, targets, np.ones(len(rows)))


def cluster_triplet_scatter(problem: LMNNProblem, clusters: np.ndarray, triplets,
                            weights=None) -> np.ndarray:
    """``Q_c = sum_t w_t (C_il [c(l)=c] - C_ij [c(j)=c])`` for every cluster, shape (C, d, d).

    The matrices the multipliers act on in the dual of sec. 5.2 (``multi_metric``)."""
    t = check_triplets(triplets, problem.n_samples)
    w = np.ones(len(t)) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (len(t),):
        raise ValueError(f"weights must have shape ({len(t)},), got {w.shape}.")
    return _cluster_scatter(problem, clusters, np.concatenate([t[:, 0], t[:, 0]]),
                            np.concatenate([t[:, 2], t[:, 1]]), np.concatenate([w, -w]))


def check_clusters(problem: LMNNProblem, clusters) -> np.ndarray:
    """Validated cluster assignment (n,) of intp in 0..C-1, every cluster used.

    ``None`` gives one cluster per class (``problem.label_codes``, sec. 5.2)."""
    if clusters is None:
        return problem.label_codes
    c = np.asarray(clusters)
    n = problem.n_samples
    if c.ndim != 1 or len(c) != n:
        raise ValueError(f"clusters must have shape (n_samples,) = ({n},), got {c.shape}; "
                         "give one cluster index per point.")
    if not np.issubdtype(c.dtype, np.integer):
        raise TypeError(f"clusters must hold integer cluster indices, got dtype={c.dtype}; "
                        "convert labels with np.unique(clusters, return_inverse=True)[1].")
    if c.min() < 0:
        raise ValueError(f"clusters must be indices 0..C-1, got the value {c.min()}.")
    empty = np.flatnonzero(np.bincount(c) == 0)
    if len(empty):
        raise ValueError(f"cluster {empty[0]} has no members, so its metric would be "
                         "meaningless; number the clusters 0..C-1 with every index used, "
                         "e.g. np.unique(clusters, return_inverse=True)[1].")
    return c.astype(np.intp)


def check_metrics(problem: LMNNProblem, metrics, clusters: np.ndarray) -> np.ndarray:
    """``metrics`` as a float array (C, d, d), C = number of clusters; finite."""
    M = np.asarray(metrics, dtype=float)
    C, d = int(clusters.max()) + 1, problem.n_features
    if M.shape != (C, d, d):
        raise ValueError(f"metrics must have shape (n_clusters, d, d) = ({C}, {d}, {d}), "
                         f"got {M.shape}: one metric per cluster (eq. 16).")
    if not np.all(np.isfinite(M)):
        raise ValueError("metrics contain NaN or infinity.")
    return M


def _cluster_scatter(problem: LMNNProblem, clusters: np.ndarray, a: np.ndarray, b: np.ndarray,
                     w: np.ndarray) -> np.ndarray:
    """``sum_p w_p C_{a_p b_p}`` grouped by the cluster of ``b_p``, shape (C, d, d)."""
    owner = clusters[b]
    masks = [owner == c for c in range(int(clusters.max()) + 1)]
    return np.stack([problem.weighted_scatter(a[m], b[m], w[m]) for m in masks])


def _hinge_blocks(problem: LMNNProblem, metrics: np.ndarray,
                  clusters: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(rows, hinge)`` with hinge (b, k, n) = ``1 + D^_ij - D^_il`` (eq. 16),
    and -inf where ``l`` shares the label of ``i``."""
    Xc, codes, n = problem.X_centered, problem.label_codes, problem.n_samples
    sq = np.einsum("nd,cde,ne->cn", Xc, metrics, Xc)  # (C, n): x^T M_c x
    own = sq[clusters, np.arange(n)]  # x_l^T M_{c(l)} x_l
    members = [np.flatnonzero(clusters == c) for c in range(len(metrics))]
    target_d = mm_target_distances(problem, metrics, clusters)
    block = max(1, BLOCK_BYTES // (8 * n * (problem.k + 1)))
    for start in range(0, n, block):
        rows = np.arange(start, min(start + block, n))
        D = np.empty((len(rows), n))
        for c, cols in enumerate(members):
            D[:, cols] = (sq[c, rows, None] + own[None, cols]
                          - 2.0 * (Xc[rows] @ metrics[c]) @ Xc[cols].T)
        D[codes[rows, None] == codes[None, :]] = np.inf
        yield rows, 1.0 + target_d[rows, :, None] - D[:, None, :]
