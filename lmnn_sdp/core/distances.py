"""Distances of eq. 16, each measured in the metric of its second point's cluster:
per pair (``quadratic_forms``, which ``LMNNProblem`` evaluates eq. 14 and 16 with), all
pairs of small data (``distance_matrix``) and the leave-one-out 1-NN error of Fig. 7
(``leave_one_out_error``), the references the tests and the experiments check against.
"""

from __future__ import annotations

import numpy as np

from lmnn_sdp.core.checks import check_inputs


def quadratic_forms(V: np.ndarray, metrics: np.ndarray, which: np.ndarray) -> np.ndarray:
    """``v_p^T M_{which[p]} v_p`` for the rows of ``V`` (P, d); shape (P,)."""
    if len(metrics) == 1:
        return np.einsum("pd,pd->p", V @ metrics[0], V)
    out = np.empty(len(V))
    for c, M in enumerate(metrics):
        mask = which == c
        out[mask] = np.einsum("pd,pd->p", V[mask] @ M, V[mask])
    return out


def distance_matrix(X, metrics, clusters) -> np.ndarray:
    """All cluster-dependent distances ``D^(x_a, x_b)`` of eq. 16, shape (n, n).

    Not symmetric: column ``b`` uses ``M_{clusters[b]}``. ``X`` (n, d), ``metrics``
    (C, d, d), ``clusters`` (n,). Exact differences, O(n^2 d) memory: for small data."""
    X = check_inputs(X)
    out = np.empty((len(X), len(X)))
    for c, M in enumerate(np.asarray(metrics, dtype=float)):
        cols = np.flatnonzero(np.asarray(clusters) == c)
        V = X[:, None, :] - X[None, cols, :]
        out[:, cols] = np.einsum("abd,de,abe->ab", V, M, V)
    return out


def leave_one_out_error(X, y, metrics, clusters) -> float:
    """Leave-one-out 1-NN error with the distance of eq. 16 (the measure of Fig. 7).

    Each point takes the label of the other point ``j`` nearest to it under
    ``M_{c(j)}``; ties go to the smaller index. Returns the fraction misclassified."""
    D = distance_matrix(X, metrics, clusters)
    np.fill_diagonal(D, np.inf)
    y = np.asarray(y)
    return float(np.mean(y[np.argmin(D, axis=1)] != y))
