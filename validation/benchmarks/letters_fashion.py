"""Benchmark of the fast solver at scale against PyLMNN: UCI Letter Recognition and Fashion-MNIST.

    python -m validation.benchmarks.letters_fashion [--data letters fashion-10k fashion-60k]
                                               [--skip-pylmnn] [--pylmnn-60k] [--max-iter N]
                                               [--record NAME | --no-record]

Data (``python -m validation data fetch`` first):

* ``letters``: the 16 integer features as distributed, the UCI split (first
  16,000 rows train, last 4,000 test); the fast solver stops at a certified
  relative gap of 1e-6.
* ``fashion-10k`` / ``fashion-60k``: pixels / 255, PCA to 164 dimensions fitted
  on the training rows used (the first 10,000, or all 60,000), the 10,000 test
  images; the fast solver stops at a certified gap of 1e-4.

k=3, mu=0.5 throughout. ``fast_solver.LMNN`` and PyLMNN 1.6.4
(``LargeMarginNearestNeighbor(n_neighbors=3)``, its defaults) fit the same
data; both metrics are scored by eq. 14 (``LMNNProblem``, linear hinge).
PyLMNN minimises a squared hinge over ``L``, so its eq. 14 value is not what it
minimises; its gap is measured against the fast solver's certified lower bound
(a valid bound on how far it is from the optimum of eq. 14).

Every fit runs in a fresh spawned process, so "peak GiB" is the peak resident
memory of that process (data, PCA and fit included); a small solve in another one first fills
numba's cache (``common.compile_solver``), so no fit's seconds include compiling the solver. Fit times include the
target-neighbour search, as PyLMNN's do. PyLMNN runs through the shims of
``validation.peers.import_pylmnn`` (``pip install -e ".[peers]"``).

The tables (one row per data set and solver) are the record
``docs/results/letters-fashion.md`` and ``.csv`` (``--record NAME`` names it, ``--no-record``
skips it), rewritten after every fit.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from lmnn_sdp.core.machine import available_cores
from validation.benchmarks.common import compile_solver, in_fresh_process, knn_error
from validation.records import Recorder, add_record_option, module_command

DATA = {"letters": 1e-6, "fashion-10k": 1e-4, "fashion-60k": 1e-4}  # data -> certified gap to reach
COLUMNS = ("data", "solver", "seconds", "n_iter", "gap", "objective", "lower", "error", "euclidean_error",
           "peak_gib", "converged", "tol", "detail", "warned")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", choices=list(DATA), default=list(DATA))
    parser.add_argument("--skip-pylmnn", action="store_true", help="fit only the fast solver")
    parser.add_argument("--pylmnn-60k", action="store_true", help="also fit PyLMNN on fashion-60k")
    parser.add_argument("--max-iter", type=int, default=1000, help="Newton budget of the fast solver")
    add_record_option(parser, "letters-fashion")
    args = parser.parse_args(argv)
    record = Recorder(args.record, "The fast solver at scale against PyLMNN: letters and Fashion-MNIST",
                      notes="k=3, mu=0.5; the fast solver stops at the certified gap `tol`; every fit in a "
                            "fresh process (peak GiB: its resident memory), wall-clock seconds; `objective` "
                            "is eq. 14, PyLMNN's gap is against the fast solver's certified lower bound; "
                            "`error`: 3-NN test error.",
                      command=module_command("validation.benchmarks.letters_fashion", argv), columns=COLUMNS,
                      formats={"seconds": ".1f", "gap": ".2e", "objective": ".2f", "lower": ".2f",
                               "error": ".2%", "euclidean_error": ".2%", "peak_gib": ".2f", "tol": "g"})
    print(f"machine: {available_cores()} cores; wall-clock times")
    compile_solver()  # so that no fit's seconds include numba compiling the solver's loops
    every = []
    for name in args.data:
        fast = in_fresh_process(fit_fast, name, DATA[name], args.max_iter)
        every.append({"data": name, **fast})
        record(every)
        rows = [fast]
        if not args.skip_pylmnn and (name != "fashion-60k" or args.pylmnn_60k):
            rows.append(in_fresh_process(fit_pylmnn, name, fast["lower"]))
            every.append({"data": name, **rows[-1]})
            record(every)
        _print(name, rows)
    return 0


def load(name: str):
    """Train and test arrays of one benchmark data set (module docstring)."""
    from sklearn.decomposition import PCA

    from validation.datasets import letters_split, load_fashion_mnist

    if name == "letters":
        return letters_split()
    X_train, y_train, X_test, y_test = load_fashion_mnist()
    n = 10_000 if name == "fashion-10k" else 60_000
    pca = PCA(164, random_state=0).fit(X_train[:n])
    return pca.transform(X_train[:n]), y_train[:n], pca.transform(X_test), y_test


def fit_fast(name: str, tol: float, max_iter: int) -> dict:
    """fast_solver.LMNN to a certified gap ``tol``."""
    import warnings

    from fast_solver import LMNN

    X_train, y_train, X_test, y_test = load(name)
    tic = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = LMNN(k=3, mu=0.5, tol=tol, max_iter=max_iter).fit(X_train, y_train)
    seconds = time.perf_counter() - tic
    r = model.result_
    return dict(
        solver="fast_solver.LMNN", seconds=seconds, n_iter=r.n_iter, objective=r.upper,
        lower=r.lower, gap=r.relative_gap, converged=r.converged, tol=tol,
        detail=(f"{r.n_stages} stages, {r.n_searches} exact searches, {r.n_evaluations} evaluations, "
                f"{r.n_hessian_products} Hessian products, {r.n_active} active triplets; "
                + ", ".join(f"{k} {v:.1f} s" for k, v in r.timings.items())),
        warned=[str(w.message) for w in caught],
        error=knn_error(model.transform(X_train), y_train, model.transform(X_test), y_test),
        euclidean_error=knn_error(X_train, y_train, X_test, y_test), peak_gib=_peak_gib(),
    )


def fit_pylmnn(name: str, lower: float) -> dict:
    """PyLMNN 1.6.4 with its defaults (n_neighbors=3) on the same data."""
    from importlib.metadata import version

    from lmnn_sdp.core.problem import LMNNProblem
    from validation.peers import import_pylmnn

    PyLMNN = import_pylmnn()
    X_train, y_train, X_test, y_test = load(name)
    tic = time.perf_counter()
    model = PyLMNN(n_neighbors=3).fit(X_train, y_train)
    seconds = time.perf_counter() - tic
    L = model.components_
    objective = LMNNProblem(X_train, y_train, k=3, mu=0.5).objective(L.T @ L)
    return dict(
        solver=f"PyLMNN {version('pylmnn')}", seconds=seconds, n_iter=model.n_iter_,
        objective=objective, lower=None, gap=(objective - lower) / objective, converged=None, tol=None,
        detail="", warned=[], error=knn_error(X_train @ L.T, y_train, X_test @ L.T, y_test),
        euclidean_error=None, peak_gib=_peak_gib(),
    )


def _print(name: str, rows: list[dict]) -> None:
    fast = rows[0]
    print(f"\n{name}: k=3, mu=0.5; fast solver stops at a certified gap of {fast['tol']:g}")
    header = (f"{'solver':<18} {'fit s':>8} {'iter':>6} {'gap':>9} {'eq. 14':>16} "
              f"{'3-NN err':>9} {'peak GiB':>8} converged")
    print(header + "\n" + "-" * len(header))
    for r in rows:
        converged = "-" if r["converged"] is None else str(r["converged"])
        print(f"{r['solver']:<18} {r['seconds']:>8.1f} {r['n_iter']:>6} {r['gap']:>9.2e} "
              f"{r['objective']:>16.2f} {r['error']:>9.2%} {r['peak_gib']:>8.2f} {converged}")
    print(f"Euclidean 3-NN test error: {fast['euclidean_error']:.2%}")
    print(f"fast solver: {fast['detail']}")
    for message in fast["warned"]:
        print(f"warning: {message}")
    if len(rows) > 1:
        peer = rows[1]
        print(f"time ratio PyLMNN / fast_solver: {peer['seconds'] / fast['seconds']:.2f}x "
              "(PyLMNN's gap: its eq. 14 against the fast solver's certified lower bound)")


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


if __name__ == "__main__":
    sys.exit(main())
