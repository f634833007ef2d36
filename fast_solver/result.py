"""The result of a fast LMNN solve, in the manner of SciPy's ``OptimizeResult``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(repr=False)
class FastLMNNResult:
    """What ``fast_solver.solve`` returns; nothing is printed.

    Attributes
    ----------
    M : ndarray of shape (d, d)
        The learned PSD metric.
    L : ndarray of shape (r, d)
        Its factor, ``L^T L = M``, with ``r = rank(M)`` rows (eq. 2).
    objective : float
        eps(M) of eq. 14 (see ``objective_source``).
    objective_source : str
        ``"problem.objective"`` (recomputed by ``LMNNProblem.objective``) or
        ``"exact search"`` (every triplet with positive hinge found by the
        exact impostor search at ``M`` and summed).
    n_iter : int
        Sub-gradient iterations of Alg. 1 (accepted and rejected steps).
    n_full_checks : int
        Exact searches of all triplets (re-checks, verifications, polishing).
    search_fraction : float
        Points searched per full check, as a fraction of ``n`` (the others were
        proved clean by the contraction bound; see ``fast_solver.active_set``).
    n_active : int
        Triplets with a positive hinge at ``M``.
    working_set : ndarray of int, shape (T, 3)
        The final working set as triplets ``(i, j, l)`` whose hinge exceeds
        ``-band`` at ``M``: every active triplet, and every triplet within
        ``band`` of the margin for the points searched at ``M``; a warm start
        for ``lmnn_sdp``'s constraint generation.
    converged : bool
        True only after a full verification pass found no violated triplet
        outside the working set and the stopping rule held.
    polished : bool
        Whether the exact finishing stage (``fast_solver.polish``) improved ``M``.
    message : str
    timings : dict of str to float
        Seconds spent in ``search``, ``gradient``, ``steps``, ``polish``,
        ``objective`` and ``total``.
    history : list of float
        Working-set objective after every iteration.
    """

    M: np.ndarray
    L: np.ndarray
    objective: float
    objective_source: str
    n_iter: int
    n_full_checks: int
    search_fraction: float
    n_active: int
    working_set: np.ndarray
    converged: bool
    polished: bool
    message: str
    timings: dict = field(default_factory=dict)
    history: list = field(default_factory=list)

    def __repr__(self) -> str:
        return (
            f"FastLMNNResult(objective={self.objective:.10g}, converged={self.converged}, "
            f"polished={self.polished}, n_iter={self.n_iter}, n_full_checks={self.n_full_checks}, "
            f"search_fraction={self.search_fraction:.3g}, n_active={self.n_active}, working_set={len(self.working_set)} triplets, "
            f"rank={self.L.shape[0]}, time={self.timings.get('total', float('nan')):.3g} s, "
            f"message={self.message!r})"
        )
