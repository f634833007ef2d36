"""Metric learning by neighbourhood gerrymandering (Trivedi, McAllester & Shakhnarovich,
NIPS 2014): the surrogate loss (eq. 5-6), its two inference problems (Alg. 2, Alg. 3),
its gradient (eq. 12) and the objective (eq. 10).

A neighbour set ``h`` of a point ``x_i`` is ``k`` other training points (leave one out,
footnote 2); its score is ``S_W(x_i, h) = -sum_{j in h} D_W(x_i, x_j)`` (eq. 2) and it votes
for the plurality class of its labels. Within each class the best set always takes that
class's nearest points, so a set is known by its *label composition*: how many of its
members come from each class. Both inference problems therefore run on a small table, the
``k`` nearest points of every class to ``x_i`` (``neighbour_table``, shape (b, R, k)), and
search compositions exactly:

- targeted inference (Alg. 2) with ``strict=True`` finds the best set whose vote is class
  ``y`` alone (``y`` has more members than any other class); with ``strict=False`` ``y`` may
  tie with other classes;
- loss-augmented inference (Alg. 3) maximises ``S_W(x_i, h) + Lambda(y_i, r)`` over classes
  ``r`` and sets voting (at least jointly) for ``r``, as the paper's text prescribes (ties
  allowed): a tied vote counts with the worst loss among the tied classes.

The surrogate loss (eq. 5-6) is ``L_i = max_h [S + Delta] - max_{h: Delta = 0} S``; it is at
least 0 and at least the k-NN loss of ``x_i`` under any rule that breaks ties among the
plurality classes. The paper's greedy Alg. 2 (fill the slots after the first ``n*`` target
points one by one) can return a worse set when taking another target point would have lifted
the cap on a nearby class, so this module enumerates the target class's count ``c`` instead:
for each ``c`` the rest of the set is the ``k - c`` nearest points of the other classes with at
most ``c - 1`` (strict) or ``c`` (ties allowed) from each, a capped greedy that is exact.
"""

from __future__ import annotations

import numba
import numpy as np

from fast_solver.lmnn.energy import nearest_per_class
from lmnn_sdp.core.checks import check_inputs, check_real_dtype
from lmnn_sdp.core.pair_search import BLOCK_BYTES
from lmnn_sdp.core.psd import check_psd, psd_factor

PARALLEL_ROWS = 64  # query points from which the neighbour search uses numba's threads


