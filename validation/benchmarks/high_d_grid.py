"""Certified LMNN against PyLMNN and metric-learn over a grid of n x d: Fashion-MNIST in one run.

    python -m validation.benchmarks.high_d_grid [--n 10000 60000] [--d 32 64 164 300 784]
        [--solvers fast pylmnn metric-learn] [--tols 1e-2 1e-4 1e-6] [--budget SECONDS]
        [--max-iter N] [--data fashion | synthetic] [--record NAME | --no-record] [--resume]

Data (``python -m validation data fetch`` first). ``fashion``: pixels / 255, the first ``n``
training images, PCA to ``d`` dimensions fitted on them (``d = 784``: the raw pixels, no
PCA), the 10,000 test images through the same PCA for the test error, as
``validation.benchmarks.letters_fashion`` prepares fashion-10k. ``synthetic`` (for tests and
trial runs): ``sklearn.datasets.make_classification`` with ``n + n // 2`` points in ``d``
features, half of them informative, 3 classes (``random_state=0``), the last ``n // 2`` points
the test set. Each cell's arrays are prepared once and saved; every fit of the cell loads
the same arrays. k=3, mu=0.5 throughout.

Solvers, every fit in a fresh spawned process (``common.in_fresh_process``):

* ``fast``: ``fast_solver.solve(LMNNProblem(X, y, k=3, mu=0.5), tol=tol)``, one solve per
  ``tol`` of ``--tols``, loosest first, each stopped by its own certificate (``--max-iter``
  iterations at most, the solver's default 1000);
* ``pylmnn``: PyLMNN 1.6.4 through ``validation.peers.pylmnn_lmnn`` (its defaults,
  ``weight_push_loss = mu``, squared hinge, its own target neighbours);
* ``metric-learn``: metric-learn 0.7.0 through ``validation.peers.metric_learn_lmnn`` (its
  defaults, ``regularization = 1 - mu``, its own target neighbours).

Every fit gets ``--budget`` seconds of wall-clock time counted from the start of its process
(interpreter start-up and loading the cell's arrays, a few seconds, included); a process
still running then is killed and its row says so. Before the first fit of ours, a small solve
in a fresh process fills numba's cache (``common.compile_solver``), so that no fit's seconds
include compiling the solver's loops.

The record ``docs/results/high-d-grid.md`` and ``.csv`` (``--record NAME`` names it,
``--no-record`` skips it) has one row per cell, solver and target, rewritten after every
fit. Its columns:

* ``n``, ``d``: the cell.
* ``solver``: ``fast_solver``, the peer with its installed version, or ``Euclidean`` (no
  metric learned: only its 3-NN test error).
* ``target``: ``certified TOL`` (a solve of ours with ``tol = TOL``); ``own stop`` (a peer's
  fit with its own stopping rule); ``eq. 14 of PEER`` (our time to reach the peer's value,
  below).
* ``status``: ``certified`` (our certificate proves the relative gap at most ``tol``);
  ``not certified`` (our solve ended without that proof: ``max_iter`` spent or stalled,
  ``detail`` says which); ``finished`` (a peer's fit returned); ``not finished within
  budget`` (killed at ``--budget``); ``skipped`` (not tried, ``detail`` gives the reason and
  the measured cost it rests on); ``failed`` (the fit raised or its process died; ``detail``
  has the error); ``reached`` / ``not reached`` (rows ``eq. 14 of PEER``).
* ``seconds``: wall-clock seconds of the fit inside its process: from before
  ``LMNNProblem`` (our target-neighbour search included; the peers' own searches are inside
  their fits) to the returned result, the cell's arrays already loaded. Killed fits: seconds
  from the start of the process to the kill (the cost of trying). Rows ``eq. 14 of PEER``:
  seconds from the same start to the first improvement of the solve's upper bound
  (``FastLMNNResult.upper_path``: eq. 14 on the same ``LMNNProblem`` at the best metric so
  far, right after an exact search) to at most the peer's eq. 14 value, in the first of the
  cell's solves, tightest ``tol`` first, that reaches it; a killed solve has only its stage
  ends (why exact searches: ``docs/design/fast-lmnn-solver.md``, "Time to a peer's value").
* ``gap``: ours: the certified relative gap ``(upper - lower) / upper`` of the solve's
  certificate. A peer's: ``(eps(M_peer) - L) / eps(M_peer)`` with ``eps`` eq. 14 on our
  ``LMNNProblem`` at the peer's metric ``L^T L`` and ``L`` the largest certified lower bound
  of our solves in the cell (``lower``); at least its relative excess over the optimum.
* ``objective``: eq. 14 at the row's metric (ours: the certificate's upper bound; peers:
  ``LMNNProblem.objective``; rows ``eq. 14 of PEER``: that upper bound).
* ``lower``: ours: the solve's certified lower bound; peers: the bound their gap uses.
* ``peak_gib``: peak resident memory of the fit's process right after the fit (interpreter,
  libraries, the cell's training arrays and the fit; the test error is computed after);
  killed fits: the peak at the kill (``VmHWM``).
* ``error``: 3-NN test error in the learned space (``common.knn_error``).
* ``vs_pylmnn``, ``vs_metric_learn``: on our rows, the peer's fit seconds divided by the
  row's seconds, same run and cell (> 1: we are faster); ``certified TOL`` rows get both
  peers', ``eq. 14 of PEER`` rows that peer's only; empty unless both fits finished.
* ``n_iter``: iterations (ours), the peer's iterations (its ``n_iter_``).
* ``detail``: stages, searches and timings of our solve, the peer's iteration budget and
  warnings, the progress of a killed fit (our last stage: its end, eq. 14, estimated gap),
  the reason for a skip.
* ``commit``: the code version that measured the row (``records.code_version`` when its run
  started; the record's provenance names the same).

Resuming. ``--resume`` keeps every complete cell of the
record it writes (the rows the command would produce for that cell, Euclidean, each target of
ours and each requested peer, all present) and measures only the other cells, whole, so the
ratios in a cell always come from one run. Kept rows keep their ``commit`` (else the commit
of the record's first line).

Skips. A solve of ours to a tighter ``tol`` is skipped when the cell's solve to the next
looser ``tol`` was not certified (the tighter solve follows the same path further). A fit at
``n`` is skipped when the same solver and target at the same ``d`` and the next smaller
measured ``n`` was not finished within the budget (every solver touches every point in each
iteration), or, for a solver of ``GROWTH_IN_N`` (metric-learn), when its measured seconds
there times ``(n / n_smaller) ** exponent`` exceed the budget. The row names the measurement.

Growth exponents (the record ``NAME-growth``): for each solver and target, the slope of
log(seconds) against log(d) between consecutive values of ``d`` at each ``n``, and against
log(n) between consecutive values of ``n`` at each ``d`` (``growth_exponent``); with three or
more finished sizes, also the least-squares slope over all of them (``fitted_exponent``).
When the smaller size finished and the larger was killed at the budget, the killed fit's
seconds give a lower bound on the exponent (``kind``: ``at least``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import resource
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lmnn_sdp.core.machine import THREAD_VARIABLES, available_cores
from validation import peers, records
from validation.benchmarks.common import ProcessTimeout, compile_solver, growth_exponent, in_fresh_process, knn_error
from validation.records import Recorder, add_record_option, code_version, module_command, read_record, write_text_atomic

MODULE = "validation.benchmarks.high_d_grid"
K, MU = 3, 0.5
FASHION_TRAIN, FASHION_PIXELS = 60_000, 784
SOLVERS = ("fast", "pylmnn", "metric-learn")
PEER_FITS = {"pylmnn": peers.pylmnn_lmnn, "metric-learn": peers.metric_learn_lmnn}
DISTRIBUTIONS = {"pylmnn": "PyLMNN", "metric-learn": "metric-learn"}
RATIO_COLUMNS = {"pylmnn": "vs_pylmnn", "metric-learn": "vs_metric_learn"}
GROWTH_IN_N = {"metric-learn": (2.0, "each objective evaluation forms the squared distances between every "
                                     "class and the points of the later classes "
                                     "(metric_learn.lmnn.LMNN._find_impostors): n^2 work and memory")}
OURS, EUCLIDEAN, OWN_STOP = "fast_solver", "Euclidean", "own stop"
CERTIFIED, NOT_CERTIFIED, FINISHED = "certified", "not certified", "finished"
OVER_BUDGET, SKIPPED, FAILED = "not finished within budget", "skipped", "failed"
REACHED, NOT_REACHED = "reached", "not reached"
DONE = (CERTIFIED, FINISHED)  # statuses whose seconds are a time to the row's target
COLUMNS = ("n", "d", "solver", "target", "status", "seconds", "gap", "objective", "lower", "peak_gib",
           "error", "vs_pylmnn", "vs_metric_learn", "n_iter", "detail", "commit")
INTEGER_COLUMNS, TEXT_COLUMNS = ("n", "d", "n_iter"), ("solver", "target", "status", "detail", "commit")
GROWTH_COLUMNS = ("solver", "target", "axis", "fixed", "from_size", "to_size", "exponent", "kind",
                  "from_s", "to_s")
FORMATS = {"seconds": ".1f", "gap": ".2e", "objective": ".8g", "lower": ".8g", "peak_gib": ".2f",
           "error": ".2%", "vs_pylmnn": ".2f", "vs_metric_learn": ".2f", "exponent": ".2f",
           "from_s": ".1f", "to_s": ".1f"}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grid (module docstring); exit status 1 when a fit of ours failed, 2 when a
    requested peer is not installed."""
    parser = _parser()
    args = parser.parse_args(argv)
    _check_arguments(parser, args)
    missing = missing_peers(args.solvers)
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 2
    command, notes = module_command(MODULE, argv), protocol_notes(args)
    version = code_version()  # the code measured, whatever the checkout holds by the end
    record = Recorder(args.record, "Certified LMNN against PyLMNN and metric-learn over n x d", notes=notes,
                      command=command, columns=COLUMNS, formats=FORMATS, version=version)
    record_growth = Recorder(args.record and f"{args.record}-growth",
                             "Certified LMNN against PyLMNN and metric-learn over n x d: growth exponents",
                             notes=notes, command=command, columns=GROWTH_COLUMNS, formats=FORMATS, version=version)
    print(f"machine: {available_cores()} cores available; wall-clock times; budget {args.budget:g} s a fit; "
          f"{_threads()}", flush=True)
    earlier = records.RESULTS / f"{args.record}.csv" if args.resume and args.record else None
    kept = complete_cells(read_rows(earlier), args.solvers, args.tols) if earlier and earlier.exists() else {}
    rows = run_grid(args.data, args.n, args.d, args.solvers, args.tols, args.budget, args.max_iter, record,
                    kept=kept, version=version)
    growth = growth_rows(rows)
    record_growth(growth)
    _print_growth(growth)
    return 1 if any(row["solver"] == OURS and row["status"] == FAILED for row in rows) else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", nargs="+", type=int, default=[10_000, 60_000], help="training points")
    parser.add_argument("--d", nargs="+", type=int, default=[32, 64, 164, 300, 784],
                        help="dimensions (PCA; 784: the raw pixels)")
    parser.add_argument("--solvers", nargs="+", choices=SOLVERS, default=list(SOLVERS))
    parser.add_argument("--tols", nargs="+", type=float, default=[1e-2, 1e-4, 1e-6],
                        help="certified relative gaps our solver is timed to")
    parser.add_argument("--budget", type=float, default=1800.0, help="seconds before a fit is killed")
    parser.add_argument("--max-iter", type=int, default=1000, help="iterations of our solver")
    parser.add_argument("--data", choices=("fashion", "synthetic"), default="fashion")
    add_record_option(parser, "high-d-grid")
    parser.add_argument("--resume", action="store_true",
                        help="keep the complete cells of the record and measure only the others")
    return parser


