"""NCA on UCI Letter Recognition: ``fast_solver.NCA`` against scikit-learn's
``NeighborhoodComponentsAnalysis``.

    python -m validation.benchmarks.nca_letters [--max-iter 50] [--working-memory 64] [--skip-sklearn]
        [--record NAME | --no-record]

The UCI split (first 16,000 rows train, last 4,000 test), the 16 raw integer
features. Both fit the full-rank ``A`` (16 x 16) from the same start (the "auto"
start, LDA here, computed once and passed to both as ``init``) with L-BFGS-B, the
same ``max_iter`` and ``tol``; both maximise f (eq. 3). Each fit runs in a fresh
spawned process, so "peak GiB" is the peak resident memory of that process
(imports and data included, ``ru_maxrss``). The final f of both is evaluated by
``fast_solver.nca_objective``; the 3-NN test error is measured in the learned space. The
table is the record ``docs/results/nca-letters.md`` and ``.csv`` (``--record NAME`` names it,
``--no-record`` skips it), rewritten after every fit.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

from validation.benchmarks.common import in_fresh_process, knn_error
from validation.records import Recorder, add_record_option, module_command


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=50, help="L-BFGS-B iterations (default 50, "
                        "scikit-learn's default)")
    parser.add_argument("--working-memory", type=float, default=64.0, help="MiB for ours' blocks")
    parser.add_argument("--skip-sklearn", action="store_true")
    add_record_option(parser, "nca-letters")
    args = parser.parse_args(argv)
    from fast_solver.nca.objective import initial_components
    from validation.datasets import letters_split

    X, y, X_test, y_test = letters_split()
    euclidean = knn_error(X, y, X_test, y_test)
    record = Recorder(args.record, "NCA on Letter Recognition: fast_solver against scikit-learn",
                      notes=f"16,000 training rows, 16 features, f (eq. 3), full-rank A from the same LDA "
                            f"start, max_iter={args.max_iter}, tol=1e-5; each fit in a fresh process "
                            f"(peak GiB: its resident memory); ours' blocks {args.working_memory:g} MiB; "
                            f"Euclidean 3-NN test error {euclidean:.2%}.",
                      command=module_command("validation.benchmarks.nca_letters", argv),
                      columns=("method", "seconds", "cpu_seconds", "n_iter", "f", "error", "peak_gib",
                               "warned"),
                      formats={"seconds": ".1f", "cpu_seconds": ".1f", "f": ".3f", "error": ".2%",
                               "peak_gib": ".2f"})
    start = initial_components(X, y, X.shape[1], "auto")
    rows = []
    for method in ("fast_solver", *(() if args.skip_sklearn else ("scikit-learn",))):
        rows.append(in_fresh_process(_fit, method, start, args.max_iter, args.working_memory))
        rows[-1].update(_score(rows[-1].pop("components"), X, y, X_test, y_test))
        record(rows)
    _print(rows, args, euclidean)
    return 0


def _fit(method: str, start: np.ndarray, max_iter: int, working_memory: float) -> dict:
    """Fit one method from ``start`` in this (fresh) process; its time, CPU time and peak memory."""
    import warnings

    from sklearn.neighbors import NeighborhoodComponentsAnalysis

    from fast_solver import NCA
    from validation.datasets import letters_split

    X, y, _, _ = letters_split()
    if method == "fast_solver":
        model = NCA(init=start, max_iter=max_iter, working_memory=working_memory)
    else:
        model = NeighborhoodComponentsAnalysis(init=start, max_iter=max_iter)
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    # scikit-learn counts its first evaluation as an iteration
    n_iter = model.n_iter_ if method == "fast_solver" else model.n_iter_ - 1
    return {"method": method, "seconds": wall, "cpu_seconds": cpu, "n_iter": n_iter,
            "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "warned": [str(w.message) for w in caught], "components": model.components_}


def _score(components, X, y, X_test, y_test) -> dict:
    from fast_solver import nca_objective

    return {"f": nca_objective(components, X, y)[0],
            "error": knn_error(X @ components.T, y, X_test @ components.T, y_test)}


def _print(rows: list[dict], args, euclidean_error: float) -> None:
    print(f"\nNCA on letters (16,000 training rows, 16 features), f (eq. 3), full-rank A from "
          f"the same LDA start, max_iter={args.max_iter}, tol=1e-5")
    header = (f"{'method':<14} {'fit s':>8} {'cpu s':>8} {'iter':>5} {'f (eq. 3)':>12} "
              f"{'3-NN err':>9} {'peak GiB':>9}")
    print(header + "\n" + "-" * len(header))
    for r in rows:
        print(f"{r['method']:<14} {r['seconds']:>8.1f} {r['cpu_seconds']:>8.1f} {r['n_iter']:>5} "
              f"{r['f']:>12.3f} {r['error']:>9.2%} {r['peak_gib']:>9.2f}")
    print(f"Euclidean 3-NN test error: {euclidean_error:.2%}; ours' blocks: {args.working_memory:g} MiB")
    for r in rows:
        for message in r["warned"]:
            print(f"warning ({r['method']}): {message}")
    if len(rows) > 1:
        ours, peer = rows
        print(f"scikit-learn / fast_solver: time {peer['seconds'] / ours['seconds']:.2f}x, "
              f"peak memory {peer['peak_gib'] / ours['peak_gib']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
