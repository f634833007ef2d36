"""Cross-check: every fast solver against the certified exact optimum.

For each instance of the built-in suite (``validation.instances``) the exact
optimum is solved and certified by ``lmnn_sdp`` (aggregated active sets), the
fast solver runs on the same ``LMNNProblem``, and the instance passes when the
fast objective is within ``tol`` (relative) of the certified optimum. A fast
objective *below* the certified lower bound would mean a broken objective or
bound, and fails as well.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from tqdm.auto import tqdm

import fast_solver
from lmnn_sdp import LMNNProblem, solve_lmnn
from validation.instances import Instance, builtin_instances

FAST_SOLVERS: dict[str, Callable[[LMNNProblem], np.ndarray]] = {
    "lmnn": lambda problem: fast_solver.solve(problem).M,  # App. A, Alg. 1
}
EXACT_TOL = 1e-7  # the reference is certified well inside the cross-check tolerance
COLUMNS = ("instance", "solver", "n", "d", "k", "mu", "triplets", "exact_optimum", "certified_gap",
           "fast_objective", "relative_difference", "exact_seconds", "fast_seconds", "passed")


def crosscheck(instances: list[Instance] | None = None, solvers=tuple(FAST_SOLVERS),
               tol: float = 1e-4, jobs: int = 1, progress: bool = True) -> list[dict]:
    """One row per (instance, fast solver); see ``COLUMNS``."""
    unknown = set(solvers) - set(FAST_SOLVERS)
    if unknown:
        raise ValueError(f"unknown fast solver(s) {sorted(unknown)}; choose from {sorted(FAST_SOLVERS)}.")
    instances = builtin_instances() if instances is None else instances
    tasks = [delayed(check_instance)(instance, solvers, tol) for instance in instances]
    rows = Parallel(n_jobs=jobs, return_as="generator")(tasks)
    bar = tqdm(rows, total=len(tasks), desc="cross-check", disable=not progress)
    return [row for rows_of_instance in bar for row in rows_of_instance]


def check_instance(instance: Instance, solvers, tol: float) -> list[dict]:
    """Solve ``instance`` exactly once, then run each fast solver against it."""
    problem = instance.problem()
    start = time.perf_counter()
    exact = solve_lmnn(problem, method="aggregated", tol=EXACT_TOL)
    exact_seconds = time.perf_counter() - start
    rows = []
    for name in solvers:
        start = time.perf_counter()
        fast_objective = problem.objective(FAST_SOLVERS[name](problem))
        fast_seconds = time.perf_counter() - start
        difference = (fast_objective - exact.objective) / max(abs(exact.objective), 1e-12)
        passed = (exact.certificate.certified and abs(difference) <= tol
                  and fast_objective >= exact.lower_bound * (1 - 1e-9))
        rows.append({
            "instance": instance.name, "solver": name, "n": problem.n_samples,
            "d": problem.n_features, "k": problem.k, "mu": problem.mu,
            "triplets": problem.n_triplets, "exact_optimum": exact.objective,
            "certified_gap": exact.relative_gap, "fast_objective": fast_objective,
            "relative_difference": difference, "exact_seconds": exact_seconds,
            "fast_seconds": fast_seconds, "passed": bool(passed),
        })
    return rows


def summary(rows: list[dict], tol: float) -> str:
    """Worst difference, worst gap, failures."""
    failed = [f"{r['instance']} ({r['solver']})" for r in rows if not r["passed"]]
    worst = max(rows, key=lambda r: abs(r["relative_difference"]))
    lines = [
        f"{len(rows) - len(failed)} of {len(rows)} passed (tolerance {tol:g} relative)",
        f"worst relative difference {worst['relative_difference']:.3g} ({worst['instance']}, "
        f"{worst['solver']}); worst certified gap {max(r['certified_gap'] for r in rows):.3g}",
    ]
    if failed:
        lines.append(f"FAILED: {', '.join(failed)}")
    return "\n".join(lines)


def write_report(rows: list[dict], directory: Path, tol: float) -> None:
    """``crosscheck.json`` and ``crosscheck.md`` in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "crosscheck.json").write_text(json.dumps({"tolerance": tol, "rows": rows}, indent=1))
    header = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n"
    body = "".join("| " + " | ".join(_markdown_cell(r[c]) for c in COLUMNS) + " |\n" for r in rows)
    (directory / "crosscheck.md").write_text(header + body + "\n" + summary(rows, tol) + "\n")


def _markdown_cell(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)
