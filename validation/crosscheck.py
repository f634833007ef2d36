"""Cross-check: every fast solver against the certified exact optimum.

For each instance (``validation.instances``: the built-in suite, and the medium
real-data instances when their data is fetched) and each fast solver (LMNN, and
multi-metric LMNN with one metric per class, sec. 5.2) the fast solver runs
exactly as it runs at scale and proves its own gap; then ``lmnn_sdp`` solves the
same problem exactly (aggregated active sets started from the fast metric, so
medium instances certify in seconds) with its own, independent certificate. An
instance passes when

* the exact side's own lower bound proves the fast objective within ``tol`` (relative)
  of the optimum, independently of the fast solver's bound (the exact solver is asked
  for ``EXACT_TOL``, and usually gets it; where a cluster's pull matrix is singular the
  optimum is approached only as that metric grows without bound, and its primal stops
  short: digits PCA-8, 100 points, class metrics, exact gap 2.3e-7 while both sides'
  objectives agree to 9e-9),
* the fast solver says converged and its own certified gap is at most ``tol``,
* its objective is within ``tol`` (relative) of the exact objective, and
* neither side's bounds contradict the other's (a fast objective below the exact
  lower bound, or a fast lower bound above the exact optimum, would mean a
  broken objective or bound).

Where eq. 14's float64 rounding at the exact optimum alone exceeds ``tol`` (metrics that
grow along singular pull matrices: digits PCA-8, 100 points, class metrics, rounding 1e-3
of the optimum), no optimum is provable to ``tol``; such a row passes when neither side
claims it, the bounds are consistent and the objectives agree within both rounding
bounds, and the summary names it.

MMC (Xing et al. 2002; ``--solvers mmc mmc-diagonal``) depends on the inputs and labels
only, so it runs once per distinct data set of at most ``MAX_N`` points (the exact side
forms every label pair in cvxpy): ``fast_solver.solve_mmc_fast`` against
``lmnn_sdp.solve_mmc``, judged as above; the difference is relative to the optimum for the
full metric and absolute for the diagonal one (its gap is absolute: Xing's objective has a
logarithm and may be near zero).

Energy-based classification (eq. 15, ``--solvers energy``) is checked against the
brute force of ``validation.energy_reference`` instead: with the fast solver's
certified metric, the energies of ``ENERGY_POINTS`` of the instance's points under
every label must agree to ``ENERGY_RTOL``, on instances of at most ``MAX_N`` points
(the medium ones took minutes each in the Python loops of the brute force).

A Ctrl-C stops the run: the worker processes (``jobs`` > 1) ignore SIGINT, which a terminal
sends to the whole process group, so this process alone takes it, ends the workers through
joblib and raises ``Interrupted`` with the rows finished; ``write_report`` writes those as the
record ``crosscheck-partial``, which says what is missing.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from tqdm import tqdm as std_tqdm
from tqdm.auto import tqdm

import fast_solver
from lmnn_sdp import LMNNProblem, solve_lmnn, solve_mm_lmnn, solve_mmc
from lmnn_sdp.certificates.bounds import significant
from validation.energy_reference import energies_by_loops
from validation.instances import Instance, builtin_instances
from validation.interrupts import sigint_ignored
from validation.records import write_record, write_text_atomic

EXACT_TOL = 1e-7  # the reference is certified well inside the cross-check tolerance
FAST_SOLVERS: dict[str, Callable[[LMNNProblem, float], fast_solver.FastLMNNResult]] = {
    "lmnn": lambda problem, tol: fast_solver.solve(problem, tol=tol),
    "multi-metric": lambda problem, tol: fast_solver.solve(problem, clusters=problem.label_codes, tol=tol),
}
ENERGY_POINTS = 12  # test points per instance for the brute force of eq. 15
ENERGY_RTOL = 1e-9  # both sides compute eq. 15 exactly; only rounding may differ
MMC_SOLVERS = ("mmc", "mmc-diagonal")
MAX_N = {  # the largest instance (points) each check runs on; a solver not named runs on all
    "energy": 500,  # the brute force loops over every triplet in Python: built-in sizes only
    "mmc": 300,  # the exact side forms all label pairs in cvxpy (Ionosphere, n = 351: 10 minutes)
    "mmc-diagonal": 300,
    "multi-metric": 300,  # the exact side: letters' 26 metrics took 200 s at n = 500, stalled at 750
}
DEFAULT_SOLVERS = ("lmnn", "multi-metric", "mmc", "mmc-diagonal", "energy")
EXACT_SOLVERS: dict[str, Callable] = {  # (problem, fast result) -> certified exact result
    "lmnn": lambda problem, fast: solve_lmnn(problem, method="aggregated", start=fast.metric,
                                             tol=EXACT_TOL),
    "multi-metric": lambda problem, fast: solve_mm_lmnn(problem, method="aggregated",
                                                        start=fast.metric, tol=EXACT_TOL),
}
SOLVERS = (*FAST_SOLVERS, *MMC_SOLVERS, "energy")  # what --solvers accepts
COLUMNS = ("instance", "solver", "n", "d", "k", "mu", "triplets", "exact_optimum", "exact_gap",
           "fast_objective", "fast_gap", "converged", "relative_difference", "exact_seconds",
           "fast_seconds", "passed")
RECORD_COLUMNS = (*COLUMNS, "unprovable_in_float64")  # the record's: the console table's and the row's kind
FLOATS = ("exact_optimum", "exact_gap", "fast_objective", "fast_gap", "relative_difference", "exact_seconds",
          "fast_seconds")


class Interrupted(KeyboardInterrupt):
    """A cross-check stopped by Ctrl-C: ``rows`` are the rows finished, in order, of ``total``.
    A KeyboardInterrupt, so that a caller who does not look for it stops as before (and
    ``except Exception`` does not swallow it)."""

    def __init__(self, rows: list[dict], total: int):
        super().__init__(f"interrupted: {len(rows)} of {total} rows finished")
        self.rows, self.total = rows, total


def crosscheck(instances: list[Instance] | None = None, solvers=DEFAULT_SOLVERS,
               tol: float = 1e-6, jobs: int = 1, progress: bool = True) -> list[dict]:
    """One row per (instance, fast solver); see ``COLUMNS``. ``jobs`` is joblib's ``n_jobs``
    (1: the rows run in this process; -1: a worker process per core). On Ctrl-C the workers
    are ended and ``Interrupted`` is raised with the rows finished."""
    unknown = set(solvers) - set(SOLVERS)
    if unknown:
        raise ValueError(f"unknown fast solver(s) {sorted(unknown)}; choose from {sorted(SOLVERS)}.")
    instances = builtin_instances() if instances is None else instances
    mmc_data = distinct_data(instances, MAX_N["mmc"])
    tasks = [delayed(check_instance)(instance, name, tol) for instance in instances for name in solvers
             if len(instance.X) <= MAX_N.get(name, np.inf)
             and (name not in MMC_SOLVERS or any(instance is other for other in mmc_data))]
    rows, outputs = [], None
    with tqdm(total=len(tasks), desc="cross-check", disable=not progress) as bar:
        try:
            with sigint_ignored():  # the workers start now, with SIGINT ignored
                outputs = Parallel(n_jobs=jobs, return_as="generator", initializer=_start_worker)(tasks)
            for row in outputs:
                rows.append(row)
                bar.update()
        except KeyboardInterrupt:
            _stop(outputs)
            raise Interrupted(rows, len(tasks)) from None
    return rows


def _start_worker() -> None:
    """In each worker process: SIGINT ignored (the workers started under ``sigint_ignored``
    begin so; this covers one joblib starts later), and tqdm's lock a thread lock: its
    default, a multiprocessing lock, is a named semaphore that a worker ended mid-task leaves
    behind, and the resource tracker then warns of it on stderr."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    std_tqdm.set_lock(threading.RLock())


