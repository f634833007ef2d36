"""The (sub-)gradient of eq. 18 and its incremental update (eq. 19).

``G = (1 - mu) sum_{i, j~>i} C_ij + mu sum_{(i,j,l) in N} (C_ij - C_il)`` with
``C_ab = (x_a - x_b)(x_a - x_b)^T`` and ``N`` the triplets whose hinge is
active. The contribution of an active triplet does not depend on how much it
violates its margin, so the push term is a weighted sum of outer products over
pairs: target pairs ``(i, j)`` weighted by their number of active impostors and
impostor pairs ``(i, l)`` weighted by their number of active target ranks. Every
such sum goes through the weighted-graph identity

    sum_p w_p C_{a_p b_p} = X_U^T (Deg - W - W^T) X_U

on the nodes ``U`` the pairs touch (no Python loop over triplets; duplicate
pairs add up in the sparse matrix ``W``), and eq. 19 is the same sum over the
triplets that entered the active set (weight +1) and those that left it (-1).
Small sums (at most ``DIRECT_MAX_PAIRS`` pairs) are formed from the difference
vectors directly.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from lmnn_sdp.problem import LMNNProblem

DIRECT_MAX_PAIRS = 2048


def lmnn_gradient(problem: LMNNProblem, triplets) -> np.ndarray:
    """Gradient ``G`` of eq. 18 for the active triplets ``N``, shape (d, d).

    Parameters
    ----------
    problem : LMNNProblem
    triplets : array-like of int, shape (T, 3)
        The active set ``N`` as rows ``(i, j, l)``.
    """
    return pull_gradient(problem) + push_gradient(problem, triplets)


def pull_gradient(problem: LMNNProblem) -> np.ndarray:
    """``(1 - mu) sum_{i, j~>i} C_ij``, shape (d, d) (first term of eq. 18)."""
    return (1.0 - problem.mu) * problem.pull_matrix()


def push_gradient(problem: LMNNProblem, triplets) -> np.ndarray:
    """``mu sum_{(i,j,l) in N} (C_ij - C_il)``, shape (d, d) (second term of eq. 18)."""
    t = np.asarray(triplets, dtype=np.intp).reshape(-1, 3)
    a = np.concatenate([t[:, 0], t[:, 0]])
    b = np.concatenate([t[:, 1], t[:, 2]])
    w = np.concatenate([np.ones(len(t)), -np.ones(len(t))])
    return problem.mu * pair_scatter(problem.X_centered, a, b, w)


def incremental_gradient(problem: LMNNProblem, G: np.ndarray, old_triplets, new_triplets) -> np.ndarray:
    """Eq. 19: ``G_{t+1} = G_t - mu sum_{N_t - N_{t+1}} (C_ij - C_il) + mu sum_{N_{t+1} - N_t} (C_ij - C_il)``.

    Parameters
    ----------
    problem : LMNNProblem
    G : ndarray of shape (d, d)
        Gradient for ``old_triplets``.
    old_triplets, new_triplets : array-like of int, shape (T_old, 3), (T_new, 3)
        Consecutive active sets ``N_t`` and ``N_{t+1}``.

    Returns
    -------
    ndarray of shape (d, d)
        The gradient for ``new_triplets``; only the set differences are summed.
    """
    old = np.unique(np.asarray(old_triplets, dtype=np.intp).reshape(-1, 3), axis=0)
    new = np.unique(np.asarray(new_triplets, dtype=np.intp).reshape(-1, 3), axis=0)
    n = problem.n_samples
    old_keys, new_keys = _triplet_keys(old, n), _triplet_keys(new, n)
    left = old[~np.isin(old_keys, new_keys)]
    entered = new[~np.isin(new_keys, old_keys)]
    return G - push_gradient(problem, left) + push_gradient(problem, entered)


def pair_scatter(Xc: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_p w_p (x_a - x_b)(x_a - x_b)^T`` through the graph Laplacian, shape (d, d).

    Only the nodes touched by the pairs enter the product, so the cost is
    ``O(P + |U| d^2)`` for ``P`` pairs on ``|U|`` distinct points; up to
    ``DIRECT_MAX_PAIRS`` pairs (the usual size of an eq. 19 update) the
    difference vectors are summed directly, ``V^T diag(w) V``.

    Parameters
    ----------
    Xc : ndarray of shape (n, d)
        Centred inputs.
    a, b : ndarray of int, shape (P,)
        Pair end points.
    w : ndarray of shape (P,)
        Pair weights (any sign).
    """
    d = Xc.shape[1]
    if len(a) == 0:
        return np.zeros((d, d))
    if len(a) <= DIRECT_MAX_PAIRS:
        V = Xc[a] - Xc[b]
        S = V.T @ (np.asarray(w, dtype=float)[:, None] * V)
        return (S + S.T) / 2
    nodes, local = np.unique(np.concatenate([a, b]), return_inverse=True)
    m = len(nodes)
    W = sp.coo_matrix((np.asarray(w, dtype=float), (local[:len(a)], local[len(a):])), shape=(m, m)).tocsr()
    W = W + W.T
    laplacian = sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W
    X_nodes = Xc[nodes]
    S = X_nodes.T @ (laplacian @ X_nodes)
    return (S + S.T) / 2


def _triplet_keys(t: np.ndarray, n: int) -> np.ndarray:
    """One int64 per triplet ``(i, j, l)``: ``(i * n + j) * n + l``."""
    t = t.astype(np.int64)
    return (t[:, 0] * n + t[:, 1]) * n + t[:, 2]
