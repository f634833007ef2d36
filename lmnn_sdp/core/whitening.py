"""Coordinates in which the pull term is isotropic: the data range whitened by the pull matrix.

eq. 14 sees the inputs only through differences ``x_a - x_b``, which lie in the
span of the centred inputs (rank ``r``). With ``V`` (d, r) an orthonormal basis
of that span, ``S`` (r, r) the singular values of ``X_c V`` (so ``X_c V S^{-1}`` is
sphered: the data covariance is the identity) and ``P_r = Q E Q^T`` the pull matrix
in those sphered coordinates, the solver works on

    x_w = B^T S^{-1} V^T x_c,   B = Q E^{-1/2}   (so that  B^T P_r B = I_r),

and a metric ``M_w`` (r, r) on ``x_w`` is the metric ``M = W M_w W^T`` on the inputs,
``W = V S^{-1} B`` (d, r). The map is exact (``D_M(x, z) = D_{M_w}(x_w, z_w)``), so the
optimum over ``M_w`` is the optimum over ``M``; what it buys is invariance: any
invertible linear map of the inputs, feature scaling included, gives the same
whitened problem, so the step sizes, the starting scale and the smoothing widths
of the solver do not depend on the units of the data.

With one metric per cluster (sec. 5.2) each cluster ``c`` gets its own ``B_c`` from
its pull matrix ``P_c``. Where ``P_c`` is singular on the data range (null space
``N_c``: eigenvalues below ``NULL_RTOL = 1e-12`` of the largest of all clusters in the
sphered coordinates, so that neither rounding nor features of very different scales
decide it, while a direction of small but real pull, whose push would cost eq. 14 far
more than the solver sees, stays in the range), ``M_c`` grows on ``N_c`` at no cost and pushes out every
impostor of ``c`` with a component there ("killable"); the solver then works on the
range of ``P_c`` only (``Q`` and ``E`` restricted to it, ``B_c`` padded with zero
columns to ``r``), leaves the killable pairs (``lmnn_sdp.core.clusters.killable_pairs``)
out of its working set, and adds
``t_c N_c N_c^T`` to the answer (``lmnn_sdp.core.clusters.push_out_of_null_spaces``).
LMNN is the case of one cluster; duplicated points and binary features make its
pull matrix singular in the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp.core.clusters import (
    ClusterSpaces,
    cluster_spaces,
    every_impostor_killable,
    killable_pairs,
    push_out_of_null_spaces,
)
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import ReducedSpace, pull_matrices, sphered_space

NULL_RTOL = 1e-12  # eigenvalues of the pull matrices below NULL_RTOL times the largest are 0
# (exact nulls round to 2e-15 at most; design note fast-lmnn-solver.md, "Near-singular class pull matrices")

@dataclass(frozen=True, eq=False)
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
        ``W^T P W``: the identity on the range of ``P`` (up to rounding), zero on the padding.
    null : ndarray of shape (r, r - rank(P))
        Orthonormal basis of the null space ``N`` of ``P`` in the sphered coordinates.
    """

    inverse: np.ndarray
    pull: np.ndarray
    null: np.ndarray

    @property
    def pull_rank(self) -> int:
        """Dimension of the range of ``P`` (the leading whitened coordinates)."""
        return self.rank - self.null.shape[1]

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
    reduced : ReducedSpace
        ``X_c V S^{-1}`` (n, r), the sphered coordinates of the data range
        (``lmnn_sdp.core.space.sphered_space``).
    cspaces : lmnn_sdp.core.clusters.ClusterSpaces
        Range and null space of every ``P_c`` in those coordinates.
    """

    spaces: tuple
    clusters: np.ndarray
    inputs: np.ndarray
    reduced: ReducedSpace
    cspaces: ClusterSpaces

    @property
    def n_clusters(self) -> int:
        return len(self.spaces)

    @property
    def rank(self) -> int:
        return self.inputs.shape[2]

    @property
    def singular(self) -> tuple:
        """Clusters whose pull matrix is singular on the data range."""
        return self.cspaces.singular

    def lift(self, M_w: np.ndarray) -> np.ndarray:
        """Metrics (C, d, d) on the inputs from whitened metrics (C, r, r)."""
        return np.stack([s.lift(m) for s, m in zip(self.spaces, M_w)])

    def whitened(self, M: np.ndarray) -> np.ndarray:
        """Whitened metrics (C, r, r) of metrics (C, d, d) on the data range (zero on the padding)."""
        return np.stack([s.whitened(m) for s, m in zip(self.spaces, M)])

    def killable(self, i: np.ndarray, l: np.ndarray) -> np.ndarray:
        """Impostor pairs ``(i, l)`` (P,) that ``M_{c(l)}`` pushes out along its null space; bool (P,)."""
        return killable_pairs(self.reduced.inputs, self.cspaces, self.clusters, i, l)

    def every_impostor_killable(self, codes: np.ndarray) -> bool:
        """Whether every pair of different labels ``codes`` (n,) is killable (``killable``):
        eq. 14's optimum is then 0 (``lmnn_sdp.core.clusters.every_impostor_killable``)."""
        return every_impostor_killable(self.reduced.inputs, self.cspaces, self.clusters, codes)

    def push_out(self, problem: LMNNProblem, metrics: np.ndarray) -> np.ndarray:
        """``metrics`` (C, d, d) plus ``t_c N_c N_c^T`` for every singular cluster of ``problem``
        (the problem whitened)."""
        return push_out_of_null_spaces(problem, self.reduced, metrics, self.cspaces)