def _stop(outputs) -> None:
    """End joblib's output generator where it waits, if it has not ended: joblib then stops
    the tasks and the workers as after a task's error (closing it instead would warn of
    tasks cancelled)."""
    if outputs is not None:
        with contextlib.suppress(KeyboardInterrupt):
            outputs.throw(KeyboardInterrupt)


def distinct_data(instances: list[Instance], max_n: int) -> list[Instance]:
    """The first instance of each distinct ``(X, y)`` with at most ``max_n`` points."""
    seen, kept = set(), []
    for instance in instances:
        key = (instance.X.shape, instance.X.tobytes(), np.asarray(instance.y).tobytes())
        if len(instance.X) <= max_n and key not in seen:
            seen.add(key)
            kept.append(instance)
    return kept


def check_instance(instance: Instance, solver: str, tol: float) -> dict:
    """Run one fast solver on ``instance``, then certify the exact optimum."""
    if solver == "energy":
        return check_energy(instance, tol)
    if solver in MMC_SOLVERS:
        return check_mmc(instance, solver == "mmc-diagonal", tol)
    problem = instance.problem()
    start = time.perf_counter()
    fast = FAST_SOLVERS[solver](problem, tol)
    fast_seconds = time.perf_counter() - start
    start = time.perf_counter()
    exact = EXACT_SOLVERS[solver](problem, fast)
    exact_seconds = time.perf_counter() - start
    difference = (fast.upper - exact.upper) / max(abs(exact.upper), 1e-12)
    f, e = fast.certificate, exact.certificate  # bounds hold within their rounding bounds
    consistent = (f.upper + f.upper_error >= (e.lower - e.lower_error) * (1 - 1e-9)
                  and f.lower - f.lower_error <= (e.upper + e.upper_error) * (1 + 1e-9))
    proved = fast.upper - exact.lower <= tol * abs(fast.upper)
    passed = (proved and fast.converged and fast.relative_gap <= tol
              and abs(difference) <= tol and consistent)
    # where eq. 14's float64 rounding at the exact optimum alone exceeds tol, no optimum is
    # provable to tol: the row asks that neither side claim and that they agree within rounding
    unprovable = not exact.certified and e.upper_error > tol * abs(exact.upper)
    if unprovable:
        rounding = e.upper_error + f.upper_error
        passed = (consistent and not fast.converged
                  and abs(fast.upper - exact.upper) <= tol * abs(exact.upper) + rounding)
    return {
        "instance": instance.name, "solver": solver, "n": problem.n_samples,
        "d": problem.n_features, "k": problem.k, "mu": problem.mu,
        "triplets": problem.n_triplets, "exact_optimum": exact.upper,
        "exact_gap": exact.relative_gap, "fast_objective": fast.upper, "fast_gap": fast.relative_gap,
        "converged": fast.converged, "relative_difference": difference,
        "exact_seconds": exact_seconds, "fast_seconds": fast_seconds, "passed": bool(passed),
        "unprovable_in_float64": bool(unprovable),
    }