def _check_arguments(parser: argparse.ArgumentParser, args) -> None:
    """Sorted, distinct sizes and tolerances; a parser error naming the bad value."""
    args.n, args.d = sorted(set(args.n)), sorted(set(args.d))
    args.solvers, args.tols = list(dict.fromkeys(args.solvers)), sorted(set(args.tols), reverse=True)
    if args.n[0] < 2 * (K + 1) or args.d[0] < 2:
        parser.error(f"--n must be at least {2 * (K + 1)} and --d at least 2, got --n {args.n} --d {args.d}")
    if args.data == "fashion" and (args.n[-1] > FASHION_TRAIN or args.d[-1] > FASHION_PIXELS):
        parser.error(f"Fashion-MNIST has {FASHION_TRAIN} training images of {FASHION_PIXELS} pixels: --n at most "
                     f"{FASHION_TRAIN}, --d at most {FASHION_PIXELS}, got --n {args.n} --d {args.d}")
    if args.d[-1] > args.n[0] and args.d[-1] < FASHION_PIXELS and args.data == "fashion":
        parser.error(f"PCA to d={args.d[-1]} needs at least that many training points, got --n {args.n[0]}")
    if not all(0 < tol < 1 for tol in args.tols):
        parser.error(f"--tols must lie in (0, 1), got {args.tols}")
    if not (args.budget > 0 and math.isfinite(args.budget)):
        parser.error(f"--budget must be a positive number of seconds, got {args.budget}")
    if args.max_iter < 1:
        parser.error(f"--max-iter must be at least 1, got {args.max_iter}")
    if args.resume and not args.record:
        parser.error("--resume keeps the cells of the record it writes: give --record NAME, not --no-record")


