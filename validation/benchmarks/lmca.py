"""Benchmark of low-rank LMNN / LMCA and kernel LMCA (Torresani & Lee, NIPS 2006).

    python -m validation.benchmarks.lmca [--part fashion ionosphere] [--fashion fashion-10k]
                                         [--ranks 15 25] [--full-tol 1e-4] [--splits 10]
                                         [--max-iter N] [--record NAME | --no-record]

Data (``python -m validation data fetch`` first):

* ``fashion``: Fashion-MNIST as in ``validation.benchmarks.letters_fashion``
  (pixels / 255, PCA to 164 dimensions fitted on the training rows used,
  ``fashion-10k`` the first 10,000 or ``fashion-60k`` all 60,000, the 10,000
  test images; ``fashion-10k-raw``: the first 10,000 training images' 784 pixels / 255,
  no PCA). LMCA (k=3, mu=0.5, PCA start, linear hinge) at each rank against
  PCA at the same rank (fitted on the training rows), by 3-NN test error; the
  full-rank certified solve (``fast_solver.solve`` to a gap of ``--full-tol``) gives the
  lower bound of the price of rank ``(eps(L^T L) - lower_full) / lower_full``.
* ``ionosphere``: mlbench Ionosphere (351 rows, 34 features as distributed).
  The LMCA paper averages 100 random 70/30 splits and does not list them; here
  ``--splits`` random 70/30 splits (``ShuffleSplit(random_state=0)``). Euclidean
  3-NN, LMNN (``fast_solver.LMNN``, k=3, mu=0.5, certified to a gap of 1e-4: 60 s a
  fit here, 260 s to 1e-6 for the same 3-NN error on the first split) and kernel LMCA (RBF,
  ``gamma = 1 / 34``, 34 components as in the paper's Fig. 3, k=3, mu=0.5,
  kernel-PCA start), by 3-NN test error. The paper tunes k, mu and the RBF width
  by cross-validation; this does not.

Wall-clock times on the machine it runs on (shared cores: read the ratios, not
the seconds). The tables are the records ``docs/results/lmca-fashion`` and
``lmca-ionosphere`` (``.md`` and ``.csv``; ``--record NAME`` names them NAME-fashion and
NAME-ionosphere, ``--no-record`` skips them), rewritten after every fit or split.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.model_selection import ShuffleSplit

from validation.benchmarks.common import knn_error
from validation.benchmarks.letters_fashion import load
from validation.records import Recorder, add_record_option, module_command

FASHION = ("fashion-10k", "fashion-60k", "fashion-10k-raw")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", nargs="+", choices=["fashion", "ionosphere"],
                        default=["fashion", "ionosphere"])
    parser.add_argument("--fashion", choices=FASHION, default="fashion-10k")
    parser.add_argument("--ranks", nargs="+", type=int, default=[15, 25])
    parser.add_argument("--full-tol", type=float, default=1e-4,
                        help="certified gap of the full-rank solve that bounds the price of rank")
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--max-iter", type=int, default=1000, help="L-BFGS budget of every LMCA fit")
    add_record_option(parser, "lmca")
    args = parser.parse_args(argv)
    if not 0 < args.full_tol < 1:
        parser.error(f"--full-tol must lie in (0, 1), got {args.full_tol}")
    command = module_command("validation.benchmarks.lmca", argv)
    record_fashion = Recorder(
        args.record and f"{args.record}-fashion", f"LMCA against PCA on {args.fashion}",
        notes="k=3, mu=0.5; LMCA from PCA, linear hinge, at most "
              f"{args.max_iter} L-BFGS iterations; `price`: the price of rank against the certified "
              "full-rank lower bound; `error`: 3-NN test error; wall-clock seconds.",
        command=command, formats={"seconds": ".1f", "objective": ".2f", "price": ".3f", "error": ".2%"})
    record_ionosphere = Recorder(
        args.record and f"{args.record}-ionosphere", "Kernel LMCA and LMNN on Ionosphere",
        notes="Random 70/30 splits (ShuffleSplit, random_state=0), k=3, mu=0.5; kernel LMCA: RBF "
              "gamma=1/34, 34 components; 3-NN test error over the splits so far; wall-clock seconds.",
        command=command, formats={"error_mean": ".2%", "error_std": ".2%", "seconds_mean": ".1f"})
    if "fashion" in args.part:
        _print_fashion(args.fashion, fashion(args.fashion, args.ranks, args.max_iter, record_fashion,
                                                   full_tol=args.full_tol))
    if "ionosphere" in args.part:
        results = ionosphere(args.splits, args.max_iter,
                             lambda results: record_ionosphere(ionosphere_rows(results)))
        _print_ionosphere(args.splits, results)
    return 0


def load_fashion(name: str):
    """Train and test arrays of ``name`` in ``FASHION`` (module docstring)."""
    if name != "fashion-10k-raw":
        return load(name)
    from validation.benchmarks.high_d_grid import FASHION_PIXELS, load_cell

    return load_cell("fashion", 10_000, FASHION_PIXELS)


def fashion(name: str, ranks: list[int], max_iter: int, record=None, *, full_tol: float = 1e-4) -> list[dict]:
    """One row per method and rank (module docstring); ``record`` (if given) gets the rows so
    far after every fit."""
    record = record or (lambda rows: None)
    from sklearn.decomposition import PCA

    from fast_solver import solve
    from fast_solver.low_rank.lmca import price_of_rank, solve_lmca
    from lmnn_sdp.core.problem import LMNNProblem

    X_train, y_train, X_test, y_test = load_fashion(name)
    if max(ranks) > X_train.shape[1]:
        raise ValueError(f"--ranks must be at most the {X_train.shape[1]} dimensions of {name}, got {ranks}")
    problem = LMNNProblem(X_train, y_train, k=3, mu=0.5)
    tic = time.perf_counter()
    full = solve(problem, tol=full_tol)
    L = full.components
    rows = [dict(method="LMNN full rank", rank=X_train.shape[1], seconds=time.perf_counter() - tic,
                 n_iter=full.n_iter, objective=full.upper, price=(full.upper - full.lower) / full.lower,
                 error=knn_error(X_train @ L.T, y_train, X_test @ L.T, y_test),
                 note=f"{'certified' if full.converged else 'not certified'}: gap {full.relative_gap:.1e}, "
                      f"lower {full.lower:.6g}")]
    record(rows)
    for r in ranks:
        pca = PCA(r, random_state=0).fit(X_train)
        rows.append(dict(method="PCA", rank=r, seconds=0.0, n_iter=0, objective=None, price=None,
                         error=knn_error(pca.transform(X_train), y_train, pca.transform(X_test), y_test), note=""))
        record(rows)
        tic = time.perf_counter()
        fit = solve_lmca(problem, r, max_iter=max_iter)
        seconds = time.perf_counter() - tic
        (fit,), _ = price_of_rank(problem, [fit], full_rank=full)
        L = fit.components
        rows.append(dict(method="LMCA", rank=r, seconds=seconds, n_iter=fit.n_iter, objective=fit.objective,
                         price=fit.price_of_rank,
                         error=knn_error(X_train @ L.T, y_train, X_test @ L.T, y_test),
                         note=f"{fit.status}, {fit.n_stages} stages, {fit.n_searches} searches, "
                              f"{fit.stages[0].n_pairs} pairs after stage 0"))
        record(rows)
    return rows


def ionosphere(splits: int, max_iter: int, record=None) -> dict[str, list]:
    """Test errors, seconds and notes per method over the splits (module docstring);
    ``record`` (if given) gets them after every split."""
    from fast_solver import LMNN, KernelLMCA
    from validation.datasets import load_mlbench

    X, y = load_mlbench("Ionosphere")
    results = {name: [] for name in ("Euclidean", "LMNN", "kernel LMCA")}
    for train, test in ShuffleSplit(splits, test_size=0.3, random_state=0).split(X):
        results["Euclidean"].append((knn_error(X[train], y[train], X[test], y[test]), 0.0, ""))
        for name, model in (("LMNN", LMNN(k=3, mu=0.5, tol=1e-4)),
                            ("kernel LMCA", KernelLMCA(k=3, mu=0.5, max_iter=max_iter))):
            tic = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model.fit(X[train], y[train])
            seconds = time.perf_counter() - tic
            error = knn_error(model.transform(X[train]), y[train], model.transform(X[test]), y[test])
            status = model.result_.status if name == "kernel LMCA" else model.result_.message
            results[name].append((error, seconds, f"{status}; {len(caught)} warnings"))
        if record is not None:
            record(results)
    return results


def ionosphere_rows(results: dict[str, list]) -> list[dict]:
    """One row per method of ``ionosphere``'s results: splits, mean and std of the 3-NN test
    error, mean fit seconds, the distinct notes."""
    rows = []
    for name, runs in results.items():
        errors, seconds, notes = zip(*runs)
        rows.append({"method": name, "splits": len(runs), "error_mean": float(np.mean(errors)),
                     "error_std": float(np.std(errors)), "seconds_mean": float(np.mean(seconds)),
                     "notes": "; ".join(sorted(set(n for n in notes if n)))})
    return rows


def _print_fashion(name: str, rows: list[dict]) -> None:
    print(f"\n{name}: k=3, mu=0.5; LMCA from PCA, linear hinge; price of rank against the "
          "certified full-rank lower bound")
    header = (f"{'method':<16} {'dims':>5} {'fit s':>8} {'iter':>6} {'eq. 14':>14} {'price':>9} "
              f"{'3-NN err':>9}  note")
    print(header + "\n" + "-" * len(header))
    for r in rows:
        objective = "-" if r["objective"] is None else f"{r['objective']:.2f}"
        price = "-" if r["price"] is None else f"{r['price']:.3f}"
        print(f"{r['method']:<16} {r['rank']:>5} {r['seconds']:>8.1f} {r['n_iter']:>6} {objective:>14} "
              f"{price:>9} {r['error']:>9.2%}  {r['note']}")
    for r in rows:
        if r["method"] == "LMCA":
            pca = next(p for p in rows if p["method"] == "PCA" and p["rank"] == r["rank"])
            print(f"rank {r['rank']}: LMCA / PCA 3-NN test error {r['error'] / pca['error']:.2f}")


def _print_ionosphere(splits: int, results: dict[str, list]) -> None:
    print(f"\nionosphere: {splits} random 70/30 splits (ShuffleSplit, random_state=0), k=3, mu=0.5; "
          "kernel LMCA: RBF gamma=1/34, 34 components")
    header = f"{'method':<12} {'3-NN err mean':>14} {'std':>7} {'fit s':>7}  notes"
    print(header + "\n" + "-" * len(header))
    for name, rows in results.items():
        errors, seconds, notes = zip(*rows)
        distinct = sorted(set(n for n in notes if n))
        print(f"{name:<12} {np.mean(errors):>14.2%} {np.std(errors):>7.2%} {np.mean(seconds):>7.1f}  "
              f"{'; '.join(distinct)[:100]}")
    base = np.mean([e for e, _, _ in results["Euclidean"]])
    for name in ("LMNN", "kernel LMCA"):
        print(f"{name} / Euclidean mean 3-NN test error: {np.mean([e for e, _, _ in results[name]]) / base:.2f}")


if __name__ == "__main__":
    sys.exit(main())
