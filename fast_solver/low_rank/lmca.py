"""Low-rank LMNN / Large Margin Component Analysis: eq. 14 over a rectangular ``L``.

JMLR 2009, sec. 5.4 and Torresani & Lee (NIPS 2006), eq. 1-2: minimise eq. 14
with ``D(x_i, x_j) = |L (x_i - x_j)|^2`` over ``L`` of shape (r, d), ``r <= d``,
so ``M = L^T L`` has rank at most ``r``. The embedding is ``Z = X_c L^T`` (n, r)
and the gradient ``dF/dL = (dF/dZ)^T X_c`` (eq. 2; ``fast_solver.low_rank.embedding_loss``),
minimised by ``fast_solver.low_rank.solver`` (L-BFGS on an exact working set, the smooth
hinge or continuation to eq. 14's linear hinge) in coordinates where the pull
matrix is the identity (``pull_whitening``).

The problem is not convex in ``L``, but every rank's optimum is at least the
full-rank optimum, and ``fast_solver.solve`` proves a lower bound ``lower_full``
on that: ``price_of_rank`` reports ``(eps(L^T L) - lower_full) / lower_full`` for
each fit, an upper bound on what the rank (and the local search) costs.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, _fit_context
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from threadpoolctl import threadpool_limits

from fast_solver._base import CHECKPOINT_PARAMETERS, LinearMetricTransformer, ProgressTable
from fast_solver.lmnn.estimator import labelled_problem
from fast_solver.lmnn.impostors import cross_product, map_rows
from fast_solver.lmnn.result import FastLMNNResult
from fast_solver.lmnn.solver import solve
from fast_solver.low_rank.embedding_loss import embedding_loss
from fast_solver.low_rank.solver import HINGES, LMCAResult, low_rank_checkpoint, minimise, start_scale
from lmnn_sdp.core.checks import check_max_iter, check_real_dtype, check_tol
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import data_range, pull_matrices, units_space

INITS = ("auto", "pca", "lda", "identity", "random")
PULL_FLOOR = 1e-6


def solve_lmca(
    problem: LMNNProblem,
    n_components: int | None = None,
    *,
    init="pca",
    hinge: str = "linear",
    tol: float = 1e-5,
    max_iter: int = 1000,
    random_state=None,
    callback=None,
    report=None,
    checkpoint=None,
    checkpoint_interval: float = 60.0,
) -> LMCAResult:
    """Minimise the LMNN objective over a rectangular linear map (LMCA).

    Low-rank LMNN (Weinberger & Saul, JMLR 2009, sec. 5.4) and Large Margin
    Component Analysis (Torresani & Lee, NIPS 2006, eq. 1-2): eq. 14 with
    ``D(x_i, x_j) = |L (x_i - x_j)|^2`` over ``L`` of shape (n_components, d), by
    L-BFGS on an exact working set (module docstring). Not convex: the answer is a
    stationary point, not certified; ``price_of_rank`` bounds what it costs.

    Parameters
    ----------
    problem : LMNNProblem
        Inputs, labels, target neighbours and ``mu``.
    n_components : int, optional
        Rows of ``L``, at most ``d``; default ``d``.
    init : {"pca", "lda", "identity", "random", "auto"} or ndarray of shape (n_components, d), default="pca"
        ``initial_map``; the paper starts at PCA; "auto" is scikit-learn NCA's choice.
    hinge : {"linear", "smooth"}, default="linear"
        eq. 14's hinge (by continuation) or the paper's smooth hinge.
    tol : float >= 0, default=1e-5
        L-BFGS stops when the objective falls by at most ``tol`` (relative) over 10
        iterations; also the continuation's tolerance.
    max_iter : int >= 1, default=1000
        Budget of L-BFGS iterations over all stages.
    random_state : int, RandomState instance or None, default=None
        Seeds ``init="random"``.
    callback : callable, optional
        ``callback(L, n_iter)`` after every L-BFGS iteration.
    report : callable, optional
        Called with a ``LowRankStage`` after every smoothing stage.
    checkpoint : str or path-like, optional
        File in which the fit saves its state (``fast_solver.checkpoint``: the map, the
        working set, the smoothing stage, the best stage answer and the counters) whenever
        L-BFGS starts afresh on a renewed working set, at most every ``checkpoint_interval``
        seconds, and its result at the end. The same call with the same path resumes from
        the state saved last and ends with the result of an uninterrupted fit, bit for bit
        with the same thread settings (``components``, ``objective``, ``n_iter`` and the other
        counters; not ``timings``); when the file holds a finished fit its result is returned
        at once. A file written for other inputs or options (another ``init``, or for
        ``init="random"`` another seed; the start is named by ``init`` and the seed, not by its
        computed numbers), or damaged, raises ``CheckpointError``.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every restart point.

    Returns
    -------
    result : LMCAResult
        ``components`` is ``L`` (n_components, d); ``embedding`` is ``X_c L^T``
        (n, n_components); ``objective`` is eq. 14 at ``L``.

    Raises
    ------
    ValueError
        If ``n_components``, ``init`` or ``hinge`` is invalid, ``tol`` or ``max_iter`` out of
        its range, or the starting map sends every point to the same point.
    TypeError
        If ``tol`` is not a real number or ``max_iter`` not an integer (``True``, ``"0.5"``,
        ``max_iter=1.5``; ``lmnn_sdp.core.checks``).
    CheckpointError
        If ``checkpoint`` is damaged or was written by another fit.

    See Also
    --------
    LMCA : The scikit-learn estimator over this function.
    price_of_rank : How far each fit can be from the full-rank optimum.
    solve_kernel_lmca : The kernel version.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> from fast_solver import solve_lmca
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=3)
    >>> result = solve_lmca(problem, n_components=2)
    >>> result.components.shape, result.embedding.shape
    ((2, 4), (30, 2))
    >>> result.status != "max_iter"  # L-BFGS stopped by tol, not by the budget
    True
    """
    check_tol(tol)
    check_max_iter(max_iter)
    with threadpool_limits(1, user_api="blas"):  # the start too: the same bits on any BLAS threads
        L0 = initial_map(problem, n_components, init, random_state)
        saved = low_rank_checkpoint(checkpoint, checkpoint_interval, "lmca", problem, L0, init, random_state,
                                    hinge=hinge, tol=tol, max_iter=max_iter)
        T, T_inverse = pull_whitening(problem)
        Xw = problem.X_centered @ T
        mapped = None if callback is None else (lambda A, n_iter: callback(A @ T.T, n_iter))
        result = minimise(problem, L0 @ T_inverse.T, lambda A: map_rows(Xw, A), lambda dZ: cross_product(dZ, Xw),
                          hinge=hinge, tol=tol, max_iter=max_iter, callback=mapped, report=report, checkpoint=saved)
    return dataclasses.replace(result, components=result.components @ T.T)


def pull_whitening(problem: LMNNProblem) -> tuple[np.ndarray, np.ndarray]:
    """``(T (d, m), T^+ (m, d))``: coordinates ``X_c T`` of the data range (rank ``m``) in which
    the pull matrix is the identity; L-BFGS runs on ``A = L T^{+T}`` (``L = A T^T``), so its
    steps do not depend on the units of the features (docs/design/low-rank.md, "Pull whitening").

    Unlike ``lmnn_sdp.core.whitening``, which drops the null space of a singular pull matrix
    (the full-rank solver pushes it out at no cost afterwards), its eigenvalues are raised to
    ``PULL_FLOOR`` times the largest: a low-rank map may need those directions."""
    V = data_range(problem)
    P = pull_matrices(problem, units_space(problem))[0]
    w, U = np.linalg.eigh(P)
    w = np.maximum(w, PULL_FLOOR * w[-1]) if w[-1] > 0 else np.ones_like(w)
    return V @ (U / np.sqrt(w)), (U * np.sqrt(w)).T @ V.T


def initial_map(problem: LMNNProblem, n_components: int | None, init, random_state=None) -> np.ndarray:
    """``L`` (n_components, d) to start from.

    ``"pca"``: the leading principal directions of the centred inputs; ``"lda"``: the
    leading discriminant directions (scikit-learn's eigen solver with Ledoit-Wolf
    shrinkage, so singular within-class scatter is fine; beyond ``n_classes - 1`` rows
    its remaining eigenvectors); ``"identity"``: the first ``n_components`` rows of
    ``I_d``; ``"random"``: standard normal entries; ``"auto"``: scikit-learn NCA's choice
    (``auto_init``). Each is scaled by the best multiple
    (``fast_solver.low_rank.solver.start_scale``). An array is used as given."""
    d = problem.n_features
    r = check_n_components(n_components, d)
    if isinstance(init, np.ndarray):
        return check_init_array(init, (r, d))
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS} or an array of shape ({r}, {d}), got {init!r}.")
    if init == "auto":
        init = auto_init(r, d, problem.n_samples, len(problem.classes))
    Xc = problem.X_centered
    if init == "pca":
        _, V = np.linalg.eigh(Xc.T @ Xc)
        L = V[:, ::-1][:, :r].T
    elif init == "lda":
        lda = LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(problem.X, problem.y)
        L = lda.scalings_[:, :r].T
    elif init == "identity":
        L = np.eye(r, d)
    else:
        L = check_random_state(random_state).standard_normal((r, d))
    return start_scale(problem, Xc @ L.T) * L


def auto_init(n_components: int, n_features: int, n_samples: int, n_classes: int) -> str:
    """scikit-learn NCA's ``init="auto"``: ``"lda"`` when ``n_components <= min(n_features,
    n_classes - 1)``, else ``"pca"`` when ``n_components < min(n_features, n_samples)``, else
    ``"identity"``."""
    if n_components <= min(n_features, n_classes - 1):
        return "lda"
    return "pca" if n_components < min(n_features, n_samples) else "identity"


def lmca_loss(problem: LMNNProblem, L, width: float = 0.0) -> tuple[float, np.ndarray]:
    """eq. 14 (``width = 0``) or its hinge smoothed over ``width`` (1: the LMCA paper's
    smooth hinge) over all triplets at ``L`` (r, d), and its gradient in ``L`` (eq. 2),
    shape (r, d)."""
    L = check_init_array(np.asarray(L, dtype=float), (len(L), problem.n_features), "L")
    Xc = problem.X_centered
    ev = embedding_loss(Xc @ L.T, problem.targets, problem.label_codes, problem.mu, width)
    return ev.value, ev.gradient.T @ Xc


def price_of_rank(problem: LMNNProblem, results: Sequence[LMCAResult], *,
                  full_rank: FastLMNNResult | None = None, tol: float = 1e-4,
                  max_iter: int = 1000) -> tuple[list[LMCAResult], FastLMNNResult]:
    """Bound how much the rank and the local search cost each low-rank fit.

    Low-rank LMNN (Weinberger & Saul, JMLR 2009, sec. 5.4) is not convex, but its
    optimum at every rank is at least the full-rank optimum of eq. 14, which
    ``solve`` bounds from below by a certified ``lower_full``. Each result gets
    ``price_of_rank = (eps(L^T L) - lower_full) / lower_full``: ``>= 0`` (up to
    rounding), an upper bound on the relative distance of the fit from the
    full-rank optimum; 0 says the rank cost nothing. When ``lower_full = 0`` the
    price is 0 for a zero objective and infinite otherwise.

    Parameters
    ----------
    problem : LMNNProblem
        The problem the results were fitted on.
    results : sequence of LMCAResult
        LMCA fits of ``problem`` (``components`` of shape (r, d)).
    full_rank : FastLMNNResult, optional
        A certified full-rank solve of ``problem``; by default ``solve`` runs once.
    tol : float >= 0, default=1e-4
        Certified relative gap of that solve.
    max_iter : int >= 1, default=1000
        Newton iterations of that solve.

    Returns
    -------
    priced : list of LMCAResult
        Copies of ``results`` with ``price_of_rank`` set.
    full_rank : FastLMNNResult
        The full-rank solve that gave ``lower_full``.

    Raises
    ------
    ValueError
        If a result's components do not have ``d`` columns (kernel LMCA results), or ``tol``
        or ``max_iter`` is out of its range (checked also when ``full_rank`` is given).
    TypeError
        If ``tol`` is not a real number or ``max_iter`` not an integer (``True``, ``"0.5"``,
        ``max_iter=1.5``; ``lmnn_sdp.core.checks``).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> from fast_solver import price_of_rank, solve_lmca
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=3)
    >>> fits = [solve_lmca(problem, n_components=r) for r in (1, 2)]
    >>> priced, full = price_of_rank(problem, fits)
    >>> full.converged
    True
    >>> [bool(fit.price_of_rank >= -1e-9) for fit in priced]
    [True, True]
    >>> bool(priced[1].price_of_rank < 0.01)  # rank 2 costs nothing here
    True
    """
    check_tol(tol)
    check_max_iter(max_iter)
    for result in results:
        if result.components.shape[1] != problem.n_features:
            raise ValueError(f"a result has components of shape {result.components.shape}; the price "
                             f"of rank compares linear maps of the problem's {problem.n_features} "
                             "features (LMCA results of this problem).")
    if full_rank is None:
        full_rank = solve(problem, tol=tol, max_iter=max_iter)
    lower = float(full_rank.lower)
    priced = [dataclasses.replace(r, price_of_rank=_excess(r.objective, lower)) for r in results]
    return priced, full_rank


def _excess(objective: float, lower: float) -> float:
    if lower > 0:
        return (objective - lower) / lower
    return 0.0 if objective <= 0 else np.inf


def check_n_components(n_components, d: int) -> int:
    """``n_components`` as an int in ``[1, d]`` (``d`` when None), else a ValueError naming it."""
    if n_components is None:
        return d
    if isinstance(n_components, bool) or not isinstance(n_components, Integral) or n_components < 1:
        raise ValueError(f"n_components must be a positive integer, got {n_components!r}.")
    if n_components > d:
        raise ValueError(f"n_components={n_components} is larger than the {d} features of X; a "
                         f"low-rank map has at most d={d} rows: use n_components <= {d}.")
    return int(n_components)


def check_init_array(init: np.ndarray, shape: tuple, name: str = "init") -> np.ndarray:
    """``init`` as a finite float array of ``shape``, else an error naming ``name`` and the fix."""
    check_real_dtype(init.dtype, name)
    if init.shape != shape:
        raise ValueError(f"{name} must have shape {shape} (n_components, n_features), got {init.shape}.")
    if not np.all(np.isfinite(init)):
        raise ValueError(f"{name} contains NaN or infinity; pass finite numbers.")
    return init.astype(float)


class LMCA(ClassNamePrefixFeaturesOutMixin, LinearMetricTransformer, BaseEstimator):
    """Large Margin Component Analysis: LMNN over a low-rank linear map.

    Implements Torresani & Lee (NIPS 2006, eq. 1-2) and low-rank LMNN (Weinberger &
    Saul, JMLR 2009, sec. 5.4). Learns ``L`` (n_components, n_features) minimising eq. 14 in ``D = |L (x_i - x_j)|^2``
    by L-BFGS (``solve_lmca``); not convex, so a local answer: ``result_`` tells how it
    stopped, and ``price_of_rank`` measures it against the certified full-rank optimum.

    Parameters
    ----------
    n_components : int, default=None
        Dimension of the embedding, at most ``n_features``; None means ``n_features``.
    k : int, default=3
        Target neighbours per point (nearest same-class points, Euclidean).
    mu : float in [0, 1], default=0.5
        Weight of the push term; the pull term has ``1 - mu``.
    init : {"pca", "lda", "identity", "random", "auto"} or ndarray of shape (n_components, n_features), default="pca"
        Starting ``L`` (``initial_map``); the paper starts at PCA. "auto" means what it
        means for scikit-learn's NCA: "lda" when ``n_components <= min(n_features,
        n_classes - 1)``, else "pca" when ``n_components < min(n_features, n_samples)``,
        else "identity".
    hinge : {"linear", "smooth"}, default="linear"
        eq. 14's hinge (by smoothing continuation) or the paper's smooth hinge.
    max_iter : int >= 1, default=1000
        Budget of L-BFGS iterations.
    tol : float >= 0, default=1e-5
        Relative decrease over 10 L-BFGS iterations at which L-BFGS stops; the continuation's tolerance.
    warm_start : bool, default=False
        Start from the previous ``components_`` when fitted before (``init`` and
        ``n_components`` are then ignored, as in scikit-learn's NCA).
    callback : callable, default=None
        ``callback(L, n_iter)`` after every L-BFGS iteration.
    verbose : int, default=0
        If positive, print one row per smoothing stage.
    random_state : int, RandomState instance or None, default=None
        Seeds ``init="random"``.
    checkpoint : str or path-like, default=None
        File in which ``fit`` saves its state and resumes from it (``solve_lmca``): a fit
        killed and run again with the same data, parameters and path ends with the
        ``components_`` an uninterrupted fit gives, bit for bit.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every restart point.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        ``L``; ``transform(X) = X @ components_.T``.
    objective_ : float
        eq. 14 (linear hinge) at ``components_``.
    n_iter_ : int
        L-BFGS iterations run.
    result_ : LMCAResult
        Everything ``solve_lmca`` returned.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    LMNN : The full-rank, certified problem.
    KernelLMCA : LMCA in a kernel feature space.
    price_of_rank : How far a fit can be from the full-rank optimum.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import LMCA
    >>> X, y = load_iris(return_X_y=True)
    >>> X, y = X[::5], y[::5]  # 10 points of each class
    >>> lmca = LMCA(n_components=2, k=3).fit(X, y)
    >>> lmca.components_.shape
    (2, 4)
    >>> lmca.transform(X).shape
    (30, 2)
    >>> lmca.result_.status != "max_iter"
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "k": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(Real, 0, 1, closed="both")],
        "init": [StrOptions(set(INITS)), np.ndarray],
        "hinge": [StrOptions(set(HINGES))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "callback": [callable, None],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        **CHECKPOINT_PARAMETERS,
    }

    def __init__(self, n_components=None, k=3, mu=0.5, init="pca", hinge="linear", max_iter=1000,
                 tol=1e-5, warm_start=False, callback=None, verbose=0, random_state=None, checkpoint=None,
                 checkpoint_interval=60.0):
        self.n_components = n_components
        self.k = k
        self.mu = mu
        self.init = init
        self.hinge = hinge
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.callback = callback
        self.verbose = verbose
        self.random_state = random_state
        self.checkpoint = checkpoint
        self.checkpoint_interval = checkpoint_interval

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the low-rank map ``L`` minimising eq. 14.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real training inputs.
        y : array-like of shape (n_samples,)
            Class labels, at least two classes, each with at least ``k + 1`` points.

        Returns
        -------
        self : LMCA
            The fitted estimator.

        Raises
        ------
        TypeError
            If ``tol`` is not a real number or ``max_iter`` not an integer, ``True`` included
            (scikit-learn's ``Interval`` admits booleans; ``lmnn_sdp.core.checks``).
        ValueError
            If ``y`` has one class, a class has ``k`` points or fewer, or
            ``n_components`` exceeds ``n_features``.

        Warns
        -----
        ConvergenceWarning
            If L-BFGS spends ``max_iter`` iterations before stopping by ``tol``.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import LMCA
        >>> X, y = load_iris(return_X_y=True)
        >>> lmca = LMCA(n_components=1, init="lda").fit(X[::5], y[::5])
        >>> lmca.components_.shape
        (1, 4)
        """
        check_tol(self.tol)  # the library's rules, which refuse True as scikit-learn's Interval does not
        check_max_iter(self.max_iter)
        problem = labelled_problem(self, X, y)
        init, n_components = self.init, self.n_components
        if self.warm_start and hasattr(self, "components_"):  # as NCA: init and n_components ignored
            init, n_components = self.components_, len(self.components_)
        result = solve_lmca(problem, n_components, init=init, hinge=self.hinge, tol=self.tol,
                            max_iter=self.max_iter, random_state=self.random_state,
                            callback=self.callback,
                            report=stage_table(type(self).__name__) if self.verbose else None,
                            checkpoint=self.checkpoint, checkpoint_interval=self.checkpoint_interval)
        self.components_ = result.components
        self.objective_ = result.objective
        self.n_iter_ = result.n_iter
        self.result_ = result
        warn_unless_stationary(self, result)
        return self

    @property
    def _n_features_out(self):
        return self.components_.shape[0]


def warn_unless_stationary(estimator: BaseEstimator, result: LMCAResult) -> None:
    """A ConvergenceWarning when L-BFGS spent its budget before stopping by ``tol``."""
    if not result.converged:
        warnings.warn(f"[{type(estimator).__name__}] L-BFGS did not converge: max_iter="
                      f"{estimator.max_iter} iterations spent before the relative decrease fell "
                      f"below tol={estimator.tol:g}; raise max_iter.", ConvergenceWarning)


def stage_table(name: str):
    """The ``verbose`` report of an LMCA fit: one row per smoothing ``LowRankStage``."""
    table = ProgressTable(name, [("Stage", 6, "d"), ("Width", 9, ".2e"), ("Iter", 6, "d"),
                                 ("Value", 16, ".9e"), ("Eq. 14", 16, ".9e"), ("Active", 9, "d"),
                                 ("Pairs", 9, "d"), ("Time(s)", 9, ".2f")])
    return lambda s: table.row(s.stage, s.width, s.n_iter, s.value, s.objective, s.n_active,
                               s.n_pairs, s.elapsed)
