"""The exact reference at the ends of mu (issue 65): standardized wine (scikit-learn's, k=3)
solved by aggregated active sets, by cutting plane and by the fast solver at mu = 0.5, 0, 0.99
and 1, with one metric (``lmnn``) and with one metric per class (``multi-metric``, the exact
methods only); for each, seconds (the call alone, imports and numba's compile excluded), the status,
the bounds and whether ``verify()`` accepts the certificate. First, ``solve_lmnn(problem)``
with its defaults at mu = 0.5, twice (the acceptance: within 3 s). Writes the record
``docs/results/exact-every-mu.md`` and ``.csv``, row by row.

    python -m validation.benchmarks.exact_every_mu [--no-record]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

import fast_solver
from lmnn_sdp import LMNNProblem, solve_lmnn
from validation.records import Recorder, add_record_option

MUS = (0.5, 0.0, 0.99, 1.0)
METHODS = {
    "aggregated": lambda problem: solve_lmnn(problem, method="aggregated"),
    "cutting-plane": lambda problem: solve_lmnn(problem, method="cutting-plane"),
    "fast": fast_solver.solve,
}


def measure(problem: LMNNProblem, kind: str, method: str, solve) -> dict:
    """One call: seconds, status, the certified bounds and the independent verification."""
    problem = problem.with_clusters(problem.label_codes) if kind == "multi-metric" else problem
    start = time.perf_counter()
    result = solve(problem)
    seconds = time.perf_counter() - start
    return {"mu": problem.mu, "kind": kind, "method": method, "seconds": seconds, "status": result.status,
            "upper": result.upper, "lower": result.lower,
            "verified": result.certificate.verify().certified, "load": os.getloadavg()[0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_record_option(parser, "exact-every-mu")
    args = parser.parse_args(argv)
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    fast_solver.solve(LMNNProblem(X, y, k=3, mu=0.5))  # numba compiles here, not in a row
    record = Recorder(args.record, title="The exact methods and the fast solver at the ends of mu, "
                      "standardized wine, k=3",
                      formats={"seconds": ".2f", "upper": ".10g", "lower": ".10g", "load": ".2f"})
    start_load, rows = os.getloadavg()[0], []
    runs = [(0.5, "lmnn", "default", lambda problem: solve_lmnn(problem))] * 2
    runs += [(mu, kind, method, solve) for kind in ("lmnn", "multi-metric") for mu in MUS
             for method, solve in METHODS.items() if kind == "lmnn" or method != "fast"]
    for mu, kind, method, solve in runs:
        rows.append(measure(LMNNProblem(X, y, k=3, mu=mu), kind, method, solve))
        print(" | ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in rows[-1].values()), flush=True)
        default = [row["seconds"] for row in rows if row["method"] == "default"]
        record.notes = (f"`default` is `solve_lmnn(problem)` with its defaults (cutting plane), called "
                        f"twice: {', '.join(f'{s:.2f}' for s in default)} s (target: within 3 s). "
                        f"`seconds`: the call alone. `load`: 1-minute load average after the row; "
                        f"{start_load:.2f} at the start (2 cores).")
        record(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
