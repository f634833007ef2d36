"""k-NN classification as in the paper's protocol (JMLR 2009, sec. 4).

"To break ties among different classes from the kNN decision rule, we repeatedly reduced
the neighborhood size, ultimately classifying (if necessary) by just the k = 1 nearest
neighbor" (``knn_predict``), and "all training error rates reported are leave-one-out
estimates": a training point's neighbours are the *other* training points
(``nearest_neighbours(Z, None, k)``, ``drop_self``).
"""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import NearestNeighbors


def knn_predict(y_train, neighbours) -> np.ndarray:
    """The k-NN labels with ties broken by shrinking k.

    Parameters
    ----------
    y_train : array-like of shape (n,)
        Labels of the training points.
    neighbours : array-like of int, shape (m, k)
        Indices into ``y_train`` of each query's ``k`` nearest training points,
        nearest first.

    Returns
    -------
    labels : ndarray of shape (m,)
        The majority label of the ``k`` neighbours; when several labels share the
        largest count, the vote is taken again over the nearest ``k - 1``, and so on
        (the nearest neighbour alone always decides).
    """
    y_train = np.asarray(y_train)
    neighbours = _check_neighbours(neighbours, len(y_train))
    classes, codes = np.unique(y_train, return_inverse=True)
    votes = codes[neighbours]  # (m, k)
    m, k = votes.shape
    counts = np.zeros((m, k, len(classes)), dtype=np.intp)  # counts[:, j]: votes of the nearest j + 1
    counts[np.arange(m)[:, None], np.arange(k)[None, :], votes] = 1
    counts = np.cumsum(counts, axis=1)
    predicted = np.full(m, -1)
    for size in range(k, 0, -1):
        top = counts[:, size - 1]
        undecided = predicted < 0
        unique_winner = (top == top.max(axis=1, keepdims=True)).sum(axis=1) == 1
        decide = undecided & unique_winner
        predicted[decide] = np.argmax(top[decide], axis=1)
    return classes[predicted]


def knn_error(y_train, neighbours, y_true) -> float:
    """Fraction of queries whose ``knn_predict`` label differs from ``y_true`` (m,)."""
    return float(np.mean(knn_predict(y_train, neighbours) != np.asarray(y_true)))


def nearest_neighbours(Z_train: np.ndarray, Z_query: np.ndarray | None, k: int) -> np.ndarray:
    """Indices (m, k) of the ``k`` training points nearest (Euclidean) to each query, nearest
    first; ``Z_query=None`` asks leave-one-out: each training point's ``k`` nearest *other*
    training points, shape (n, k). ``Z_train`` (n, r), ``Z_query`` (m, r)."""
    n = len(Z_train)
    if not 1 <= k <= n - (Z_query is None):
        raise ValueError(f"k must lie in [1, {n - (Z_query is None)}] for {n} training points"
                         f"{' (leave-one-out)' if Z_query is None else ''}, got {k}.")
    index = NearestNeighbors(n_neighbors=k).fit(Z_train)
    return index.kneighbors(Z_query, return_distance=False)


def drop_self(neighbours) -> np.ndarray:
    """Leave-one-out from a self-inclusive search: ``neighbours`` (n, k + 1) of the training
    points themselves -> (n, k), row ``i`` without ``i`` (or without its last entry when
    ``i`` is absent, as when duplicates of point ``i`` fill its list)."""
    neighbours = np.asarray(neighbours)
    n, width = neighbours.shape
    if width < 2:
        raise ValueError(f"neighbours needs k + 1 >= 2 columns to drop the point itself, got {width}.")
    is_self = neighbours == np.arange(n)[:, None]
    is_self[~is_self.any(axis=1), -1] = True
    first = np.argmax(is_self, axis=1)
    keep = np.ones_like(is_self)
    keep[np.arange(n), first] = False
    return neighbours[keep].reshape(n, width - 1)


def _check_neighbours(neighbours, n: int) -> np.ndarray:
    neighbours = np.asarray(neighbours)
    if neighbours.ndim != 2 or neighbours.shape[1] < 1 or not np.issubdtype(neighbours.dtype, np.integer):
        raise ValueError("neighbours must be an integer array of shape (m, k) with k >= 1, "
                         f"got dtype {neighbours.dtype} and shape {neighbours.shape}.")
    if neighbours.size and (neighbours.min() < 0 or neighbours.max() >= n):
        raise ValueError(f"neighbours must index the {n} training labels (0..{n - 1}), got values "
                         f"from {neighbours.min()} to {neighbours.max()}.")
    return neighbours
