"""Multi-metric LMNN (sec. 5.2) at image scale: one certified metric per class of Fashion-MNIST.

    python -m validation.benchmarks.class_metrics [--n 60000] [--d 164] [--tol 1e-4]
        [--data fashion | synthetic] [--checkpoints DIR] [--record NAME | --no-record]

Data as ``validation.benchmarks.high_d_grid`` prepares a cell (``load_cell``): the first ``n``
training images of Fashion-MNIST, PCA to ``d`` fitted on them, the 10,000 test images through
the same PCA (``synthetic``: generated data, for tests and trial runs); k=3, mu=0.5. Two
certified solves of ``fast_solver.solve``, each in a fresh process (``common.in_fresh_process``)
after a small solve that fills numba's cache (``common.compile_solver``):

1. ``LMNN (start)``: one metric, to ``tol``: the start of the class metrics, as
   ``MultiMetricLMNN`` starts them;
2. ``class metrics``: one metric per class (eq. 16) from that metric, to ``tol``.

Each solve prints a line at the end of each of its stages and saves its state every minute
in a file of ``--checkpoints`` named by the code version and the arguments; the same command
at the same code version resumes each solve from its file (a finished solve returns at
once). The last row sums the two.

The record ``docs/results/class-metrics.md`` and ``.csv`` (``--record NAME`` names it,
``--no-record`` skips it) is rewritten after each solve. Its columns:

* ``n``, ``d``, ``classes``: the data.
* ``solve``: as above, or ``both`` (the sum of the two).
* ``status``: ``certified`` when the solve's certificate proves the relative gap at most
  ``tol``, else ``not certified`` (``detail`` has the solver's message).
* ``seconds``: wall-clock seconds of the solve in its process, from before ``LMNNProblem``
  (target neighbours included) to its result, the arrays loaded; for a resumed solve
  (``resumed`` True) the solver's own clock, summed over the runs (whitening and targets
  not counted).
* ``gap``, ``upper``, ``lower``: the certificate's relative gap and bounds (eq. 14 or eq. 16).
* ``peak_gib``: peak resident memory of the solve's process (``ru_maxrss``).
* ``error``: 3-NN test error under the learned metric(s), ties broken by shrinking k as in
  the paper (``validation.experiments.knn``); class metrics measure the distance to a training
  point by its class's metric (``fast_solver.lmnn.multi_metric.cluster_neighbors``).
* ``newton``, ``hessian_products``, ``searches``, ``retreats``: the solver's counters.
* ``detail``: each stage (``gamma``, end in seconds on the solver's clock, estimated gap) and
  where the time went (``FastLMNNResult.timings``).
* ``commit``: the code version.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from validation.benchmarks.common import compile_solver, in_fresh_process
from validation.benchmarks.high_d_grid import FASHION_PIXELS, FASHION_TRAIN, MU, K, load_cell
from validation.experiments.store import DEFAULT_FOLDER
from validation.records import Recorder, add_record_option, code_version, module_command

MODULE = "validation.benchmarks.class_metrics"
START, CLASSES, BOTH = "LMNN (start)", "class metrics", "both"
COLUMNS = ("n", "d", "classes", "solve", "status", "seconds", "gap", "upper", "lower", "peak_gib", "error",
           "newton", "hessian_products", "searches", "retreats", "resumed", "detail", "commit")
FORMATS = {"seconds": ".1f", "gap": ".2e", "upper": ".10g", "lower": ".10g", "peak_gib": ".2f", "error": ".2%"}


def main(argv: Sequence[str] | None = None) -> int:
    """Run both solves (module docstring); exit status 1 when a solve is not certified."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=FASHION_TRAIN, help="training points")
    parser.add_argument("--d", type=int, default=164, help="dimensions (PCA; 784: the raw pixels)")
    parser.add_argument("--tol", type=float, default=1e-4, help="certified relative gap of both solves")
    parser.add_argument("--data", choices=("fashion", "synthetic"), default="fashion")
    parser.add_argument("--checkpoints", type=Path, default=DEFAULT_FOLDER / "checkpoints", metavar="DIR",
                        help="folder of the solves' checkpoints (default: %(default)s)")
    add_record_option(parser, "class-metrics")
    args = parser.parse_args(argv)
    if args.n < 2 * (K + 1) or args.d < 2:
        parser.error(f"--n must be at least {2 * (K + 1)} and --d at least 2, got --n {args.n} --d {args.d}")
    if args.data == "fashion" and (args.n > FASHION_TRAIN or args.d > FASHION_PIXELS):
        parser.error(f"Fashion-MNIST has {FASHION_TRAIN} training images of {FASHION_PIXELS} pixels: --n at most "
                     f"{FASHION_TRAIN}, --d at most {FASHION_PIXELS}, got --n {args.n} --d {args.d}")
    if not 0 < args.tol < 1:
        parser.error(f"--tol must lie in (0, 1), got {args.tol}")
    version = code_version()  # the code measured, whatever the checkout holds by the end
    record = Recorder(args.record, "Multi-metric LMNN at image scale: one certified metric per class",
                      notes=f"{args.data}, n={args.n}, d={args.d}, k={K}, mu={MU}, tol={args.tol:g}; "
                            "each solve in a fresh process.",
                      command=module_command(MODULE, argv), columns=COLUMNS, formats=FORMATS, version=version)
    rows = run(args.data, args.n, args.d, args.tol, args.checkpoints, record, version)
    return 0 if all(row["status"] == "certified" for row in rows) else 1


