"""MLNG, LMNN and NCA on Letter Recognition, z-scored: 3-NN test errors next to the MLNG
paper's Table 1.

UCI split (16,000 training rows, 4,000 test), every feature z-scored with the training rows'
mean and standard deviation (the MLNG paper's protocol, sec. 6), k=3. MLNG (Trivedi,
McAllester & Shakhnarovich, NIPS 2014) starts from the zero metric with the learning rate
1/t and stops when the epoch average of eq. 10 falls by less than ``tol``; with ``--tune``,
``C`` is chosen as in the paper, by the 3-NN error on a 75%/25% split of the training rows
(z-scored with the 75% part). LMNN (this library's certified solver, mu=0.5) and NCA
(``fast_solver.NCA``, scikit-learn's defaults: LDA start, at most 50 L-BFGS iterations) run
on the same inputs as peers. The paper's column (Table 1, k=3: Euclidean 4.79%, LMNN 3.26%, NCA 4.71%,
MLNG 2.32%) is 5-fold cross-validation on all 20,000 rows, a reference rather than a target.
The table is the record ``docs/results/letters-mlng.md`` and ``.csv``, the tuning table
``letters-mlng-tuning`` (``--record NAME`` names them, ``--no-record`` skips them), rewritten
after every fit.

    python -m validation.benchmarks.letters_mlng [--C 0.1] [--tune 0.003 0.01 0.03 0.1]
        [--batch-size 10] [--max-iter 100] [--tol 1e-3] [--seed 0] [--skip-lmnn] [--skip-nca]
        [--record NAME | --no-record]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from fast_solver import LMNN, MLNG, NCA
from validation.benchmarks.common import knn_error
from validation.datasets import letters_split
from validation.exact import format_table
from validation.records import Recorder, add_record_option, module_command

PAPER = {"euclidean": 4.79, "lmnn": 3.26, "nca": 4.71, "mlng": 2.32}
COLUMNS = ("model", "C", "n_iter", "converged", "fit_seconds", "test_error_%", "paper_%")
TUNING = ("C", "n_iter", "converged", "fit_seconds", "validation_error_%")


def z_scored(X_fit, *others):
    """``X_fit`` and ``others`` scaled by the mean and standard deviation of ``X_fit``."""
    mean, std = X_fit.mean(axis=0), X_fit.std(axis=0)
    return [(X - mean) / std for X in (X_fit, *others)]


def fit_scored(model, X, y, X_test, y_test) -> dict:
    """Fit ``model`` and score its 3-NN error; ``n_iter`` is epochs for MLNG, Newton
    iterations for LMNN, L-BFGS iterations for NCA; ``converged`` is False when the fit
    warned (ConvergenceWarning)."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(X, y)
    seconds = time.perf_counter() - start
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return {"n_iter": model.n_iter_, "converged": converged, "fit_seconds": seconds,
            "error": 100 * knn_error(model.transform(X), y, model.transform(X_test), y_test)}


def tune(X, y, args, record=None) -> float:
    """The ``C`` of ``args.tune`` with the least 3-NN error on a 75%/25% split of (X, y);
    ``record`` (if given) gets the tuning rows so far after every fit."""
    order = np.random.default_rng(args.seed).permutation(len(X))
    fit, held = order[:len(X) * 3 // 4], order[len(X) * 3 // 4:]
    X_fit, X_held = z_scored(X[fit], X[held])
    rows = []
    for C in args.tune:
        row = fit_scored(mlng(args, C), X_fit, y[fit], X_held, y[held])
        rows.append({"C": C, **row, "validation_error_%": row["error"]})
        print(format_table(rows[-1:], TUNING), flush=True)
        if record is not None:
            record(rows)
    print(format_table(rows, TUNING), "\n", flush=True)
    return min(rows, key=lambda row: row["validation_error_%"])["C"]


def mlng(args, C: float) -> MLNG:
    return MLNG(k=3, C=C, batch_size=args.batch_size, max_iter=args.max_iter, tol=args.tol,
                random_state=args.seed)


def run(args, record=None, record_tuning=None) -> list[dict]:
    """The table's rows (``COLUMNS``); ``record`` and ``record_tuning`` (if given) get the
    rows so far of the table and of the tuning table after every fit."""
    record = record or (lambda rows: None)
    X_raw, y, X_test_raw, y_test = letters_split()
    C = tune(X_raw, y, args, record_tuning) if args.tune else args.C
    X, X_test = z_scored(X_raw, X_test_raw)
    rows = [{"model": "euclidean", "C": "", "n_iter": "", "converged": "", "fit_seconds": 0.0,
             "test_error_%": 100 * knn_error(X, y, X_test, y_test), "paper_%": PAPER["euclidean"]}]
    record(rows)
    if not args.skip_lmnn:
        row = fit_scored(LMNN(k=3, mu=0.5), X, y, X_test, y_test)
        rows.append({"model": "lmnn", "C": "", **row, "test_error_%": row["error"],
                     "paper_%": PAPER["lmnn"]})
        print(format_table(rows[-1:], COLUMNS), flush=True)
        record(rows)
    if not args.skip_nca:
        row = fit_scored(NCA(), X, y, X_test, y_test)
        rows.append({"model": "nca", "C": "", **row, "test_error_%": row["error"],
                     "paper_%": PAPER["nca"]})
        print(format_table(rows[-1:], COLUMNS), flush=True)
        record(rows)
    row = fit_scored(mlng(args, C), X, y, X_test, y_test)
    rows.append({"model": f"mlng (batch {args.batch_size})", "C": C, **row,
                 "test_error_%": row["error"], "paper_%": PAPER["mlng"]})
    record(rows)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--C", type=float, default=0.1, help="C of eq. 10 (without --tune)")
    parser.add_argument("--tune", type=float, nargs="*", default=[],
                        help="values of C to choose from on a 75/25 split of the training rows")
    parser.add_argument("--batch-size", type=int, default=10, help="points per SGD step")
    parser.add_argument("--max-iter", type=int, default=100, help="epochs")
    parser.add_argument("--tol", type=float, default=1e-3, help="relative fall of eq. 10 per epoch")
    parser.add_argument("--seed", type=int, default=0, help="SGD order and tuning split")
    parser.add_argument("--skip-lmnn", action="store_true", help="no LMNN peer")
    parser.add_argument("--skip-nca", action="store_true", help="no NCA peer")
    add_record_option(parser, "letters-mlng")
    args = parser.parse_args(argv)
    command = module_command("validation.benchmarks.letters_mlng", argv)
    protocol = (f"UCI split (16,000 training rows, 4,000 test), z-scored, k=3; MLNG with batches of "
                f"{args.batch_size}, at most {args.max_iter} epochs, tol={args.tol:g}, seed {args.seed}")
    formats = {"fit_seconds": ".3g", "test_error_%": ".2f", "paper_%": ".2f", "validation_error_%": ".2f"}
    record = Recorder(args.record, "MLNG, LMNN and NCA on Letter Recognition beside the MLNG paper",
                      notes=protocol + "; test errors in %, the MLNG paper's Table 1 a reference.",
                      command=command, columns=COLUMNS, formats=formats)
    record_tuning = Recorder(args.record and f"{args.record}-tuning", "Choosing MLNG's C on letters",
                             notes=protocol + "; 3-NN error in % on a 75%/25% split of the training rows.",
                             command=command, columns=TUNING, formats=formats)
    rows = run(args, record, record_tuning)
    print()
    print(format_table(rows, COLUMNS))


if __name__ == "__main__":
    main()