def check_energy(instance: Instance, tol: float) -> dict:
    """Eq. 15 with the fast solver's certified metric against ``energies_by_loops``."""
    problem = instance.problem()
    start = time.perf_counter()
    fast = fast_solver.solve(problem, tol=tol)
    points = problem.X[np.unique(np.linspace(0, problem.n_samples - 1, ENERGY_POINTS).astype(int))]
    energy = fast_solver.energies(problem.X, problem.y, problem.targets, problem.mu, fast.metric, points)
    fast_seconds = time.perf_counter() - start
    start = time.perf_counter()
    classes = len(problem.classes)
    reference = energies_by_loops(problem.X, problem.label_codes, problem.targets, problem.mu,
                                  fast.metric[None], points, np.zeros(problem.n_samples, np.intp),
                                  np.zeros((len(points), classes), np.intp))
    difference = float(np.abs(energy - reference).max() / max(np.abs(reference).max(), 1e-300))
    passed = fast.converged and fast.relative_gap <= tol and difference <= ENERGY_RTOL
    return {
        "instance": instance.name, "solver": "energy", "n": problem.n_samples,
        "d": problem.n_features, "k": problem.k, "mu": problem.mu,
        "triplets": problem.n_triplets, "exact_optimum": float(reference.sum()), "exact_gap": 0.0,
        "fast_objective": float(energy.sum()), "fast_gap": fast.relative_gap,
        "converged": fast.converged, "relative_difference": difference,
        "exact_seconds": time.perf_counter() - start, "fast_seconds": fast_seconds,
        "passed": bool(passed), "unprovable_in_float64": False,
    }


