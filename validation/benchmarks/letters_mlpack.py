"""Why mlpack's LMNN classifies letters better than the certified optimum, and model selection.

Letter Recognition, UCI split (16,000 training rows, 4,000 test), raw features, k=3, mu=0.5.
``profile`` scores metrics by eq. 14 and by mlpack's objective (each point's k nearest
impostors only, ``validation.mlpack_objective``), with their impostor counts, scale and
3-NN test error (ties broken by shrinking k, ``validation.experiments.knn``): the certified
optimum (``fast_solver.solve``), mlpack 4.8's L-BFGS metric (fitted once, ~500 s, saved as
``L`` (d, d) with the data mapped to ``X @ L.T``; ``--fit-mlpack`` fits it again) and any
other saved ``L``. ``select`` cross-validates ``mu`` and ``k`` over certified paths
(``validation.model_selection``), refits at the choice and scores 3-NN and energy
classification (eq. 15) on the test rows beside the paper's Table 1 (LMNN 3.60%, energy
2.67%). Each command's table is the record ``docs/results/letters-mlpack-COMMAND.md`` and
``.csv`` (``select`` also writes the cross-validation table as ``letters-mlpack-select-cv``;
``--record NAME`` names them, ``--no-record`` skips them), rewritten after every row.

    python -m validation.benchmarks.letters_mlpack profile --L mlpack=PATH.npy [--fit-mlpack PATH.npy] [--mlpack-targets]
    python -m validation.benchmarks.letters_mlpack select [--cv 5] [--mus ...] [--ks ...] [--tol 1e-6]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

import fast_solver
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import psd_factor
from validation.datasets import letters_split
from validation.exact import format_table
from validation.experiments.knn import knn_error, nearest_neighbours
from validation.mlpack_objective import impostor_profile, mlpack_targets
from validation.model_selection import select_mu_k
from validation.peers import fit_mlpack
from validation.records import Recorder, add_record_option, module_command

PAPER = {"lmnn": 3.60, "energy": 2.67}
PROTOCOL = "Letter Recognition, UCI split (16,000 training rows, 4,000 test), raw features, k=3, mu=0.5"
PROFILE = ("metric", "eq14", "mlpack_objective", "pull", "active_triplets", "truncated_active",
           "crowded_points", "max_impostors", "crowded_push_%", "top1%_push_%", "trace", "eig_min",
           "eig_max", "test_error_%", "sklearn_3nn_%")


def profile_row(name: str, problem: LMNNProblem, M: np.ndarray, X_test, y_test) -> dict:
    """Eq. 14, mlpack's objective, impostor counts, the share of eq. 14's hinge sum from points
    with more than k impostors and from the 1% largest, scale and 3-NN test error at ``M``."""
    profile = impostor_profile(problem, M)
    total = max(float(profile.push.sum()), np.finfo(float).tiny)
    eigenvalues = np.linalg.eigvalsh(M)
    return {"metric": name, "eq14": profile.eq14, "mlpack_objective": profile.truncated,
            "pull": profile.pull, "active_triplets": profile.active_triplets,
            "truncated_active": profile.truncated_active, "crowded_points": profile.crowded,
            "max_impostors": int(profile.impostors.max()),
            "crowded_push_%": 100 * profile.push[profile.impostors > problem.k].sum() / total,
            "top1%_push_%": 100 * np.sort(profile.push)[-len(profile.push) // 100:].sum() / total,
            "trace": float(np.trace(M)),
            "eig_min": float(eigenvalues[0]), "eig_max": float(eigenvalues[-1]),
            "test_error_%": 100 * test_error(problem.X, problem.y, X_test, y_test, M),
            "sklearn_3nn_%": 100 * sklearn_error(problem.X, problem.y, X_test, y_test, M)}


def test_error(X, y, X_test, y_test, M: np.ndarray, n_neighbors: int = 3) -> float:
    """k-NN test error under ``M`` (d, d), ties broken by shrinking k."""
    L = psd_factor(M)
    return knn_error(y, nearest_neighbours(X @ L.T, X_test @ L.T, n_neighbors), y_test)


def sklearn_error(X, y, X_test, y_test, M: np.ndarray) -> float:
    """scikit-learn's 3-NN test error under ``M`` (ties to the first class in its order)."""
    L = psd_factor(M)
    return 1.0 - KNeighborsClassifier(3).fit(X @ L.T, y).score(X_test @ L.T, y_test)


