"""Coordinates in which the pull term is isotropic: the data range whitened by the pull matrix.

eq. 14 sees the inputs only through differences ``x_a - x_b``, which lie in the
span of the centred inputs (rank ``r``). With ``V`` (d, r) an orthonormal basis
of that span and ``P_r = V^T P V = Q E Q^T`` the pull matrix there, the solver
works on

    x_w = B^T V^T x_c,   B = Q E^{-1/2}   (so that  B^T P_r B = I_r),

and a metric ``M_w`` (r, r) on ``x_w`` is the metric ``M = W M_w W^T`` on the inputs,
``W = V B`` (d, r). The map is exact (``D_M(x, z) = D_{M_w}(x_w, z_w)``), so the
optimum over ``M_w`` is the optimum over ``M``; what it buys is invariance: any
invertible linear map of the inputs, feature scaling included, gives the same
whitened problem, so the step sizes, the starting scale and the smoothing widths
of the solver do not depend on the units of the data. Eigenvalues of ``P_r``
below ``1e-12`` of the largest (pull directions of no length) are lifted to that
floor; the map stays exact, only less well conditioned there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import ReducedSpace, data_range

PULL_FLOOR = 1e-12


@dataclass(frozen=True)
class Whitening(ReducedSpace):
    """Whitened inputs of one problem and the maps between metrics: a ``ReducedSpace``
    whose ``lift(M_w)`` is ``M = W M_w W^T``.

    Attributes
    ----------
    inputs : ndarray of shape (n, r)
        ``x_w`` for every point (C-contiguous).
    basis : ndarray of shape (d, r)
        ``W``: ``M = W M_w W^T``.
    inverse : ndarray of shape (r, d)
        ``W^+`` with ``W^+ W = I_r``: ``M_w = W^+ M W^{+T}`` on the data range.
    pull : ndarray of shape (r, r)
        ``W^T P W`` (the identity up to rounding and the floor).
    singular_pull : bool
        Some eigenvalue of the pull matrix on the data range was lifted to the floor.
    """

    inverse: np.ndarray
    pull: np.ndarray
    singular_pull: bool = False

    def whitened(self, M: np.ndarray) -> np.ndarray:
        """``M_w = W^+ M W^{+T}``, shape (r, r): the metric ``M`` (d, d) on the data range."""
        M_w = self.inverse @ M @ self.inverse.T
        return (M_w + M_w.T) / 2


def whiten(problem: LMNNProblem) -> Whitening:
    """The whitened coordinates of ``problem`` (module docstring)."""
    Xc = problem.X_centered
    V = data_range(problem)
    pull = V.T @ problem.pull_matrix() @ V
    eigenvalues, Q = np.linalg.eigh((pull + pull.T) / 2)
    if eigenvalues[-1] <= 0:
        raise ValueError("every point coincides with its target neighbours, so the pull term of "
                         "eq. 14 vanishes and the problem has no minimiser; choose other targets.")
    singular = bool(eigenvalues[0] < PULL_FLOOR * eigenvalues[-1])
    eigenvalues = np.maximum(eigenvalues, PULL_FLOOR * eigenvalues[-1])
    B = Q / np.sqrt(eigenvalues)
    W = V @ B
    inverse = (Q * np.sqrt(eigenvalues)).T @ V.T
    whitened_pull = W.T @ problem.pull_matrix() @ W
    return Whitening(inputs=np.ascontiguousarray(Xc @ W), basis=W, inverse=inverse,
                     pull=(whitened_pull + whitened_pull.T) / 2, singular_pull=singular)
