"""Multi-pass LMNN (sec. 5.1): target neighbours re-estimated under the learned metric.

Pass 1 solves eq. 14 on the inputs. Pass ``p + 1`` maps the inputs by the composed
transformation ``A_p = L_p ... L_1`` (``A_0 = I``), takes as targets the ``k`` nearest
same-class points there (Euclidean; squared distances equal within the tie tolerance keep
the targets of pass ``p``, other ties go to the smaller index), solves eq. 14 on the mapped
inputs with those targets, and composes ``A_{p+1} = L_{p+1} A_p``. Every pass is a
certified solve of its own problem (``fast_solver.solve``).

``L_p`` is the factor of the pass metric ``M_p`` (eq. 2) with the eigenvalues at most
``RANK_RTOL`` of the largest taken as zero (zero rows, so ``L_p`` stays (d, d)). Without
the cut, the rounding eigenvalues (~1e-17 of the largest) of a rank-deficient ``M_p`` leave
directions of relative size ~1e-8 in the mapped inputs, which the next pass's whitening
scales back to full size, so rounding decides the next problem
(docs/design/fast-lmnn-solver.md, "Multi-pass LMNN: the rank cut"). With the cut the rank of
``A_p`` never grows, as in exact arithmetic (a product has at most the rank of each factor).

Eq. 14 on inputs ``A x`` with metric ``M'`` is eq. 14 on ``x`` with ``A^T M' A``. The
passes stop after ``max_passes``; with ``stop="targets"`` as soon as the targets repeat
as sets (the next pass would solve the problem just solved, where ``M' = I`` on the mapped
inputs is optimal); and always when the composed map puts every point onto its next
targets ("collapsed", e.g. mu = 0 learns the zero metric): the pull term of the next
problem vanishes, so there is nothing left to solve.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from fast_solver._base import CHECKPOINT_PARAMETERS, LinearMetricTransformer, ProgressTable
from fast_solver.checkpoint import as_checkpoint
from fast_solver.lmnn.estimator import labelled_problem
from fast_solver.lmnn.impostors import SEARCH_METHODS, pair_distances
from fast_solver.lmnn.result import FastLMNNResult
from fast_solver.lmnn.solver import solve
from fast_solver.lmnn.state import solve_fingerprint
from lmnn_sdp.core.checks import check_max_iter, check_tol
from lmnn_sdp.core.pair_search import nearest_same_class
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import psd_factor
from lmnn_sdp.status import CONVERGED, MAX_ITER, Stopped

STOP_RULES = ("targets", "passes")
UNFINGERPRINTED = ("progress", "callback")  # options of ``solve`` that do not change the answer
RANK_RTOL = 1e-12  # eigenvalues of a pass metric at most this of the largest are rounding of 0
TIE_RTOL = 1e-9  # squared distances this close (relative; or within tol, if larger) are ties


@dataclass(frozen=True, repr=False)
class MultiPassResult(Stopped):
    """The passes of one multi-pass solve (sec. 5.1).

    Attributes
    ----------
    components : ndarray of shape (d, d)
        The composed transformation ``A = L_p ... L_1``.
    passes : tuple of FastLMNNResult
        Each pass's certified solve, on the inputs mapped by the passes before it.
    targets : tuple of ndarray of int, shape (n, k)
        The target neighbours of each pass.
    status : {"converged", "max_iter", "stalled"}
        How the passes stopped (``lmnn_sdp.status``): the status of the first pass that did
        not converge, else ``"max_iter"`` when ``stop="targets"`` and the targets still
        changed after ``max_passes`` passes, else ``"converged"`` (the targets repeated, the
        map collapsed, or ``stop="passes"`` ran its ``max_passes`` passes).
    message : str
        Why the passes stopped, for people.
    timings : dict of str to float
        Seconds in ``solve`` (all passes), ``targets`` (neighbour searches) and ``total``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> from fast_solver import solve_multipass
    >>> result = solve_multipass(problem, max_passes=2, stop="passes")
    >>> result.status, result.converged, result.certified, result.n_passes
    ('converged', True, True, 2)
    >>> result.components.shape
    (4, 4)
    """

    components: np.ndarray
    passes: tuple
    targets: tuple
    status: str
    message: str
    timings: dict = field(default_factory=dict)

    @property
    def metric(self) -> np.ndarray:
        """``M = A^T A`` (d, d) of the composed transformation."""
        return self.components.T @ self.components

    @property
    def n_passes(self) -> int:
        """Passes run."""
        return len(self.passes)

    @property
    def certified(self) -> bool:
        """Every pass certified its own optimum."""
        return all(p.certified for p in self.passes)

    @property
    def n_iter(self) -> int:
        """iterations over all passes."""
        return sum(p.n_iter for p in self.passes)

    @property
    def relative_gap(self) -> float:
        """The largest certified gap of the passes."""
        return max(p.relative_gap for p in self.passes)

    def __repr__(self) -> str:
        gaps = ", ".join(f"{p.relative_gap:.2g}" for p in self.passes)
        return (f"MultiPassResult(passes={self.n_passes}, gaps=[{gaps}], certified={self.certified}, "
                f"status={self.status!r}, time={self.timings.get('total', float('nan')):.3g} s, "
                f"message={self.message!r})")


def solve_multipass(problem: LMNNProblem, *, max_passes: int = 5, stop: str = "targets",
                    tol: float = 1e-6,
                    callback: Callable[[int, FastLMNNResult, int | None], None] | None = None,
                    checkpoint=None, checkpoint_interval: float = 60.0, **options) -> MultiPassResult:
    """Run multi-pass LMNN: re-choose the targets under the learned map and solve again.

    Implements sec. 5.1 of Weinberger & Saul (JMLR 2009): pass 1 solves eq. 14 on
    ``problem``; each later pass maps the inputs by the composed transformation
    ``A_p = L_p ... L_1``, takes the ``k`` nearest same-class points there as
    targets, and solves eq. 14 again with ``solve`` (module docstring).

    Parameters
    ----------
    problem : LMNNProblem
        The inputs, labels, ``mu`` and the targets of pass 1.
    max_passes : int >= 1, default=5
        Largest number of passes, each a full certified solve.
    stop : {"targets", "passes"}, default="targets"
        Stop when the targets repeat, or run ``max_passes`` passes; either way a
        collapsed map stops the passes.
    tol : float >= 0, default=1e-6
        Certified relative gap of every pass; squared distances within
        ``max(tol, TIE_RTOL)`` (relative) are ties when the targets are re-chosen.
    callback : callable, optional
        Called after every pass with ``(pass number from 1, its FastLMNNResult, points
        whose target set differs from the previous pass's, or None for pass 1)``.
    checkpoint : str, path-like, Checkpoint, Section or None, default=None
        File that keeps the passes' states, one ``Section`` per pass (``solve``'s
        ``checkpoint``). The same call with the same path resumes the pass that was running
        from the state saved last (the passes before it return their saved results, their
        certificates proved again, and the targets are chosen again from them) and ends
        bit-for-bit as uninterrupted passes; after the end it returns the same result at once.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every restart point.
    **options
        Passed to every ``fast_solver.solve`` (``max_iter``, ``search``, ``progress``, ...).

    Returns
    -------
    result : MultiPassResult
        The composed transformation ``components`` (d, d), each pass's certified
        solve and targets, and why the passes stopped (``status``).

    Raises
    ------
    ValueError
        If ``max_passes`` or ``max_iter`` is below 1, ``tol`` is negative or not finite, or
        ``stop`` is not a stop rule.
    TypeError
        If ``max_passes`` or ``max_iter`` is not an integer, or ``tol`` not a real number
        (``True``, ``"0.5"``).
    CheckpointError
        If the ``checkpoint`` file is damaged, or was written by another kind of fit or for
        other inputs or options (a ValueError).

    See Also
    --------
    MultiPassLMNN : The scikit-learn estimator over this function.
    solve : The certified solve of each pass.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> from fast_solver import solve_multipass
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=3)
    >>> result = solve_multipass(problem, max_passes=2, stop="passes")
    >>> result.n_passes, result.converged
    (2, True)
    >>> result.components.shape, result.targets[1].shape
    ((4, 4), (30, 3))
    >>> round(result.passes[0].upper, 1)
    14.7
    """
    _check_options(max_passes, stop, tol, options)
    answer = {name: value for name, value in options.items() if name not in UNFINGERPRINTED}
    checkpoint = as_checkpoint(checkpoint, kind="multipass-lmnn", interval=checkpoint_interval,
                               fingerprint=lambda: solve_fingerprint(problem, max_passes=max_passes, stop=stop,
                                                                     tol=tol, **answer))
    start = time.perf_counter()
    A, targets, codes = np.eye(problem.n_features), problem.targets, problem.label_codes
    passes, used, spent, reason = [], [], {"solve": 0.0, "targets": 0.0}, None
    for number in range(1, max_passes + 2):  # the last round only checks the targets
        mapped, changed = problem.X @ A.T, None
        if number > max_passes and stop == "passes":
            break
        if number > 1:
            tic = time.perf_counter()
            following = _next_targets(mapped, codes, targets, max(tol, TIE_RTOL))
            spent["targets"] += time.perf_counter() - tic
            changed = _n_changed(targets, following)
            reason = _stop_reason(mapped, following, changed, number - 1, stop)
            if reason is not None or number > max_passes:
                break
            targets = following
        result = solve(LMNNProblem(mapped, problem.y, mu=problem.mu, targets=targets), tol=tol,
                       checkpoint=checkpoint.section(f"pass {number}"), **options)
        spent["solve"] += result.timings["total"]
        passes.append(result)
        used.append(targets)
        A = _pass_map(result.metric) @ A
        if callback is not None:
            callback(number, result, changed)
    status, message = reason or _budget_spent(max_passes, stop)
    failed = [(number, p) for number, p in enumerate(passes, 1) if not p.converged]
    if failed:
        status = failed[0][1].status
        message += (f"; {len(failed)} of {len(passes)} passes did not converge ("
                    + ", ".join(f"pass {number}: {p.status}, gap {p.relative_gap:.3g}" for number, p in failed)
                    + ")")
    spent["total"] = time.perf_counter() - start
    return MultiPassResult(components=A, passes=tuple(passes), targets=tuple(used), status=status,
                           message=message, timings=spent)


def _stop_reason(mapped: np.ndarray, following: np.ndarray, changed: int, done: int,
                 stop: str) -> tuple[str, str] | None:
    """``(status, message)`` after pass ``done``, or None to run the next pass: ``mapped``
    (n, d) are the inputs under the composed map, ``following`` (n, k) their targets, of
    which ``changed`` points' sets differ from those of pass ``done``."""
    if _collapsed(mapped, following):
        what = (f"is zero (pass {done} learned the zero metric, as mu = 0 does)" if not mapped.any()
                else "puts every point onto its nearest same-class points")
        return CONVERGED, (f"collapsed: stopped after pass {done}: the composed map {what}, so the pull "
                             "term of eq. 14 vanishes and a further pass has no problem to solve")
    if stop == "targets" and changed == 0:
        return CONVERGED, (f"fixed point: stopped after pass {done}: the targets of pass {done + 1} equal "
                               f"those of pass {done} (a fixed point)")
    return None