def run_grid(data: str, ns: Sequence[int], ds: Sequence[int], solvers: Sequence[str], tols: Sequence[float],
             budget: float, max_iter: int, record=None, *, kept: dict | None = None,
             version: str | None = None) -> list[dict]:
    """Every cell of ``ns`` x ``ds``, smaller ``n`` first: the rows of the record.

    Parameters
    ----------
    data : {"fashion", "synthetic"}
        The data (module docstring).
    ns, ds : sequence of int
        Training points and dimensions, each increasing.
    solvers : sequence of str
        Of ``SOLVERS``; ``"fast"`` first when given, so that the peers' gaps have our bound.
    tols : sequence of float
        Certified gaps our solver is timed to, decreasing (loosest first).
    budget : float
        Seconds a fit may take (its process is killed then).
    max_iter : int
        iterations of our solver.
    record : callable, optional
        Called with all rows so far after every row (a ``Recorder``).
    kept : dict, optional
        Rows of cells measured before, by ``(n, d)`` (``complete_cells``): taken as they are,
        not measured again.
    version : str, optional
        The code version the new rows name (default: the checkout's when the run starts).

    Returns
    -------
    list of dict
        The rows (``COLUMNS`` and, on our rows, ``stages``: ``[seconds, upper, estimated gap,
        gamma, iterations]`` per stage, and on finished solves ``uppers``: ``[seconds,
        upper]`` per improvement of the upper bound).
    """
    rows: list[dict] = []
    version = version or code_version()
    solvers = sorted(solvers, key=SOLVERS.index)
    kept = kept or {}
    if "fast" in solvers and any((n, d) not in kept for n in ns for d in ds):
        compile_solver()
    with tempfile.TemporaryDirectory(prefix="high-d-grid-") as folder:
        for n in ns:
            for d in ds:
                cell = Cell(n, d, Path(folder), rows, record, version)
                if (n, d) in kept:
                    for row in kept[n, d]:
                        cell.add(row)
                    _print_cell(cell.rows)
                    continue
                euclidean = prepare_cell(data, n, d, cell.arrays)
                cell.add(_row(solver=EUCLIDEAN, target="no metric learned", status=FINISHED, error=euclidean))
                if "fast" in solvers:
                    run_ours(cell, tols, budget, max_iter)
                for solver in solvers:
                    if solver != "fast":
                        run_peer(cell, solver, budget)
                cell.arrays.unlink()
                _print_cell(cell.rows)
    return rows


