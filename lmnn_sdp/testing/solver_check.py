"""``check_lmnn_solver``: a user's LMNN solver on every case of the certified corpus."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from lmnn_sdp.certificates.bounds import significant
from lmnn_sdp.certificates.certificate import ATOL, proves_zero
from lmnn_sdp.core.checks import check_tol
from lmnn_sdp.core.pair_search import nearest_same_class
from lmnn_sdp.testing.assertions import checked_metric, lmnn_problem
from lmnn_sdp.testing.corpus_cases import corpus_cases
from lmnn_sdp.testing.estimator_params import estimator_settings

COLUMNS = ("case", "objective", "optimum", "lower", "gap", "tolerance", "passed", "seconds")


@dataclass(frozen=True)
class SolverCheck:
    """The gaps of a solver on the certified corpus: one row per case.

    ``repr`` is the table. In a test, call ``check.assert_passed()``: its ``AssertionError``
    holds the whole table, where pytest would truncate the ``repr`` shown by
    ``assert check.passed, check``.

    Parameters
    ----------
    rows : tuple of dict
        One per case: ``case`` (its id), ``objective`` (eps at the solver's metric),
        ``optimum`` (the certified optimum, at most), ``lower`` (the certified lower bound),
        ``gap`` (``(objective - lower) / objective``: at least the solver's relative excess
        over the optimum), ``tolerance``, ``passed`` (``gap <= tolerance``), ``seconds``
        (of the solver) and ``error`` (why the case failed without a gap, "" otherwise).

    Examples
    --------
    >>> from lmnn_sdp.testing import SolverCheck
    >>> check = SolverCheck(({"case": "a", "objective": 2.0, "optimum": 1.0, "lower": 1.0,
    ...                       "gap": 0.5, "tolerance": 1e-6, "passed": False, "seconds": 0.1,
    ...                       "error": ""},))
    >>> check.passed, check.worst["case"]
    (False, 'a')
    """

    rows: tuple

    @property
    def passed(self) -> bool:
        """Every case within its tolerance."""
        return all(row["passed"] for row in self.rows)

    @property
    def gaps(self) -> dict:
        """``{case id: gap}``."""
        return {row["case"]: row["gap"] for row in self.rows}

    @property
    def failed(self) -> list:
        """The rows of the cases that did not pass."""
        return [row for row in self.rows if not row["passed"]]

    @property
    def worst(self) -> dict:
        """The row with the largest gap (a failed case without a gap first)."""
        return max(self.rows, key=lambda row: np.inf if np.isnan(row["gap"]) else row["gap"])

    def assert_passed(self) -> None:
        """Raise unless every case is within its tolerance, with the whole table in the message.

        Returns
        -------
        None
            When every case passed.

        Raises
        ------
        AssertionError
            Some case failed: the message is the table, one row per case (every row,
            however many), each failed one with its gap or its error.

        Examples
        --------
        >>> from lmnn_sdp.testing import SolverCheck
        >>> row = {"case": "a", "objective": 2.0, "optimum": 1.0, "lower": 1.0, "gap": 0.5,
        ...        "tolerance": 1e-6, "passed": False, "seconds": 0.1, "error": ""}
        >>> SolverCheck((row,)).assert_passed()
        Traceback (most recent call last):
        ...
        AssertionError: SolverCheck: 0 of 1 cases within tolerance
        case                                    objective          lower       gap tolerance  passed
        a                                               2              1       0.5     1e-06  False
        >>> SolverCheck(({**row, "gap": 0.0, "passed": True},)).assert_passed()
        """
        __tracebackhide__ = True  # a failure shows the test's line and the table, not this source
        if not self.passed:
            raise AssertionError(repr(self))

    def __repr__(self) -> str:
        head = f"{'case':34s} {'objective':>14s} {'lower':>14s} {'gap':>9s} {'tolerance':>9s}  passed"
        lines = [f"SolverCheck: {len(self.rows) - len(self.failed)} of {len(self.rows)} cases within "
                 "tolerance", head]
        for row in self.rows:
            lines.append(f"{row['case']:34s} {row['objective']:14.8g} {row['lower']:14.8g} "
                         f"{significant(row['gap'], 2):>9s} {row['tolerance']:9.2g}  {row['passed']}"
                         + (f"  {row['error']}" if row["error"] else ""))
        return "\n".join(lines)


def check_lmnn_solver(fit, kind: str = "lmnn", *, cases=None, tolerance: float = 1e-6,
                      params: Callable | None = None) -> SolverCheck:
    """Run a solver on the certified corpus and measure each metric's gap to the optimum.

    For every case, the solver's metric ``M`` is checked (shape, finite, symmetric, PSD),
    ``eps(M)`` of eq. 14 (or of sec. 5.2) is evaluated here, and its gap is
    ``(eps(M) - lower) / eps(M)`` with ``lower`` the certified lower bound stored in the
    corpus: a bound on the relative excess over the optimum that no solver can undercut.
    In a test, write ``check_lmnn_solver(...).assert_passed()``: a failure then shows the
    whole table.

    A solver is given a case's ``k``, not its targets, so every case must have the default
    targets (the k nearest same-class points, ties broken by the smaller index; every case
    of the corpus does). A solver that breaks ties otherwise picks other targets and is
    scored on the case's.

    Parameters
    ----------
    fit : callable or estimator
        Either a callable ``fit(X, y, k, mu) -> M`` (with ``kind="multi-metric-lmnn"``,
        ``fit(X, y, k, mu, clusters) -> M`` of shape (n_clusters, d, d)), or an estimator
        with ``fit(X, y)`` and ``get_mahalanobis_matrix()``, ``metric_``, ``metrics_`` (one
        per cluster) or ``components_`` (``L``, with ``M = L^T L``). An estimator is never
        fitted itself: for each case a ``sklearn.base.clone`` of it is set to that case's
        ``k`` and ``mu`` (``params``) and fitted; its other parameters are kept.
    kind : {"lmnn", "multi-metric-lmnn"}, default="lmnn"
        Which corpus problems.
    cases : iterable of CorpusCase, optional
        A selection of ``corpus_cases(kind)``; by default all of them.
    tolerance : float, default=1e-6
        Largest gap that passes (raised to the stored certificate's gap where larger);
        finite, >= 0.
    params : callable, optional
        With an estimator: ``params(case) -> dict`` of the ``set_params`` that make it solve
        that case, e.g. ``lambda case: {"n_neighbors": case.k, "push": case.mu}``. Needed
        only for an estimator of no known class; known (by its class's module and name, or
        a base class's): ``fast_solver.LMNN`` (``k``, ``mu``), ``fast_solver.MultiMetricLMNN``
        (``k``, ``mu``, ``clusters="classes"``: cases clustered by class only),
        ``metric_learn.LMNN`` (``n_neighbors``, ``regularization = 1 - mu``: it weighs the
        pull term) and PyLMNN's ``LargeMarginNearestNeighbor`` (``n_neighbors``,
        ``weight_push_loss = mu``).

    Returns
    -------
    SolverCheck
        The table of gaps; ``.assert_passed()``, ``.passed``, ``.gaps``, ``.failed``, ``.worst``.

    Raises
    ------
    TypeError
        ``fit`` is neither callable nor an estimator, ``params`` is not callable, or
        ``tolerance`` is not a real number (``True``, ``"1e-6"``).
    ValueError
        Refused before any fit: a ``tolerance`` that is negative or not finite; an
        estimator of no known class without ``params``; a case
        the estimator cannot take (a multi-metric case for a single-metric estimator,
        clusters other than the classes for ``MultiMetricLMNN``); ``params`` with a
        callable ``fit``; a case whose targets are not the default ones of its ``k``.

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp.testing import check_lmnn_solver, corpus_cases
    >>> cases = [c for c in corpus_cases() if c.id.startswith("zebra")]
    >>> check = check_lmnn_solver(lambda X, y, k, mu: np.eye(X.shape[1]), cases=cases)
    >>> check.passed, len(check.rows)
    (False, 3)
    >>> check  # doctest: +ELLIPSIS
    SolverCheck: 0 of 3 cases within tolerance
    case                                    objective          lower       gap tolerance  passed
    zebra-n80-k3-mu0.5 ...

    An estimator is cloned and set to each case's ``k`` and ``mu``:

    >>> from fast_solver import LMNN
    >>> check_lmnn_solver(LMNN(k=7, tol=1e-7), cases=cases).assert_passed()

    An estimator of an unknown class needs ``params``:

    >>> from sklearn.neighbors import NeighborhoodComponentsAnalysis as NCA
    >>> check_lmnn_solver(NCA(), cases=cases)
    Traceback (most recent call last):
    ...
    ValueError: fit: check_lmnn_solver does not know which parameters of ...
    """
    if not callable(fit) and not hasattr(fit, "fit"):
        raise TypeError(f"fit must be a callable (X, y, k, mu) -> M or an estimator with fit(X, y), "
                        f"got {type(fit).__name__}.")
    check_tol(tolerance, "tolerance")
    cases = corpus_cases(kind, tolerance=tolerance) if cases is None else list(cases)
    for case in cases:
        _check_targets(case)
    runs = _solver_runs(fit, params, cases)
    return SolverCheck(tuple(_row(run, case, tolerance) for run, case in zip(runs, cases)))


def _row(run: Callable[[], np.ndarray], case, tolerance: float) -> dict:
    """One case's row: the solver's metric (timed) scored by ``case_row``."""
    start = time.perf_counter()
    try:
        metric = run()
    except AssertionError as err:
        return {**_empty_row(case, tolerance), "error": str(err)}
    return {**case_row(case, metric, tolerance), "seconds": time.perf_counter() - start}


def case_row(case, metric, tolerance: float = 1e-6) -> dict:
    """Score one metric against one LMNN case of the corpus: the row ``check_lmnn_solver`` makes.

    ``eps(M)`` of eq. 14 (of eq. 16 for a multi-metric case) is evaluated at ``metric`` on
    the case's targets, with a bound on its rounding; the gap is ``(eps(M) - lower) / eps(M)``
    against the case's certified lower bound. The metric passes when the gap is at most the
    tolerance, or, as a certificate decides a zero optimum, when ``eps(M)`` with its rounding
    is at most ``lmnn_sdp.certificates.certificate.ATOL``.

    Parameters
    ----------
    case : CorpusCase
        The case (``X``, ``y``, ``targets``, ``mu``, ``clusters``, ``optimum``, ``lower``,
        ``tolerance``).
    metric : array-like of shape (n_features, n_features), or (n_clusters, n_features, n_features)
        The metric under test.
    tolerance : float, default=1e-6
        Largest gap that passes (raised to the case's own); finite, >= 0.

    Returns
    -------
    dict
        ``case``, ``objective``, ``optimum``, ``lower``, ``gap``, ``tolerance``, ``passed``,
        ``seconds`` (NaN: nothing was run) and ``error``: why the metric was refused (wrong
        shape, not finite, not symmetric or not PSD; its gap is then NaN), "" otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp.testing import corpus_cases
    >>> from lmnn_sdp.testing.solver_check import case_row
    >>> case = corpus_cases()[3]
    >>> row = case_row(case, np.eye(4))
    >>> round(row["gap"], 4), row["passed"]
    (0.4399, False)
    >>> case_row(case, case.metric)["passed"]
    True
    >>> case_row(case, -np.eye(4))["error"]
    'metric refused: M is not positive semidefinite...'
    """
    row = _empty_row(case, check_tol(tolerance, "tolerance"))
    try:
        problem = lmnn_problem(case.X, case.y, targets=case.targets, mu=case.mu, clusters=case.clusters)
        value = problem.evaluate(checked_metric(problem, metric))
    except AssertionError as err:
        return {**row, "error": str(err)}
    upper = value.value + value.rounding
    gap = float(max(0.0, (upper - case.lower) / upper)) if upper > 0 else 0.0
    passed = gap <= row["tolerance"] or proves_zero(upper, ATOL)  # the certificate's zero rule
    return {**row, "objective": float(value.value), "gap": gap, "passed": bool(passed)}


def _empty_row(case, tolerance: float) -> dict:
    return {"case": case.id, "objective": np.nan, "optimum": case.optimum, "lower": case.lower,
            "gap": np.nan, "tolerance": max(tolerance, case.tolerance), "passed": False,
            "seconds": np.nan, "error": ""}


def _check_targets(case) -> None:
    """Refuse a case whose targets a solver given only ``k`` cannot know."""
    codes = np.unique(case.y, return_inverse=True)[1]
    default = nearest_same_class(np.asarray(case.X, dtype=float), codes, case.k)
    if not np.array_equal(np.sort(case.targets, axis=1), np.sort(default, axis=1)):
        raise ValueError(f"cases: case {case.id} has targets other than the {case.k} nearest same-class "
                         "points, which a solver given k cannot know; leave it out of cases=, or test the "
                         "metric with assert_lmnn_optimal(..., targets=case.targets).")


def _solver_runs(fit, params, cases: list) -> list[Callable[[], np.ndarray]]:
    """One call per case returning the solver's metric; every refusal raised before any fit."""
    if _is_plain_callable(fit):
        if params is not None:
            raise ValueError("params applies to an estimator; a callable fit(X, y, k, mu) is given k and "
                             "mu itself: drop params=.")
        return [partial(_call, fit, case) for case in cases]
    from sklearn.base import clone

    settings = estimator_settings(fit, params, cases)
    return [partial(_fitted_metric, clone(fit).set_params(**setting), case)
            for setting, case in zip(settings, cases)]


def _call(fit, case) -> np.ndarray:
    if case.clusters is not None:
        return np.asarray(fit(case.X, case.y, case.k, case.mu, case.clusters), dtype=float)
    return np.asarray(fit(case.X, case.y, case.k, case.mu), dtype=float)


def _fitted_metric(estimator, case) -> np.ndarray:
    fitted = estimator.fit(case.X, case.y)
    fitted = estimator if fitted is None else fitted
    if hasattr(fitted, "get_mahalanobis_matrix"):
        return np.asarray(fitted.get_mahalanobis_matrix(), dtype=float)
    for name in ("metric_", "metrics_"):
        if hasattr(fitted, name):
            return np.asarray(getattr(fitted, name), dtype=float)
    L = np.asarray(fitted.components_, dtype=float)
    return L.T @ L


def _is_plain_callable(fit) -> bool:
    """A function or lambda (not an estimator whose class happens to define __call__)."""
    return callable(fit) and not hasattr(type(fit), "fit")
