"""The gate: no fast solver runs in the experiments before its cross-check passes.

Before the first task of a method that names a solver in its ``gate``
(``validation.experiments.methods``), the run cross-checks that solver on the built-in
instances (``validation.crosscheck.crosscheck(builtin_instances(), (solver,))``: the
fast solver against the certified exact optimum, on the stack installed where it runs).
The outcome is cached in the results store under the environment (package versions,
code version and suite, ``gate_environment``), so it runs once per environment and
solver; if any row fails, every task of a method that needs it is refused with
``refusal``'s message instead of run.

``--quick`` gates on the built-in instances of at most ``max_n`` points (10 of the 33:
the 60-point iris, breast cancer and blob instances and the degenerate cases), so that a
fresh quick run stays within minutes: the full suite took 7 min for LMNN and 9 min for
the energy rows on this 2-core machine at load 10. Its cached outcome never stands in for
the full suite's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from validation import crosscheck
from validation.experiments.store import ResultStore
from validation.experiments.versions import environment_key
from validation.instances import Instance, builtin_instances

QUICK_GATE_N = 60  # --quick: gate on the built-in instances of at most this many points


@dataclass(frozen=True)
class GateResult:
    """A solver's cross-check on the built-in instances: passed only if every row passed."""

    solver: str
    passed: bool
    message: str
    rows: list
    seconds: float


def gate_instances(max_n: int | None = None) -> list[Instance]:
    """The built-in instances, or those of at most ``max_n`` points."""
    return [i for i in builtin_instances() if max_n is None or len(i.X) <= max_n]


def gate_environment(max_n: int | None = None) -> str:
    """The cache key of a gate: ``environment_key()`` and the suite."""
    return f"{environment_key()} suite=builtin" + (f"-n<={max_n}" if max_n is not None else "")


def run_gate(solver: str, environment: str, max_n: int | None = None) -> GateResult:
    """Cross-check ``solver`` on ``gate_instances(max_n)`` (on a worker); ``environment`` is the
    planner's ``gate_environment(max_n)``, which the worker must share."""
    if gate_environment(max_n) != environment:
        raise RuntimeError(f"gate {solver}: the worker's packages or code differ from the "
                           "planner's; run workers on the same checkout and environment")
    start = time.perf_counter()
    rows = crosscheck.crosscheck(gate_instances(max_n), (solver,), progress=False)
    failed = [row["instance"] for row in rows if not row["passed"]]
    message = (f"cross-check of '{solver}': {len(rows) - len(failed)} of {len(rows)} rows on the "
               f"built-in instances{f' of at most {max_n} points' if max_n else ''} pass" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return GateResult(solver, not failed and bool(rows), message, rows, time.perf_counter() - start)


def cached_gate(store: ResultStore, solver: str, environment: str) -> GateResult | None:
    """The gate of ``solver`` cached in ``store`` under ``environment``, or None."""
    row = store.gate(solver, environment)
    if row is None:
        return None
    return GateResult(solver, row["passed"], row["message"], row["rows"], row["seconds"])


def cache_gate(store: ResultStore, result: GateResult, environment: str, run: str | None = None) -> None:
    """Cache ``result`` in ``store`` under ``environment``, releasing ``run``'s claim on the gate."""
    store.record_gate(result.solver, environment, result.passed, result.message, result.rows,
                      result.seconds, run)


def refusal(method_name: str, gates: list[GateResult]) -> str | None:
    """Why ``method_name`` may not run given its gates' results, or None when all passed."""
    failed = [gate for gate in gates if not gate.passed]
    if not failed:
        return None
    solvers = " ".join(gate.solver for gate in failed)
    return (f"refused: {method_name} needs fast solvers whose cross-check on the built-in "
            f"instances failed on this stack ({'; '.join(g.message for g in failed)}). "
            f"See `python -m validation crosscheck --suite builtin --solvers {solvers}`; "
            "the method runs once its solver passes.")