class Cell:
    """One cell of the grid: its size, its arrays' file, its rows (also appended to ``rows``,
    all of them recorded after every row), each new one naming ``version``."""

    def __init__(self, n: int, d: int, folder: Path, rows: list[dict], record, version: str):
        self.n, self.d, self.folder, self.all_rows, self.record = n, d, folder, rows, record
        self.version = version
        self.arrays = folder / f"n{n}-d{d}.npz"
        self.rows: list[dict] = []

    def add(self, row: dict) -> dict:
        row = {**row, "n": self.n, "d": self.d, "commit": row.get("commit") or self.version}
        self.rows.append(row)
        self.all_rows.append(row)
        self.save()
        _print_row(row)
        return row

    def save(self) -> None:
        if self.record is not None:
            self.record(self.all_rows)


def run_ours(cell: Cell, tols: Sequence[float], budget: float, max_iter: int) -> None:
    """Our solves to each ``tol`` (loosest first), unless a skip rule applies."""
    looser = None
    for tol in tols:
        target = certified_target(tol)
        reason = tighter_skip_reason(looser) or size_skip_reason(cell.all_rows, OURS, target, cell.n, cell.d, budget)
        if reason:
            looser = cell.add(_row(solver=OURS, target=target, status=SKIPPED, detail=reason))
            continue
        progress = cell.folder / f"progress-n{cell.n}-d{cell.d}-{target.replace(' ', '-')}.json"
        measured = attempt(fit_ours, str(cell.arrays), tol, max_iter, str(progress), budget=budget,
                           progress=progress)
        looser = cell.add(_row(solver=OURS, target=target, **measured))


def run_peer(cell: Cell, solver: str, budget: float) -> None:
    """A peer's fit, its gap against our best certified bound, our time to its eq. 14 value and
    the same-run ratios on our rows."""
    name = peer_label(solver)
    reason = size_skip_reason(cell.all_rows, name, OWN_STOP, cell.n, cell.d, budget, GROWTH_IN_N.get(solver))
    if reason:
        cell.add(_row(solver=name, target=OWN_STOP, status=SKIPPED, detail=reason))
        measured = None
    else:
        measured = attempt(fit_peer, str(cell.arrays), solver, budget=budget)
        lower = best_lower(cell.rows)
        if measured.get("objective") is not None and lower is not None:  # killed or failed: no metric
            measured.update(lower=lower, gap=(measured["objective"] - lower) / measured["objective"])
        cell.add(_row(solver=name, target=OWN_STOP, **measured))
    if any(row["solver"] == OURS for row in cell.rows):
        cell.add(time_to_value(name, measured, cell.rows))
        add_ratios(cell.rows, solver, measured)
        cell.save()


def read_rows(path: Path) -> list[dict]:
    """The rows of a record's CSV with their types (``None`` for an empty cell); a row recorded
    before the ``commit`` column gets the commit of the record's first line."""
    line, raw = read_record(path)
    commit = line.split(" at commit ", 1)[1].split()[0] if " at commit " in line else "unknown"
    rows = []
    for row in raw:
        typed = _row(commit=commit)
        for column, text in row.items():
            if column not in typed or text == "":
                continue
            typed[column] = (text if column in TEXT_COLUMNS else int(text) if column in INTEGER_COLUMNS
                             else float(text))
        rows.append(typed)
    return rows


