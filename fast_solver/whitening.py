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
from lmnn_sdp.core.space import ReducedSpace, data_range, pull_matrices

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


@dataclass(frozen=True)
class ClusterWhitening:
    """The whitened coordinates of every cluster's metric (sec. 5.2, eq. 16): cluster ``c``'s
    pull matrix ``P_c = sum_{i, j~>i, c(j)=c} C_ij`` is the identity in its own.

    Attributes
    ----------
    spaces : tuple of Whitening
        One per cluster; their ``inputs`` are views of ``inputs``.
    clusters : ndarray of int, shape (n,)
        Cluster of each point (all 0 for LMNN).
    inputs : ndarray of shape (C, n, r)
        ``x_w`` of every point in every cluster's coordinates.
    """

    spaces: tuple
    clusters: np.ndarray
    inputs: np.ndarray

    @property
    def n_clusters(self) -> int:
        return len(self.spaces)

    @property
    def rank(self) -> int:
        return self.inputs.shape[2]

    @property
    def pull(self) -> np.ndarray:
        """Whitened pull matrices (C, r, r), the identities up to rounding and the floor."""
        return np.stack([s.pull for s in self.spaces])

    @property
    def singular_pull(self) -> bool:
        return any(s.singular_pull for s in self.spaces)

    def lift(self, M_w: np.ndarray) -> np.ndarray:
        """Metrics (C, d, d) on the inputs from whitened metrics (C, r, r)."""
        return np.stack([s.lift(m) for s, m in zip(self.spaces, M_w)])

    def whitened(self, M: np.ndarray) -> np.ndarray:
        """Whitened metrics (C, r, r) of metrics (C, d, d) on the data range."""
        return np.stack([s.whitened(m) for s, m in zip(self.spaces, M)])


def whiten(problem: LMNNProblem) -> Whitening:
    """The whitened coordinates of single-metric ``problem`` (module docstring)."""
    return whiten_clusters(problem, np.zeros(problem.n_samples, np.intp)).spaces[0]


def whiten_clusters(problem: LMNNProblem, clusters: np.ndarray) -> ClusterWhitening:
    """Each cluster's coordinates (module docstring, with ``P_c`` for ``P``); ``clusters``
    (n,) checked (``core.problem.check_clusters``)."""
    V = data_range(problem)
    reduced = ReducedSpace(basis=V, inputs=problem.X_centered @ V)
    pulls = pull_matrices(problem, reduced, clusters)
    inputs = np.empty((len(pulls), problem.n_samples, V.shape[1]))
    spaces = []
    for c, pull in enumerate(pulls):
        eigenvalues, Q = np.linalg.eigh((pull + pull.T) / 2)
        if eigenvalues[-1] <= 0:
            what = ("every point coincides with its target neighbours, so the pull term of eq. 14 "
                    "vanishes and the problem has no minimiser; choose other targets."
                    if len(pulls) == 1 else
                    f"no target neighbour of any point lies in cluster {c} (or they all coincide), "
                    "so its metric has no pull term and no minimiser; use fewer clusters.")
            raise ValueError(what)
        singular = bool(eigenvalues[0] < PULL_FLOOR * eigenvalues[-1])
        eigenvalues = np.maximum(eigenvalues, PULL_FLOOR * eigenvalues[-1])
        B = Q / np.sqrt(eigenvalues)
        np.matmul(reduced.inputs, B, out=inputs[c])
        whitened_pull = B.T @ pull @ B
        spaces.append(Whitening(inputs=inputs[c], basis=V @ B, inverse=(Q * np.sqrt(eigenvalues)).T @ V.T,
                                pull=(whitened_pull + whitened_pull.T) / 2, singular_pull=singular))
    return ClusterWhitening(spaces=tuple(spaces), clusters=clusters, inputs=inputs)
