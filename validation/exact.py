"""Exact, certified LMNN on scikit-learn's bundled data: the first thing a user runs.

Solves iris and wine (standardised) at k=3, mu=0.5 by constraint generation, by
aggregated active sets and, when asked, by the full SDP over every triplet, and
reports the certificate of each answer.
"""

from __future__ import annotations

import time

from lmnn_sdp import LMNNProblem, solve_lmnn
from lmnn_sdp.certificates.bounds import significant
from validation.datasets import load_bundled

COLUMNS = ("data", "n", "d", "triplets", "method", "sdp_triplets", "rounds", "upper", "lower",
           "relative_gap", "certified", "status", "seconds")


def certify_bundled(names=("iris", "wine"), methods=("cutting-plane",), solver="CLARABEL",
                    k: int = 3, mu: float = 0.5, tol: float = 1e-6) -> list[dict]:
    """One row per (data set, method) with the certified optimum and timings."""
    rows = []
    for name in names:
        X, y = load_bundled(name)
        problem = LMNNProblem(X, y, k=k, mu=mu)
        for method in methods:
            start = time.perf_counter()
            result = solve_lmnn(problem, solver, method=method, tol=tol)
            rows.append({
                "data": name, "n": problem.n_samples, "d": problem.n_features,
                "triplets": problem.n_triplets, "method": method,
                "sdp_triplets": result.rounds[-1].sdp_triplets if result.rounds else result.n_triplets,
                "rounds": max(1, len(result.rounds)),
                "upper": result.upper, "lower": result.lower,
                "relative_gap": result.relative_gap, "certified": result.certified,
                "status": result.status, "seconds": time.perf_counter() - start,
            })
    return rows


def format_table(rows: list[dict], columns=COLUMNS) -> str:
    """Plain-text table, one line per row; values to 10 significant digits, gaps and times
    to 3 (``significant``: a gap below 1 never shows as 1)."""
    def cell(column: str, value) -> str:
        if not isinstance(value, float):
            return str(value)
        short = abs(value) < 1e-2 or "gap" in column or "difference" in column or "seconds" in column
        return significant(value, 3 if short else 10)

    table = [list(columns)] + [[cell(c, row[c]) for c in columns] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    return "\n".join("  ".join(v.rjust(w) for v, w in zip(line, widths)) for line in table)
