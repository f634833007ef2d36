"""What the subset methods of Table 1 would cost on a data set's whole training part.

    python -m validation.benchmarks.subset_costs [--dataset fashion-mnist] [--rows 2500 5000]
        [--methods mmc nca ...] [--budget SECONDS] [--record NAME | --no-record]

On Fashion-MNIST the experiments fit the methods of ``protocol.SUBSET_METHODS`` on a stratified
subset of ``DataSpec.fit_rows`` (10,000) training images. This command measures why: each
method, exactly as a task runs it (``methods.METHODS`` with the data set's parameters, on
split 0's training part as the method sees it), fitted on stratified subsets of ``--rows``
training rows (``protocol.fit_subset``; the whole part when ``--rows`` names its size), each
fit in a fresh process (``common.in_fresh_process``) killed after ``--budget`` seconds; its
memory is the peak resident memory during the fit above the resident memory before it (the
peak reset through ``/proc/self/clear_refs``, so Linux only). From the two largest sizes it finished, the growth
exponents ``p`` of its fit seconds and of its peak memory above the process's memory before
the fit (``common.growth_exponent``; none for memory too small to see), and, unless the whole
part was fitted, what they predict for it:
``seconds(N) = seconds(n) (N / n)^p``, likewise the memory.

The record ``docs/results/subset-costs.md`` and ``.csv`` (``--record NAME`` names it,
``--no-record`` skips it), rewritten after every fit, has one row per method and size
(``status``: ``finished``, ``not finished within budget`` (``seconds`` is then the cost of
trying), ``failed``) and one row ``predicted`` per method at the whole training part's size.
Wall-clock seconds on the machine it runs on; read them beside its load.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence

from validation.benchmarks.common import ProcessTimeout, growth_exponent, in_fresh_process, status_gib
from validation.records import Recorder, add_record_option, module_command

COLUMNS = ("dataset", "method", "rows", "status", "seconds", "fit_gib", "seconds_exponent", "memory_exponent",
           "detail")
FINISHED, OVER_BUDGET, FAILED, PREDICTED = "finished", "not finished within budget", "failed", "predicted"


def main(argv: Sequence[str] | None = None) -> int:
    from validation.experiments.protocol import DATASETS, SUBSET_METHODS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="fashion-mnist")
    parser.add_argument("--rows", nargs="+", type=int, default=[2500, 5000], help="subset sizes fitted")
    parser.add_argument("--methods", nargs="+", default=list(SUBSET_METHODS))
    parser.add_argument("--budget", type=float, default=1800.0, help="seconds before a fit is killed")
    add_record_option(parser, "subset-costs")
    args = parser.parse_args(argv)
    args.rows = sorted(set(args.rows))
    if args.rows[0] < 20:
        parser.error(f"--rows must be at least 20, got {args.rows}")
    if not (args.budget > 0 and math.isfinite(args.budget)):
        parser.error(f"--budget must be a positive number of seconds, got {args.budget}")
    unknown = sorted(set(args.methods) - set(SUBSET_METHODS))
    if unknown:
        parser.error(f"--methods must be among {list(SUBSET_METHODS)}, got {unknown}")
    record = Recorder(args.record, f"The cost of the subset methods on all of {args.dataset}'s training part",
                      notes="Each method as an experiments task fits it, on stratified subsets of split 0's "
                            f"training part, in a fresh process with a budget of {args.budget:g} s; `fit_gib`: "
                            "peak resident memory during the fit above the memory before it; exponents "
                            "between the two largest finished sizes; `predicted`: those exponents carried to "
                            "the whole training part.",
                      command=module_command("validation.benchmarks.subset_costs", argv), columns=COLUMNS,
                      formats={"seconds": ".1f", "fit_gib": ".3f", "seconds_exponent": ".2f",
                               "memory_exponent": ".2f"})
    try:
        rows = costs(args.dataset, args.methods, args.rows, args.budget, record)
    except ValueError as error:  # sizes beyond the training part
        parser.error(str(error))
    for row in rows:
        seconds = "-" if row["seconds"] is None else f"{row['seconds']:.1f} s"
        memory = "-" if row["fit_gib"] is None else f"{row['fit_gib']:.3f} GiB"
        print(f"{row['method']:<14} {row['rows']:>7} {row['status']:<28} {seconds:>12} {memory:>12}  {row['detail']}")
    return 0


def costs(dataset: str, methods: Sequence[str], sizes: Sequence[int], budget: float, record=None) -> list[dict]:
    """The rows of the record (module docstring); ``record`` gets all rows after each one."""
    total = in_fresh_process(training_rows, dataset)
    if max(sizes) > total:
        raise ValueError(f"--rows {max(sizes)} exceeds the {total} rows of {dataset}'s training part; "
                         f"ask for at most {total} (the whole part).")
    rows: list[dict] = []
    for name in methods:
        measured = []
        for size in sizes:
            row = dict.fromkeys(COLUMNS) | {"dataset": dataset, "method": name, "rows": size}
            try:
                row.update(in_fresh_process(fit_once, dataset, name, size, timeout=budget), status=FINISHED)
                measured.append(row)
            except ProcessTimeout as stop:
                row.update(status=OVER_BUDGET, seconds=stop.seconds,
                           detail=f"killed {stop.seconds:.1f} s after its process started, peak {stop.peak_gib} GiB")
            except Exception as error:  # the row says so and the others go on
                row.update(status=FAILED, detail=f"{type(error).__name__}: {error}"[:300])
            rows.append(row)
            if record is not None:
                record(rows)
            if row["status"] != FINISHED:
                break  # a larger subset costs more
        if len(measured) >= 2 and measured[-1]["rows"] < total:
            rows.append(predicted_row(measured[-2], measured[-1], total))
            if record is not None:
                record(rows)
    return rows


def predicted_row(a: dict, b: dict, total: int) -> dict:
    """The row ``predicted`` at ``total`` rows from the finished rows ``a`` and ``b`` (fewer
    rows first).

    Examples
    --------
    >>> a = dict(dataset="x", method="nca", rows=100, seconds=1.0, fit_gib=0.01)
    >>> b = dict(a, rows=200, seconds=4.0, fit_gib=0.04)
    >>> row = predicted_row(a, b, 800)
    >>> row["seconds"], row["seconds_exponent"], round(row["fit_gib"], 6)
    (64.0, 2.0, 0.64)
    """
    p = growth_exponent(a["rows"], a["seconds"], b["rows"], b["seconds"])
    q = growth_exponent(a["rows"], a["fit_gib"], b["rows"], b["fit_gib"]) if a["fit_gib"] > 0 and b["fit_gib"] > 0 else None
    scale = total / b["rows"]
    return dict.fromkeys(COLUMNS) | dict(
        dataset=b["dataset"], method=b["method"], rows=total, status=PREDICTED,
        seconds=b["seconds"] * scale ** p, fit_gib=None if q is None else b["fit_gib"] * scale ** q,
        seconds_exponent=p, memory_exponent=q,
        detail=f"from {a['rows']} and {b['rows']} rows: seconds x (N / {b['rows']})^{p:.2f}"
               + ("" if q is None else f", memory x (N / {b['rows']})^{q:.2f}"))


# -- in the fresh process -------------------------------------------------------------------
def training_rows(dataset: str) -> int:
    """Rows in split 0's training part of ``dataset``."""
    from validation.experiments.protocol import load_split

    return len(load_split(dataset, 0).y_train)


def fit_once(dataset: str, name: str, size: int) -> dict:
    """Fit method ``name`` as an experiments task does, on ``size`` training rows of split 0."""
    from validation.experiments.methods import method, method_params
    from validation.experiments.protocol import dataset_spec, fit_subset, load_split

    split = load_split(dataset, 0)
    chosen = method(name)
    X = split.X_train if chosen.inputs == "raw" else split.Z_train
    X, y = fit_subset(X, split.y_train, size)
    before = _reset_peak()
    tick = time.perf_counter()
    chosen.fit(X, y, method_params(name, dataset_spec(dataset).tol), None)
    seconds = time.perf_counter() - tick
    peak = status_gib("VmHWM")
    return {"seconds": seconds, "fit_gib": peak - before, "detail": f"process peak {peak:.2f} GiB"}


def _reset_peak() -> float:
    """The resident memory now (GiB), with the peak reset to it (``/proc/self/clear_refs``)."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return status_gib("VmRSS")


if __name__ == "__main__":
    sys.exit(main())
