"""How far does exact, certified multi-metric LMNN (sec. 5.2) reach?

``bundled``: iris and wine (standardised), k=3, mu=0.5, one metric per class,
solved by the full SDP and by both constraint-generation schemes; prints each
certificate and the largest relative difference to the full SDP's optimum.

``letters``: the first n rows of UCI Letter Recognition (16 integer features as
distributed, k=3, mu=0.5, one metric per letter: 26 metrics) for growing n;
one row per subset, stopping at the first n whose solve exceeds the budget.

Each suite's table is the record ``docs/results/letters-multi-metric-SUITE.md`` and ``.csv``
(``--record NAME`` names it, ``--no-record`` skips it), rewritten after every row.

    python -m validation.benchmarks.letters_multi_metric bundled
    python -m validation.benchmarks.letters_multi_metric letters [--method aggregated|cutting-plane]
        [--sizes 200 300 500 ...] [--budget 600] [--record NAME | --no-record]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lmnn_sdp import LMNNProblem
from lmnn_sdp.lmnn import solve_mm_lmnn
from validation.datasets import load_bundled, load_letters
from validation.exact import certify_growing
from validation.records import Recorder, add_record_option, module_command

COLUMNS = ("data", "n", "triplets", "method", "seconds", "rounds", "sdp_triplets", "upper",
           "lower", "gap", "certified", "singular", "status")


def solve_row(problem: LMNNProblem, data: str, method: str, solver: str, tol: float) -> dict:
    """One certified solve, one metric per class; returns the row of the table."""
    start = time.perf_counter()
    result = solve_mm_lmnn(problem, None, solver, method=method, tol=tol,
                           **({} if method == "full" else {"progress": True}))
    last = result.rounds[-1] if result.rounds else None
    return {
        "data": data, "n": problem.n_samples, "triplets": problem.n_triplets, "method": method,
        "seconds": time.perf_counter() - start, "rounds": len(result.rounds) or 1,
        "sdp_triplets": last.sdp_triplets if last else result.n_triplets,
        "upper": result.upper, "lower": result.lower, "gap": result.relative_gap,
        "certified": result.certificate.certified,
        "singular": len(result.certificate.singular_clusters), "status": result.status,
    }


def bundled(args, record=None) -> None:
    """Full SDP against constraint generation on iris and wine; ``record`` (if given) gets
    the rows so far after every solve."""
    print(" | ".join(COLUMNS))
    every = []
    for name in ("iris", "wine"):
        X, y = load_bundled(name)
        problem = LMNNProblem((X - X.mean(axis=0)) / X.std(axis=0), y, k=3, mu=0.5)
        rows = []
        for m in ("full", "cutting-plane", "aggregated"):
            rows.append(solve_row(problem, name, m, args.solver, args.tol))
            every.append(rows[-1])
            if record is not None:
                record(every)
        for row in rows:
            print(" | ".join(_fmt(row[c]) for c in COLUMNS), flush=True)
        spread = max(abs(r["upper"] - rows[0]["upper"]) / rows[0]["upper"] for r in rows)
        print(f"{name}: largest relative difference to the full SDP's optimum: {spread:.2g}")


def letters(args, record=None) -> None:
    """Growing subsets of Letter Recognition until one exceeds the budget; ``record`` (if
    given) gets the rows so far after every subset."""
    X, y = load_letters()
    certify_growing(args.sizes, lambda n: solve_row(LMNNProblem(X[:n], y[:n], k=3, mu=0.5), "letters",
                                                    args.method, args.solver, args.tol),
                    COLUMNS, args.budget, args.tol, _fmt, record)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", choices=["bundled", "letters"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 300, 500, 750, 1000, 1500])
    parser.add_argument("--budget", type=float, default=600.0, help="seconds per subset")
    parser.add_argument("--method", default="aggregated", choices=["aggregated", "cutting-plane"])
    parser.add_argument("--solver", default="CLARABEL")
    parser.add_argument("--tol", type=float, default=1e-6)
    add_record_option(parser, None, "letters-multi-metric-SUITE")
    args = parser.parse_args(argv)
    name = f"letters-multi-metric-{args.suite}" if args.record is None else args.record
    notes = ("iris and wine, standardised, k=3, mu=0.5, one metric per class: the full SDP and "
             "both constraint-generation schemes" if args.suite == "bundled" else
             f"The first n rows of UCI Letter Recognition, k=3, mu=0.5, one metric per letter, "
             f"{args.method}; stops at the first n whose solve takes longer than {args.budget:.0f} s")
    record = Recorder(name, "Exact, certified multi-metric LMNN (sec. 5.2)",
                      notes=f"{notes}; {args.solver}, tol={args.tol:g}.",
                      command=module_command("validation.benchmarks.letters_multi_metric", argv),
                      formats={"upper": ".10g", "lower": ".10g", "gap": ".3g"})
    (bundled if args.suite == "bundled" else letters)(args, record)


def _fmt(value) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{value:.3g}" if abs(value) < 1e-2 else f"{value:.10g}"
    return str(value)


if __name__ == "__main__":
    main()
