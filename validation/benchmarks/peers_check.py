"""Other libraries' LMNN through ``check_lmnn_solver``: metric-learn, PyLMNN and ours on the corpus.

Runs ``lmnn_sdp.testing.check_lmnn_solver`` on every LMNN case of the certified corpus
(``corpus_cases()``) with three solvers, each fitted per case from ``(X, y, k, mu)``:

* ``metric-learn``: ``validation.peers.metric_learn_lmnn`` (metric-learn 0.7.0,
  ``regularization = 1 - mu``, linear hinge);
* ``pylmnn``: ``validation.peers.pylmnn_lmnn`` (PyLMNN 1.6.4, ``weight_push_loss = mu``,
  squared hinge);
* ``lmnn-sdp-fast``: ``fast_solver.LMNN(k=k, mu=mu)`` with its defaults, for comparison.

A case's gap is ``(eps(M) - lower) / eps(M)``: eps of eq. 14 at the solver's metric on the
case's own target neighbours (linear hinge), ``lower`` the case's certified lower bound; it is
at least the metric's relative excess over the optimum. The peers pick their own target
neighbours and PyLMNN minimises a squared hinge, so a peer's gap says how far its answer is
from the optimum of eq. 14, not that it has a bug. Both peers run through the shims of
``validation.peers`` (``pip install -e ".[peers]"``).

The rows (one per solver and case) are the record ``docs/results/peers-check.md`` and
``.csv``, rewritten after every case; the summary per solver (cases within tolerance,
median and largest gap, the worst case) is ``peers-check-summary`` (``--record NAME`` names
them ``NAME`` and ``NAME-summary``, ``--no-record`` skips them). Exit status 1 when our
solver misses a case's tolerance, 2 when a peer is not installed.

    python -m validation.benchmarks.peers_check [--solvers metric-learn pylmnn lmnn-sdp-fast]
        [--tolerance 1e-6] [--record NAME | --no-record]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import warnings

import numpy as np

import fast_solver
from lmnn_sdp.testing import check_lmnn_solver, corpus_cases
from validation import peers
from validation.records import Recorder, add_record_option, module_command


def fast_lmnn(X, y, k: int, mu: float) -> fast_solver.LMNN:
    """``fast_solver.LMNN(k=k, mu=mu)`` fitted on ``X`` (n, d), ``y`` (n,)."""
    return fast_solver.LMNN(k=k, mu=mu).fit(X, y)


SOLVERS = {"metric-learn": peers.metric_learn_lmnn, "pylmnn": peers.pylmnn_lmnn,
           "lmnn-sdp-fast": fast_lmnn}  # (X, y, k, mu) -> a fitted estimator with components_
DISTRIBUTIONS = {"metric-learn": "metric-learn", "pylmnn": "PyLMNN", "lmnn-sdp-fast": "lmnn-sdp"}
OURS = "lmnn-sdp-fast"
COLUMNS = ("solver", "case", "gap", "passed", "objective", "lower", "tolerance", "n_iter",
           "max_iter", "seconds", "error", "warnings")
SUMMARY_COLUMNS = ("solver", "cases", "within_tolerance", "errors", "median_gap", "max_gap",
                   "worst_case", "seconds")
FORMATS = {"gap": ".3g", "objective": ".8g", "lower": ".8g", "tolerance": ".2g", "seconds": ".2f",
           "median_gap": ".3g", "max_gap": ".3g"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solvers", nargs="+", choices=list(SOLVERS), default=list(SOLVERS))
    parser.add_argument("--tolerance", type=float, default=1e-6,
                        help="largest gap that passes (raised to a case's stored gap)")
    add_record_option(parser, "peers-check")
    args = parser.parse_args(argv)
    cases = corpus_cases(tolerance=args.tolerance)
    missing = missing_solvers(args.solvers, min(cases, key=lambda case: len(case.y)))
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 2
    command = module_command("validation.benchmarks.peers_check", argv)
    notes = protocol_notes(args.solvers, len(cases), args.tolerance)
    record = Recorder(args.record, "LMNN solvers of other libraries through check_lmnn_solver",
                      notes=notes, command=command, columns=COLUMNS, formats=FORMATS)
    record_summary = Recorder(args.record and f"{args.record}-summary",
                              "LMNN solvers of other libraries through check_lmnn_solver: summary",
                              notes=notes, command=command, columns=SUMMARY_COLUMNS, formats=FORMATS)
    rows = []
    for solver in args.solvers:
        for case in cases:
            rows.append(check_case(solver, case))
            record(rows)
            print(f"{rows[-1]['solver']:22s} {case.id:34s} gap {rows[-1]['gap']:9.3g}", flush=True)
    summary = summarise(rows)
    record_summary(summary)
    for row in summary:
        print(f"{row['solver']}: {row['within_tolerance']} of {row['cases']} cases within tolerance, "
              f"median gap {row['median_gap']:.3g}, largest {row['max_gap']:.3g} ({row['worst_case']})")
    ours = [row for row in rows if row["solver"] == label(OURS) and not row["passed"]]
    return 1 if ours else 0


def check_case(solver: str, case) -> dict:
    """One row: ``check_lmnn_solver``'s row of ``solver`` on ``case``, with the solver's name
    and version, its iterations and iteration budget (``n_iter_``, ``max_iter``) and the
    warnings its fit raised (deprecations left out)."""
    fitted = []

    def fit(X, y, k, mu):
        fitted.append(SOLVERS[solver](X, y, k, mu))
        return metric_of(fitted[-1])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        row = check_lmnn_solver(fit, cases=[case]).rows[0]
    raised = dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught
                           if not issubclass(w.category, (DeprecationWarning, FutureWarning)))
    n_iter, max_iter = (fitted[0].n_iter_, fitted[0].max_iter) if fitted else (None, None)
    return {**row, "solver": label(solver), "n_iter": n_iter, "max_iter": max_iter,
            "warnings": list(raised)}


def metric_of(estimator) -> np.ndarray:
    """A fitted estimator's metric (d, d), as ``check_lmnn_solver`` reads an estimator's:
    ``get_mahalanobis_matrix()``, else ``metric_``, else ``L^T L`` of ``components_``."""
    if hasattr(estimator, "get_mahalanobis_matrix"):
        return estimator.get_mahalanobis_matrix()
    if hasattr(estimator, "metric_"):
        return estimator.metric_
    return estimator.components_.T @ estimator.components_


def summarise(rows: list[dict]) -> list[dict]:
    """Per solver (in the order of ``rows``): cases, how many within tolerance, how many
    without a gap (an error), the median and largest gap over the others, the case of the
    largest, and the solver's seconds over all cases."""
    summary = []
    for solver in dict.fromkeys(row["solver"] for row in rows):
        mine = [row for row in rows if row["solver"] == solver]
        measured = [row for row in mine if np.isfinite(row["gap"])]
        gaps = np.array([row["gap"] for row in measured])
        worst = max(measured, key=lambda row: row["gap"])["case"] if measured else ""
        summary.append({
            "solver": solver, "cases": len(mine), "within_tolerance": sum(row["passed"] for row in mine),
            "errors": len(mine) - len(measured),
            "median_gap": float(np.median(gaps)) if measured else np.nan,
            "max_gap": float(gaps.max()) if measured else np.nan, "worst_case": worst,
            "seconds": float(np.nansum([row["seconds"] for row in mine]))})
    return summary


