"""Other libraries' LMNN checked through files only: mlpack, PyLMNN and metric-learn via check-solver.

The protocol of ``lmnn-sdp corpus export`` and ``lmnn-sdp check-solver``, run as a solver in
another language would run it:

1. ``lmnn-sdp corpus export`` writes the certified corpus into a new folder;
2. each solver runs in its own process (``python -m validation.benchmarks.peers_through_files
   solve SOLVER CORPUS OUT``) that reads every LMNN case from the exported files (``case.json``
   for ``k`` and ``mu``, ``X.npy``, ``y.npy``) and writes one metric file per case into OUT,
   each in another of the accepted forms: mlpack 4.8's binding (``validation.peers.fit_mlpack``:
   L-BFGS, ``regularization = mu``) ``CASE.csv`` (M), PyLMNN 1.6.4 (``peers.pylmnn_lmnn``)
   ``CASE.L.npy`` (L), metric-learn 0.7.0 (``peers.metric_learn_lmnn``) ``CASE.L.csv`` (L);
3. ``lmnn-sdp check-solver --corpus CORPUS --metrics OUT --kind lmnn --report ...`` scores them,
   in a process of its own.

Each row is check-solver's (gap, objective, bound, result) with the solver's fit time, and
``api_gap``: the gap ``lmnn_sdp.testing.check_lmnn_solver`` gives on the shipped case for the
metric read from the same file here (``np.load`` / ``np.loadtxt``, ``M = L^T L``), with their
relative difference. The rows are the record ``docs/results/peers-through-files``, the summary per
solver ``peers-through-files-summary`` (``--record NAME`` names them ``NAME`` and
``NAME-summary``, ``--no-record`` skips them). Exit status 1 when check-solver and the Python API
differ by more than 1e-9 relative on any case, 2 when a peer is not installed.

    python -m validation.benchmarks.peers_through_files [--solvers mlpack pylmnn metric-learn] [--record NAME | --no-record]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from lmnn_sdp import LMNNProblem
from lmnn_sdp.certificates.bounds import significant
from lmnn_sdp.testing import check_lmnn_solver, corpus_cases
from validation import peers
from validation.benchmarks.peers_check import summarise
from validation.records import Recorder, add_record_option, module_command, read_record

MODULE = "validation.benchmarks.peers_through_files"
AGREEMENT = 1e-9  # largest relative difference between check-solver's gap and the Python API's
SOLVERS = {"mlpack": ("mlpack", ".csv"), "pylmnn": ("PyLMNN", ".L.npy"), "metric-learn": ("metric-learn", ".L.csv")}
COLUMNS = ("solver", "case", "gap", "result", "objective", "bound", "tolerance", "file", "seconds", "api_gap",
           "api_difference")
SUMMARY_COLUMNS = ("solver", "cases", "within_tolerance", "errors", "median_gap", "max_gap", "worst_case",
                   "seconds", "check_solver_seconds", "max_api_difference")
FORMATS = {"gap": ".6g", "objective": ".8g", "bound": ".8g", "tolerance": ".2g", "seconds": ".2f",
           "api_gap": ".6g", "api_difference": ".2g", "median_gap": ".3g", "max_gap": ".6g",
           "check_solver_seconds": ".1f", "max_api_difference": ".2g"}  # 6 digits: 0.999997 is not 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    solve_parser = commands.add_parser("solve", help="one solver on the exported files (its own process)")
    solve_parser.add_argument("solver", choices=list(SOLVERS))
    solve_parser.add_argument("corpus", type=Path)
    solve_parser.add_argument("out", type=Path)
    parser.add_argument("--solvers", nargs="+", choices=list(SOLVERS), default=list(SOLVERS))
    add_record_option(parser, "peers-through-files")
    args = parser.parse_args(argv)
    if args.command == "solve":
        return solve(args.solver, args.corpus, args.out)
    smallest = min(corpus_cases(), key=lambda case: len(case.y))
    missing = [error for error in (_missing(solver, smallest) for solver in args.solvers) if error]
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 2
    return run(args.solvers, args.record, module_command(MODULE, argv))


def run(solvers: list[str], record_name: str, command: str) -> int:
    """Export, solve in a process per solver, check-solver in another; write the records."""
    load = os.getloadavg()[0]
    shipped = {case.id: case for case in corpus_cases()}
    rows, check_seconds = [], {}
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "corpus"
        start = time.perf_counter()
        _lmnn_sdp("corpus", "export", str(corpus))
        exported = time.perf_counter() - start
        print(f"exported in {exported:.1f} s (with interpreter start)", flush=True)
        notes = protocol_notes(solvers, load, exported, len(shipped))
        record = Recorder(record_name, "LMNN solvers of other libraries through files and check-solver",
                          notes=notes, command=command, columns=COLUMNS, formats=FORMATS)
        for solver in solvers:
            out = Path(folder) / solver
            seconds = json.loads(_python("-m", MODULE, "solve", solver, str(corpus), str(out)).splitlines()[-1])
            start = time.perf_counter()
            report = Path(folder) / f"{solver}-check"
            _lmnn_sdp("check-solver", "--corpus", str(corpus), "--metrics", str(out), "--kind", "lmnn",
                      "--report", str(report), allowed=(0, 1))
            check_seconds[label(solver)] = time.perf_counter() - start
            print(f"{solver}: check-solver {check_seconds[label(solver)]:.1f} s (with interpreter start)", flush=True)
            for checked in read_record(report.with_suffix(".csv"))[1]:
                rows.append(row(label(solver), checked, seconds[checked["case"]], shipped[checked["case"]], out))
            record(rows)
    summary = [{**line, "check_solver_seconds": check_seconds[line["solver"]],
                "max_api_difference": max(r["api_difference"] for r in rows if r["solver"] == line["solver"])}
               for line in summarise(rows)]
    Recorder(record_name and f"{record_name}-summary",
             "LMNN solvers of other libraries through files and check-solver: summary",
             notes=notes, command=command, columns=SUMMARY_COLUMNS, formats=FORMATS)(summary)
    for line in summary:
        print(f"{line['solver']}: {line['within_tolerance']} of {line['cases']} within tolerance, median gap "
              f"{significant(line['median_gap'])}, largest {significant(line['max_gap'])} ({line['worst_case']}); check-solver "
              f"against check_lmnn_solver: largest relative difference {line['max_api_difference']:.2g}")
    return 0 if all(r["api_difference"] <= AGREEMENT for r in rows) else 1


def row(solver: str, checked: dict, seconds: float, case, out: Path) -> dict:
    """One row: check-solver's, with the fit's seconds and the Python API's gap on the same file."""
    gap = float(checked["gap"])
    metric = read_back(out / checked["file"])
    api_gap = check_lmnn_solver(lambda X, y, k, mu: metric, cases=[case]).rows[0]["gap"]
    return {"solver": solver, "case": checked["case"], "gap": gap, "result": checked["result"],
            "passed": checked["result"] == "pass", "objective": float(checked["objective"]),
            "bound": float(checked["bound"]), "tolerance": float(checked["tolerance"]), "file": checked["file"],
            "seconds": seconds, "api_gap": api_gap, "api_difference": abs(gap - api_gap) / api_gap}


