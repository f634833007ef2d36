"""eq. 14 as a function of the embedding ``Z`` (n, r) of a low-rank map, on a working set.

Low-rank LMNN (JMLR 2009, sec. 5.4) and LMCA (Torresani & Lee, eq. 1) minimise
eq. 14 over a rectangular map: ``z_a = L x_a`` (LMCA, ``L`` of shape (r, d)) or
``z_a = Omega k_a`` (kernel LMCA, Lemma 3.1), with ``D(a, b) = |z_a - z_b|^2``.
The objective sees the map only through ``Z``, so loss and gradient come from one
function of ``Z`` and each parametrisation pulls the gradient back
(``fast_solver.low_rank.solver``). On a working set of impostor pairs ``(i, l)``
(``fast_solver.lmnn.smoothed.WorkingSet``, each pair standing for the ``k`` triplets
``(i, j, l)``),

    F_w(Z) = (1-mu) sum_{i, j~>i} D(i, j) + mu sum_{(i,j,l)} s_w(1 + D(i, j) - D(i, l)),

``s_w`` the hinge smoothed over a width ``w`` (Huber, ``fast_solver.lmnn.smoothed``;
``w = 1`` is the smooth hinge of Rennie & Srebro that the LMCA paper adopts,
``w = 0`` the linear hinge of eq. 14). With ``lambda_t = mu s_w'(h_t)`` and the
pair weights ``(1-mu) + sum_l lambda_ijl`` on target pairs and
``-sum_j lambda_ijl`` on impostor pairs,

    dF/dZ = 2 Lap Z        (a graph Laplacian over those pairs),

so ``dF/dL = (dF/dZ)^T X`` (eq. 2), ``dF/dOmega = (dF/dZ)^T K`` and the ``Gamma``
of kernel LMCA's eq. 4 is ``(dF/dZ)^T``. At ``w = 0`` the gradient is the
subgradient with ``lambda = mu`` on ``h > 0`` and 0 on ``h <= 0``. Memory grows
with the pairs and with ``n r``, never with ``n^2`` or with the triplets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fast_solver.lmnn import compiled
from fast_solver.lmnn.impostors import impostor_pairs, impostor_radius
from fast_solver.lmnn.smoothed import PairGraph, WorkingSet


@dataclass(frozen=True)
class EmbeddingEvaluation:
    """``F_w`` and what comes with it at one embedding ``Z`` (n, r)."""

    value: float  # F_w on the working set
    objective: float  # eq. 14 (linear hinge) on the working set
    gradient: np.ndarray  # dF_w/dZ, shape (n, r)
    n_active: int  # working-set triplets with h > 0


class EmbeddingLoss:
    """``F_w`` of one working set as a function of the embedding (module docstring).

    Parameters
    ----------
    targets : ndarray of int, shape (n, k)
    mu : float in [0, 1]
    working_set : WorkingSet
    """

    def __init__(self, targets: np.ndarray, mu: float, working_set: WorkingSet):
        self.targets = np.ascontiguousarray(targets, dtype=np.intp)
        n, k = self.targets.shape
        self.mu, self.ws = float(mu), working_set
        self.graph = PairGraph(np.concatenate([np.repeat(np.arange(n), k), working_set.owner]),
                               np.concatenate([self.targets.ravel(), working_set.impostors]), n)
        self.clusters = np.zeros(n, np.intp)
        self.target_w = np.empty((n, k))
        self.pair_w = np.empty(len(working_set))
        self.pair_d = np.empty(len(working_set))
        self.transition = np.zeros((len(working_set), k), dtype=bool)
        self.prior = np.zeros((len(working_set), k))  # no multipliers: every hinge unshifted

    def evaluate(self, Z: np.ndarray, width: float) -> EmbeddingEvaluation:
        """``F_width``, eq. 14 and ``dF/dZ`` on the working set at ``Z`` (n, r)."""
        Z3 = np.ascontiguousarray(Z, dtype=float)[None]
        target_d = compiled.target_distances(Z3, self.targets, self.clusters)
        compiled.pair_distances(Z3, self.clusters, self.ws.ptr, self.ws.impostors, self.pair_d)
        sums = compiled.smoothed_hinge(target_d, self.pair_d, self.ws.ptr, float(width), self.mu, 0.0, self.prior,
                                       self.target_w, self.pair_w, self.transition)
        smooth, hinge, _, _, active, _ = sums.sum(axis=0)
        pull = float(target_d.sum())
        weights = np.concatenate([(self.target_w + (1.0 - self.mu)).ravel(), self.pair_w])
        rows = self.graph.laplacian(weights, Z3[0])
        gradient = np.zeros_like(Z3[0])
        gradient[slice(None) if self.graph.nodes is None else self.graph.nodes] = 2.0 * rows
        return EmbeddingEvaluation(value=(1.0 - self.mu) * pull + self.mu * float(smooth),
                                   objective=(1.0 - self.mu) * pull + self.mu * float(hinge),
                                   gradient=gradient, n_active=int(active))


def search_working_set(Z: np.ndarray, targets: np.ndarray, codes: np.ndarray, band: float) -> WorkingSet:
    """The impostor pairs ``(i, l)`` with ``D(i, l) < max_j D(i, j) + 1 + band`` at ``Z`` (n, r),
    by the exact search of ``fast_solver.lmnn.impostors`` (App. A's radius): every triplet whose
    hinge exceeds ``-band`` has its pair in the set."""
    Z = np.ascontiguousarray(Z - Z.mean(axis=0))  # distances are translation invariant
    target_d = compiled.target_distances(Z[None], np.ascontiguousarray(targets, dtype=np.intp),
                                        np.zeros(len(Z), np.intp))
    i, l = impostor_pairs(Z, codes, impostor_radius(target_d, band), return_distance=False)
    return WorkingSet.from_pairs(i, l, len(Z))


def embedding_loss(Z: np.ndarray, targets: np.ndarray, codes: np.ndarray, mu: float,
                   width: float = 0.0) -> EmbeddingEvaluation:
    """``F_width`` over all triplets of eq. 14 at ``Z`` (n, r) and its gradient in ``Z``.

    A search with band 0 finds every triplet with ``h > 0``; the others add nothing to
    ``F_width`` or its gradient, so the values are those of the full sums."""
    return EmbeddingLoss(targets, mu, search_working_set(Z, targets, codes, 0.0)).evaluate(Z, width)