def complete_cells(rows: Sequence[dict], solvers: Sequence[str], tols: Sequence[float]) -> dict:
    """The cells of ``rows`` that hold every row the grid makes for ``solvers`` and ``tols``:
    ``{(n, d): those rows, in their order}`` (module docstring, "Resuming")."""
    wanted = {(EUCLIDEAN, "no metric learned")}
    if "fast" in solvers:
        wanted |= {(OURS, certified_target(tol)) for tol in tols}
    for solver in solvers:
        if solver != "fast":
            wanted.add((peer_label(solver), OWN_STOP))
            if "fast" in solvers:
                wanted.add((OURS, f"eq. 14 of {peer_label(solver)}"))
    cells: dict = {}
    for row in rows:
        if (row["solver"], row["target"]) in wanted:
            cells.setdefault((row["n"], row["d"]), []).append(row)
    return {cell: found for cell, found in cells.items()
            if {(row["solver"], row["target"]) for row in found} == wanted}


def certified_target(tol: float) -> str:
    """``"certified 1e-4"`` for ``tol = 1e-4``: the mantissa without trailing zeros, the exponent
    without padding."""
    mantissa, exponent = f"{tol:.6e}".split("e")
    return f"certified {mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def tighter_skip_reason(looser: dict | None) -> str | None:
    """Why a solve to a tighter tol is not tried after the cell's row ``looser`` (None: try)."""
    if looser is None or looser["status"] == CERTIFIED:
        return None
    if looser["status"] == SKIPPED:
        return f"the solve to {looser['target']} was skipped: {looser['detail']}"
    cost = f"{looser['seconds']:.1f} s" if looser["seconds"] is not None else "its cost unknown"
    return (f"the solve to {looser['target']} ended {looser['status']} ({cost}); a tighter tol takes the same "
            "path further")


def size_skip_reason(rows: Sequence[dict], solver: str, target: str, n: int, d: int, budget: float,
                     growth: tuple[float, str] | None = None) -> str | None:
    """Why ``solver``'s fit to ``target`` at ``(n, d)`` is not tried, from its row at the same
    ``d`` and the largest smaller measured ``n`` (module docstring, "Skips"); None: try it.

    Parameters
    ----------
    rows : sequence of dict
        The rows so far.
    solver, target : str
        The row's ``solver`` and ``target``.
    n, d : int
        The cell.
    budget : float
        Seconds a fit may take.
    growth : tuple of (float, str), optional
        An exponent of the solver's time in ``n`` and why; with it, a fit whose predicted
        seconds exceed the budget is skipped.

    Returns
    -------
    str or None
        The reason with the measurement it rests on, or None.
    """
    smaller = [row for row in rows if row["solver"] == solver and row["target"] == target and row["d"] == d
               and row["n"] < n and row["status"] != SKIPPED]
    if not smaller:
        return None
    last = max(smaller, key=lambda row: row["n"])
    peak = f", peak {last['peak_gib']:.2f} GiB" if last["peak_gib"] is not None else ""
    if last["status"] == OVER_BUDGET:
        return (f"at n={last['n']}, d={d} it was not finished within the budget of {budget:g} s (cost of trying: "
                f"{last['seconds']:.1f} s{peak}); its time grows with n")
    if growth is not None and last["status"] in DONE:
        exponent, why = growth
        predicted = last["seconds"] * (n / last["n"]) ** exponent
        if predicted > budget:
            return (f"predicted {predicted:.0f} s > budget {budget:g} s: measured {last['seconds']:.1f} s{peak} at "
                    f"n={last['n']}, d={d}, times (n / {last['n']})^{exponent:g}, as {why}")
    return None


def attempt(function, *args, budget: float, progress: Path | None = None) -> dict:
    """``function(*args)`` in a fresh process killed after ``budget`` seconds: its measured
    fields, or the row fields of a killed fit (seconds, peak memory, and from the JSON file
    ``progress`` the stages it finished) or of a failed one (the error)."""
    try:
        return in_fresh_process(function, *args, timeout=budget)
    except ProcessTimeout as stop:
        detail = f"killed {stop.seconds:.1f} s after its process started"
        stages = json.loads(progress.read_text()) if progress is not None and progress.exists() else []
        if stages:
            seconds, upper, gap = stages[-1][:3]
            detail += (f"; {len(stages)} stages done, the last ended {seconds:.1f} s into the fit with eq. 14 "
                       f"{upper:.8g} and estimated gap {gap:.2e}")
        elif progress is not None:
            detail += "; no stage done"
        return dict(status=OVER_BUDGET, seconds=stop.seconds, peak_gib=stop.peak_gib, detail=detail, stages=stages)
    except Exception as error:  # the fit raised, or its process died: the row says so, the grid goes on
        return dict(status=FAILED, detail=f"{type(error).__name__}: {error}")