def read_back(path: Path) -> np.ndarray:
    """The metric M of a metric file, read here as a Python user would (not by check-solver's code)."""
    array = np.load(path) if path.suffix == ".npy" else np.loadtxt(path, delimiter=",", ndmin=2)
    return array.T @ array if path.name.endswith((".L.npy", ".L.csv")) else array


def solve(solver: str, corpus: Path, out: Path) -> int:
    """Fit ``solver`` on every LMNN case of the exported ``corpus`` from its files alone and write
    its metric files into the new folder ``out``; prints ``{case: seconds}`` as JSON."""
    out.mkdir()
    seconds = {}
    for entry in json.loads((corpus / "index.json").read_text())["cases"]:
        if entry["kind"] != "lmnn":
            continue
        folder = corpus / entry["id"]
        problem = json.loads((folder / "case.json").read_text())["problem"]
        X, y = np.load(folder / "X.npy"), np.load(folder / "y.npy")
        start = time.perf_counter()
        fitted = fit(solver, X, y, problem["k"], problem["mu"])
        seconds[entry["id"]] = time.perf_counter() - start
        path = out / f"{entry['id']}{SOLVERS[solver][1]}"
        if path.suffix == ".npy":
            np.save(path, fitted)
        else:
            np.savetxt(path, fitted, delimiter=",", fmt="%.17g")
    print(json.dumps(seconds))
    return 0