def whiten(problem: LMNNProblem) -> Whitening:
    """The whitened coordinates of LMNN ``problem`` (one metric, no clusters; module docstring)."""
    return whiten_clusters(problem).spaces[0]


def whiten_clusters(problem: LMNNProblem) -> ClusterWhitening:
    """Each cluster's coordinates (module docstring), for the clusters of ``problem``
    (``problem.owner``)."""
    reduced = sphered_space(problem)
    pulls = pull_matrices(problem, reduced)
    # decided on the inputs: the pull matrices formed in sphered coordinates keep a
    # rounding-level remainder of differences that are exactly 0
    if problem.pull_vanishes():
        raise ValueError("every point coincides with its target neighbours, so the pull term of "
                         "eq. 14 vanishes and there are no whitened coordinates; "
                         "fast_solver.solve answers this case in closed form.")
    cspaces = cluster_spaces(pulls, rtol=NULL_RTOL)
    inputs = np.zeros((len(pulls), problem.n_samples, reduced.rank))
    spaces = []
    to_reduced = np.linalg.pinv(reduced.basis)  # (r, d): S V^T
    for c, (pull, U) in enumerate(zip(pulls, cspaces.bases)):
        if U.shape[1] == 0:
            raise ValueError(f"no target neighbour of any point lies in cluster {c} (or they all "
                             "coincide), so its metric has no pull term and grows until it pushes "
                             "out every impostor of the cluster, which the fast solver does not "
                             "follow; use fewer clusters or lmnn_sdp.solve_mm_lmnn (exact).")
        w = np.einsum("rm,rs,sm->m", U, pull, U)
        B = np.zeros((reduced.rank, reduced.rank))
        B[:, :len(w)] = U / np.sqrt(w)
        np.matmul(reduced.inputs, B, out=inputs[c])
        inverse = np.zeros_like(B)
        inverse[:len(w)] = (U * np.sqrt(w)).T
        whitened_pull = B.T @ pull @ B
        spaces.append(Whitening(inputs=inputs[c], basis=reduced.basis @ B,
                                inverse=inverse @ to_reduced,
                                pull=(whitened_pull + whitened_pull.T) / 2, null=cspaces.nulls[c]))
    return ClusterWhitening(spaces=tuple(spaces), clusters=problem.owner, inputs=inputs, reduced=reduced,
                            cspaces=cspaces)
