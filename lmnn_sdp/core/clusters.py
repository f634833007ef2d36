"""The clusters' spaces of multi-metric LMNN and singular clusters, exactly (numpy only).

When the target differences of cluster ``c`` do not span the data range, ``P_c``
has a null space ``N_c`` there. ``M_c`` can then grow on ``N_c`` at no cost: target
distances into ``c`` do not change, and every impostor ``l`` of ``c`` with a
component on ``N_c`` is pushed out of the margin. So the optimum is
``M_c = B_c M'_c B_c^T + t_c N_c N_c^T`` with ``B_c`` an orthonormal basis of the
range ``R_c`` of ``P_c``, ``M'_c`` from the SDP restricted to ``R_c`` without those
impostor triplets ("killable"), and ``t_c`` large enough to put each of them at
margin -1 or below (``push_out_of_null_spaces``). Restricted this way both SDPs
stay strictly feasible, which an interior point method needs; left in, ``M_c``
runs off to infinity along ``N_c``. "Killable" means a component
``|N_c^T v|^2 > 1e-12 |v|^2``: however small, it lets the optimum push the impostor
out. The price is large metrics. LMNN is the case of one cluster.

The basis ``B_c`` is the eigenbasis of ``P_c`` also for a regular cluster, so the
SDPs see a diagonal pull matrix.

Design note: ``docs/design/singular-clusters.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp.core.pair_search import BLOCK_BYTES
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import project_psd
from lmnn_sdp.core.space import ReducedSpace, pull_matrices, units_space

KILLABLE = 1e-12  # an impostor is killable when |N_c^T v|^2 > KILLABLE |v|^2
NULL_RTOL = 1e-9  # eigenvalues of the pull matrices below NULL_RTOL times the largest are 0


@dataclass(frozen=True)
class ClusterSpaces:
    """Per cluster, an orthonormal basis (r, r_c) of the range of ``P_c`` and (r, r - r_c) of
    its null space, both in reduced coordinates: eigenvectors of ``P_c``."""

    bases: tuple
    nulls: tuple

    @property
    def singular(self) -> tuple:
        return tuple(c for c, N in enumerate(self.nulls) if N.shape[1])

    def restrict(self, matrices: np.ndarray) -> list[np.ndarray]:
        """``B_c^T S_c B_c`` for matrices (C, r, r); a list of (r_c, r_c)."""
        return [B.T @ S @ B for B, S in zip(self.bases, matrices)]

    def expand(self, restricted: list[np.ndarray]) -> np.ndarray:
        """``B_c M'_c B_c^T`` for a list of (r_c, r_c); shape (C, r, r)."""
        return np.stack([B @ M @ B.T for B, M in zip(self.bases, restricted)])


def cluster_spaces(pulls: np.ndarray, rtol: float = NULL_RTOL) -> ClusterSpaces:
    """Range and null space of each ``P_c`` (C, r, r); eigenvalues below ``rtol * max`` are 0."""
    w, U = np.linalg.eigh(pulls)
    top = max(float(w.max()), np.finfo(float).tiny)
    keep = w > rtol * top
    return ClusterSpaces(bases=tuple(U[c][:, keep[c]] for c in range(len(w))),
                         nulls=tuple(U[c][:, ~keep[c]] for c in range(len(w))))


def killable(problem: LMNNProblem, space: ReducedSpace, cspaces: ClusterSpaces,
             triplets: np.ndarray) -> np.ndarray:
    """Triplets (T, 3) whose impostor ``l`` lies in a singular cluster of ``problem`` and has
    a component on its null space (module docstring); bool (T,)."""
    return killable_pairs(space.inputs, cspaces, problem.owner, triplets[:, 0], triplets[:, 2])


def killable_pairs(Xr: np.ndarray, cspaces: ClusterSpaces, clusters: np.ndarray, i: np.ndarray,
                   l: np.ndarray) -> np.ndarray:
    """Impostor pairs ``(i, l)`` that ``killable`` kills, for inputs ``Xr`` (n, r) in the
    coordinates of ``cspaces``; bool (P,)."""
    out = np.zeros(len(i), dtype=bool)
    for c in cspaces.singular:
        rows = np.flatnonzero(clusters[l] == c)
        V = Xr[i[rows]] - Xr[l[rows]]
        null = np.sum((V @ cspaces.nulls[c]) ** 2, axis=1)
        out[rows] = null > KILLABLE * np.sum(V**2, axis=1)
    return out


