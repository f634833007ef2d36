"""``svec``: a symmetric matrix by its upper triangle, as the SDPs hold it (``sdp``).

Weights ``w`` (1 on the diagonal, 2 off it) make ``<A, M> = (svec(A) * w) @ svec(M)``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def svec_weights(r: int) -> np.ndarray:
    """Weights (r(r+1)/2,) with ``<A, M> = svec(A) * w @ svec(M)``: 1 on the diagonal, 2 off it."""
    a, b = np.triu_indices(r)
    return np.where(a == b, 1.0, 2.0)


def svec(A: np.ndarray) -> np.ndarray:
    """Upper triangle (with diagonal) of a symmetric (r, r) matrix, shape (r(r+1)/2,)."""
    return A[np.triu_indices(len(A))]


def svec_rows(S: np.ndarray) -> np.ndarray:
    """``svec`` of each symmetric matrix of a stack (G, r, r); shape (G, r(r+1)/2)."""
    a, b = np.triu_indices(S.shape[1])
    return S[:, a, b]


def pair_outer_svec(V: np.ndarray) -> np.ndarray:
    """``svec(v_p v_p^T)`` for the rows of ``V`` (P, r); shape (P, r(r+1)/2)."""
    a, b = np.triu_indices(V.shape[1])
    return V[:, a] * V[:, b]


def svec_to_matrix(r: int) -> sp.csr_matrix:
    """Sparse operator (r*r, r(r+1)/2) from ``svec(M)`` to ``M.ravel()`` (row major)."""
    a, b = np.triu_indices(r)
    q = np.arange(len(a))
    rows = np.concatenate([a * r + b, (b * r + a)[a != b]])
    cols = np.concatenate([q, q[a != b]])
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(r * r, len(a)))
