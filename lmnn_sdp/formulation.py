"""Building blocks shared by the exact formulations: the reduced space and ``svec``.

Reduced space. ``eps(M)`` sees the inputs only through differences ``x_a - x_b``,
which lie in the column space of the centred inputs. With an orthonormal basis
``V`` (d, r) of that space and a scale ``c`` (the root mean target distance),
every formulation works on ``X_r = X_c V / c`` (n, r) and a metric ``M_r`` (r, r);
``M = B M_r B^T`` with ``B = V / c`` has the same objective, is PSD iff ``M_r`` is,
and the optimum over ``M_r`` is the optimum over ``M``. This removes the free
directions of rank-deficient data and puts target distances near 1, which is the
scale at which Clarabel and SCS are accurate.

svec. The SDPs (``sdp``) hold a symmetric ``M`` by its upper triangle, ``svec(M)``,
with weights that make ``<A, M>`` a dot product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from lmnn_sdp.problem import LMNNProblem


@dataclass(frozen=True)
class ReducedSpace:
    """Coordinates ``X_r = X_c @ basis`` (n, r) in which the exact solvers work."""

    basis: np.ndarray  # (d, r): M = basis @ M_r @ basis.T
    inputs: np.ndarray  # (n, r)
    scale: float  # c, with basis = V / c for an orthonormal V

    @property
    def rank(self) -> int:
        return self.basis.shape[1]

    def lift(self, M_r: np.ndarray) -> np.ndarray:
        """Metric (d, d) on the inputs from a metric (r, r) on the reduced coordinates."""
        M = self.basis @ M_r @ self.basis.T
        return (M + M.T) / 2

    def reduce(self, M: np.ndarray) -> np.ndarray:
        """``M_r`` (r, r) with ``lift(M_r)`` = ``M`` projected on the data range."""
        M_r = self.scale**4 * (self.basis.T @ M @ self.basis)
        return (M_r + M_r.T) / 2

    def matrix(self, full: np.ndarray) -> np.ndarray:
        """A matrix of the dual side (d, d), such as the pull matrix, in reduced coordinates."""
        Z = self.basis.T @ full @ self.basis
        return (Z + Z.T) / 2


def reduced_space(problem: LMNNProblem) -> ReducedSpace:
    """The data range of ``problem`` with target distances scaled to mean 1."""
    Xc = problem.X_centered
    _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    rank = int(np.sum(s > s[0] * max(Xc.shape) * np.finfo(float).eps)) if s[0] > 0 else 0
    if rank == 0:
        raise ValueError("all inputs are identical; there is no metric to learn.")
    V = Vt[:rank].T
    mean_target = np.trace(problem.pull_matrix()) / (problem.n_samples * problem.k)
    scale = float(np.sqrt(mean_target)) if mean_target > 0 else 1.0
    basis = V / scale
    return ReducedSpace(basis=basis, inputs=Xc @ basis, scale=scale)


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
