"""The reduced space: the data range, with target distances near 1, and sums of pair outer
products formed in it (numpy and scipy only).

``eps(M)`` sees the inputs only through differences ``x_a - x_b``,
which lie in the column space of the centred inputs. With an orthonormal basis
``V`` (d, r) of that space and a scale ``c`` (the root mean target distance),
every formulation works on ``X_r = X_c V / c`` (n, r) and a metric ``M_r`` (r, r);
``M = B M_r B^T`` with ``B = V / c`` has the same objective, is PSD iff ``M_r`` is,
and the optimum over ``M_r`` is the optimum over ``M``. This removes the free
directions of rank-deficient data and puts target distances near 1, which is the
scale at which Clarabel and SCS are accurate.

A problem is immutable, so what it defines is computed once and kept with it: the
data range and its three coordinate systems (they depend on the inputs and targets
alone, and ``LMNNProblem.with_clusters`` shares them) and the pull matrices per
coordinate system (they depend on the clusters too).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from lmnn_sdp.core.problem import LMNNProblem


@dataclass(frozen=True, eq=False)
class ReducedSpace:
    """Coordinates ``X_r = X_c @ basis`` (n, r) of the data range: those of the exact
    solvers (``reduced_space``) or the fast solver's whitened ones (``lmnn_sdp.core.whitening``)."""

    basis: np.ndarray  # (d, r): M = basis @ M_r @ basis.T
    inputs: np.ndarray  # (n, r)

    @property
    def rank(self) -> int:
        return self.basis.shape[1]

    def lift(self, M_r: np.ndarray) -> np.ndarray:
        """Metric (d, d) on the inputs from a metric (r, r) on the reduced coordinates."""
        M = self.basis @ M_r @ self.basis.T
        return (M + M.T) / 2


def _computed_once(compute):
    """``compute(problem)`` made to run once per problem: the value is kept with the problem
    and its ``with_clusters`` copies, so ``compute`` must depend on the inputs and targets
    alone. Arrays are returned read-only (every caller shares them)."""
    @functools.wraps(compute)
    def once(problem: LMNNProblem):
        return problem.computed_once(compute, lambda: _readonly(compute(problem)))
    return once


def _readonly(value):
    arrays = [value] if isinstance(value, np.ndarray) else [value.basis, value.inputs]
    for a in arrays:
        a.flags.writeable = False
    return value


@_computed_once
def data_range(problem: LMNNProblem) -> np.ndarray:
    """An orthonormal basis ``V`` (d, r) of the span of the centred inputs (singular values
    above ``max(n, d) eps`` of the largest), or a ValueError when all inputs coincide.

    With more points than features the singular values and vectors are those of the
    triangular factor of ``X_c = Q R`` (d, d), as LAPACK's SVD of a tall matrix computes
    them too, without the left singular vectors (n, d) it would also form."""
    Xc = problem.X_centered
    _, s, Vt = np.linalg.svd(np.linalg.qr(Xc, mode="r") if len(Xc) > Xc.shape[1] else Xc, full_matrices=False)
    rank = int(np.sum(s > s[0] * max(Xc.shape) * np.finfo(float).eps)) if s[0] > 0 else 0
    if rank == 0:
        raise ValueError("all inputs are identical; there is no metric to learn.")
    return Vt[:rank].T


@_computed_once
def reduced_space(problem: LMNNProblem) -> ReducedSpace:
    """The data range of ``problem`` with target distances scaled to mean 1."""
    Xc = problem.X_centered
    V = data_range(problem)
    mean_target = np.trace(problem.pull_matrix()) / (problem.n_samples * problem.k)
    basis = V / (float(np.sqrt(mean_target)) if mean_target > 0 else 1.0)
    return ReducedSpace(basis=basis, inputs=Xc @ basis)


@_computed_once
def sphered_space(problem: LMNNProblem) -> ReducedSpace:
    """The data range in sphered coordinates ``X_c V S^{-1}`` (``S`` (r,) the singular values
    of ``X_c V``): every direction of the data has the same spread, whatever the units of the
    features, so ranks and eigenvalues decided there are decided by the targets, not by the
    scales. The coordinates of every certificate's lower bound and of the fast solver's
    whitening."""
    V = data_range(problem)
    basis = V / np.linalg.norm(problem.X_centered @ V, axis=0)
    return ReducedSpace(basis=basis, inputs=problem.X_centered @ basis)


