"""mlpack's LMNN objective: eq. 14 with each point's impostors cut to its k nearest.

mlpack 4.8 (``LMNNFunction`` and ``Constraints`` in ``mlpack/methods/lmnn``) minimises over
``L`` (from the identity, by L-BFGS)

    eps_k(M) = (1-mu) * sum_{i, j~>i} D_M(x_i, x_j)
             +    mu  * sum_{i, j~>i, l in N_k(i; M)} [1 + D_M(x_i, x_j) - D_M(x_i, x_l)]_+

where ``N_k(i; M)`` holds the ``k`` points of another label nearest to ``x_i`` under the
*current* metric, searched again at every evaluation (``update_interval = 1``), ``mu`` is
its ``regularization`` and ``k`` is both the number of target neighbours and of impostors
per point. Eq. 14 sums the hinge over *every* point of another label; the two agree where
no point has more than ``k`` impostors, and ``eps_k <= eps`` always. ``eps_k`` is not
convex in ``M`` (the set ``N_k`` moves with it) and is discontinuous where it changes.

The sum over ``N_k(i)`` needs only the ``k`` smallest impostor distances, so ties among
impostors do not change it. Ties among *target* neighbours do: mlpack takes the ``k + 1``
nearest same-class points from its kd-tree search (``k`` when a class has only ``k + 1``
points), reorders each run of equal distances by the norm of the input whose index *within
the class* equals the neighbour's (``ReorderResults`` runs before the indices are mapped
back to the data set) and keeps the first ``k``; ``LMNNProblem`` keeps the smaller index.
``mlpack_targets`` reproduces mlpack's choice through its own k-NN search; the functions
here use whatever targets the problem holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp.core.pair_search import BLOCK_BYTES
from lmnn_sdp.core.problem import LMNNProblem
from validation.peers import INSTALL_HINT, PeerMissing


@dataclass(frozen=True)
class ImpostorProfile:
    """Eq. 14 and mlpack's truncation at one metric, and where they differ.

    ``eq14`` and ``truncated`` are the two objectives; ``pull`` their common pull sum;
    ``active_triplets`` counts the triplets of eq. 14 with a positive hinge and
    ``truncated_active`` those among them whose impostor is one of the ``k`` nearest;
    ``impostors`` (n,) counts each point's impostors (points of another label within
    ``max_j D(x_i, x_j) + 1``), so ``crowded`` = points with more than ``k`` of them;
    ``push`` (n,) and ``truncated_push`` (n,) are each point's hinge sums in the two."""

    eq14: float
    truncated: float
    pull: float
    active_triplets: int
    truncated_active: int
    impostors: np.ndarray
    push: np.ndarray
    truncated_push: np.ndarray
    k: int

    @property
    def crowded(self) -> int:
        """Points with more than ``k`` impostors, where the two objectives differ."""
        return int(np.sum(self.impostors > self.k))


def truncated_objective(problem: LMNNProblem, M, n_impostors: int | None = None) -> float:
    """mlpack's objective ``eps_k(M)`` (module docstring) with ``k = n_impostors`` impostors
    per point (default ``problem.k``, as mlpack). ``M`` (d, d) is the metric."""
    return impostor_profile(problem, M, n_impostors).truncated


def impostor_profile(problem: LMNNProblem, M, n_impostors: int | None = None) -> ImpostorProfile:
    """Eq. 14, ``eps_k`` and the impostor counts at ``M`` (d, d) in one blockwise pass.

    ``n_impostors`` (default ``problem.k``) is the number of nearest impostors mlpack keeps
    per point; it must not exceed the number of points of any other label set."""
    M = problem.check_metric(M)
    m = _check_n_impostors(problem, problem.k if n_impostors is None else n_impostors)
    target_d = problem.target_distances(M)
    radius = 1.0 + target_d.max(axis=1)
    n = problem.n_samples
    push, truncated_push = np.empty(n), np.empty(n)
    active = truncated_active = 0
    impostors = np.empty(n, dtype=np.intp)
    for rows, D in other_label_distances(problem, M, problem.k + m):
        hinge = 1.0 + target_d[rows, :, None] - D[:, None, :]  # (b, k, n)
        push[rows] = np.sum(np.maximum(hinge, 0.0), axis=(1, 2))
        active += int(np.sum(hinge > 0))
        nearest = 1.0 + target_d[rows, :, None] - np.partition(D, m - 1, axis=1)[:, None, :m]
        truncated_push[rows] = np.sum(np.maximum(nearest, 0.0), axis=(1, 2))
        truncated_active += int(np.sum(nearest > 0))
        impostors[rows] = np.sum(D < radius[rows, None], axis=1)
    pull = float(np.sum(target_d))
    mu = problem.mu
    return ImpostorProfile(eq14=(1 - mu) * pull + mu * float(push.sum()),
                           truncated=(1 - mu) * pull + mu * float(truncated_push.sum()), pull=pull,
                           active_triplets=active, truncated_active=truncated_active,
                           impostors=impostors, push=push, truncated_push=truncated_push,
                           k=problem.k)


def mlpack_targets(problem: LMNNProblem) -> np.ndarray:
    """The target neighbours (n, k) mlpack 4.8's LMNN picks for the problem's data (module
    docstring), from ``mlpack.knn`` (the same kd-tree search as its ``Constraints``).

    Raises ``validation.peers.PeerMissing`` when mlpack is not installed."""
    try:
        import mlpack
    except ImportError as error:
        raise PeerMissing(f"mlpack is not installed: {INSTALL_HINT}") from error
    k, codes = problem.k, problem.label_codes
    width = k + 1 if np.bincount(codes).min() > k + 1 else k
    norms = np.linalg.norm(problem.X, axis=1)
    targets = np.empty((problem.n_samples, k), dtype=np.intp)
    for c in range(len(problem.classes)):
        members = np.flatnonzero(codes == c)
        found = mlpack.knn(reference=problem.X[members], k=width)
        local = np.asarray(found["neighbors"], dtype=np.intp)
        for row, distances in zip(local, found["distances"]):
            for start in range(width - 1):
                end = start + 1
                while end < width and distances[end] == distances[start]:
                    end += 1
                row[start:end] = row[start:end][np.argsort(norms[row[start:end]], kind="stable")]
        targets[members] = members[local[:, :k]]
    return targets


def other_label_distances(problem: LMNNProblem, M: np.ndarray, per_row: int = 1):
    """Yield ``(rows, D)``: ``D`` (b, n) the distances ``D_M(x_i, x_l)`` from the points
    ``rows`` (b,) to all points, ``+inf`` where ``l`` has the label of ``i``. Blocks hold
    ``per_row`` arrays of shape (b, n) within ``BLOCK_BYTES``."""
    Xc, codes, n = problem.X_centered, problem.label_codes, problem.n_samples
    XM = Xc @ M
    sq = np.einsum("nd,nd->n", XM, Xc)
    block = max(1, BLOCK_BYTES // (8 * n * per_row))
    for start in range(0, n, block):
        rows = np.arange(start, min(start + block, n))
        D = sq[rows, None] + sq[None, :] - 2.0 * (XM[rows] @ Xc.T)
        D[codes[rows, None] == codes[None, :]] = np.inf
        yield rows, D


def _check_n_impostors(problem: LMNNProblem, m) -> int:
    counts = np.bincount(problem.label_codes)
    fewest = int(problem.n_samples - counts.max())
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer)) or not 1 <= m <= fewest:
        raise ValueError(f"n_impostors must be an integer in [1, {fewest}] (the fewest points "
                         f"of another label that any point has), got {m!r}.")
    return int(m)
