"""How far does exact, certified LMNN reach? Constraint generation on Letter Recognition.

Certifies the first n rows of UCI Letter Recognition (16 integer features as
distributed, k=3, mu=0.5) for growing n and prints one row per subset: time,
rounds, triplets in the final SDP, active triplets at the
optimum and the certified gap. Stops at the first n whose solve exceeds the
time budget.

    python -m validation.benchmarks.letters_certify [--method aggregated|cutting-plane]
        [--warm-start] [--sizes 500 1000 2000 ...] [--budget 600]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fast_solver
from lmnn_sdp import LMNNProblem, solve_lmnn
from validation.datasets import load_letters
from validation.exact import certify_growing


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
    args = parser.parse_args(argv)
    X, y = load_letters()
    header = ("method", "n", "triplets", "seconds", "fast_seconds", "rounds", "sdp_triplets", "active", "upper",
              "lower", "gap", "certified", "status")
    certify_growing(args.sizes, lambda n: certify_subset(X, y, n, args.method, args.solver, args.tol,
                                                        args.warm_start),
                    header, args.budget, args.tol, _fmt)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.6g}"
    return str(value)


if __name__ == "__main__":
    main()
