"""The working set of Alg. 1 (App. A): candidate impostor pairs and the objective on them.

The set holds pairs ``(i, l)``; each stands for the ``k`` triplets
``(i, j, l)``, one per target rank of ``i``. A point ``M`` is evaluated on the
set alone: target distances of all points, the hinge ``1 + D_ij - D_il`` of
every candidate triplet, and eq. 14 restricted to those triplets (exact when
no triplet outside the set is active, which the full re-checks establish).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fast_solver.gradient import pair_scatter
from fast_solver.impostors import pair_distances
from fast_solver.psd import transformation_from_metric


DIFFERENCE_BYTES = 256 * 2**20  # keep pair difference vectors below this size


@dataclass
class WorkingSet:
    """Candidate impostor pairs, sorted by ``i`` then ``l``; each array of shape (P,).

    ``diff`` (P, d) holds ``x_i - x_l`` when it fits in ``DIFFERENCE_BYTES``, so
    that ``D_M(i, l) = diff M diff^T`` needs no gather per iteration."""

    i: np.ndarray
    l: np.ndarray
    diff: np.ndarray | None = None

    def with_differences(self, Xc: np.ndarray) -> WorkingSet:
        """The same set with ``diff`` filled if it fits the memory budget."""
        if len(self) * Xc.shape[1] * 8 > DIFFERENCE_BYTES:
            return WorkingSet(self.i, self.l)
        return WorkingSet(self.i, self.l, Xc[self.i] - Xc[self.l])

    @classmethod
    def empty(cls) -> WorkingSet:
        return cls(np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp))

    def __len__(self) -> int:
        return len(self.i)

    def replace(self, i: np.ndarray, l: np.ndarray, n: int) -> tuple[WorkingSet, np.ndarray]:
        """The set of pairs ``(i, l)`` (sorted), and a mask (P_new,) of those not in ``self``."""
        old_keys = self.i.astype(np.int64) * n + self.l
        keys = np.unique(i.astype(np.int64) * n + l)
        added = ~np.isin(keys, old_keys, assume_unique=True)
        return WorkingSet((keys // n).astype(np.intp), (keys % n).astype(np.intp)), added

    def triplets(self, targets: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Triplets ``(i, j, l)`` of shape (T, 3); all ``P k`` of them, or those where
        ``mask`` (P, k) is true."""
        if mask is None:
            mask = np.ones((len(self), targets.shape[1]), dtype=bool)
        p, rank = np.nonzero(mask)
        return np.column_stack([self.i[p], targets[self.i[p], rank], self.l[p]]).astype(np.intp)


@dataclass
class Evaluation:
    """Eq. 14 on the working set at one metric ``M``."""

    M: np.ndarray          # (d, d)
    target_d: np.ndarray   # (n, k): D(i, j)
    hinge: np.ndarray      # (P, k): 1 + D(i, j) - D(i, l) per candidate triplet
    objective: float

    @property
    def active(self) -> np.ndarray:
        """Mask (P, k) of the active triplets ``N`` (hinge > 0)."""
        return self.hinge > 0


def evaluate(Xc: np.ndarray, target_diff: np.ndarray, mu: float, M: np.ndarray, ws: WorkingSet) -> Evaluation:
    """Evaluate eq. 14 restricted to the working set at a PSD ``M``.

    Parameters
    ----------
    Xc : ndarray of shape (n, d)
        Centred inputs.
    target_diff : ndarray of shape (n, k, d)
        ``x_i - x_j`` for every target pair.
    mu : float
    M : ndarray of shape (d, d), PSD
    ws : WorkingSet with P pairs

    Returns
    -------
    Evaluation
    """
    n, k, d = target_diff.shape
    target_d = quadratic_forms(target_diff.reshape(n * k, d), M).reshape(n, k)
    if ws.diff is not None:
        pair_d = quadratic_forms(ws.diff, M)
    else:
        pair_d = pair_distances(Xc @ transformation_from_metric(M).T, ws.i, ws.l)
    hinge = 1.0 + target_d[ws.i] - pair_d[:, None]
    objective = (1.0 - mu) * float(target_d.sum()) + mu * float(np.maximum(hinge, 0.0).sum())
    return Evaluation(M, target_d, hinge, objective)


def quadratic_forms(V: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``v_p^T M v_p`` for every row of ``V`` (P, d), shape (P,), in chunks."""
    out = np.empty(len(V))
    for start in range(0, len(V), 1 << 16):
        block = V[start:start + (1 << 16)]
        out[start:start + (1 << 16)] = np.einsum("pd,pd->p", block @ M, block)
    return out


def push_weights(active: np.ndarray, ws: WorkingSet, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pair weights of the push term of eq. 18 for the active mask (P, k).

    Returns
    -------
    target_weight : ndarray of shape (n, k)
        Number of active impostors of each target pair ``(i, j)`` (weight of ``C_ij``).
    impostor_weight : ndarray of shape (P,)
        Number of active target ranks of each pair ``(i, l)`` (weight of ``-C_il``).
    """
    k = active.shape[1]
    target_weight = np.column_stack(
        [np.bincount(ws.i, weights=active[:, r], minlength=n) for r in range(k)]
    ) if len(ws) else np.zeros((n, k))
    return target_weight, active.sum(axis=1).astype(float)


def push_scatter(Xc, targets, ws: WorkingSet, target_weight, impostor_weight) -> np.ndarray:
    """``sum_ij w_ij C_ij - sum_il w_il C_il``, shape (d, d): the push term of eq. 18
    divided by ``mu``, or its change (eq. 19) when given weight differences."""
    rows, ranks = np.nonzero(target_weight)
    pairs = np.flatnonzero(impostor_weight)
    a = np.concatenate([rows, ws.i[pairs]])
    b = np.concatenate([targets[rows, ranks], ws.l[pairs]])
    w = np.concatenate([target_weight[rows, ranks], -impostor_weight[pairs]])
    return pair_scatter(Xc, a, b, w)