def _budget_spent(max_passes: int, stop: str) -> tuple[str, str]:
    """``(status, message)`` after ``max_passes`` passes without an earlier stop."""
    if stop == "passes":
        return CONVERGED, f"stopped after max_passes={max_passes} passes"
    return MAX_ITER, (f"the targets still changed after max_passes={max_passes} passes; raise "
                      "max_passes, or stop='passes' to run a fixed number")


def _next_targets(mapped: np.ndarray, codes: np.ndarray, current: np.ndarray,
                  tie_rtol: float) -> np.ndarray:
    """The ``k`` nearest same-class points of ``mapped`` (n, d), shape (n, k), ties kept
    for the ``current`` targets (n, k).

    A point keeps its current targets when their sorted squared distances are within
    ``tie_rtol`` (relative) of its ``k`` smallest: a map turns exact ties (integer
    features, lattices) into differences of rounding, or of a metric certified only to
    ``tol``, which must not count as new targets. Other points take ``nearest_same_class``."""
    nearest = nearest_same_class(mapped, codes, current.shape[1])
    smallest = np.sort(_target_distances(mapped, nearest), axis=1)
    held = np.sort(_target_distances(mapped, current), axis=1)
    keep = np.all(held <= smallest * (1.0 + tie_rtol), axis=1)
    return np.where(keep[:, None], current, nearest)


