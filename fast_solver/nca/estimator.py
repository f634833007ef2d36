"""scikit-learn estimator for NCA, a thin shell over ``fast_solver.nca.objective.minimize_nca``."""

from __future__ import annotations

import sys
import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from fast_solver._base import CHECKPOINT_PARAMETERS, LinearMetricTransformer, labelled_inputs
from fast_solver.nca.objective import INITS, OBJECTIVES, WORKING_MEMORY, check_map, initial_components, minimize_nca
from lmnn_sdp.core.checks import check_max_iter, check_tol
from lmnn_sdp.status import MAX_ITER


class NCA(ClassNamePrefixFeaturesOutMixin, LinearMetricTransformer, BaseEstimator):
    """Neighbourhood Components Analysis with memory bounded in the number of points.

    Implements Goldberger, Roweis, Hinton & Salakhutdinov (NIPS 2004). Maximises the expected number of correctly classified points ``f(A)`` (eq. 3) or
    ``g(A) = sum_i log p_i`` (eq. 6) over ``A`` (n_components, n_features) with
    L-BFGS-B; parameters named as scikit-learn's ``NeighborhoodComponentsAnalysis``.
    Distances are computed in blocks of rows within ``working_memory`` MiB, never the
    n x n matrix at once (``fast_solver.nca.objective``).

    It behaves as scikit-learn's NCA where a user would notice. Labels of a single class
    are fitted: every point's neighbours are then all of its class, ``f`` and ``g`` are
    constant (``n`` and 0) and their gradient is zero, so ``components_`` is the starting
    map (the identity for ``init="identity"``) and ``n_iter_`` is 0. A fit that stops
    without converging raises a ``ConvergenceWarning`` only when ``verbose`` is positive,
    as scikit-learn's does; with ``verbose=0`` it is silent, and ``n_iter_ == max_iter``
    tells that the budget ran out. Invalid parameters raise scikit-learn's
    ``InvalidParameterError`` (a ``ValueError`` and ``TypeError``) from the same
    constraints as scikit-learn's NCA.

    Parameters
    ----------
    n_components : int, default=None
        Rows of ``A``, at most n_features; ``None`` means n_features.
    init : {"auto", "pca", "lda", "identity", "random"} or ndarray, default="auto"
        Starting ``A`` (``fast_solver.nca.objective.initial_components``), or an array of shape
        (n_components, n_features): "auto" picks "lda" when
        ``n_components <= n_classes - 1``, else "pca" when ``n_components`` is below
        ``min(n_features, n_samples)``, else "identity".
    warm_start : bool, default=False
        Start from the ``components_`` of the previous ``fit`` when there is one.
    max_iter : int >= 1, default=50
        L-BFGS-B iterations.
    tol : float >= 0, default=1e-5
        L-BFGS-B's tolerance (scipy's ``minimize(tol=...)``).
    callback : callable, default=None
        ``callback(A.ravel(), n_iter)`` after each iteration, ``n_iter`` counted from 1 (a resumed
        fit continues the count).
    verbose : int, default=0
        If positive, print one row per iteration (objective and seconds) and warn when
        L-BFGS-B stops without converging.
    random_state : int, RandomState instance or None, default=None
        Seeds ``init="random"`` and ``"pca"``.
    objective : {"f", "g"}, default="f"
        Eq. 3 (scikit-learn's objective) or eq. 6 (needs two points in every class).
    working_memory : float, default=64
        MiB for the blocks of distances (at least one row a block).
    checkpoint : str, path-like or None, default=None
        A file where ``fit`` saves L-BFGS-B's state at most every ``checkpoint_interval``
        seconds and when it ends (``minimize_nca``): a ``fit`` of the same data and parameters
        with the same path resumes from it and ends with the ``components_``, ``objective_``
        and ``n_iter_`` of an uninterrupted fit, bit for bit; one that has ended returns at
        once. The starting map is part of what the file was written for, so ``init="random"``
        (and ``"pca"`` where its solver is randomised) needs a fixed ``random_state`` to
        resume. A damaged or foreign file is refused (``fast_solver.checkpoint.CheckpointError``).
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every iteration.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The learned ``A``; ``transform(X) = X @ components_.T``.
    objective_ : float
        ``f`` or ``g`` at ``components_``.
    n_iter_ : int
        L-BFGS-B iterations run.
    random_state_ : numpy.random.RandomState
        The generator that seeded the start, ``check_random_state(random_state)``.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    minimize_nca : The function behind ``fit``.
    nca_objective : ``f`` or ``g`` and its gradient at a given ``A``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import NCA
    >>> X, y = load_iris(return_X_y=True)
    >>> X, y = X[::5], y[::5]  # 10 points of each class
    >>> nca = NCA(n_components=2, random_state=0).fit(X, y)
    >>> nca.components_.shape, nca.transform(X).shape
    ((2, 4), (30, 2))
    >>> round(nca.objective_)  # f: expected correctly classified points, of 30
    30
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "init": [StrOptions(set(INITS)), np.ndarray],
        "warm_start": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "callback": [callable, None],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "objective": [StrOptions(set(OBJECTIVES))],
        "working_memory": [Interval(Real, 0, None, closed="neither")],
        **CHECKPOINT_PARAMETERS,
    }

    def __init__(self, n_components=None, *, init="auto", warm_start=False, max_iter=50, tol=1e-5,
                 callback=None, verbose=0, random_state=None, objective="f",
                 working_memory=WORKING_MEMORY, checkpoint=None, checkpoint_interval=60.0):
        self.n_components = n_components
        self.init = init
        self.warm_start = warm_start
        self.max_iter = max_iter
        self.tol = tol
        self.callback = callback
        self.verbose = verbose
        self.random_state = random_state
        self.objective = objective
        self.working_memory = working_memory
        self.checkpoint = checkpoint
        self.checkpoint_interval = checkpoint_interval

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the map ``A`` maximising ``f`` (eq. 3) or ``g`` (eq. 6).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real training inputs.
        y : array-like of shape (n_samples,)
            Class labels; for ``objective="g"`` at least two points in every class. A
            single class is fitted by the starting map (its objective is constant).

        Returns
        -------
        self : NCA
            The fitted estimator.

        Raises
        ------
        TypeError
            If ``tol`` is not a real number or ``max_iter`` not an integer, ``True`` included
            (scikit-learn's ``Interval`` admits booleans; ``lmnn_sdp.core.checks``).
        ValueError
            If ``n_components`` exceeds ``n_features``, ``init`` does not fit ``X``,
            ``init="lda"`` meets a single class, or ``objective="g"`` meets a class of
            one point.

        Warns
        -----
        ConvergenceWarning
            If ``verbose`` is positive and L-BFGS-B stops without success (e.g. after
            ``max_iter`` iterations).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import NCA
        >>> X, y = load_iris(return_X_y=True)
        >>> nca = NCA(init="identity", objective="g").fit(X[::5], y[::5])
        >>> nca.components_.shape
        (4, 4)
        >>> nca.objective_ <= 0  # g = sum_i log p_i
        True
        >>> one_class = NCA(init="identity").fit(X[:50], y[:50])  # scikit-learn's behaviour
        >>> bool((one_class.components_ == np.eye(4)).all()), one_class.n_iter_
        (True, 0)
        """
        check_tol(self.tol)  # the library's rules, which refuse True as scikit-learn's Interval does not
        check_max_iter(self.max_iter)
        previous = getattr(self, "components_", None) if self.warm_start else None
        X, y = labelled_inputs(self, X, y)
        self.random_state_ = check_random_state(self.random_state)
        start = self._start(X, y, previous)
        if len(np.unique(y)) == 1:  # every p_i = 1: f = n, g = 0, gradient 0 at every A
            self.components_ = np.array(start, dtype=float)
            self.objective_ = float(len(y)) if self.objective == "f" else 0.0
            self.n_iter_ = 0
            return self
        result = minimize_nca(X, y, start, objective=self.objective,
                              max_iter=self.max_iter, tol=self.tol, callback=self._each_iteration(),
                              working_memory=self.working_memory, checkpoint=self.checkpoint,
                              checkpoint_interval=self.checkpoint_interval)
        self.components_ = result.components
        self.objective_ = result.objective
        self.n_iter_ = int(result.nit)
        if self.verbose and not result.converged:  # scikit-learn's NCA warns only when verbose
            advice = "; raise max_iter" if result.status == MAX_ITER else ""
            name = type(self).__name__
            warnings.warn(f"[{name}] NCA did not converge after {result.nit} iterations: "
                          f"{result.lbfgsb_message}{advice}.", ConvergenceWarning)
        return self

    @property
    def _n_features_out(self) -> int:
        return self.components_.shape[0]

    def _start(self, X: np.ndarray, y: np.ndarray, previous) -> np.ndarray:
        """The starting ``A`` (n_components, n_features), checked against ``X``."""
        d = X.shape[1]
        if self.n_components is not None and self.n_components > d:
            raise ValueError(f"n_components={self.n_components} is larger than the {d} features of X; "
                             f"pass n_components <= {d}.")
        if previous is not None:
            if previous.shape[1] != d:
                raise ValueError(f"warm_start: X has {d} features but the previous fit had "
                                 f"{previous.shape[1]}; pass warm_start=False to start afresh.")
            return previous
        if not isinstance(self.init, np.ndarray):
            return initial_components(X, y, self.n_components or d, self.init, self.random_state_)
        A = check_map(self.init, d, "init")
        if A.shape[0] > d:
            raise ValueError(f"init has {A.shape[0]} rows, more than the {d} features of X; NCA maps "
                             f"to at most {d} dimensions: pass an init with at most {d} rows.")
        if self.n_components not in (None, A.shape[0]):
            raise ValueError(f"init has {A.shape[0]} rows but n_components={self.n_components}; "
                             "make them agree (or leave n_components=None).")
        return A

    def _each_iteration(self):
        """The optimiser's callback: the user's ``callback`` and the ``verbose`` table."""
        started = time.perf_counter()
        if self.verbose:
            header = f"{'Iteration':>10} {'Objective ' + self.objective:>20} {'Time(s)':>10}"
            print(f"[NCA]\n[NCA] {header}\n[NCA] {'-' * len(header)}", file=sys.stdout)

        def each(A: np.ndarray, value: float, n_iter: int) -> None:
            if self.verbose:
                print(f"[NCA] {n_iter:>10d} {value:>20.6e} {time.perf_counter() - started:>10.2f}",
                      file=sys.stdout)
            if self.callback is not None:
                self.callback(A.ravel(), n_iter)

        return each