@_computed_once
def units_space(problem: LMNNProblem) -> ReducedSpace:
    """The data range in the units of the inputs: ``X_c V`` with ``V`` (d, r) an orthonormal
    basis of it (``data_range``)."""
    V = data_range(problem)
    return ReducedSpace(basis=V, inputs=problem.X_centered @ V)


def pull_matrices(problem: LMNNProblem, space: ReducedSpace) -> np.ndarray:
    """The pull matrices ``P_c = sum_{i, j~>i, c(j)=c} C_ij`` in the coordinates of ``space``,
    for the clusters of ``problem`` (``problem.owner``); shape (C, r, r) (C = 1 for LMNN),
    read-only. Computed once per problem and space (kept while the space lives)."""
    n, k = problem.targets.shape
    return problem.computed_once(space, lambda: _readonly(cluster_scatter(
        space.inputs, problem.owner, np.repeat(np.arange(n), k), problem.targets.ravel(), np.ones(n * k),
        problem.n_clusters)))


def cluster_scatter(Xr: np.ndarray, owner: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray,
                    C: int) -> np.ndarray:
    """``sum_p w_p (x_a - x_b)(x_a - x_b)^T`` grouped by the cluster ``owner[b_p]``: (C, r, r)."""
    return grouped_scatter(Xr, a, b, w, owner[b], C)


def grouped_scatter(Xr: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray, group: np.ndarray,
                    G: int) -> np.ndarray:
    """``sum_p w_p (x_a - x_b)(x_a - x_b)^T`` over the pairs of each group ``group[p]`` in
    ``0..G-1``: (G, r, r). The pairs are sorted by group once, and each group's Laplacian
    spans only the points its pairs touch (many small groups cost what one large one does)."""
    out = np.zeros((G, Xr.shape[1], Xr.shape[1]))
    order = np.argsort(group, kind="stable")
    ends = np.searchsorted(group[order], np.arange(G + 1))
    for g in range(G):
        s = order[ends[g]:ends[g + 1]]
        if len(s):
            points, inverse = np.unique(np.concatenate([a[s], b[s]]), return_inverse=True)
            out[g] = pair_scatter(Xr[points], inverse[:len(s)], inverse[len(s):], w[s])
    return out


def pair_scatter(Xr: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_p w_p (x_a - x_b)(x_a - x_b)^T`` (r, r) for rows ``Xr`` (n, r) through the
    graph Laplacian, ``Xr^T (Deg - W - W^T) Xr``, formed in the given coordinates (so a
    well-conditioned space keeps its accuracy); the product over the rows is
    ``blocked_cross``, so its rounding grows with ``cross_terms(n)``, not with ``n``."""
    n = len(Xr)
    W = sp.coo_matrix((w, (a, b)), shape=(n, n)).tocsr()
    W = W + W.T
    laplacian = sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W
    S = blocked_cross(Xr, laplacian @ Xr)
    return (S + S.T) / 2


CROSS_BLOCK = 1024  # rows of one product in ``blocked_cross``


def blocked_cross(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``X^T Y`` for ``X`` (n, r) and ``Y`` (n, s): one product per block of ``CROSS_BLOCK``
    rows, the blocks' products summed pairwise, so every term of an entry passes through at
    most ``cross_terms(n)`` roundings (a product of any order over ``CROSS_BLOCK`` rows, then
    a tree of additions), where one product over all rows may take ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(3000, 2))
    >>> bool(np.allclose(blocked_cross(X, X), X.T @ X))
    True
    """
    parts = [X[s:s + CROSS_BLOCK].T @ Y[s:s + CROSS_BLOCK] for s in range(0, max(len(X), 1), CROSS_BLOCK)]
    while len(parts) > 1:
        parts = [parts[m] + parts[m + 1] if m + 1 < len(parts) else parts[m] for m in range(0, len(parts), 2)]
    return parts[0]


def cross_terms(n: int) -> int:
    """Roundings an entry's term of ``blocked_cross`` over ``n`` rows passes through at most:
    ``CROSS_BLOCK`` in a block's product (its multiplication and additions), then
    ``ceil(log2(blocks))`` additions of the pairwise sum."""
    blocks = max(1, -(-n // CROSS_BLOCK))
    return min(n, CROSS_BLOCK) + int(np.ceil(np.log2(blocks)))
