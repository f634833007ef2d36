"""The LMNN problem, defined once (Weinberger & Saul, JMLR 2009, eq. 14).

``LMNNProblem`` holds the data, the target neighbours and ``mu``, and owns the
objective

    eps(M) = (1-mu) * sum_{i, j~>i} D_M(x_i, x_j)
           +    mu  * sum_{i, j~>i, l: y_l != y_i} [1 + D_M(x_i, x_j) - D_M(x_i, x_l)]_+

with the linear hinge and unit margin. Every solver in the library, exact or
fast, solves this object. This module uses numpy only (no cvxpy) and every
computation over triplets is blockwise, so it runs on tens of thousands of
points without an ``n x n x k`` array.

A triplet is a row ``(i, j, l)`` of an integer array of shape ``(T, 3)``:
``j`` is a target neighbour of ``i`` and ``l`` has another label.
"""

from __future__ import annotations

from collections.abc import Iterator
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

BLOCK_BYTES = 64 * 2**20  # memory budget of one block of pairwise distances


class LMNNProblem:
    """Labelled data, target neighbours and ``mu`` of one LMNN instance (eq. 14).

    Parameters
    ----------
    X : array-like of shape (n, d)
        Inputs; finite real numbers.
    y : array-like of shape (n,)
        Labels (any hashable values); at least two classes.
    k : int, optional
        Number of target neighbours per point (default 3). Every class needs
        at least ``k + 1`` members. May be omitted when ``targets`` is given.
    mu : float in [0, 1]
        Weight of the push (hinge) term; the pull term has weight ``1 - mu``.
    targets : array-like of int, shape (n, k), optional
        Explicit target neighbours. Default: the ``k`` nearest points of the
        same class by Euclidean distance, ties broken by the smaller index.
    """

    def __init__(self, X, y, k: int | None = None, mu: float = 0.5, targets=None):
        self.X = _readonly(check_inputs(X))
        self.n_samples, self.n_features = self.X.shape
        self.y = _readonly(check_labels(y, self.n_samples))
        self.classes, codes = np.unique(self.y, return_inverse=True)
        self.label_codes = _readonly(codes.astype(np.intp))
        if len(self.classes) < 2:
            raise ValueError(
                f"y has a single class ({self.classes[0].tolist()!r}); LMNN needs at least two "
                "classes, since impostors are points of another class."
            )
        self.mu = _check_mu(mu)
        # Every distance is computed on centred inputs: D_M is translation
        # invariant and centring keeps the Gram-matrix trick accurate.
        self._Xc = _readonly(self.X - self.X.mean(axis=0))
        if targets is None:
            self.k = 3 if k is None else _check_k(k, self.label_codes, self.classes)
            self.targets = _readonly(nearest_same_class(self.X, self.label_codes, self.k))
        else:
            self.targets = _readonly(_check_targets(targets, self.label_codes, k))
            self.k = self.targets.shape[1]
        self._pull = None

    def __repr__(self) -> str:
        return (
            f"LMNNProblem(n={self.n_samples}, d={self.n_features}, k={self.k}, "
            f"mu={self.mu}, classes={len(self.classes)}, triplets={self.n_triplets})"
        )

    @property
    def X_centered(self) -> np.ndarray:
        """Inputs minus their mean, shape (n, d); every distance is computed on these."""
        return self._Xc

    @property
    def n_triplets(self) -> int:
        """Number of triplets ``(i, j, l)`` in eq. 14: ``k * sum_i |{l: y_l != y_i}|``."""
        counts = np.bincount(self.label_codes)
        return int(self.k * np.sum(self.n_samples - counts[self.label_codes]))

    # -- the objective ------------------------------------------------------
    def objective(self, M) -> float:
        """eps(M) of eq. 14, computed blockwise; ``M`` of shape (d, d)."""
        M = self.check_metric(M)
        pull = float(np.sum(self.target_distances(M)))
        push = sum(
            float(np.sum(np.maximum(hinge, 0.0)))
            for _, hinge in self._hinge_blocks(M)
        )
        return (1.0 - self.mu) * pull + self.mu * push

    def pull_matrix(self) -> np.ndarray:
        """``sum_{i, j~>i} C_ij`` of shape (d, d), with ``C_ab = (x_a-x_b)(x_a-x_b)^T``."""
        if self._pull is None:
            V = self._Xc[np.repeat(np.arange(self.n_samples), self.k)] - self._Xc[self.targets.ravel()]
            self._pull = _readonly(V.T @ V)
        return self._pull

    def target_distances(self, M) -> np.ndarray:
        """``D_M(x_i, x_j)`` for every target pair, shape (n, k)."""
        M = self.check_metric(M)
        V = self._Xc[:, None, :] - self._Xc[self.targets]
        return np.einsum("nkd,nkd->nk", V @ M, V)

    # -- triplets -------------------------------------------------------------
    def triplet_margins(self, M, triplets) -> np.ndarray:
        """``1 + D_M(x_i, x_j) - D_M(x_i, x_l)`` for triplets (T, 3); shape (T,).

        Computed from difference vectors (no Gram-matrix cancellation)."""
        M = self.check_metric(M)
        t = check_triplets(triplets, self.n_samples)
        Xc = self._Xc
        out = np.empty(len(t))
        for start in range(0, len(t), 65536):
            s = t[start:start + 65536]
            a = Xc[s[:, 0]] - Xc[s[:, 1]]
            b = Xc[s[:, 0]] - Xc[s[:, 2]]
            out[start:start + 65536] = 1.0 + np.einsum("td,td->t", (a - b) @ M, a + b)
        return out

    def active_triplets(self, M, band: float = 0.0) -> np.ndarray:
        """All triplets with ``1 + D_ij - D_il > -band``, shape (T, 3), exact and blockwise.

        ``band = 0`` gives the violated (active) triplets of eq. 14; a positive
        band also returns the triplets within ``band`` of the margin."""
        band = float(band)
        if not np.isfinite(band) or band < 0:
            raise ValueError(f"band must be a finite number >= 0, got {band}.")
        M = self.check_metric(M)
        found = []
        for rows, hinge in self._hinge_blocks(M):
            b, r, l = np.nonzero(hinge > -band)
            if len(b):
                found.append(np.column_stack([rows[b], self.targets[rows[b], r], l]))
        if not found:
            return np.empty((0, 3), dtype=np.intp)
        return np.concatenate(found).astype(np.intp)

    def all_triplets(self, max_triplets: int = 5_000_000) -> np.ndarray:
        """Every triplet of eq. 14, shape (T, 3), ordered by i, then target rank, then l."""
        if self.n_triplets > max_triplets:
            raise ValueError(
                f"the problem has {self.n_triplets} triplets, more than "
                f"max_triplets={max_triplets}; raise max_triplets or use "
                "active_triplets / constraint generation instead."
            )
        codes = self.label_codes
        rows = []
        for i in range(self.n_samples):
            others = np.flatnonzero(codes != codes[i])
            for j in self.targets[i]:
                rows.append(np.column_stack([np.full(len(others), i), np.full(len(others), j), others]))
        return np.concatenate(rows).astype(np.intp)

    def weighted_scatter(self, a, b, weights) -> np.ndarray:
        """``sum_p w_p C_{a_p b_p}`` of shape (d, d) through the graph Laplacian.

        ``sum_p w_p (x_a - x_b)(x_a - x_b)^T = X^T (Deg - W - W^T) X`` with
        ``W = sparse(w, (a, b))``; no loop and no (T, d) array."""
        a = np.asarray(a, dtype=np.intp)
        b = np.asarray(b, dtype=np.intp)
        w = np.asarray(weights, dtype=float)
        n = self.n_samples
        W = sp.coo_matrix((w, (a, b)), shape=(n, n)).tocsr()
        W = W + W.T
        laplacian = sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W
        S = self._Xc.T @ (laplacian @ self._Xc)
        return (S + S.T) / 2

    def triplet_scatter(self, triplets, weights=None) -> np.ndarray:
        """``sum_t w_t (C_il - C_ij)`` over triplets (T, 3), shape (d, d).

        This is the matrix the multipliers of the dual act on (DESIGN.md)."""
        t = check_triplets(triplets, self.n_samples)
        w = np.ones(len(t)) if weights is None else np.asarray(weights, dtype=float)
        if w.shape != (len(t),):
            raise ValueError(f"weights must have shape ({len(t)},), got {w.shape}.")
        a = np.concatenate([t[:, 0], t[:, 0]])
        b = np.concatenate([t[:, 2], t[:, 1]])
        return self.weighted_scatter(a, b, np.concatenate([w, -w]))

    # -- internals ------------------------------------------------------------
    def check_metric(self, M) -> np.ndarray:
        """``M`` as a float array of shape (d, d) with finite entries, else a ValueError."""
        M = np.asarray(M, dtype=float)
        d = self.n_features
        if M.shape != (d, d):
            raise ValueError(f"M must have shape ({d}, {d}) for this problem, got {M.shape}.")
        if not np.all(np.isfinite(M)):
            raise ValueError("M contains NaN or infinity.")
        return M

    def _hinge_blocks(self, M) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(rows, hinge)`` with hinge (b, k, n) = ``1 + D_ij - D_il``, and -inf
        where ``l`` shares the label of ``i`` (so such pairs never count)."""
        Xc, codes = self._Xc, self.label_codes
        XM = Xc @ M
        sq = np.einsum("nd,nd->n", XM, Xc)
        target_d = self.target_distances(M)
        n = self.n_samples
        block = max(1, BLOCK_BYTES // (8 * n * (self.k + 1)))
        for start in range(0, n, block):
            rows = np.arange(start, min(start + block, n))
            D = sq[rows, None] + sq[None, :] - 2.0 * (XM[rows] @ Xc.T)
            D[codes[rows, None] == codes[None, :]] = np.inf
            yield rows, 1.0 + target_d[rows, :, None] - D[:, None, :]


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


def metric_components(M: np.ndarray) -> np.ndarray:
    """``L`` (d, d) with ``L^T L = M`` for a PSD ``M`` (d, d) (eq. 2), rows ordered by
    decreasing eigenvalue; the components of a scikit-learn transformer."""
    eigenvalues, V = np.linalg.eigh(M)
    order = np.argsort(eigenvalues)[::-1]
    return (V[:, order] * np.sqrt(np.maximum(eigenvalues[order], 0.0))).T


# -- validation ---------------------------------------------------------------
def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def check_inputs(X) -> np.ndarray:
    """``X`` as a finite float array (n, d), or an error naming the fix."""
    if isinstance(X, np.ndarray) and X.dtype == object:
        raise TypeError("X must be an array of real numbers, got dtype=object.")
    try:
        X = np.array(X, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"X must be an array of real numbers: {err}") from None
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D of shape (n_samples, n_features), got {X.ndim}-D; "
                         "reshape a single feature with X.reshape(-1, 1).")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be non-empty, got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinity; remove or impute those entries first.")
    return X


def check_labels(y, n: int) -> np.ndarray:
    """``y`` as an array (n,) of labels, or an error naming the fix."""
    y = np.array(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D of shape (n_samples,), got shape {y.shape}.")
    if len(y) != n:
        raise ValueError(f"X has {n} rows but y has {len(y)} labels; they must match.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity; every point needs a label.")
    return y


def _check_mu(mu) -> float:
    if isinstance(mu, bool) or not isinstance(mu, Real):
        raise TypeError(f"mu must be a real number in [0, 1], got {mu!r}.")
    if not 0.0 <= float(mu) <= 1.0:
        raise ValueError(f"mu must lie in [0, 1] (weight of the push term), got {mu}.")
    return float(mu)


def _check_k(k, codes: np.ndarray, classes: np.ndarray) -> int:
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise TypeError(f"k must be a positive integer, got {k!r}.")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}.")
    counts = np.bincount(codes)
    smallest = int(np.argmin(counts))
    if counts[smallest] <= k:
        raise ValueError(
            f"class {classes[smallest].tolist()!r} has {counts[smallest]} members, so it cannot "
            f"give each point k={k} target neighbours of its own class; use "
            f"k <= {counts[smallest] - 1} (the largest valid k for this data)."
        )
    return int(k)


def _check_targets(targets, codes: np.ndarray, k) -> np.ndarray:
    t = np.asarray(targets)
    n = len(codes)
    if t.ndim != 2 or t.shape[0] != n or t.shape[1] == 0:
        raise ValueError(f"targets must have shape (n_samples, k) = ({n}, k>=1), got {t.shape}.")
    if not np.issubdtype(t.dtype, np.integer):
        raise TypeError(f"targets must hold integer indices, got dtype={t.dtype}.")
    if k is not None and k != t.shape[1]:
        raise ValueError(f"k={k} disagrees with targets of shape {t.shape}; omit k or make them agree.")
    if t.min() < 0 or t.max() >= n:
        raise ValueError(f"targets must be indices in [0, {n - 1}], got values in [{t.min()}, {t.max()}].")
    t = t.astype(np.intp)
    own = np.flatnonzero((t == np.arange(n)[:, None]).any(axis=1))
    if len(own):
        raise ValueError(f"point {own[0]} is its own target neighbour; targets must be other points.")
    other = np.flatnonzero((codes[t] != codes[:, None]).any(axis=1))
    if len(other):
        raise ValueError(f"point {other[0]} has a target neighbour of another class; "
                         "targets must share the label of their point.")
    repeated = np.flatnonzero((np.diff(np.sort(t, axis=1), axis=1) == 0).any(axis=1))
    if len(repeated):
        raise ValueError(f"point {repeated[0]} lists the same target neighbour twice.")
    return t


def check_triplets(triplets, n: int) -> np.ndarray:
    """``triplets`` as ints (T, 3) indexing ``n`` points, or an error naming the fix."""
    t = np.asarray(triplets)
    if t.ndim != 2 or t.shape[1] != 3:
        raise ValueError(f"triplets must have shape (T, 3) with columns (i, j, l), got {t.shape}.")
    if len(t) and not np.issubdtype(t.dtype, np.integer):
        raise TypeError(f"triplets must hold integer indices, got dtype={t.dtype}.")
    if len(t) and (t.min() < 0 or t.max() >= n):
        raise ValueError(f"triplet indices must lie in [0, {n - 1}].")
    return t.astype(np.intp)
