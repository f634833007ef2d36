"""Multi-pass LMNN (sec. 5.1): target neighbours re-estimated under the learned metric.

Pass 1 solves eq. 14 on the inputs. Pass ``p + 1`` maps the inputs by the composed
transformation ``L_p ... L_1`` (``L_0 = I``), takes as targets the ``k`` nearest
same-class points there (Euclidean, ties to the smaller index), solves eq. 14 on the
mapped inputs with those targets, and composes its ``L`` in front. Every pass is a
certified solve of its own problem (``fast_solver.solve``). The passes stop after
``max_passes``, or with ``stop="targets"`` as soon as the targets repeat (the next
pass would solve the problem just solved).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from fast_solver.estimators import LinearMetricTransformer, labelled_problem, warn_unless_converged
from fast_solver.impostors import SEARCH_METHODS
from fast_solver.result import FastLMNNResult
from fast_solver.solver import solve
from lmnn_sdp.core.problem import LMNNProblem, nearest_same_class

STOP_RULES = ("targets", "passes")


@dataclass(frozen=True, repr=False)
class MultiPassResult:
    """The passes of one multi-pass solve (sec. 5.1).

    Attributes
    ----------
    components : ndarray of shape (d, d)
        The composed transformation ``L_p ... L_1``.
    passes : tuple of FastLMNNResult
        Each pass's certified solve, on the inputs mapped by the passes before it.
    targets : tuple of ndarray of int, shape (n, k)
        The target neighbours of each pass.
    message : str
        Why the passes stopped.
    timings : dict of str to float
    """

    components: np.ndarray
    passes: tuple
    targets: tuple
    message: str
    timings: dict = field(default_factory=dict)

    @property
    def metric(self) -> np.ndarray:
        """``M = L^T L`` (d, d) of the composed transformation."""
        return self.components.T @ self.components

    @property
    def n_passes(self) -> int:
        return len(self.passes)

    @property
    def converged(self) -> bool:
        """Every pass certified its own optimum."""
        return all(p.converged for p in self.passes)

    @property
    def n_iter(self) -> int:
        return sum(p.n_iter for p in self.passes)

    @property
    def relative_gap(self) -> float:
        """The largest certified gap of the passes."""
        return max(p.relative_gap for p in self.passes)

    def __repr__(self) -> str:
        gaps = ", ".join(f"{p.relative_gap:.2g}" for p in self.passes)
        return (f"MultiPassResult(passes={self.n_passes}, gaps=[{gaps}], converged={self.converged}, "
                f"time={self.timings.get('total', float('nan')):.3g} s, message={self.message!r})")


def solve_multipass(problem: LMNNProblem, *, max_passes: int = 5, stop: str = "targets",
                    **options) -> MultiPassResult:
    """Multi-pass LMNN on ``problem`` (module docstring); ``options`` go to every
    ``fast_solver.solve`` (``tol``, ``max_iter``, ``search``, ...)."""
    if isinstance(max_passes, bool) or not isinstance(max_passes, Integral) or max_passes < 1:
        raise ValueError(f"max_passes must be an integer >= 1, got {max_passes!r}.")
    if stop not in STOP_RULES:
        raise ValueError(f"stop must be one of {STOP_RULES}, got {stop!r}.")
    start = time.perf_counter()
    L, targets = np.eye(problem.n_features), problem.targets
    passes, used = [], []
    message = f"max_passes={max_passes} passes run"
    for p in range(max_passes):
        mapped = problem.X @ L.T
        if p:
            new = nearest_same_class(mapped, problem.label_codes, problem.k)
            if stop == "targets" and np.array_equal(new, targets):
                message = f"the targets of pass {p + 1} equal those of pass {p}"
                break
            targets = new
        result: FastLMNNResult = solve(LMNNProblem(mapped, problem.y, mu=problem.mu, targets=targets),
                                       **options)
        passes.append(result)
        used.append(targets)
        L = result.components @ L
        if not L.any():
            message = f"pass {p + 1} learned the zero metric (mu = {problem.mu}), so no targets follow"
            break
    return MultiPassResult(components=L, passes=tuple(passes), targets=tuple(used), message=message,
                           timings={"total": time.perf_counter() - start})


class MultiPassLMNN(LinearMetricTransformer, BaseEstimator):
    """Multi-pass LMNN (Weinberger & Saul, JMLR 2009, sec. 5.1).

    Parameters
    ----------
    k : int, default=3
    mu : float in [0, 1], default=0.5
    max_passes : int, default=5
        Largest number of passes.
    stop : {"targets", "passes"}, default="targets"
        Stop when the targets repeat, or run ``max_passes`` passes.
    max_iter : int, default=1000
        Newton iterations of each pass.
    tol : float, default=1e-6
        Certified relative gap of each pass.
    search : {"auto", "blockwise", "balltree"}, default="auto"

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
        The composed ``L``; ``transform(X) = X @ components_.T``.
    metric_ : ndarray of shape (n_features, n_features)
    n_passes_ : int
    n_iter_ : int
        Newton iterations over all passes.
    converged_ : bool
        Every pass certified.
    result_ : MultiPassResult
    n_features_in_ : int
    """

    _parameter_constraints: dict = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(Real, 0, 1, closed="both")],
        "max_passes": [Interval(Integral, 1, None, closed="left")],
        "stop": [StrOptions(set(STOP_RULES))],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "search": [StrOptions(set(SEARCH_METHODS))],
    }

    def __init__(self, k=3, mu=0.5, max_passes=5, stop="targets", max_iter=1000, tol=1e-6,
                 search="auto"):
        self.k = k
        self.mu = mu
        self.max_passes = max_passes
        self.stop = stop
        self.max_iter = max_iter
        self.tol = tol
        self.search = search

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the composed transformation from ``X`` (n_samples, n_features) and ``y``."""
        result = solve_multipass(labelled_problem(self, X, y), max_passes=self.max_passes,
                                 stop=self.stop, max_iter=self.max_iter, tol=self.tol,
                                 search=self.search)
        self.components_, self.metric_ = result.components, result.metric
        self.n_passes_, self.n_iter_ = result.n_passes, result.n_iter
        self.converged_, self.result_ = result.converged, result
        warn_unless_converged(self, result)
        return self