def check_mmc(instance: Instance, diagonal: bool, tol: float) -> dict:
    """``solve_mmc_fast`` against ``solve_mmc`` on the label pairs of ``instance``."""
    start = time.perf_counter()
    fast = fast_solver.solve_mmc_fast(instance.X, instance.y, diagonal=diagonal, tol=tol)
    fast_seconds = time.perf_counter() - start
    start = time.perf_counter()
    exact = solve_mmc(instance.X, instance.y, diagonal=diagonal, tol=EXACT_TOL).certificate
    exact_seconds = time.perf_counter() - start
    scale = max(abs(exact.objective), 1.0) if diagonal else max(abs(exact.objective), 1e-12)
    difference = (fast.objective - exact.objective) / scale
    consistent = (fast.upper >= exact.lower - 1e-9 * scale
                  and fast.lower <= exact.upper + 1e-9 * scale)
    passed = (exact.certified and fast.converged and fast.relative_gap <= tol
              and abs(difference) <= tol and consistent)
    return {
        "instance": instance.name, "solver": "mmc-diagonal" if diagonal else "mmc",
        "n": len(instance.X), "d": instance.X.shape[1], "k": None, "mu": None,
        "triplets": None, "exact_optimum": exact.objective, "exact_gap": exact.relative_gap,
        "fast_objective": fast.objective, "fast_gap": fast.relative_gap,
        "converged": fast.converged, "relative_difference": difference,
        "exact_seconds": exact_seconds, "fast_seconds": fast_seconds, "passed": bool(passed),
        "unprovable_in_float64": False,
    }


def summary(rows: list[dict], tol: float) -> str:
    """Worst difference, worst gaps, time, failures."""
    failed = [f"{r['instance']} ({r['solver']})" for r in rows if not r["passed"]]
    worst = max(rows, key=lambda r: abs(r["relative_difference"]))
    lines = [
        f"{len(rows) - len(failed)} of {len(rows)} passed (tolerance {tol:g} relative)",
        f"worst relative difference {significant(worst['relative_difference'])} ({worst['instance']}, "
        f"{worst['solver']}); worst fast certified gap {significant(max(r['fast_gap'] for r in rows))}; "
        f"worst exact certified gap {significant(max(r['exact_gap'] for r in rows))}",
        f"fast solver {sum(r['fast_seconds'] for r in rows):.1f} s, "
        f"exact {sum(r['exact_seconds'] for r in rows):.1f} s in all",
    ]
    unprovable = [f"{r['instance']} ({r['solver']})" for r in rows if r["unprovable_in_float64"]]
    if unprovable:
        lines.append(f"not provable to tol in float64 (eq. 14's rounding at the optimum exceeds it; "
                     f"judged by agreement within rounding and no claim): {', '.join(unprovable)}")
    if failed:
        lines.append(f"FAILED: {', '.join(failed)}")
    return "\n".join(lines)


def write_report(rows: list[dict], directory: Path, tol: float, total: int | None = None) -> list[Path]:
    """The record ``crosscheck`` in ``directory``: ``crosscheck.md`` and ``crosscheck.csv``
    (``validation.records.write_record``, the summary above the table) and ``crosscheck.json``
    (every row, with the tolerance); returns the three paths.

    With ``total``, the rows are those of a run interrupted after ``len(rows)`` of ``total``
    rows: the record is ``crosscheck-partial`` instead (a full record there stays as it was),
    its title and first note say what is missing, and its JSON has ``"partial": true`` and
    ``"total"``."""
    name, title = "crosscheck", "Cross-check: fast solvers against the certified exact optimum"
    fields = {"tolerance": tol}
    notes = "\n".join(f"- {line}" for line in summary(rows, tol).splitlines())
    if total is not None:
        name, title = "crosscheck-partial", f"{title} (partial: {len(rows)} of {total} rows)"
        fields.update(partial=True, total=total)
        notes = (f"- PARTIAL: interrupted (Ctrl-C) after {len(rows)} of {total} rows; the others "
                 f"are missing, and the lines below are of the {len(rows)} finished only\n{notes}")
    js = write_text_atomic(Path(directory) / f"{name}.json", json.dumps({**fields, "rows": rows}, indent=1))
    md, csv = write_record(name, rows, title=title, notes=notes, columns=RECORD_COLUMNS,
                           formats=dict.fromkeys(FLOATS, ".6g"), directory=directory)
    return [md, csv, js]