def best_lower(rows: Sequence[dict]) -> float | None:
    """The largest lower bound our solves of the cell proved (any finished solve's certificate
    proves its ``lower``, certified within ``tol`` or not); None without one."""
    bounds = [row["lower"] for row in rows if row["solver"] == OURS and row["status"] in (CERTIFIED, NOT_CERTIFIED)
              and row["lower"] is not None and math.isfinite(row["lower"])]
    return max(bounds) if bounds else None


def time_to_value(peer: str, measured: dict | None, rows: Sequence[dict]) -> dict:
    """The row ``eq. 14 of PEER``: the first improvement of our solves' upper bound (tightest
    tol first) to at most the peer's eq. 14 value (a killed solve's: its stage ends)."""
    target = f"eq. 14 of {peer}"
    value = None if measured is None else measured.get("objective")
    if value is None:
        status = "skipped" if measured is None else measured["status"]
        return _row(solver=OURS, target=target, status=SKIPPED, detail=f"{peer} has no metric ({status})")
    ours = [row for row in rows if row["solver"] == OURS and (row.get("uppers") or row.get("stages"))]
    for row in reversed(ours):  # the tightest tol first
        path = row.get("uppers") or [stage[:2] for stage in row["stages"]]
        for seconds, upper in path:
            if upper <= value:
                return _row(solver=OURS, target=target, status=REACHED, seconds=seconds, objective=upper,
                            detail=f"the solve to {row['target']} holds a metric with eq. 14 {upper:.10g} <= "
                                   f"{value:.10g} {seconds:.1f} s into the fit")
    ends = "; ".join(f"the solve to {row['target']} ended at eq. 14 {row['stages'][-1][1]:.10g}"
                     for row in ours if row.get("stages"))
    return _row(solver=OURS, target=target, status=NOT_REACHED,
                detail=f"no solve reached {peer}'s eq. 14 {value:.10g}: {ends or 'no stage of ours ended'}")


def add_ratios(rows: Sequence[dict], solver: str, measured: dict | None) -> None:
    """``vs_PEER`` on our rows of the cell: the peer's fit seconds over the row's seconds,
    when both finished (``certified TOL`` rows, and the row ``eq. 14 of PEER``)."""
    if measured is None or measured["status"] != FINISHED:
        return
    name = peer_label(solver)
    for row in rows:
        mine = row["target"].startswith("certified") or row["target"] == f"eq. 14 of {name}"
        if row["solver"] == OURS and mine and row["status"] in (CERTIFIED, REACHED) and row["seconds"] > 0:
            row[RATIO_COLUMNS[solver]] = measured["seconds"] / row["seconds"]


# -- in the fresh process -------------------------------------------------------------------
def fit_ours(arrays: str, tol: float, max_iter: int, progress: str) -> dict:
    """Our solve to ``tol`` on the cell's arrays; every stage is appended to the JSON file
    ``progress`` as ``[seconds, upper, estimated gap, gamma, iterations]``; ``uppers``
    is ``FastLMNNResult.upper_path`` on the same clock (seconds since before ``LMNNProblem``)."""
    from fast_solver import solve
    from lmnn_sdp.core.problem import LMNNProblem

    X, y = _load(arrays, "train")
    stages = []
    start = time.perf_counter()

    def callback(stage) -> None:
        stages.append([time.perf_counter() - start, stage.upper, stage.relative_gap, stage.gamma,
                       stage.newton_iterations])
        write_text_atomic(Path(progress), json.dumps(stages))

    result = solve(LMNNProblem(X, y, k=K, mu=MU), tol=tol, max_iter=max_iter, callback=callback)
    seconds, peak = time.perf_counter() - start, _peak_gib()
    offset = seconds - result.timings["total"]  # the solve's clock on the fit's
    uppers = [[offset + elapsed, upper] for elapsed, upper in result.upper_path]
    L = result.components
    X_test, y_test = _load(arrays, "test")
    timings = ", ".join(f"{key} {value:.1f} s" for key, value in result.timings.items() if key != "total")
    detail = (f"{result.n_stages} stages, {result.n_searches} exact searches, {result.n_hessian_products} Hessian "
              f"products, {result.n_active} active triplets; {timings}")
    return dict(status=CERTIFIED if result.certified else NOT_CERTIFIED, seconds=seconds,
                gap=result.relative_gap, objective=result.upper, lower=result.lower, peak_gib=peak,
                error=knn_error(X @ L.T, y, X_test @ L.T, y_test), n_iter=result.n_iter,
                detail=detail if result.certified else f"{result.message}; {detail}", stages=stages,
                uppers=uppers)


def fit_peer(arrays: str, solver: str) -> dict:
    """A peer's fit (``PEER_FITS``) on the cell's arrays; its eq. 14 value on our problem."""
    from lmnn_sdp.core.problem import LMNNProblem

    X, y = _load(arrays, "train")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        model = PEER_FITS[solver](X, y, K, MU)
        seconds = time.perf_counter() - start
    peak = _peak_gib()
    L = model.components_
    objective = LMNNProblem(X, y, k=K, mu=MU).objective(L.T @ L)
    X_test, y_test = _load(arrays, "test")
    raised = dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught
                           if not issubclass(w.category, (DeprecationWarning, FutureWarning)))
    detail = "; ".join([f"{model.n_iter_} iterations of max_iter {model.max_iter}", *raised])
    return dict(status=FINISHED, seconds=seconds, objective=objective, peak_gib=peak,
                error=knn_error(X @ L.T, y, X_test @ L.T, y_test), n_iter=int(model.n_iter_), detail=detail)


