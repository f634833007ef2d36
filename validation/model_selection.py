"""Model selection over certified optima: ``mu`` and ``k`` by cross-validated k-NN error.

Eq. 14 fixes ``mu`` (the push weight) and ``k`` (target neighbours); the paper tuned them
on held-out data (JMLR 2009, sec. 4: "k ... and the weighting parameter mu were set by
cross validation"). Here every candidate is a certified optimum: for each fold and each
``k``, ``fast_solver.lmnn.path.certified_path`` solves eq. 14 on the training part at every
``mu`` of the grid (warm-started), and the held-out part is classified by k-NN under each
metric (``validation.experiments.knn``: ties broken by shrinking the neighbourhood, as the
paper). The selection is the (``mu``, ``k``) of least mean held-out error; the guarantee of
a single solve (a proved gap) holds for every metric compared, so the choice is between
optima of eq. 14, not between solver accidents.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold
from tqdm.auto import tqdm

from fast_solver.lmnn.path import certified_path, check_mus
from lmnn_sdp.core.checks import check_inputs, check_labels
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import psd_factor
from validation.experiments.knn import knn_error, nearest_neighbours


@dataclass(frozen=True)
class Selection:
    """The chosen ``mu`` and ``k`` and the table behind them.

    ``errors`` (len(ks), len(mus), cv) holds each fold's held-out k-NN error, ``gaps`` the
    certified relative gap of each solve, same shape; ``table`` one dict per (k, mu) with
    the mean and standard deviation of the error over folds and the largest gap."""

    mu: float
    k: int
    mus: np.ndarray
    ks: np.ndarray
    errors: np.ndarray
    gaps: np.ndarray

    @property
    def table(self) -> list[dict]:
        return [{"k": int(k), "mu": float(mu), "cv_error": float(self.errors[a, b].mean()),
                 "cv_std": float(self.errors[a, b].std()), "max_gap": float(self.gaps[a, b].max())}
                for a, k in enumerate(self.ks) for b, mu in enumerate(self.mus)]


def select_mu_k(X, y, mus, ks, *, cv: int = 5, n_neighbors: int = 3, random_state=0,
                progress: bool = False, **options) -> Selection:
    """Cross-validate k-NN error over certified optima of eq. 14 (module docstring).

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
    mus : array-like of float in [0, 1]
        The push weights, solved in the given order along each path.
    ks : array-like of int
        Target-neighbour counts; each class of every training fold needs ``k + 1`` points.
    cv : int
        Stratified folds (shuffled with ``random_state``).
    n_neighbors : int
        The classifier's neighbourhood (3-NN as the paper's Table 1), whatever ``k``.
    **options
        Passed to ``fast_solver.solve`` (``tol``, ``max_iter``, ...).

    Returns
    -------
    Selection
        The (``mu``, ``k``) of least mean error; ties go to the first in ``ks``, then ``mus``.
        A ``ConvergenceWarning`` names the solves whose gap was not proved under ``tol``.
    """
    X = check_inputs(X)
    y = check_labels(y, len(X))
    mus, ks = check_mus(mus), _check_ks(ks)
    folds = _folds(y, cv, random_state, int(ks.max()), n_neighbors)
    errors = np.empty((len(ks), len(mus), cv))
    gaps = np.empty_like(errors)
    uncertified = []
    jobs = [(f, a) for f in range(cv) for a in range(len(ks))]
    for f, a in tqdm(jobs, disable=not progress, desc="folds x k"):
        train, test = folds[f]
        path = certified_path(LMNNProblem(X[train], y[train], k=int(ks[a])), mus, **options)
        for b, result in enumerate(path.results):
            L = psd_factor(result.metric)
            neighbours = nearest_neighbours(X[train] @ L.T, X[test] @ L.T, n_neighbors)
            errors[a, b, f] = knn_error(y[train], neighbours, y[test])
            gaps[a, b, f] = result.relative_gap
            if not result.certified:
                uncertified.append(f"fold {f}, k={ks[a]}, mu={mus[b]} (gap {result.relative_gap:.2g})")
    if uncertified:
        warnings.warn(f"{len(uncertified)} solves did not prove their gap under tol: "
                      f"{'; '.join(uncertified[:5])}; raise max_iter.", ConvergenceWarning)
    a, b = np.unravel_index(np.argmin(errors.mean(axis=2)), errors.shape[:2])
    return Selection(mu=float(mus[b]), k=int(ks[a]), mus=mus, ks=ks, errors=errors, gaps=gaps)


def _check_ks(ks) -> np.ndarray:
    values = np.asarray(ks, dtype=object)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"ks must be a non-empty 1-D sequence of target-neighbour counts, got {ks!r}.")
    bad = [k for k in values if isinstance(k, bool) or not isinstance(k, Integral) or k < 1]
    if bad:
        raise ValueError(f"ks must hold integers >= 1 (target neighbours per point), got {bad[0]!r}.")
    if len(set(values.tolist())) < len(values):
        raise ValueError(f"ks has repeated values {values.tolist()}; give each k once.")
    return values.astype(int)


def _folds(y: np.ndarray, cv, random_state, largest_k: int, n_neighbors) -> list:
    """Stratified folds, after checking that every training part can hold the problem."""
    _, counts = np.unique(y, return_counts=True)
    if isinstance(cv, bool) or not isinstance(cv, Integral) or not 2 <= cv <= counts.min():
        raise ValueError(f"cv must be an integer in [2, {counts.min()}] (the smallest class has "
                         f"{counts.min()} points and every fold needs one), got {cv!r}.")
    folds = list(StratifiedKFold(cv, shuffle=True, random_state=random_state).split(y, y))
    fewest = min(int(np.unique(y[train], return_counts=True)[1].min()) for train, _ in folds)
    if largest_k >= fewest:
        raise ValueError(f"ks contains k={largest_k}, but the smallest class of a training fold "
                         f"has {fewest} points; k must be at most {fewest - 1} (or use fewer folds).")
    smallest_train = min(len(train) for train, _ in folds)
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, Integral) \
            or not 1 <= n_neighbors <= smallest_train:
        raise ValueError(f"n_neighbors must be an integer in [1, {smallest_train}], got {n_neighbors!r}.")
    return folds