def profile(args, record, record_cv=None) -> list[dict]:
    """One row (``PROFILE``) per metric (and target choice); ``record`` gets the rows so far
    after every row; ``record_cv`` is unused (``select``'s)."""
    X, y, X_test, y_test = letters_split()
    problem = LMNNProblem(X, y, k=3, mu=0.5)
    metrics = {"euclidean": np.eye(X.shape[1])}
    start = time.perf_counter()
    optimum = fast_solver.solve(problem)
    print(f"certified optimum: eq. 14 {optimum.upper:.2f}, gap {optimum.relative_gap:.2g}, "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    metrics["certified optimum"] = optimum.metric
    if args.fit_mlpack:
        start = time.perf_counter()
        M = fit_mlpack(problem)
        print(f"mlpack fit: {time.perf_counter() - start:.0f} s", flush=True)
        np.save(args.fit_mlpack, psd_factor(M))
        metrics["mlpack"] = M
    for name, path in (item.split("=", 1) for item in args.L):
        L = np.load(path)
        metrics[name] = L.T @ L
    problems = {"": problem}
    if args.mlpack_targets:
        problems[" (mlpack targets)"] = LMNNProblem(X, y, mu=0.5, targets=mlpack_targets(problem))
    rows = []
    for name, M in metrics.items():
        for suffix, scored in problems.items():
            rows.append(profile_row(name + suffix, scored, M, X_test, y_test))
            print(format_table(rows[-1:], PROFILE), flush=True)
            record(rows)
    return rows


def select(args, record, record_cv) -> list[dict]:
    """Cross-validated (k, mu) and Table 1's (3, 0.5), refitted and scored on the test rows;
    ``record`` gets the rows so far after every refit, ``record_cv`` the cross-validation
    table."""
    X, y, X_test, y_test = letters_split()
    start = time.perf_counter()
    selection = select_mu_k(X, y, args.mus, args.ks, cv=args.cv, progress=True, tol=args.tol)
    print(f"cross-validation: {time.perf_counter() - start:.0f} s")
    print(format_table(selection.table, ("k", "mu", "cv_error", "cv_std", "max_gap")), flush=True)
    record_cv(selection.table)
    rows = []
    for k, mu in {(selection.k, selection.mu), (3, 0.5)}:
        model = fast_solver.LMNN(k=k, mu=mu).fit(X, y)
        energy = fast_solver.EnergyClassifier(fast_solver.LMNN(k=k, mu=mu)).fit(X, y)
        rows.append({"k": k, "mu": mu, "chosen": (k, mu) == (selection.k, selection.mu),
                     "certified_gap": model.result_.relative_gap,
                     "3nn_test_%": 100 * test_error(X, y, X_test, y_test, model.metric_),
                     "energy_test_%": 100 * (1 - energy.score(X_test, y_test)),
                     "paper_3nn_%": PAPER["lmnn"], "paper_energy_%": PAPER["energy"]})
        print(format_table(rows[-1:], tuple(rows[-1])), flush=True)
        record(rows)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("profile", help="eq. 14 and mlpack's objective at several metrics")
    p.add_argument("--L", nargs="*", default=[], metavar="NAME=PATH",
                   help="saved L (d, d), data mapped to X @ L.T")
    p.add_argument("--fit-mlpack", metavar="PATH", help="fit mlpack (~500 s) and save its L here")
    p.add_argument("--mlpack-targets", action="store_true",
                   help="also score every metric with mlpack's target neighbours")
    p.set_defaults(run=profile)
    s = commands.add_parser("select", help="mu and k by cross-validation over certified paths")
    s.add_argument("--cv", type=int, default=5)
    s.add_argument("--mus", type=float, nargs="+", default=[0.9, 0.7, 0.5, 0.3, 0.1])
    s.add_argument("--ks", type=int, nargs="+", default=[1, 3, 5])
    s.add_argument("--tol", type=float, default=1e-6, help="certified gap of every solve")
    s.set_defaults(run=select)
    for command in (p, s):
        add_record_option(command, None, f"letters-mlpack-{command.prog.split()[-1]}")
    args = parser.parse_args(argv)
    name = f"letters-mlpack-{args.command}" if args.record is None else args.record
    command = module_command("validation.benchmarks.letters_mlpack", argv)
    record_cv = None
    if args.command == "profile":
        record = Recorder(name, "Eq. 14 and mlpack's objective at several metrics on letters",
                          notes=PROTOCOL + "; 3-NN test errors in %, ties broken by shrinking k.",
                          command=command, columns=PROFILE)
    else:
        record = Recorder(name, "mu and k by cross-validation over certified paths on letters",
                          notes=f"{PROTOCOL} for Table 1's row; {args.cv}-fold cross-validation over "
                                f"mu in {args.mus}, k in {args.ks}, tol={args.tol:g}; test errors in %, "
                                "the paper's (JMLR 2009, Table 1) a reference.", command=command)
        record_cv = Recorder(name and f"{name}-cv", "Cross-validation of mu and k on letters",
                             notes=f"{PROTOCOL}; {args.cv}-fold cross-validation, tol={args.tol:g}.",
                             command=command, columns=("k", "mu", "cv_error", "cv_std", "max_gap"))
    args.run(args, record, record_cv)


if __name__ == "__main__":
    main()
