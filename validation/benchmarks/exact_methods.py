"""Which exact method should be the default? ``solve_lmnn`` and ``solve_mm_lmnn`` by aggregated
active sets and by cutting plane, from their own start (no fast metric), on every LMNN instance
of the corpus and the main job (``validation.instances.builtin_instances``), one metric and one
per class: seconds, certified, the objective. The summary names the faster method in all on
the instances both certify; ``"full"`` (the literal SDP, every triplet) is timed on iris as
the formulation the others are checked against. Writes the record
``docs/results/exact-methods.md`` and ``.csv``, row by row.

    python -m validation.benchmarks.exact_methods [--no-record]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from lmnn_sdp import solve_lmnn
from validation.instances import builtin_instances
from validation.records import Recorder, add_record_option

METHODS = ("aggregated", "cutting-plane")


def measure(problem, method: str, multi: bool) -> dict:
    """One solve: method, seconds, certified, upper and relative gap."""
    problem = problem.with_clusters(problem.label_codes) if multi else problem
    start = time.perf_counter()
    result = solve_lmnn(problem, method=method)
    return {"method": method, "seconds": time.perf_counter() - start, "certified": result.certified,
            "upper": result.upper, "gap": result.relative_gap}


def summary(rows: list[dict]) -> str:
    """Per problem kind: the seconds in all of each method over the instances both certify."""
    lines = []
    for kind in dict.fromkeys(row["kind"] for row in rows):
        group = [row for row in rows if row["kind"] == kind and row["method"] in METHODS]
        names = {row["instance"] for row in group}
        both = [name for name in names
                if all(row["certified"] for row in group if row["instance"] == name)]
        totals = {method: sum(row["seconds"] for row in group if row["method"] == method and row["instance"] in both)
                  for method in METHODS}
        failed = {method: sum(not row["certified"] for row in group if row["method"] == method) for method in METHODS}
        faster = min(totals, key=totals.get)
        lines.append(f"- {kind}: on the {len(both)} of {len(names)} instances both certify, "
                     + ", ".join(f"{m} {totals[m]:.1f} s" for m in METHODS)
                     + "; not certified: " + ", ".join(f"{m} {failed[m]}" for m in METHODS)
                     + f"; faster: {faster}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_record_option(parser, "exact-methods")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    record = Recorder(args.record, title="Exact methods on the corpus's and the main job's instances",
                      formats={"seconds": ".3f", "upper": ".10g", "gap": ".3g"})
    rows = []
    for instance in builtin_instances():
        for kind, multi in (("lmnn", False), ("multi-metric", True)):
            for method in METHODS + (("full",) if instance.name == "iris-n150-k3-mu0.5" and not multi else ()):
                row = {"instance": instance.name, "kind": kind, **measure(instance.problem(), method, multi)}
                rows.append(row)
                print(" | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row.values()), flush=True)
                record.notes = (f"Load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} now (2 cores).\n\n"
                                + summary(rows))
                record(rows)
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