def fit(solver: str, X: np.ndarray, y: np.ndarray, k: int, mu: float) -> np.ndarray:
    """The array ``solver`` writes: mlpack's M (d, d), PyLMNN's and metric-learn's L (d, d)."""
    if solver == "mlpack":
        return peers.fit_mlpack(LMNNProblem(X, y, k=k, mu=mu))
    if solver == "pylmnn":
        return peers.pylmnn_lmnn(X, y, k, mu).components_
    return peers.metric_learn_lmnn(X, y, k, mu).components_


def label(solver: str) -> str:
    """``solver`` with the installed version of its distribution, e.g. ``mlpack 4.8.0``."""
    return f"{solver} {importlib.metadata.version(SOLVERS[solver][0])}"


def protocol_notes(solvers: list[str], load: float, exported: float, cases: int) -> str:
    """The record's notes: protocol, files, parameter mapping, versions, the load at the start,
    the seconds of the export and the number of LMNN ``cases``."""
    files = "; ".join(f"{solver}: `CASE{SOLVERS[solver][1]}`" for solver in solvers)
    return (f"`lmnn-sdp corpus export`, then each solver in its own process reading the exported files of "
            f"the {cases} LMNN cases (`case.json`, `X.npy`, `y.npy`) and writing one metric file per case "
            f"({files}), then `lmnn-sdp check-solver --kind lmnn` in another. `gap` is check-solver's, "
            "(eps(M) - bound) / eps(M) against the case's certified lower bound, eq. 14 on the case's "
            "targets (linear hinge); `api_gap` is `check_lmnn_solver`'s on the shipped case for the metric "
            "read from the same file, `api_difference` their relative difference (at most "
            f"{AGREEMENT:g} required). mlpack: `mlpack.lmnn` (L-BFGS, `k`, `regularization = mu`; "
            "its hinge runs over each point's k nearest impostors only); PyLMNN `weight_push_loss = mu` "
            "(squared hinge); metric-learn `regularization = 1 - mu`; all pick their own targets, "
            "shims of `validation.peers`. `seconds`: the fit; `check_solver_seconds`: the check-solver "
            f"process, interpreter start included (the export's: {exported:.1f} s). Load average {load:.2f} "
            "at the start (2 cores). "
            + ", ".join(f"{name} {importlib.metadata.version(name)}"
                        for name in ("scikit-learn", "scipy", "cvxpy")) + ".")


def _missing(solver: str, case) -> str:
    """Why ``solver`` cannot run here (found by fitting ``case``), or ""."""
    try:
        fit(solver, case.X, case.y, case.k, case.mu)
    except peers.PeerMissing as error:
        return str(error)
    return ""


def _lmnn_sdp(*args: str, allowed=(0,)) -> str:
    return _python("-m", "validation", *args, allowed=allowed)


def _python(*args: str, allowed=(0,)) -> str:
    """``python ARGS`` in a new process; its stdout, or a RuntimeError with its stderr."""
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    if done.returncode not in allowed:
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done.stdout


if __name__ == "__main__":
    sys.exit(main())
