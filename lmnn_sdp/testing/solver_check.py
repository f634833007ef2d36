"""``check_lmnn_solver``: a user's LMNN solver on every case of the certified corpus."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from lmnn_sdp.testing.assertions import checked_metric, lmnn_problem
from lmnn_sdp.testing.corpus_cases import corpus_cases

COLUMNS = ("case", "objective", "optimum", "lower", "gap", "tolerance", "passed", "seconds")


@dataclass(frozen=True)
class SolverCheck:
    """The gaps of a solver on the certified corpus: one row per case.

    ``repr`` is the table, so ``assert check.passed`` shows it when a case fails.

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

    def __repr__(self) -> str:
        head = f"{'case':34s} {'objective':>14s} {'lower':>14s} {'gap':>9s} {'tolerance':>9s}  passed"
        lines = [f"SolverCheck: {len(self.rows) - len(self.failed)} of {len(self.rows)} cases within "
                 "tolerance", head]
        for row in self.rows:
            lines.append(f"{row['case']:34s} {row['objective']:14.8g} {row['lower']:14.8g} "
                         f"{row['gap']:9.2g} {row['tolerance']:9.2g}  {row['passed']}"
                         + (f"  {row['error']}" if row["error"] else ""))
        return "\n".join(lines)


def check_lmnn_solver(fit, kind: str = "lmnn", *, cases=None, tolerance: float = 1e-6) -> SolverCheck:
    """Run a solver on the certified corpus and measure each metric's gap to the optimum.

    For every case, the solver's metric ``M`` is checked (shape, finite, symmetric, PSD),
    ``eps(M)`` of eq. 14 (or of sec. 5.2) is evaluated here, and its gap is
    ``(eps(M) - lower) / eps(M)`` with ``lower`` the certified lower bound stored in the
    corpus: a bound on the relative excess over the optimum that no solver can undercut.

    Parameters
    ----------
    fit : callable or estimator
        Either a callable ``fit(X, y, k, mu) -> M`` (with ``kind="multi-metric-lmnn"``,
        ``fit(X, y, k, mu, clusters) -> M`` of shape (n_clusters, d, d)), or an estimator
        with ``fit(X, y)`` and ``get_mahalanobis_matrix()``, ``metric_`` or
        ``components_`` (``L``, with ``M = L^T L``); an estimator is fitted as it is
        configured, so set its ``k`` and ``mu`` to match the cases (or pass ``cases``).
    kind : {"lmnn", "multi-metric-lmnn"}, default="lmnn"
        Which corpus problems.
    cases : iterable of CorpusCase, optional
        A selection of ``corpus_cases(kind)``; by default all of them.
    tolerance : float, default=1e-6
        Largest gap that passes (raised to the stored certificate's gap where larger).

    Returns
    -------
    SolverCheck
        The table of gaps; ``.passed``, ``.gaps``, ``.failed``, ``.worst``.

    Raises
    ------
    TypeError
        ``fit`` is neither callable nor an estimator.

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
    """
    if not callable(fit) and not hasattr(fit, "fit"):
        raise TypeError(f"fit must be a callable (X, y, k, mu) -> M or an estimator with fit(X, y), "
                        f"got {type(fit).__name__}.")
    if cases is None:
        cases = corpus_cases(kind, tolerance=tolerance)
    rows = []
    for case in cases:
        start = time.perf_counter()
        row = {"case": case.id, "objective": np.nan, "optimum": case.optimum, "lower": case.lower,
               "gap": np.nan, "tolerance": max(tolerance, case.tolerance), "passed": False,
               "seconds": np.nan, "error": ""}
        try:
            metric = _run(fit, case)
            row["seconds"] = time.perf_counter() - start
            problem = lmnn_problem(case.X, case.y, targets=case.targets, mu=case.mu, clusters=case.clusters)
            value = problem.evaluate(checked_metric(problem, metric))
            row["objective"] = value.value
            upper = value.value + value.rounding
            row["gap"] = max(0.0, (upper - case.lower) / upper) if upper > 0 else 0.0
            row["passed"] = bool(row["gap"] <= row["tolerance"])
        except AssertionError as err:
            row["error"] = str(err)
        rows.append(row)
    return SolverCheck(tuple(rows))


def _run(fit, case) -> np.ndarray:
    if hasattr(fit, "fit") and not _is_plain_callable(fit):
        fitted = fit.fit(case.X, case.y)
        fitted = fit if fitted is None else fitted
        if hasattr(fitted, "get_mahalanobis_matrix"):
            return np.asarray(fitted.get_mahalanobis_matrix(), dtype=float)
        if hasattr(fitted, "metric_"):
            return np.asarray(fitted.metric_, dtype=float)
        L = np.asarray(fitted.components_, dtype=float)
        return L.T @ L
    if case.clusters is not None:
        return np.asarray(fit(case.X, case.y, case.k, case.mu, case.clusters), dtype=float)
    return np.asarray(fit(case.X, case.y, case.k, case.mu), dtype=float)


def _is_plain_callable(fit) -> bool:
    """A function or lambda (not an estimator whose class happens to define __call__)."""
    return callable(fit) and not hasattr(type(fit), "fit")
