"""MMC: certified optimum against metric-learn 0.7.0 on iris (raw) and wine (standardised).

For the full problem (MMC) and the diagonal one (XING) of ``lmnn_sdp.mmc``, with all
label pairs, prints our objective, the certified bracket ``[lower, upper]``, its relative
gap, the certified gap of the solver's own metric before the refinement
(``lmnn_sdp.mmc.refine``) and the refinement steps, the solver status (reported, never
trusted) and the time; then metric-learn's ``MMC`` fitted on the same pairs, scored by
our certificates: full metrics at their feasible rescaling (``sum_S D_A = 1``, which
keeps every distance ratio), diagonal ones as returned and at their best rescaling.
Its gap is measured against our certified bound. Timings are wall-clock seconds on
whatever machine runs this. The table is the record ``docs/results/mmc.md`` and ``.csv``
(``--record NAME`` names it, ``--no-record`` skips it), rewritten after every row.

    pip install metric-learn==0.7.0
    python -m validation.benchmarks.mmc [--threads N] [--skip-metric-learn] [--record NAME | --no-record]

metric-learn 0.7.0 passes ``force_all_finite`` to scikit-learn's ``check_array`` and
``check_X_y``; scikit-learn 1.8 removed that name (it is ``ensure_all_finite`` since
1.6). ``validation.peers.metric_learn_shim`` renames the argument for the duration
of a fit by swapping the two functions that ``metric_learn._util`` imported; no
installed file is edited.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lmnn_sdp import certify_mmc, label_pairs, solve_mmc, xing_objective
from validation.datasets import load_bundled
from validation.peers import metric_learn_shim
from validation.records import Recorder, add_record_option, module_command

DATASETS = ("iris", "wine")  # load_bundled: iris raw, wine standardised
COLUMNS = ("data", "problem", "objective", "lower", "upper", "gap", "certified", "solver_gap", "steps",
           "attempts", "status", "seconds")
ML_COLUMNS = ("ml_objective", "ml_gap", "ml_seconds", "ml_rescaled", "ml_rescaled_gap")


def run_benchmark(threads: int | None = None, metric_learn: bool = True, record=None) -> list[dict]:
    """One row per data set and problem (full, diagonal); see the module docstring.
    ``record`` (if given) gets the rows so far after every row."""
    options = {} if threads is None else {"max_threads": threads}
    rows = []
    for name in DATASETS:
        X, y = load_bundled(name)
        for diagonal in (False, True):
            ours = solve_mmc(X, y, diagonal=diagonal, solver_options=options)
            first = ours.attempts[0]
            row = {"data": name, "problem": "diagonal" if diagonal else "full",
                   "objective": ours.objective, "lower": ours.lower, "upper": ours.upper,
                   "gap": ours.relative_gap, "certified": ours.certified,
                   "solver_gap": first.solver_gap, "steps": first.steps,
                   "attempts": len(ours.attempts), "status": ours.solver_status,
                   "seconds": ours.timings["total"]}
            if metric_learn:
                row.update(score_metric_learn(X, y, diagonal, ours))
            rows.append(row)
            if record is not None:
                record(rows)
    return rows


def score_metric_learn(X: np.ndarray, y: np.ndarray, diagonal: bool, ours) -> dict:
    """Fit metric-learn's MMC on all label pairs; score it against our certified bound."""
    from metric_learn import MMC

    similar, dissimilar = label_pairs(y)
    pairs = np.concatenate([similar, dissimilar])
    signs = np.r_[np.ones(len(similar)), -np.ones(len(dissimilar))]
    start = time.perf_counter()
    with metric_learn_shim():
        model = MMC(diagonal=diagonal).fit(X[pairs], signs)
    seconds = time.perf_counter() - start
    metric = model.get_mahalanobis_matrix()
    rescaled = certify_mmc(X, metric, y, diagonal=diagonal).objective  # feasible / best scale
    if not diagonal:
        return {"ml_objective": rescaled, "ml_gap": (ours.upper - rescaled) / ours.upper,
                "ml_seconds": seconds}
    value = xing_objective(X, similar, dissimilar, np.diag(metric))
    return {"ml_objective": value, "ml_gap": value - ours.lower, "ml_rescaled": rescaled,
            "ml_rescaled_gap": rescaled - ours.lower, "ml_seconds": seconds}


def format_rows(rows: list[dict]) -> str:
    """The table printed by ``main``."""
    lines = [f"{'data':5} {'problem':8} {'objective':>14} {'lower':>14} {'upper':>14} "
             f"{'gap':>9} {'cert':>4} {'solver gap':>10} {'steps':>5} {'tries':>5} "
             f"{'status':>18} {'time s':>7} | {'metric-learn':>14} {'its gap':>9} "
             f"{'time s':>7} | {'rescaled':>10} {'its gap':>9}"]
    for r in rows:
        line = (f"{r['data']:5} {r['problem']:8} {r['objective']:14.9f} {r['lower']:14.9f} "
                f"{r['upper']:14.9f} {r['gap']:9.2e} {'yes' if r['certified'] else 'NO':>4} "
                f"{r['solver_gap']:10.2e} {r['steps']:5d} {r['attempts']:5d} "
                f"{r['status']:>18} {r['seconds']:7.2f}")
        if "ml_objective" in r:
            line += (f" | {r['ml_objective']:14.6f} {r['ml_gap']:9.2e} {r['ml_seconds']:7.2f}")
        if "ml_rescaled" in r:
            line += f" | {r['ml_rescaled']:10.6f} {r['ml_rescaled_gap']:9.2e}"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None,
                        help="Clarabel max_threads (default: Clarabel's own choice)")
    parser.add_argument("--skip-metric-learn", action="store_true",
                        help="only our solves (metric-learn not installed)")
    add_record_option(parser, "mmc")
    args = parser.parse_args(argv)
    columns = COLUMNS + (() if args.skip_metric_learn else ML_COLUMNS)
    recorder = Recorder(args.record, "MMC: the certified optimum against metric-learn",
                        notes="iris (raw) and wine (standardised), all label pairs; the full problem "
                              "(MMC) and the diagonal one (XING). `ml_*`: metric-learn 0.7.0's MMC on "
                              "the same pairs, full metrics at their feasible rescaling, diagonal ones as "
                              "returned (`ml_rescaled`: at their best rescaling), gaps against our "
                              "certified bound; wall-clock seconds.",
                        command=module_command("validation.benchmarks.mmc", argv),
                        formats={c: ".10g" for c in ("objective", "lower", "upper", "ml_objective",
                                                     "ml_rescaled")}
                        | {c: ".2e" for c in ("gap", "solver_gap", "ml_gap", "ml_rescaled_gap")})

    def record(rows):
        recorder([{c: row.get(c) for c in columns} for row in rows])

    print(format_rows(run_benchmark(args.threads, not args.skip_metric_learn, record)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