def _load(arrays: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    with np.load(arrays) as saved:
        return saved[f"X_{split}"], saved[f"y_{split}"]


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


# -- data -----------------------------------------------------------------------------------
def prepare_cell(data: str, n: int, d: int, path: Path) -> float:
    """Save the cell's arrays (``load_cell``) to ``path`` (``.npz``); their Euclidean 3-NN
    test error."""
    X_train, y_train, X_test, y_test = load_cell(data, n, d)
    np.savez(path, X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test)
    return knn_error(X_train, y_train, X_test, y_test, k=K)


def load_cell(data: str, n: int, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Training and test arrays of one cell (module docstring, "Data").

    Parameters
    ----------
    data : {"fashion", "synthetic"}
        Fashion-MNIST (PCA to ``d`` fitted on the first ``n`` training images; ``d >= 784``:
        raw pixels) or ``make_classification`` data.
    n, d : int
        Training points and dimensions.

    Returns
    -------
    X_train : ndarray of shape (n, d)
    y_train : ndarray of shape (n,)
    X_test : ndarray of shape (m, d)
    y_test : ndarray of shape (m,)
    """
    if data == "synthetic":
        from sklearn.datasets import make_classification

        X, y = make_classification(n + n // 2, d, n_informative=max(2, d // 2), n_redundant=0, n_classes=3,
                                   n_clusters_per_class=1, random_state=0)
        return X[:n], y[:n], X[n:], y[n:]
    if data != "fashion":
        raise ValueError(f"data must be 'fashion' or 'synthetic', got {data!r}")
    from sklearn.decomposition import PCA

    from validation.datasets import load_fashion_mnist

    X_train, y_train, X_test, y_test = load_fashion_mnist()
    X, y = X_train[:n], y_train[:n]
    if d >= X.shape[1]:
        return X, y, X_test, y_test
    pca = PCA(d, random_state=0).fit(X)
    return pca.transform(X), y, pca.transform(X_test), y_test


# -- growth exponents -----------------------------------------------------------------------
def fitted_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """The least-squares slope of log(seconds) against log(size).

    Parameters
    ----------
    sizes, seconds : sequence of float
        At least two distinct positive sizes and their positive times.

    Returns
    -------
    float
        The slope ``p`` of the line ``log seconds = log c + p log size`` fitted to the points.

    Examples
    --------
    >>> round(fitted_exponent([32, 64, 128], [1.0, 4.0, 16.0]), 12)
    2.0
    """
    x, t = np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float))
    if len(x) < 2 or len(set(x)) < 2 or len(x) != len(t) or not np.all(np.isfinite(x) & np.isfinite(t)):
        raise ValueError(f"need two or more distinct positive sizes with positive times, got {sizes}, {seconds}")
    return float(np.polyfit(x, t, 1)[0])


def growth_rows(rows: Sequence[dict]) -> list[dict]:
    """The growth exponents of every solver and target (module docstring): the rows of the
    record ``NAME-growth``."""
    out = []
    series = dict.fromkeys((row["solver"], row["target"]) for row in rows
                           if row["solver"] != EUCLIDEAN and not row["target"].startswith("eq. 14"))
    for solver, target in series:
        mine = [row for row in rows if row["solver"] == solver and row["target"] == target]
        for axis, other in (("d", "n"), ("n", "d")):
            for fixed in sorted({row[other] for row in mine}):
                points = sorted((row for row in mine if row[other] == fixed), key=lambda row: row[axis])
                out += _growth_along(solver, target, axis, f"{other}={fixed}", points)
    return out


def _growth_along(solver: str, target: str, axis: str, fixed: str, points: list[dict]) -> list[dict]:
    out = []
    for a, b in zip(points, points[1:]):
        if a["status"] not in DONE or b["status"] not in (*DONE, OVER_BUDGET):
            continue
        kind = "measured" if b["status"] in DONE else f"at least (not finished within budget at {axis}={b[axis]})"
        out.append(dict(solver=solver, target=target, axis=axis, fixed=fixed, from_size=a[axis], to_size=b[axis],
                        exponent=growth_exponent(a[axis], a["seconds"], b[axis], b["seconds"]), kind=kind,
                        from_s=a["seconds"], to_s=b["seconds"]))
    done = [row for row in points if row["status"] in DONE]
    if len(done) >= 3:
        out.append(dict(solver=solver, target=target, axis=axis, fixed=fixed, from_size=done[0][axis],
                        to_size=done[-1][axis],
                        exponent=fitted_exponent([row[axis] for row in done], [row["seconds"] for row in done]),
                        kind=f"least squares over {len(done)} finished sizes", from_s=done[0]["seconds"],
                        to_s=done[-1]["seconds"]))
    return out


# -- labels, notes, printing ----------------------------------------------------------------
def peer_label(solver: str) -> str:
    """A peer's name with its installed version, e.g. ``PyLMNN 1.6.4``."""
    return f"{DISTRIBUTIONS[solver]} {importlib.metadata.version(DISTRIBUTIONS[solver])}"


def missing_peers(solvers: Sequence[str]) -> list[str]:
    """Why each requested peer cannot run (``peers.PeerMissing``); empty when all can."""
    missing = []
    for solver in solvers:
        try:
            if solver == "pylmnn":
                peers.import_pylmnn()
            elif solver == "metric-learn":
                import metric_learn  # noqa: F401
        except ImportError as error:
            missing.append(str(error) if isinstance(error, peers.PeerMissing) else
                           f"metric-learn is not installed: {peers.INSTALL_HINT}")
    return missing


def protocol_notes(args) -> str:
    """The record's notes: protocol, budget, threads and package versions."""
    versions = ", ".join(f"{name} {importlib.metadata.version(name)}" for name in ("scikit-learn", "scipy"))
    shims = "; ".join(f"{solver}: {peers.SHIMS[solver]}" for solver in args.solvers if solver in peers.SHIMS)
    data = ("Fashion-MNIST: pixels / 255, the first n training images, PCA to d fitted on them (d = 784: raw "
            "pixels), the 10,000 test images" if args.data == "fashion" else
            "synthetic (make_classification, 3 classes, random_state=0; test: n // 2 more points)")
    return (f"Data: {data}. k=3, mu=0.5; every fit in a fresh process with a budget of {args.budget:g} s (killed "
            f"then); ours: fast_solver.solve to each certified tol, max_iter={args.max_iter}; peers: their "
            f"defaults through validation.peers (shims: {shims or 'none'}). Columns as the module docstring of "
            f"{MODULE} defines them: `seconds` wall-clock of the fit (our target search included), `gap` ours "
            "certified, a peer's against our best certified lower bound in the cell (`lower`), `eq. 14 of PEER` "
            "rows our time to the first upper bound (eq. 14 after an exact search) at most the peer's value, "
            "`vs_PEER` the peer's seconds over the row's (same run), `peak_gib` the fit process's peak resident "
            f"memory, `error` 3-NN test error. {_threads()}; {versions}.")


def _threads() -> str:
    return "threads: " + ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in THREAD_VARIABLES)


def _row(**fields) -> dict:
    row = dict.fromkeys(COLUMNS)
    row.update(fields)
    return row


def _print_row(row: dict) -> None:
    seconds = "" if row["seconds"] is None else f"{row['seconds']:.1f} s"
    print(f"n={row['n']} d={row['d']} {row['solver']} / {row['target']}: {row['status']} {seconds}", flush=True)


def _print_cell(rows: Sequence[dict]) -> None:
    n, d = rows[0]["n"], rows[0]["d"]
    print(f"\nn={n}, d={d}: k=3, mu=0.5")
    header = (f"{'solver':<20} {'target':<30} {'status':<14} {'seconds':>9} {'gap':>9} {'eq. 14':>16} "
              f"{'peak GiB':>8} {'3-NN err':>8} {'vs PyLMNN':>9} {'vs m-l':>7}")
    print(header + "\n" + "-" * len(header))
    for row in rows:
        print(f"{row['solver']:<20} {row['target']:<30} {_short(row['status']):<14} {_cell(row['seconds'], '.1f'):>9} "
              f"{_cell(row['gap'], '.2e'):>9} {_cell(row['objective'], '.8g'):>16} {_cell(row['peak_gib'], '.2f'):>8} "
              f"{_cell(row['error'], '.2%'):>8} {_cell(row['vs_pylmnn'], '.2f'):>9} "
              f"{_cell(row['vs_metric_learn'], '.2f'):>7}")
    for row in rows:
        if row["status"] not in (CERTIFIED, FINISHED) and row["detail"]:
            print(f"  {row['solver']} / {row['target']}: {row['detail']}")
    print(flush=True)


def _print_growth(rows: Sequence[dict]) -> None:
    print("growth exponents (seconds ~ size^p):")
    for row in rows:
        print(f"  {row['solver']:<20} {row['target']:<16} in {row['axis']} at {row['fixed']:<8} "
              f"{row['from_size']:>6} -> {row['to_size']:<6} p = {row['exponent']:5.2f}  ({row['kind']})")
    if not rows:
        print("  none: fewer than two finished sizes along every axis")


def _short(status: str) -> str:
    return "over budget" if status == OVER_BUDGET else status


def _cell(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


if __name__ == "__main__":
    sys.exit(main())
