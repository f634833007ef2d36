"""scikit-learn estimator for LMNN, a thin shell over ``fast_solver.solve``."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from fast_solver._base import CHECKPOINT_PARAMETERS, LinearMetricTransformer, ProgressTable, labelled_inputs
from fast_solver.lmnn.impostors import SEARCH_METHODS
from fast_solver.lmnn.solver import solve
from lmnn_sdp.core.checks import check_max_iter, check_real_dtype, check_tol
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.status import STALLED


class LMNN(LinearMetricTransformer, BaseEstimator):
    """Large Margin Nearest Neighbor metric learning with a certified stop.

    Minimises the LMNN objective, eq. 14 of Weinberger & Saul (JMLR 2009), over
    positive semidefinite metrics ``M`` with the smoothed-hinge solver ``solve``
    (in place of the paper's Appendix A sub-gradient method) and says converged
    only when its own dual bound proves the relative gap below ``tol``.
    ``transform`` maps ``x`` to ``L x`` with ``L^T L = M``.

    Parameters
    ----------
    k : int, default=3
        Target neighbours per point (nearest same-class points, Euclidean).
    mu : float in [0, 1], default=0.5
        Weight of the push term; the pull term has ``1 - mu``.
    max_iter : int >= 1, default=1000
        Budget of iterations.
    tol : float >= 0, default=1e-6
        Certified relative gap ``(upper - lower) / upper`` at which to stop.
    init : {"auto", "identity", "random"} or ndarray of shape (n_features, n_features), default="auto"
        Starting metric: the solver's default (``solve`` with ``M0=None``: the
        Euclidean metric on the principal directions that hold all but 3% of the
        variance, at least 32 of them, or all when that leaves out fewer than a quarter), the
        Euclidean metric, a random PSD matrix drawn with ``random_state``, or a given
        PSD matrix; each is first scaled by its best multiple (``fast_solver.lmnn.start``).
    search : {"auto", "blockwise", "balltree"}, default="auto"
        Impostor-search path (``fast_solver.lmnn.impostors``).
    verbose : int, default=0
        If positive, print a progress table with one row per continuation
        stage (smoothing width, iterations, upper and lower bounds,
        gap, active triplets, seconds).
    random_state : int, RandomState instance or None, default=None
        Seeds ``init="random"``; the solver itself is deterministic.
    checkpoint : str, path-like or None, default=None
        File that keeps the fit's state (``solve``'s ``checkpoint``): a fit killed at any
        point and run again with the same path resumes from the state saved last and ends
        bit-for-bit as an uninterrupted fit; run again after the end, it returns the same
        result at once. With ``init="random"``, ``random_state`` must be an int.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every restart point.

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
        ``L`` with ``L^T L = metric_``, rows ordered by decreasing eigenvalue.
    metric_ : ndarray of shape (n_features, n_features)
        The learned PSD matrix ``M``.
    objective_ : float
        eps(M) of eq. 14 at ``metric_`` (the certificate's upper bound).
    lower_bound_ : float
        A rigorous lower bound on the optimum of eq. 14.
    n_iter_ : int
        iterations run.
    converged_ : bool
        Whether the certified gap reached ``tol``.
    result_ : FastLMNNResult
        Everything the solver returned (certificate, stages, timings, ...).
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    solve : The solver behind ``fit``, on an ``LMNNProblem``.
    MultiPassLMNN : Targets re-chosen under the learned metric (sec. 5.1).
    MultiMetricLMNN : One metric per class or cluster (sec. 5.2).
    LMCA : Low-rank LMNN (sec. 5.4), not certified.
    EnergyClassifier : Classification by energy (eq. 15) over a fitted metric.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import LMNN
    >>> X, y = load_iris(return_X_y=True)
    >>> X, y = X[::5], y[::5]  # 10 points of each class
    >>> lmnn = LMNN(k=3).fit(X, y)
    >>> lmnn.converged_
    True
    >>> lmnn.transform(X).shape
    (30, 4)
    >>> bool(lmnn.lower_bound_ <= lmnn.objective_)
    True
    >>> round(lmnn.objective_, 1)
    14.7
    """

    _parameter_constraints: dict = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(Real, 0, 1, closed="both")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "init": [StrOptions({"auto", "identity", "random"}), np.ndarray],
        "search": [StrOptions(set(SEARCH_METHODS))],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        **CHECKPOINT_PARAMETERS,
    }

    def __init__(self, k=3, mu=0.5, max_iter=1000, tol=1e-6, init="auto", search="auto",
                 verbose=0, random_state=None, checkpoint=None, checkpoint_interval=60.0):
        self.k = k
        self.mu = mu
        self.max_iter = max_iter
        self.tol = tol
        self.init = init
        self.search = search
        self.verbose = verbose
        self.random_state = random_state
        self.checkpoint = checkpoint
        self.checkpoint_interval = checkpoint_interval

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the metric of eq. 14 from labelled inputs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real inputs (booleans count as 0/1).
        y : array-like of shape (n_samples,)
            Class labels, at least two classes, each with at least ``k + 1`` points.

        Returns
        -------
        self : LMNN
            The fitted estimator.

        Raises
        ------
        TypeError
            If ``tol`` is not a real number or ``max_iter`` not an integer, ``True`` included
            (scikit-learn's ``Interval`` admits booleans; ``lmnn_sdp.core.checks``).
        NonRealInputError
            If ``X`` holds complex numbers, text or dates (a TypeError and a ValueError).
        ValueError
            If ``y`` has one class, or a class has ``k`` points or fewer, or ``checkpoint``
            is given with ``init="random"`` and a ``random_state`` that is not an int.
        CheckpointError
            If the ``checkpoint`` file is damaged or of another fit (a ValueError).

        Warns
        -----
        ConvergenceWarning
            If ``max_iter`` iterations end before the certified gap reaches ``tol``, or
            at ``mu = 1`` (push only) when the objective stops falling above 0, where no
            certificate can follow (the message says why).

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import LMNN
        >>> X, y = load_iris(return_X_y=True)
        >>> lmnn = LMNN(k=2).fit(X[::5], y[::5])
        >>> lmnn.metric_.shape, lmnn.converged_
        ((4, 4), True)
        """
        check_tol(self.tol)  # the library's rules, which refuse True as scikit-learn's Interval does not
        check_max_iter(self.max_iter)
        problem = labelled_problem(self, X, y)
        result = solve(problem, self._initial_metric(problem.n_features), max_iter=self.max_iter,
                       tol=self.tol, search=self.search, callback=stage_table() if self.verbose else None,
                       checkpoint=self.checkpoint, checkpoint_interval=self.checkpoint_interval)
        self.components_ = result.components
        self.metric_ = result.metric
        self.objective_ = result.upper
        self.lower_bound_ = result.lower
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.result_ = result
        warn_unless_converged(self, result)
        return self

    def _initial_metric(self, d: int) -> np.ndarray | None:
        if isinstance(self.init, np.ndarray):
            check_real_dtype(self.init.dtype, "init")
            if self.init.shape != (d, d):
                raise ValueError(f"init must have shape ({d}, {d}) to match X, got {self.init.shape}.")
            return self.init
        if self.init == "random":
            seeded(self, "init='random'")
            A = check_random_state(self.random_state).standard_normal((d, d))
            return A @ A.T / d
        return np.eye(d) if self.init == "identity" else None


def labelled_problem(estimator: BaseEstimator, X, y) -> LMNNProblem:
    """The checked ``LMNNProblem`` of ``fit(X, y)`` with the estimator's ``k`` and ``mu``
    (``labelled_inputs``, at least two classes)."""
    X, y = labelled_inputs(estimator, X, y)
    n_classes = len(np.unique(y))
    if n_classes < 2:
        raise ValueError(f"LMNN needs at least two classes, got {n_classes} class; "
                         "impostors are points of another class.")
    return LMNNProblem(X, y, k=estimator.k, mu=estimator.mu)


def seeded(estimator: BaseEstimator, what: str) -> None:
    """Refuse a ``checkpoint`` when ``what`` is drawn with a ``random_state`` that is not an
    int: a fit run again would draw anew, so its checkpoint would be of other inputs."""
    if estimator.checkpoint is not None and not isinstance(estimator.random_state, Integral):
        raise ValueError(f"checkpoint with {what} needs random_state=<int>, got {estimator.random_state!r}: "
                         "a resumed fit must draw the same start as the fit it resumes.")


def warn_unless_converged(estimator: BaseEstimator, result, where: str = "") -> None:
    """A ConvergenceWarning when ``result``'s certified gap is above ``tol``; ``where``
    (e.g. " in 1 of 3 passes (pass 2: 0.01)") names the solves that did not converge. At
    ``mu = 1`` a solve that stalled says why (``result.message``: push only), not to raise
    ``max_iter``."""
    if not result.converged and result.status == STALLED and estimator.mu == 1.0:
        warnings.warn(f"[{type(estimator).__name__}] LMNN did not converge{where} after {result.n_iter} Newton "
                      f"iterations, and more would not help: {result.message.removeprefix('not converged: ')}",
                      ConvergenceWarning)
    elif not result.converged:
        warnings.warn(f"[{type(estimator).__name__}] LMNN did not converge{where}: the certified gap "
                      f"{result.relative_gap:.3g} is above tol={estimator.tol:g} after {result.n_iter} "
                      "iterations; raise max_iter.", ConvergenceWarning)


def stage_table(name: str = "LMNN"):
    """The ``verbose`` callback of an LMNN fit: one row per continuation ``Stage``."""
    table = ProgressTable(name, [("Stage", 6, "d"), ("Gamma", 9, ".2e"), ("Newton", 7, "d"),
                                 ("Upper", 16, ".9e"), ("Lower", 16, ".9e"), ("Gap", 9, ".2e"),
                                 ("Active", 9, "d"), ("Time(s)", 9, ".2f")])
    return lambda s: table.row(s.stage, s.gamma, s.newton_iterations, s.upper, s.lower,
                               s.relative_gap, s.n_active, s.elapsed)
