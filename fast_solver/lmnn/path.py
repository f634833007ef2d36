"""A certified path over ``mu``: eq. 14 solved on a grid of push weights, warm-started.

``mu`` trades the pull term against the hinge (eq. 14), and the best ``mu`` for k-NN
classification is a property of the data, not of the objective; model selection picks it
from certified optima (``validation.model_selection``). Along the grid the data and the
target neighbours stay fixed and each solve (``fast_solver.solve``) starts from the metric
of the previous ``mu`` (rescaled by ``solve``'s best multiple, ``fast_solver.lmnn.start``), so a
path costs less than as many cold solves; every point of the path keeps its own
certificate, so the guarantee of a single solve holds at each ``mu``.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np

from fast_solver.lmnn.result import FastLMNNResult
from fast_solver.lmnn.solver import solve
from lmnn_sdp.core.problem import LMNNProblem


@dataclass(frozen=True, repr=False)
class CertifiedPath:
    """The certified optima of one problem (data, targets) at several ``mu``.

    Attributes
    ----------
    mus : ndarray of shape (m,)
        The push weights, in the order solved.
    results : tuple of FastLMNNResult
        The solve at each ``mu``, with its certificate.
    """

    mus: np.ndarray
    results: tuple

    @property
    def metrics(self) -> np.ndarray:
        """The learned metrics, shape (m, d, d)."""
        return np.stack([r.metric for r in self.results])

    @property
    def relative_gaps(self) -> np.ndarray:
        """Each solve's certified relative gap, shape (m,)."""
        return np.array([r.relative_gap for r in self.results])

    @property
    def certified(self) -> bool:
        """True when every point of the path proved its gap under its ``tol``."""
        return all(r.certified for r in self.results)

    def __repr__(self) -> str:
        return (f"CertifiedPath(mus={self.mus.tolist()}, certified={self.certified}, "
                f"max_relative_gap={self.relative_gaps.max():.3g})")


def certified_path(problem: LMNNProblem, mus, *, warm_start: bool = True,
                   **options) -> CertifiedPath:
    """Solve eq. 14 at each ``mu`` of ``mus`` with ``problem``'s data and targets.

    Parameters
    ----------
    problem : LMNNProblem
        Data, labels and target neighbours; its own ``mu`` is not used.
    mus : array-like of float in [0, 1], shape (m,)
        Distinct push weights, solved in the given order (a monotone grid makes neighbouring
        optima close, so the warm starts help most).
    warm_start : bool
        Start each solve from the previous metric (a zero metric, the optimum at
        ``mu = 0``, is no start: that solve starts cold); False solves each ``mu`` cold.
    **options
        Passed to ``fast_solver.solve`` (``tol``, ``max_iter``, ``band``, ``search``, ...).

    Returns
    -------
    CertifiedPath
    """
    if not isinstance(problem, LMNNProblem):
        raise TypeError(f"problem must be an LMNNProblem, got {type(problem).__name__}.")
    mus = check_mus(mus)
    if "M0" in options:
        raise TypeError("certified_path takes no M0: each solve starts from the previous metric "
                        "(warm_start=True) or cold; solve the first mu yourself to choose its start.")
    results: list[FastLMNNResult] = []
    for mu in mus:
        previous = results[-1].metric if warm_start and results else None
        start = previous if previous is not None and np.any(previous) else None
        at_mu = LMNNProblem(problem.X, problem.y, mu=float(mu), targets=problem.targets)
        results.append(solve(at_mu, start, **options))
    return CertifiedPath(mus=mus, results=tuple(results))


def check_mus(mus) -> np.ndarray:
    """``mus`` as a non-empty 1-D float array of distinct values in [0, 1], or a ValueError."""
    values = np.asarray(mus, dtype=object)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"mus must be a non-empty 1-D sequence of push weights in [0, 1], got {mus!r}.")
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, Real)
           or not 0.0 <= float(v) <= 1.0]
    if bad:
        raise ValueError(f"mus must hold numbers in [0, 1] (the weight of eq. 14's push term), "
                         f"got {bad[0]!r}.")
    values = values.astype(float)
    if len(np.unique(values)) < len(values):
        raise ValueError(f"mus has repeated values {values.tolist()}; give each mu once.")
    return values