def run(data: str, n: int, d: int, tol: float, checkpoints: Path, record=None,
        version: str | None = None) -> list[dict]:
    """The two solves and their sum: the record's rows (``COLUMNS``); ``record`` (if given)
    gets the rows so far after each; ``version``: the code version measured (default the
    checkout's now)."""
    version = version or code_version()
    checkpoints.mkdir(parents=True, exist_ok=True)
    stem = f"class-metrics-{version}-{data}-n{n}-d{d}-tol{tol:g}"
    arrays = checkpoints / f"{stem}.npz"
    if not arrays.exists():  # written whole or not at all, for a run killed and started again
        part = checkpoints / f"{stem}.part.npz"
        np.savez(part, *load_cell(data, n, d))
        os.replace(part, arrays)
    compile_solver()
    rows: list[dict] = []
    for solve in (START, CLASSES):
        checkpoint = checkpoints / f"{stem}-{'start' if solve == START else 'classes'}.ckpt"
        measured = in_fresh_process(fit, str(arrays), solve, tol, str(checkpoint))
        rows.append({"n": n, "d": d, "solve": solve, **measured, "commit": version})
        print(" | ".join(f"{key} {rows[-1][key]}" for key in COLUMNS if key not in ("n", "d")), flush=True)
        if record is not None:
            record(rows)
    first, second = rows
    rows.append({**{key: "" for key in COLUMNS}, "n": n, "d": d, "classes": second["classes"], "solve": BOTH,
                 "status": "certified" if first["status"] == second["status"] == "certified" else "not certified",
                 "seconds": first["seconds"] + second["seconds"], "gap": second["gap"], "upper": second["upper"],
                 "lower": second["lower"], "peak_gib": max(first["peak_gib"], second["peak_gib"]),
                 "error": second["error"], "resumed": first["resumed"] or second["resumed"],
                 "commit": version})
    if record is not None:
        record(rows)
    arrays.unlink()
    start_metric(arrays).unlink()
    return rows


def fit(arrays: str, solve: str, tol: float, checkpoint: str) -> dict:
    """One solve of the module docstring on the arrays saved in ``arrays`` (``np.savez`` of
    ``load_cell``); ``START``'s metric is saved beside them for ``CLASSES`` (``start_metric``)."""
    import resource

    from fast_solver import solve as fast_solve
    from fast_solver.lmnn.multi_metric import cluster_neighbors
    from lmnn_sdp.core.problem import LMNNProblem
    from validation.experiments.knn import knn_error, nearest_neighbours

    with np.load(arrays) as saved:
        X, y, X_test, y_test = (saved[f"arr_{index}"] for index in range(4))
    resumed = os.path.exists(checkpoint)
    tic = time.perf_counter()
    problem = LMNNProblem(X, y, k=K, mu=MU)

    def progress(stage) -> None:
        print(f"  {solve}, stage {stage.stage}: {stage_text(stage)}", flush=True)

    if solve == START:
        result = fast_solve(problem, tol=tol, checkpoint=checkpoint, callback=progress)
    else:
        result = fast_solve(problem, np.load(start_metric(arrays)), clusters=problem.label_codes, tol=tol,
                            checkpoint=checkpoint, callback=progress)
    seconds = result.timings["total"] if resumed else time.perf_counter() - tic
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    if solve == START:
        np.save(start_metric(arrays), result.metric)
        L = result.components
        neighbours = nearest_neighbours(X @ L.T, X_test @ L.T, K)
    else:
        neighbours = cluster_neighbors(X, result.metric, problem.label_codes, X_test, K)
    error = knn_error(y, neighbours, y_test)
    stages = "; ".join(stage_text(stage) for stage in result.stages)
    timings = ", ".join(f"{key} {value:.1f} s" for key, value in result.timings.items() if key != "total")
    detail = f"{stages}; {timings}"
    return dict(classes=1 if solve == START else len(problem.classes),
                status="certified" if result.converged else "not certified", seconds=seconds,
                gap=result.relative_gap, upper=result.upper, lower=result.lower, peak_gib=peak, error=error,
                newton=result.n_iter, hessian_products=result.n_hessian_products, searches=result.n_searches,
                retreats=result.n_retreats, resumed=resumed,
                detail=detail if result.converged else f"{result.message}; {detail}")


def stage_text(stage) -> str:
    """A ``fast_solver`` ``Stage`` in words: width, iterations, end on the solver's clock, gap."""
    return (f"gamma {stage.gamma:.3g}: {stage.newton_iterations} iterations, ends {stage.elapsed:.0f} s, "
            f"estimated gap {stage.relative_gap:.3g}")


def start_metric(arrays) -> Path:
    """The file of ``START``'s metric, beside the arrays."""
    return Path(arrays).with_name(Path(arrays).stem + "-start-metric.npy")


if __name__ == "__main__":
    raise SystemExit(main())
