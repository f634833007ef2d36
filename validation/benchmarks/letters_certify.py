"""How far does exact, certified LMNN reach? Constraint generation on Letter Recognition.

Certifies the first n rows of UCI Letter Recognition (16 integer features as
distributed, k=3, mu=0.5) for growing n and prints one row per subset: time,
rounds, triplets in the final SDP, active triplets at the
optimum and the certified gap. Stops at the first n whose solve exceeds the
time budget. The table is the record ``docs/results/letters-certify.md`` and ``.csv``
(``--record NAME`` names it, ``--no-record`` skips it), rewritten after every subset.

    python -m validation.benchmarks.letters_certify [--method aggregated|cutting-plane]
        [--warm-start] [--sizes 500 1000 2000 ...] [--budget 600] [--record NAME | --no-record]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fast_solver
from lmnn_sdp import LMNNProblem, solve_lmnn
from validation.datasets import load_letters
from validation.exact import certify_growing
from validation.records import Recorder, add_record_option, module_command


def certify_subset(X: np.ndarray, y: np.ndarray, n: int, method: str, solver: str,
                   tol: float, warm_start: bool) -> dict:
    """Exact solve of the first ``n`` rows; returns the row of the table.

    With ``warm_start`` the fast solver runs first (its time counts) and hands
    its metric (aggregated) or its active triplets (cutting plane) to the exact solve."""
    problem = LMNNProblem(X[:n], y[:n], k=3, mu=0.5)
    start = time.perf_counter()
    options = {}
    if warm_start:
        fast = fast_solver.solve(problem)
        options = {"start": fast.metric} if method == "aggregated" else {"working_set": fast.active_triplets}
    fast_seconds = time.perf_counter() - start
    result = solve_lmnn(problem, solver, method=method, tol=tol, progress=True, **options)
    seconds = time.perf_counter() - start
    return {
        "method": method + (" from fast" if warm_start else ""), "n": n,
        "triplets": problem.n_triplets, "seconds": seconds, "fast_seconds": fast_seconds,
        "rounds": len(result.rounds), "sdp_triplets": result.rounds[-1].sdp_triplets,
        "active": len(problem.active_triplets(result.metric)),
        "upper": result.upper, "lower": result.lower,
        "gap": result.relative_gap, "certified": result.certificate.certified,
        "status": result.status,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 3000, 4000, 6000])
    parser.add_argument("--budget", type=float, default=600.0, help="seconds per subset")
    parser.add_argument("--method", default="aggregated", choices=["aggregated", "cutting-plane"])
    parser.add_argument("--warm-start", action="store_true",
                        help="start from the fast solver's answer (its time is included)")
    parser.add_argument("--solver", default="CLARABEL")
    parser.add_argument("--tol", type=float, default=1e-6)
    add_record_option(parser, "letters-certify")
    args = parser.parse_args(argv)
    record = Recorder(args.record, "Exact, certified LMNN on growing subsets of Letter Recognition",
                      notes=f"The first n rows of UCI Letter Recognition (16 integer features), k=3, "
                            f"mu=0.5, {args.method}{' from the fast solver' if args.warm_start else ''}, "
                            f"{args.solver}, tol={args.tol:g}; stops at the first n whose solve takes "
                            f"longer than {args.budget:.0f} s.",
                      command=module_command("validation.benchmarks.letters_certify", argv),
                      formats={"upper": ".10g", "lower": ".10g", "gap": ".3g"})
    X, y = load_letters()
    header = ("method", "n", "triplets", "seconds", "fast_seconds", "rounds", "sdp_triplets", "active", "upper",
              "lower", "gap", "certified", "status")
    certify_growing(args.sizes, lambda n: certify_subset(X, y, n, args.method, args.solver, args.tol,
                                                        args.warm_start),
                    header, args.budget, args.tol, _fmt, record)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.6g}"
    return str(value)


if __name__ == "__main__":
    main()