def _target_distances(Z: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Exact squared distances of the rows of ``Z`` (n, d) to their ``targets`` (n, k), (n, k)."""
    n, k = targets.shape
    return pair_distances(Z, np.repeat(np.arange(n), k), targets.ravel()).reshape(n, k)


def _collapsed(mapped: np.ndarray, targets: np.ndarray) -> bool:
    """The mean squared distance of the rows of ``mapped`` (n, d) to their ``targets``
    (n, k) is at most ``RANK_RTOL`` times their mean squared distance to the centre."""
    centred = mapped - mapped.mean(axis=0)
    spread = float(np.mean(np.einsum("nd,nd->n", centred, centred)))
    return bool(np.mean(_target_distances(mapped, targets)) <= RANK_RTOL * spread)


def _pass_map(M: np.ndarray) -> np.ndarray:
    """``L`` (d, d) with ``L^T L = M`` (d, d) up to the eigenvalues at most ``RANK_RTOL`` of
    the largest, whose rows are zero; rows by decreasing eigenvalue (eq. 2)."""
    L = psd_factor(M, rtol=RANK_RTOL)
    return np.vstack([L, np.zeros((M.shape[0] - len(L), M.shape[0]))])


def _n_changed(a: np.ndarray, b: np.ndarray) -> int:
    """Points whose target sets differ between ``a`` and ``b`` (n, k)."""
    return int(np.sum(np.any(np.sort(a, axis=1) != np.sort(b, axis=1), axis=1)))


def _check_options(max_passes, stop, tol, options: dict) -> None:
    """``max_passes`` (one pass is plain LMNN), ``tol`` and a ``max_iter`` among ``options`` by
    the library's rules (``lmnn_sdp.core.checks``), before any pass; ``stop`` one of ``STOP_RULES``."""
    check_max_iter(max_passes, "max_passes")
    check_tol(tol)
    if "max_iter" in options:
        check_max_iter(options["max_iter"])
    if stop not in STOP_RULES:
        raise ValueError(f"stop must be one of {STOP_RULES}, got {stop!r}: 'targets' stops when the "
                         "targets repeat, 'passes' runs max_passes passes.")


class MultiPassLMNN(LinearMetricTransformer, BaseEstimator):
    """Multi-pass LMNN: target neighbours re-chosen under the learned metric.

    Implements sec. 5.1 of Weinberger & Saul (JMLR 2009) with ``solve_multipass``:
    every pass is a certified solve of eq. 14 on the inputs mapped by the passes
    before it, with the ``k`` nearest same-class points there as targets.
    ``transform`` applies the composed map ``A = L_p ... L_1``.

    Parameters
    ----------
    k : int, default=3
        Target neighbours per point.
    mu : float in [0, 1], default=0.5
        Weight of the push term; the pull term has ``1 - mu``.
    max_passes : int, default=5
        Largest number of passes.
    stop : {"targets", "passes"}, default="targets"
        Stop when the targets repeat, or run ``max_passes`` passes.
    max_iter : int >= 1, default=1000
        iterations of each pass.
    tol : float >= 0, default=1e-6
        Certified relative gap of each pass.
    search : {"auto", "blockwise", "balltree"}, default="auto"
        Impostor-search path (``fast_solver.lmnn.impostors``).
    verbose : int, default=0
        If positive, print one row per pass (targets changed, iterations,
        bounds, gap, seconds).
    checkpoint : str, path-like or None, default=None
        File that keeps the passes' states (``solve_multipass``'s ``checkpoint``): a fit
        killed at any point and run again with the same path resumes from the state saved
        last and ends bit-for-bit as an uninterrupted fit; run again after the end, it
        returns at once.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every restart point.

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
        The composed ``L``; ``transform(X) = X @ components_.T``.
    metric_ : ndarray of shape (n_features, n_features)
        ``components_.T @ components_``.
    n_passes_ : int
        Passes run.
    n_iter_ : int
        iterations over all passes.
    converged_ : bool
        The passes stopped by their rule and each pass converged (``result_.status``).
    result_ : MultiPassResult
        Everything ``solve_multipass`` returned.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    LMNN : A single pass.
    solve_multipass : The function behind ``fit``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import MultiPassLMNN
    >>> X, y = load_iris(return_X_y=True)
    >>> X, y = X[::5], y[::5]  # 10 points of each class
    >>> mp = MultiPassLMNN(k=3, max_passes=2, stop="passes").fit(X, y)
    >>> mp.converged_, mp.n_passes_, mp.components_.shape
    (True, 2, (4, 4))
    >>> mp.transform(X).shape
    (30, 4)
    """

    _parameter_constraints: dict = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(Real, 0, 1, closed="both")],
        "max_passes": [Interval(Integral, 1, None, closed="left")],
        "stop": [StrOptions(set(STOP_RULES))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "search": [StrOptions(set(SEARCH_METHODS))],
        "verbose": ["verbose"],
        **CHECKPOINT_PARAMETERS,
    }

    def __init__(self, k=3, mu=0.5, max_passes=5, stop="targets", max_iter=1000, tol=1e-6,
                 search="auto", verbose=0, checkpoint=None, checkpoint_interval=60.0):
        self.k = k
        self.mu = mu
        self.max_passes = max_passes
        self.stop = stop
        self.max_iter = max_iter
        self.tol = tol
        self.search = search
        self.verbose = verbose
        self.checkpoint = checkpoint
        self.checkpoint_interval = checkpoint_interval

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the composed transformation of the passes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real training inputs.
        y : array-like of shape (n_samples,)
            Class labels, at least two classes, each with at least ``k + 1`` points.

        Returns
        -------
        self : MultiPassLMNN
            The fitted estimator.

        Raises
        ------
        TypeError
            If ``tol`` is not a real number or ``max_iter`` not an integer, ``True`` included
            (scikit-learn's ``Interval`` admits booleans; ``lmnn_sdp.core.checks``).
        ValueError
            If ``y`` has one class, or a class has ``k`` points or fewer.
        CheckpointError
            If the ``checkpoint`` file is damaged or of another fit (a ValueError).

        Warns
        -----
        ConvergenceWarning
            If some pass ends before its certified gap reaches ``tol``.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import MultiPassLMNN
        >>> X, y = load_iris(return_X_y=True)
        >>> mp = MultiPassLMNN(max_passes=3, stop="passes").fit(X[::5], y[::5])
        >>> mp.n_passes_, len(mp.result_.passes)
        (3, 3)
        """
        check_tol(self.tol)  # the library's rules, which refuse True as scikit-learn's Interval does not
        check_max_iter(self.max_iter)
        result = solve_multipass(labelled_problem(self, X, y), max_passes=self.max_passes,
                                 stop=self.stop, max_iter=self.max_iter, tol=self.tol,
                                 search=self.search, callback=_pass_table() if self.verbose else None,
                                 checkpoint=self.checkpoint, checkpoint_interval=self.checkpoint_interval)
        self.components_, self.metric_ = result.components, result.metric
        self.n_passes_, self.n_iter_ = result.n_passes, result.n_iter
        self.converged_, self.result_ = result.converged, result
        if not result.converged:
            warnings.warn(f"[MultiPassLMNN] did not converge: {result.message}.", ConvergenceWarning)
        return self


def _pass_table():
    """The ``verbose`` callback of ``MultiPassLMNN``: one row per pass."""
    table = ProgressTable("MultiPassLMNN", [("Pass", 5, "d"), ("Changed", 8, ""), ("Newton", 7, "d"),
                                            ("Upper", 16, ".9e"), ("Lower", 16, ".9e"),
                                            ("Gap", 9, ".2e"), ("Time(s)", 9, ".2f")])
    return lambda number, r, changed: table.row(number, "-" if changed is None else str(changed),
                                                r.n_iter, r.upper, r.lower, r.relative_gap,
                                                r.timings["total"])
