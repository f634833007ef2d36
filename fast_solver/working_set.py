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
from fast_solver.impostors import in_chunks, map_rows, pair_distances, target_distances
from fast_solver.psd import transformation_from_metric


DIFFERENCE_BYTES = 256 * 2**20  # keep pair difference vectors below this size
DIFFERENCE_MAX_FEATURES = 64  # above, distances through L x are cheaper than through M


@dataclass
class WorkingSet:
    """Candidate impostor pairs, sorted by ``i`` then ``l``; each array of shape (P,).

    ``diff`` (P, d) holds ``x_i - x_l`` when ``d <= DIFFERENCE_MAX_FEATURES`` and
    it fits in ``DIFFERENCE_BYTES``, so that ``D_M(i, l) = diff M diff^T`` needs
    no gather per iteration (``P d^2`` flops); otherwise distances are taken in
    the space ``L x`` (``n d r + P r``)."""

    i: np.ndarray
    l: np.ndarray
    diff: np.ndarray | None = None

    def with_differences(self, Xc: np.ndarray) -> WorkingSet:
        """The same set with ``diff`` filled if it fits the memory budget."""
        d = Xc.shape[1]
        if d > DIFFERENCE_MAX_FEATURES or len(self) * d * 8 > DIFFERENCE_BYTES:
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


def target_difference_vectors(Xc: np.ndarray, targets: np.ndarray) -> np.ndarray | None:
    """``x_i - x_j`` for every target pair, shape (n, k, d), or None when
    ``d > DIFFERENCE_MAX_FEATURES`` (distances are then taken through ``L x``)."""
    if Xc.shape[1] > DIFFERENCE_MAX_FEATURES:
        return None
    return Xc[:, None, :] - Xc[targets]


def evaluate(Xc: np.ndarray, targets: np.ndarray, target_diff, mu: float, M: np.ndarray,
             ws: WorkingSet) -> Evaluation:
    """Evaluate eq. 14 restricted to the working set at a PSD ``M``.

    Parameters
    ----------
    Xc : ndarray of shape (n, d)
        Centred inputs.
    targets : ndarray of int, shape (n, k)
    target_diff : ndarray of shape (n, k, d) or None
        ``x_i - x_j`` for every target pair (``target_difference_vectors``);
        None to measure target distances in the space ``L x``.
    mu : float
    M : ndarray of shape (d, d), PSD
    ws : WorkingSet with P pairs

    Returns
    -------
    Evaluation
    """
    Z = None if target_diff is not None and ws.diff is not None else map_rows(Xc, transformation_from_metric(M))
    if target_diff is not None:
        n, k, d = target_diff.shape
        target_d = quadratic_forms(target_diff.reshape(n * k, d), M).reshape(n, k)
    else:
        target_d = target_distances(Z, targets)
    pair_d = quadratic_forms(ws.diff, M) if ws.diff is not None else pair_distances(Z, ws.i, ws.l)
    hinge = 1.0 + target_d[ws.i] - pair_d[:, None]
    objective = (1.0 - mu) * float(target_d.sum()) + mu * float(np.maximum(hinge, 0.0).sum())
    return Evaluation(M, target_d, hinge, objective)


def quadratic_forms(V: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``v_p^T M v_p`` for every row of ``V`` (P, d), shape (P,), in chunks."""
    out = np.empty(len(V))

    def fill(start, stop):
        block = V[start:stop]
        out[start:stop] = np.einsum("pd,pd->p", block @ M, block)

    in_chunks(len(V), fill)
    return out


def push_scatter(Xc: np.ndarray, targets: np.ndarray, ws: WorkingSet, pair: np.ndarray,
                 rank: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``sum_t w_t (C_ij - C_il)`` over working-set triplets, shape (d, d).

    Triplet ``t`` is candidate pair ``pair[t]`` (``i``, ``l``) with target rank
    ``rank[t]`` (``j = targets[i, rank]``). With ``w = 1`` on the active set this
    is the push term of eq. 18 divided by ``mu``; with ``w = +1`` on the triplets
    that became active and ``-1`` on those that left it, the update of eq. 19."""
    i = ws.i[pair]
    a = np.concatenate([i, i])
    b = np.concatenate([targets[i, rank], ws.l[pair]])
    w = np.asarray(weight, dtype=float)
    return pair_scatter(Xc, a, b, np.concatenate([w, -w]))
