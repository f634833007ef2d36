"""Building blocks shared by the exact formulations: the reduced space and pair distances.

Reduced space. ``eps(M)`` sees the inputs only through differences ``x_a - x_b``,
which lie in the column space of the centred inputs. With an orthonormal basis
``V`` (d, r) of that space and a scale ``c`` (the root mean target distance),
every formulation works on ``X_r = X_c V / c`` (n, r) and a metric ``M_r`` (r, r);
``M = B M_r B^T`` with ``B = V / c`` has the same objective, is PSD iff ``M_r`` is,
and the optimum over ``M_r`` is the optimum over ``M``. This removes the free
directions of rank-deficient data and puts target distances near 1, which is the
scale at which Clarabel and SCS are accurate.

Pair distances. A margin ``1 + D_ij - D_il`` is the difference of two pair
distances. The formulations keep one distance per distinct pair
(``D_p = <C_p, M>``, a dense row over the r(r+1)/2 entries of ``M``) and a
sparse signed incidence matrix ``S`` (T, P) with ``+1`` at ``(i, j)`` and ``-1`` at
``(i, l)``, so margins are ``1 + S D``. Each triplet then costs three nonzeros
instead of a dense row: on wine this cut an SCS solve from about 170 s to 40 s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from lmnn_sdp.line_search import golden_section
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


def best_scaled_identity(problem: LMNNProblem, space: ReducedSpace) -> np.ndarray:
    """The metric ``s * I`` (reduced space, ``2^-6 <= s <= 2^10``) of least ``eps``, (d, d).

    ``eps(s I)`` is convex in ``s``, so unimodal in ``log s``: golden section, 20 steps."""
    metric = lambda e: space.lift(2.0**e * np.eye(space.rank))  # noqa: E731
    exponent, _ = golden_section(lambda e: problem.objective(metric(e)), -6.0, 10.0, 20)
    return metric(exponent)


@dataclass(frozen=True)
class TripletPairs:
    """Distinct pairs of a triplet set and the signed incidence ``S`` (T, P)."""

    pairs: np.ndarray  # (P, 2), a < b
    signs: sp.csr_matrix  # (T, P): margins = 1 + signs @ pair_distances


def triplet_pairs(triplets: np.ndarray, n_samples: int) -> TripletPairs:
    """Merge the (i, j) and (i, l) pairs of ``triplets`` (T, 3) into distinct pairs."""
    T = len(triplets)
    first = np.concatenate([triplets[:, 0], triplets[:, 0]]).astype(np.int64)
    second = np.concatenate([triplets[:, 1], triplets[:, 2]]).astype(np.int64)
    keys = np.minimum(first, second) * n_samples + np.maximum(first, second)
    unique, column = np.unique(keys, return_inverse=True)
    pairs = np.column_stack([unique // n_samples, unique % n_samples]).astype(np.intp)
    rows = np.concatenate([np.arange(T), np.arange(T)])
    values = np.concatenate([np.ones(T), -np.ones(T)])
    signs = sp.csr_matrix((values, (rows, column.ravel())), shape=(T, len(unique)))
    return TripletPairs(pairs=pairs, signs=signs)


def svec_weights(r: int) -> np.ndarray:
    """Weights (r(r+1)/2,) with ``<A, M> = svec(A) * w @ svec(M)``: 1 on the diagonal, 2 off it."""
    a, b = np.triu_indices(r)
    return np.where(a == b, 1.0, 2.0)


def svec(A: np.ndarray) -> np.ndarray:
    """Upper triangle (with diagonal) of a symmetric (r, r) matrix, shape (r(r+1)/2,)."""
    return A[np.triu_indices(len(A))]


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
