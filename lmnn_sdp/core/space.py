"""The reduced space: the data range, with target distances near 1 (numpy only).

``eps(M)`` sees the inputs only through differences ``x_a - x_b``,
which lie in the column space of the centred inputs. With an orthonormal basis
``V`` (d, r) of that space and a scale ``c`` (the root mean target distance),
every formulation works on ``X_r = X_c V / c`` (n, r) and a metric ``M_r`` (r, r);
``M = B M_r B^T`` with ``B = V / c`` has the same objective, is PSD iff ``M_r`` is,
and the optimum over ``M_r`` is the optimum over ``M``. This removes the free
directions of rank-deficient data and puts target distances near 1, which is the
scale at which Clarabel and SCS are accurate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp.core.problem import LMNNProblem


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


def data_range(problem: LMNNProblem) -> np.ndarray:
    """An orthonormal basis ``V`` (d, r) of the span of the centred inputs (singular values
    above ``max(n, d) eps`` of the largest), or a ValueError when all inputs coincide."""
    Xc = problem.X_centered
    _, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    rank = int(np.sum(s > s[0] * max(Xc.shape) * np.finfo(float).eps)) if s[0] > 0 else 0
    if rank == 0:
        raise ValueError("all inputs are identical; there is no metric to learn.")
    return Vt[:rank].T


def reduced_space(problem: LMNNProblem) -> ReducedSpace:
    """The data range of ``problem`` with target distances scaled to mean 1."""
    Xc = problem.X_centered
    V = data_range(problem)
    mean_target = np.trace(problem.pull_matrix()) / (problem.n_samples * problem.k)
    scale = float(np.sqrt(mean_target)) if mean_target > 0 else 1.0
    basis = V / scale
    return ReducedSpace(basis=basis, inputs=Xc @ basis, scale=scale)