def neighbour_table(Z: np.ndarray, labels: np.ndarray, rows: np.ndarray,
                    k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest other points of each class to each point ``rows[b]``.

    Parameters
    ----------
    Z : ndarray of shape (n, p)
        Inputs in the learned space, ``Z = X L^T`` with ``L^T L = W``, so that squared
        Euclidean distances in ``Z`` are ``D_W`` (eq. 1).
    labels : ndarray of int, shape (n,)
        Class codes ``0..R-1``.
    rows : ndarray of int, shape (b,)
        The query points; each is left out of its own neighbours (footnote 2).

    Returns
    -------
    distances : ndarray of shape (b, R, k)
        ``D_W`` to the nearest points of each class, ascending; ``inf`` where a class has
        too few points.
    index : ndarray of int, shape (b, R, k)
        Their indices, ties to the smaller index; -1 where a class has too few points.
    """
    n_classes, threads = int(labels.max()) + 1, numba.get_num_threads()
    numba.set_num_threads(threads if len(rows) >= PARALLEL_ROWS else 1)
    try:  # a parallel launch costs more than a few rows of work
        near = nearest_per_class(Z[rows], Z, labels, n_classes, k + 1)
    finally:
        numba.set_num_threads(threads)
    is_self = near == rows[:, None, None]
    drop = np.where(is_self.any(axis=2), np.argmax(is_self, axis=2), k)
    index = near[np.arange(k + 1) != drop[..., None]].reshape(len(rows), n_classes, k)
    difference = Z[index] - Z[rows][:, None, None, :]
    distances = np.einsum("brkp,brkp->brk", difference, difference)
    distances[index < 0] = np.inf
    return distances, index


def targeted_inference(distances: np.ndarray, target: np.ndarray,
                       strict: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 2: the best neighbour set voting for class ``target[b]``, as a label composition.

    ``distances`` (b, R, k) is a ``neighbour_table``; ``target`` (b,) holds class codes. With
    ``strict`` (the paper's ``tau = 1``) the target class must have more members than every
    other class; without it (``tau = 0``) it may tie.

    Returns ``counts`` (b, R), how many of each class's nearest points the set takes, and
    ``scores`` (b,), ``S_W`` of the set (eq. 2); ``-inf`` and zero counts where no set of
    ``k`` available points votes that way.
    """
    own_counts, scores = best_compositions(distances, strict)
    rows = np.arange(len(distances))
    return (composition(distances, target, own_counts[rows, target], strict),
            scores[rows, target])


def loss_augmented_inference(distances: np.ndarray, truth: np.ndarray,
                             loss_matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Alg. 3: ``argmax_h S_W(x_b, h) + Delta(truth[b], h)`` (eq. 11), as a label composition.

    For every class ``r``, targeted inference with ties allowed (``tau = 0``, as the text of
    sec. 5.1.2 says) gives the best set voting for ``r``; its value is its score plus
    ``loss_matrix[truth[b], r]``, and the best class wins (ties to the smaller code).
    ``distances`` (b, R, k) is a ``neighbour_table``, ``truth`` (b,) the true class codes,
    ``loss_matrix`` (R, R) is ``Lambda``.

    Returns ``counts`` (b, R), ``values`` (b,) (the max in eq. 5) and ``classes`` (b,), the
    vote ``r`` the value was counted for.
    """
    own_counts, scores = best_compositions(distances, strict=False)
    values = scores + loss_matrix[truth]
    classes = np.argmax(values, axis=1)
    rows = np.arange(len(distances))
    return (composition(distances, classes, own_counts[rows, classes], strict=False),
            values[rows, classes], classes)


def best_compositions(distances: np.ndarray, strict: bool) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 2 for every target class at once: ``own_counts`` (b, R), how many members of
    class ``r`` the best set voting for ``r`` has (0 where none exists), and its ``scores``
    (b, R) (``-inf`` where none exists).

    For each count ``c`` of the target class the other ``k - c`` members are the nearest of
    the pool of every class's first ``c - tau`` points without the target's own; they lie
    among the pool's ``k`` nearest, since at most ``c - tau <= c`` of those are the target's."""
    b, R, k = distances.shape
    own = np.cumsum(distances, axis=2)
    best_cost, own_counts = np.full((b, R), np.inf), np.zeros((b, R), dtype=np.intp)
    for c in range(1, k + 1):
        cap = c - int(strict)
        pool = distances[:, :, :cap].reshape(b, R * cap)
        top = np.argsort(pool, axis=1, kind="stable")[:, :k]
        values, classes = np.take_along_axis(pool, top, axis=1), top // max(cap, 1)
        keep = classes[:, None, :] != np.arange(R)[None, :, None]  # (b, target, m)
        take = keep & (np.cumsum(keep, axis=2) <= k - c)
        cost = own[:, :, c - 1] + np.where(take, values[:, None, :], 0.0).sum(axis=2)
        cost[take.sum(axis=2) < k - c] = np.inf
        better = cost < best_cost
        best_cost[better], own_counts[better] = cost[better], c
    return own_counts, -best_cost


def composition(distances: np.ndarray, target: np.ndarray, c: np.ndarray,
                strict: bool) -> np.ndarray:
    """The counts (b, R) of the set with ``c[b]`` members of class ``target[b]`` and, from
    the other classes, the ``k - c[b]`` nearest with at most ``c[b] - tau`` from each
    (``distances`` (b, R, k) a ``neighbour_table``); zero counts where ``c[b] = 0``."""
    b, R, k = distances.shape
    rows = np.arange(b)
    allowed = np.where(np.arange(k) < (c - int(strict))[:, None, None], distances, np.inf)
    allowed[rows, target] = np.inf
    order = np.argsort(allowed.reshape(b, R * k), axis=1, kind="stable")
    taken = np.where(np.arange(R * k) < (k - c)[:, None], order // k, R)
    counts = np.bincount((rows[:, None] * (R + 1) + taken).ravel(), minlength=b * (R + 1))
    counts = counts.reshape(b, R + 1)[:, :R]
    counts[rows, target] = c
    counts[c == 0] = 0
    return counts


def neighbour_sets(index: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The sets of given label compositions: the first ``counts[b, r]`` points of class ``r``
    in ``index`` (b, R, k) (a ``neighbour_table``); shape (b, k), ascending by class, and
    all -1 where ``counts[b]`` is zero (no set exists)."""
    b, R, k = index.shape
    sets = np.full((b, k), -1, dtype=np.intp)
    found = counts.sum(axis=1) == k
    sets[found] = index[found][np.arange(k) < counts[found][..., None]].reshape(-1, k)
    return sets


def surrogate_losses(X, labels, W, k: int, loss_matrix=None,
                     rows=None) -> tuple[np.ndarray, np.ndarray]:
    """The surrogate losses ``L_i`` of eq. 5-6 of the points ``rows`` and the gradient of
    their sum (eq. 12): ``sum_i [sum_{j in h*_i} C_ij - sum_{j in h^_i} C_ij]``,
    ``C_ij = (x_i - x_j)(x_i - x_j)^T``.

    ``X`` (n, d), ``labels`` (n,) class codes ``0..R-1``, ``W`` (d, d) PSD, ``loss_matrix``
    (R, R) (default: the 0-1 loss), ``rows`` (b,) (default: all points). Returns ``losses``
    (b,) and ``gradient`` (d, d). ``h*`` is Alg. 2 with ties forbidden, ``h^`` is Alg. 3.
    """
    X, labels, W, loss_matrix = check_model(X, labels, W, k, loss_matrix)
    rows = np.arange(len(X)) if rows is None else np.asarray(rows, dtype=np.intp)
    return batch_losses(X, X @ psd_factor(W).T, labels, rows, k, loss_matrix)


def mlng_objective(X, labels, W, k: int, C: float, loss_matrix=None) -> tuple[float, np.ndarray]:
    """Eq. 10, ``||W||_F^2 + C sum_i L_i(W)``, and its gradient ``2 W + C sum_i dL_i/dW``
    (d, d), for ``X`` (n, d), ``labels`` (n,) class codes, ``W`` (d, d) PSD; blockwise."""
    X, labels, W, loss_matrix = check_model(X, labels, W, k, loss_matrix)
    total, gradient = summed_losses(X, X @ psd_factor(W).T, labels, k, loss_matrix)
    return float(np.sum(W * W)) + C * total, 2.0 * W + C * gradient


def summed_losses(X: np.ndarray, Z: np.ndarray, labels: np.ndarray, k: int,
                  loss_matrix: np.ndarray) -> tuple[float, np.ndarray]:
    """``sum_i L_i`` over all points and its gradient (d, d), in blocks of points within
    ``BLOCK_BYTES``; checked inputs, ``Z = X L^T`` (n, p)."""
    total, gradient = 0.0, np.zeros((X.shape[1], X.shape[1]))
    block = max(1, BLOCK_BYTES // (8 * table_floats(int(labels.max()) + 1, k, Z.shape[1])))
    for start in range(0, len(X), block):
        losses, part = batch_losses(X, Z, labels, np.arange(start, min(start + block, len(X))),
                                    k, loss_matrix)
        total += float(losses.sum())
        gradient += part
    return total, gradient


def batch_losses(X: np.ndarray, Z: np.ndarray, labels: np.ndarray, rows: np.ndarray, k: int,
                 loss_matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``surrogate_losses`` on checked inputs with ``Z = X L^T`` (n, p) already mapped."""
    distances, index = neighbour_table(Z, labels, rows, k)
    truth = labels[rows]
    best_counts, best_scores = targeted_inference(distances, truth, strict=True)
    worst_counts, worst_values, _ = loss_augmented_inference(distances, truth, loss_matrix)
    pull = X[rows][:, None, :] - X[neighbour_sets(index, best_counts)]
    push = X[rows][:, None, :] - X[neighbour_sets(index, worst_counts)]
    pull, push = pull.reshape(-1, X.shape[1]), push.reshape(-1, X.shape[1])
    return worst_values - best_scores, pull.T @ pull - push.T @ push


def table_floats(n_classes: int, k: int, p: int) -> int:
    """Floats held per query point by ``batch_losses`` (for block sizes)."""
    return n_classes * n_classes * k * 3 + n_classes * (k + 1) * (p + 4)


# -- validation ------------------------------------------------------------------
def check_model(X, labels, W, k, loss_matrix, name: str = "W") -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(X, labels, W, loss_matrix)`` checked: finite ``X`` (n, d); codes ``0..R-1`` (n,)
    in which every point has a set of ``k`` others voting for its class alone
    (``check_neighbourhoods``); ``W`` (d, d) symmetric PSD (errors call it ``name``);
    ``Lambda`` (R, R)."""
    X = check_inputs(X)
    labels = check_codes(labels, len(X))
    check_neighbourhoods(labels, k)
    W = np.asarray(W)
    check_real_dtype(W.dtype, name)
    W = W.astype(float)
    if W.shape != (X.shape[1],) * 2 or not np.all(np.isfinite(W)):
        raise ValueError(f"{name} must be a finite matrix of shape {(X.shape[1],) * 2} matching "
                         f"X, got shape {W.shape}.")
    return X, labels, check_psd(W, name)[0], check_loss_matrix(loss_matrix, int(labels.max()) + 1)


def check_codes(labels, n: int) -> np.ndarray:
    """``labels`` as intp class codes ``0..R-1`` (n,), every code used, or a clear error."""
    codes = np.asarray(labels)
    if codes.ndim != 1 or len(codes) != n:
        raise ValueError(f"labels must have shape (n_samples,) = ({n},), got {codes.shape}.")
    if codes.dtype.kind not in "iu":
        raise TypeError(f"labels must be integer class codes 0..R-1, got dtype={codes.dtype}; "
                        "encode labels with np.unique(y, return_inverse=True)[1].")
    if codes.min() < 0 or np.any(np.bincount(codes) == 0):
        raise ValueError("labels must be class codes 0..R-1 with every code used; encode "
                         "labels with np.unique(y, return_inverse=True)[1].")
    return codes.astype(np.intp)


def check_neighbourhoods(labels: np.ndarray, k) -> None:
    """A ValueError naming ``k`` unless every point has ``k`` other points whose vote is its
    class alone (so ``h*`` of eq. 6 exists), and there are at least two classes."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be a positive integer, got {k!r}.")
    counts = np.bincount(labels)
    if len(counts) < 2:
        raise ValueError("labels hold a single class; MLNG needs at least two classes, since "
                         "its loss compares votes for the true class with votes for others.")
    if k < 1:
        raise ValueError(f"k must be at least 1 (neighbours per vote), got {k}.")
    largest = largest_k(counts)
    if k > largest.min():
        worst = int(np.argmin(largest))
        raise ValueError(f"k={k} is invalid: a point of class {worst} (with {counts[worst]} "
                         f"members) has no set of k other points voting for its class alone; "
                         f"use k <= {largest.min()} (the largest valid k for these labels).")


def largest_k(counts: np.ndarray) -> np.ndarray:
    """For class sizes ``counts`` (R,), the largest ``k`` for which a point of each class has
    ``k`` other points voting for its class alone, shape (R,): all ``a = counts[r] - 1`` other
    members of its class plus at most ``a - 1`` from each other class (0 when ``a = 0``)."""
    own = counts - 1
    others = np.minimum(counts[None, :], np.maximum(own - 1, 0)[:, None])
    others[np.diag_indices(len(counts))] = 0
    return np.where(own >= 1, own + others.sum(axis=1), 0)


def check_loss_matrix(loss_matrix, n_classes: int) -> np.ndarray:
    """``Lambda`` (R, R) (sec. 3): ``None`` gives the 0-1 loss, the paper's choice; otherwise
    finite, non-negative, zero on the diagonal, or a ValueError naming the fix."""
    if loss_matrix is None:
        return 1.0 - np.eye(n_classes)
    L = np.asarray(loss_matrix)
    check_real_dtype(L.dtype, "loss_matrix")
    L = L.astype(float)
    if L.shape != (n_classes, n_classes):
        raise ValueError(f"loss_matrix must have shape ({n_classes}, {n_classes}), one row and "
                         f"column per class in sorted order, got {L.shape}.")
    if not np.all(np.isfinite(L)) or np.any(L < 0) or np.any(np.diag(L) != 0):
        raise ValueError("loss_matrix must be finite and non-negative with a zero diagonal "
                         "(Lambda(r, r) = 0: a correct vote costs nothing).")
    return L