def missing_solvers(solvers, case) -> list[str]:
    """Why each solver of ``solvers`` cannot run (``peers.PeerMissing``), found by fitting
    ``case``; empty when all run."""
    missing = []
    for solver in solvers:
        try:
            SOLVERS[solver](case.X, case.y, case.k, case.mu)
        except peers.PeerMissing as error:
            missing.append(str(error))
    return missing


def label(solver: str) -> str:
    """``solver`` with the installed version of its distribution, e.g. ``pylmnn 1.6.4``."""
    return f"{solver} {importlib.metadata.version(DISTRIBUTIONS[solver])}"


def protocol_notes(solvers, n_cases: int, tolerance: float) -> str:
    """The record's notes: protocol, parameter mapping, shims and package versions."""
    versions = ", ".join(f"{name} {importlib.metadata.version(name)}"
                         for name in ("scikit-learn", "scipy", "cvxpy"))
    shims = "; ".join(f"{solver}: {peers.SHIMS[solver]}" for solver in solvers if solver in peers.SHIMS)
    return (f"`check_lmnn_solver` on the {n_cases} LMNN cases of the certified corpus, tolerance "
            f"{tolerance:g} (raised to a case's stored gap). `gap` is (eps(M) - lower) / eps(M): eps "
            "of eq. 14 at the solver's metric on the case's target neighbours (linear hinge), "
            "`lower` the case's certified lower bound. metric-learn gets `regularization = 1 - mu` "
            "(it weighs the pull term), PyLMNN `weight_push_loss = mu` (it minimises a squared "
            "hinge), both `n_neighbors = k`, `random_state=0` and otherwise their defaults; both "
            "pick their own target neighbours. `lmnn-sdp-fast` is `fast_solver.LMNN(k=k, mu=mu)`. "
            f"Shims (`validation.peers`): {shims or 'none'}. `seconds`: the solver's fit; "
            f"`n_iter` of `max_iter`: the solver's iterations and budget (metric-learn counts from 1 and "
            f"stops at `max_iter - 1`); `warnings`: those its fit raised, deprecations left out. "
            f"{versions}.")


if __name__ == "__main__":
    sys.exit(main())
