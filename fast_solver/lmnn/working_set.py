"""Exact impostor searches at successive metrics, skipping the points that provably need none.

The working set of ``fast_solver.lmnn.smoothed`` holds the pairs ``(i, l)`` within
``impostor_radius = max_j D(i, j) + 1 + band`` found by the last exact search of
point ``i`` (``fast_solver.lmnn.impostors``), so every triplet whose hinge exceeds
``-band`` is in it. The smoothed hinge and the exact hinge vanish for ``h <= 0``,
so both objectives restricted to the set equal their values over all triplets
as long as no triplet outside the set has a positive hinge, which is what a
search establishes.

A point need not be searched again while that stays provable. When point ``i``
was searched at ``M_s``, every pair left outside has ``D_s(i, l) >= floor(i)``, its
radius then. At a later ``M``, ``D(i, l) >= c floor(i)`` with
``c = contraction_factor(M_s, M)``, the largest ``c`` with ``M - c M_s`` PSD; if that
still reaches ``max_j D(i, j) + 1``, no triplet of ``i`` outside the set is active
and ``i`` keeps its pairs, less those now beyond its radius: the floor becomes
the smaller of ``c floor(i)`` and the distances of the pairs dropped, both valid
at ``M``, so the set shrinks as the metric settles without a search. The ``band``
is the slack that lets points be skipped. With one metric per cluster (eq. 16) the
bound holds with the smallest of the clusters' factors, since each pair is measured
by one of them.
"""

from __future__ import annotations

import numpy as np

from fast_solver.lmnn import compiled
from fast_solver.lmnn.impostors import cluster_impostor_pairs, cluster_pair_distances, impostor_radius, map_clusters
from fast_solver.lmnn.smoothed import WorkingSet
from lmnn_sdp.core.whitening import ClusterWhitening


class ExactSearch:
    """Exact searches in the whitened spaces; ``search(L)`` returns the renewed working set.

    Parameters
    ----------
    whitening : ClusterWhitening
        Whitened inputs in the coordinates of each cluster's metric; killable pairs of
        singular clusters (``ClusterWhitening.killable``) never enter the set.
    targets : ndarray of int, shape (n, k)
    label_codes : ndarray of int, shape (n,)
    band : float >= 0
    method : {"auto", "blockwise", "balltree"}
    """

    def __init__(self, whitening: ClusterWhitening, targets, label_codes, band: float, method: str = "auto"):
        self.whitening = whitening
        self.X, self.clusters = whitening.inputs, whitening.clusters
        self.targets, self.codes = targets, label_codes
        self.band, self.method = float(band), method
        n = self.X.shape[1]
        self.floor = np.zeros(n)  # at self.metric: D(i, l) >= floor[i] outside the set
        self.metric: np.ndarray | None = None
        self._metric_norm = None  # the largest of the spectral norms of ``metric``, formed by ``drift``
        self.n_searches = 0
        self.points_searched = 0
        self.working_set = WorkingSet.from_pairs(np.empty(0, np.intp), np.empty(0, np.intp), n)

    def search(self, L: np.ndarray) -> WorkingSet:
        """Working set at ``M_w = L^T L`` (L of shape (C, p, r)): fresh pairs for the points
        searched, the old ones for the points proved clean (module docstring)."""
        M = np.matmul(L.transpose(0, 2, 1), L)
        Z = map_clusters(self.X, L)
        radius = impostor_radius(compiled.target_distances(Z, self.targets, self.clusters), self.band)
        shrink = 0.0 if self.metric is None else min(map(contraction_factor, self.metric, M))
        floor = self.floor * shrink
        searched = floor < radius - self.band
        i, l = cluster_impostor_pairs(Z, self.clusters, self.codes, radius, self.method, searched)
        if self.whitening.singular:
            alive = ~self.whitening.killable(i, l)
            i, l = i[alive], l[alive]
        ws = self.working_set
        kept = ~searched[ws.owner]
        owner, impostors = ws.owner[kept], ws.impostors[kept]
        distance = cluster_pair_distances(Z, self.clusters, owner, impostors)
        dropped = distance >= radius[owner]
        np.minimum.at(floor, owner[dropped], distance[dropped])
        owner, impostors = owner[~dropped], impostors[~dropped]
        self.working_set = WorkingSet.from_pairs(np.concatenate([owner, i]),
                                                 np.concatenate([impostors, l]), len(self.codes))
        floor[searched] = radius[searched]
        self.floor, self.metric, self._metric_norm = floor * (1.0 - 1e-9), M, None
        self.n_searches += 1
        self.points_searched += int(np.count_nonzero(searched))
        return self.working_set

    def state(self) -> dict:
        """Everything the next searches depend on, for a checkpoint (``restore``; the counters
        ``n_searches`` and ``points_searched`` are the caller's to keep)."""
        return {"floor": self.floor, "metric": self.metric, "working_set": vars(self.working_set)}

    def restore(self, state: dict) -> None:
        """Continue from ``state()``: the next searches are those the saved search would have run."""
        self.floor, self.metric, self._metric_norm = state["floor"], state["metric"], None
        self.working_set = WorkingSet(**state["working_set"])

    def drift(self, M: np.ndarray) -> float:
        """``|M_w - M_s|_2 / |M_s|_2`` since the last search at ``M_s`` (inf before any); with
        several clusters the largest change over the largest norm, so a small metric that
        shrinks does not call for searches; ``M`` (C, r, r).

        A trigger for a new search, not a proof: distances have moved by about this
        fraction, so pairs outside the set may have come within the margin. (The
        certified floors cannot serve here: when the metric is rank-deficient and
        its range turns, the contraction factor is 0 although nothing moved much.)"""
        if self.metric is None:
            return np.inf
        if self._metric_norm is None:
            self._metric_norm = _spectral_norms(self.metric).max()
        return float(_spectral_norms(M - self.metric).max() / max(self._metric_norm, 1e-300))