def every_impostor_killable(Xr: np.ndarray, cspaces: ClusterSpaces, clusters: np.ndarray,
                            codes: np.ndarray) -> bool:
    """Whether ``killable_pairs`` kills every pair ``(i, l)`` of different labels, for inputs
    ``Xr`` (n, r) in the coordinates of ``cspaces``, the cluster of each point ``clusters``
    (n,) and its label ``codes`` (n,). Then no impostor costs anything at ``M_c = t_c N_c
    N_c^T`` and no target distance either: eq. 14's optimum is 0. Row blocks of
    ``BLOCK_BYTES``, stopping at the first pair that survives."""
    if not np.isin(clusters, cspaces.singular).all():
        return False  # an impostor in a regular cluster is never killable (and has a point of another label)
    block = max(1, BLOCK_BYTES // (8 * len(codes) * Xr.shape[1]))
    for start in range(0, len(codes), block):
        i, l = np.nonzero(codes[start:start + block, None] != codes[None, :])
        if not killable_pairs(Xr, cspaces, clusters, i + start, l).all():
            return False
    return True


def lift_metrics(problem: LMNNProblem, space: ReducedSpace, metrics_reduced: np.ndarray) -> np.ndarray:
    """An SDP's reduced metrics (C, r, r), projected onto the PSD cone and lifted to the
    inputs, with killable impostors pushed out (``push_out_of_null_spaces``): (C, d, d)."""
    if not np.all(np.isfinite(metrics_reduced)):
        raise RuntimeError("the SDP solver returned no metric; try the other solver.")
    lifted = np.stack([space.lift(project_psd(M)) for M in metrics_reduced])
    return push_out_of_null_spaces(problem, space, lifted)


def push_out_of_null_spaces(problem: LMNNProblem, space: ReducedSpace, metrics: np.ndarray,
                            cspaces: ClusterSpaces | None = None) -> np.ndarray:
    """Add ``t_c N_c N_c^T`` to the metric (C, d, d) of every singular cluster of ``problem``,
    shape (C, d, d).

    ``t_c`` puts every killable impostor of cluster ``c`` at margin -1 or below;
    nothing else moves (target differences into ``c`` have no component on ``N_c``).
    ``cspaces`` in the coordinates of ``space``, ``cluster_spaces`` of its pull matrices
    by default. The push is made twice: isotropic in ``space`` and isotropic in the units
    of the inputs (an orthonormal basis of the data range). Both give eq. 14 its value,
    but its float64 rounding grows with the metric's entries (``core.rounding``), and
    sphered coordinates put large entries on the directions of small spread. The one with
    the smaller eq. 14 plus rounding is returned."""
    if cspaces is None:
        cspaces = cluster_spaces(pull_matrices(problem, space))
    if not cspaces.singular:
        return np.array(metrics, dtype=float)
    units = units_space(problem)
    candidates = [_pushed(problem, space, metrics, cspaces),
                  _pushed(problem, units, metrics, cluster_spaces(pull_matrices(problem, units)))]
    bounds = [problem.evaluate(M) for M in candidates]
    return candidates[int(np.argmin([b.value + b.rounding for b in bounds]))]


def _pushed(problem: LMNNProblem, space: ReducedSpace, metrics: np.ndarray, cspaces: ClusterSpaces) -> np.ndarray:
    """``metrics`` plus ``t_c N_c N_c^T`` (lifted from ``space``) for every singular cluster."""
    out = np.array(metrics, dtype=float)
    for c in cspaces.singular:
        t = _null_scale(problem, space, metrics, c, cspaces.nulls[c])
        out[c] += space.lift(t * cspaces.nulls[c] @ cspaces.nulls[c].T)
    return out


def _null_scale(problem, space, metrics, c, N) -> float:
    """Smallest ``t`` putting each killable impostor of cluster ``c`` at margin <= -1."""
    Xc, Y = problem.X_centered, space.inputs @ N  # (n, d), (n, r - r_c)
    worst_target = problem.target_distances(metrics).max(axis=1)  # (n,)
    codes, members = problem.label_codes, np.flatnonzero(problem.owner == c)
    block = max(1, BLOCK_BYTES // (16 * problem.n_samples * (Xc.shape[1] + space.rank)))
    t = 0.0
    for start in range(0, len(members), block):
        ls = members[start:start + block]
        V = Xc[None, :, :] - Xc[ls, None, :]  # (b, n, d)
        distance = np.einsum("bnd,bnd->bn", V @ metrics[c], V)
        W, Vr = Y[None, :, :] - Y[ls, None, :], space.inputs[None, :, :] - space.inputs[ls, None, :]
        null, full = np.sum(W**2, axis=2), np.sum(Vr**2, axis=2)
        mask = (codes[None, :] != codes[ls, None]) & (null > KILLABLE * full)
        need = (2.0 + worst_target[None, :] - distance)[mask] / null[mask]
        t = max(t, float(need.max(initial=0.0)))
    return t