def _spectral_norms(M: np.ndarray) -> np.ndarray:
    """``|M_c|_2`` (C,) of symmetric ``M`` (C, r, r): the largest absolute eigenvalue."""
    return np.abs(np.linalg.eigvalsh(M)).max(axis=1)


def contraction_factor(M_old: np.ndarray, M_new: np.ndarray, rtol: float = 1e-12) -> float:
    """The largest ``c >= 0`` with ``M_new - c M_old`` PSD, so ``D_new(x, z) >= c D_old(x, z)``.

    This bound on how much any distance can shrink lets a re-check skip the
    points whose impostor radius is still covered (``fast_solver.lmnn.working_set``).
    With ``M_old = U Lambda U^T`` (``U`` of shape (d, r), its range) and ``N``
    its null space, ``c`` is the smallest eigenvalue of
    ``Lambda^{-1/2} S Lambda^{-1/2}`` where ``S`` is the Schur complement of
    ``N^T M_new N`` in ``M_new`` written in the basis ``[U, N]``; a factor
    ``1 - 1e-9`` absorbs round-off.

    Parameters
    ----------
    M_old, M_new : ndarray of shape (d, d), PSD

    Returns
    -------
    float
        ``c``; 0 when ``M_old`` is zero.
    """
    eigenvalues, V = np.linalg.eigh((M_old + M_old.T) / 2)
    top = float(eigenvalues[-1])
    if top <= 0:
        return 0.0
    positive = eigenvalues > rtol * top
    U, N = V[:, positive], V[:, ~positive]
    S = U.T @ M_new @ U
    if N.shape[1]:
        cross = U.T @ M_new @ N
        S = S - cross @ np.linalg.pinv(N.T @ M_new @ N, rcond=1e-12, hermitian=True) @ cross.T
    scale = 1.0 / np.sqrt(eigenvalues[positive])
    smallest = float(np.linalg.eigvalsh((S * scale[:, None]) * scale[None, :])[0])
    return max(smallest, 0.0) * (1.0 - 1e-9)
