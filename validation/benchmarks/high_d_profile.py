"""Where the time of a certified LMNN solve goes as the dimension grows: Fashion-MNIST 10,000 x d.

    python -m validation.benchmarks.high_d_profile [--dims 64 164 300 784] [--tol 1e-4]
                                                   [--budget SECONDS] [--cprofile N]
                                                   [--record NAME | --no-record]

Data: the first 10,000 Fashion-MNIST training images, pixels / 255, PCA to ``d``
dimensions fitted on them (``d = 784``: the raw pixels, no PCA), as
``validation.benchmarks.letters_fashion`` prepares fashion-10k. k=3, mu=0.5;
``fast_solver.solve`` to a certified relative gap ``tol``.

Each fit runs in a fresh spawned process with probes wrapped around the solver's parts
(the solver is not changed; the probes' own cost is a few microseconds a call):

* Newton: steps (truncated-CG solves, rejected steps included), CG iterations
  (= Hessian-vector products inside CG) and their time, evaluations of ``F_gamma``
  with its gradient, line searches (``SmoothedObjective.ray`` coefficients plus
  ``ray_minimum``), the stopping test's scaled bound (``scaled_bound``: an
  eigen-decomposition of ``G``) and the drift test;
* exact impostor searches (count, time), certificates (``prove``: count, time);
* the first phase: seconds until the estimated gap first reaches 1e-2 (the coarse stop
  of issue 29);
* at the last evaluated point: the smoothing width, active / transition / working-set
  triplets, the rank and eigenvalue spread of the whitened metric, the spread of ``G``'s
  eigenvalues, and the spread of the diagonal of the Hessian in ``L`` (formed exactly,
  ``sum_t (u_t v_t^T - p_t q_t^T)^2`` by three matrix products over the transition triplets).

``--budget`` stops a fit after that many seconds (checked after every continuation stage)
and records how far it got. ``--cprofile N`` prints the N functions of most cumulative time
per fit. The record is ``docs/results/high-d-profile.md`` and ``.csv``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from collections import defaultdict

import numpy as np

from lmnn_sdp.core.machine import available_cores
from validation.benchmarks.common import in_fresh_process
from validation.records import Recorder, add_record_option, module_command

COLUMNS = ("d", "rank", "total_s", "newton_s", "newton_steps", "cg_iter", "cg_per_step", "hessp_s",
           "evaluations", "evaluate_s", "line_searches", "line_s", "stop_test_s", "searches", "search_s",
           "certificates", "certificate_s", "escape_s", "first_phase_s", "stages", "gap", "certified",
           "final_gamma", "n_active", "n_transition", "n_working", "metric_rank", "metric_spread",
           "hess_diag_spread", "detail")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", nargs="+", type=int, default=[64, 164, 300, 784])
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--budget", type=float, default=900.0, help="seconds before a fit is stopped")
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--cprofile", type=int, default=0, help="print this many top functions per fit")
    add_record_option(parser, "high-d-profile")
    args = parser.parse_args(argv)
    record = Recorder(args.record, "Where the time of a certified solve goes: Fashion-MNIST 10,000 x d",
                      notes=f"k=3, mu=0.5, certified tol {args.tol:g}; every fit in a fresh process, one "
                            "thread (OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS=1), wall-clock seconds. "
                            "`newton_steps`: truncated-CG solves; `cg_iter`: Hessian-vector products "
                            "inside CG; `line_s`: ray coefficients and ray_minimum; `stop_test_s`: the "
                            "scaled bound and drift test after every step; `first_phase_s`: until the "
                            "estimated gap reaches 1e-2; spreads are largest / smallest positive.",
                      command=module_command("validation.benchmarks.high_d_profile", argv), columns=COLUMNS,
                      formats={c: ".1f" for c in COLUMNS if c.endswith("_s")}
                      | {"gap": ".2e", "final_gamma": ".2g", "metric_spread": ".3g",
                         "hess_diag_spread": ".3g", "cg_per_step": ".1f"})
    print(f"machine: {available_cores()} cores available; wall-clock times")
    rows = []
    for d in args.dims:
        row = in_fresh_process(profile_fit, d, args.tol, args.max_iter, args.budget, args.cprofile)
        rows.append(row)
        record(rows)
        _print(row)
    return 0


def load(d: int):
    """fashion-10k at ``d`` dimensions (module docstring): X (10000, d), y."""
    from sklearn.decomposition import PCA

    from validation.datasets import load_fashion_mnist

    X_train, y_train, _, _ = load_fashion_mnist()
    X, y = X_train[:10_000], y_train[:10_000]
    return (X if d >= X.shape[1] else PCA(d, random_state=0).fit_transform(X)), y


class _Budget(Exception):
    pass


def profile_fit(d: int, tol: float, max_iter: int, budget: float, top: int) -> dict:
    """One probed fit at ``d`` dimensions; the row of the record."""
    from fast_solver.lmnn.solver import solve
    from lmnn_sdp.core.problem import LMNNProblem

    X, y = load(d)
    probe = _Probe()
    profiler = cProfile.Profile() if top else None
    stages = []

    def callback(stage):
        stages.append(stage)
        if stage.elapsed > budget:
            raise _Budget

    tic = time.perf_counter()
    with probe.installed():
        if profiler:
            profiler.enable()
        try:
            problem = LMNNProblem(X, y, k=3, mu=0.5)
            result, reason = solve(problem, tol=tol, max_iter=max_iter, callback=callback), ""
        except _Budget:
            result, reason = None, f"stopped after the stage ending at {stages[-1].elapsed:.0f} s (budget {budget:g} s)"
        finally:
            if profiler:
                profiler.disable()
    total = time.perf_counter() - tic
    row = dict(d=d, rank=min(d, np.linalg.matrix_rank(X - X.mean(0))), total_s=total, **probe.summary())
    row.update(_stage_summary(stages, result))
    row.update(_conditioning(probe.last_objective))
    steps = probe.cg_steps
    by_gamma = defaultdict(list)
    for gamma, n_cg in steps:
        by_gamma[gamma].append(n_cg)
    row["detail"] = (reason or (result.message if result is not None else "")) + "; CG per Newton step by gamma: " + \
        ", ".join(f"{g:.2g}: {len(v)} steps x {np.mean(v):.1f} (max {max(v)})" for g, v in sorted(by_gamma.items(), reverse=True))
    row["stage_table"] = [(s.gamma, s.newton_iterations, s.stop, s.relative_gap, s.n_active, s.n_transition,
                           s.n_working, s.elapsed) for s in stages]
    if profiler:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(top // 2)
        stats.print_callers(5)
        row["profile"] = out.getvalue()
    return row


class _Probe:
    """Counts and seconds of the solver's parts, by wrapping them while ``installed``."""

    def __init__(self):
        self.calls, self.seconds = defaultdict(int), defaultdict(float)
        self.cg_steps = []  # (gamma, CG iterations) per truncated-CG solve
        self.last_objective = None
        self._gamma = np.nan

    def installed(self):
        from contextlib import ExitStack

        from fast_solver.lmnn import solver, trust_region
        from fast_solver.lmnn.smoothed import SmoothedObjective
        from fast_solver.lmnn.working_set import ExactSearch

        stack = ExitStack()
        self._wrap(stack, SmoothedObjective, "evaluate", "evaluate", self._on_evaluate)
        self._wrap(stack, SmoothedObjective, "hessian_product", "hessp")
        self._wrap(stack, SmoothedObjective, "ray", "ray")
        self._wrap(stack, solver, "ray_minimum", "ray_minimum")
        self._wrap(stack, solver._Run, "scaled_bound", "scaled_bound")
        self._wrap(stack, ExactSearch, "drift", "drift")
        self._wrap(stack, ExactSearch, "search", "search")
        self._wrap(stack, solver, "prove", "prove")
        self._wrap(stack, solver, "escape", "escape")
        self._wrap(stack, trust_region, "_steihaug", "steihaug", self._on_steihaug)
        return stack

    def _wrap(self, stack, owner, name, key, after=None):
        original = getattr(owner, name)

        def wrapped(*args, **kwargs):
            before = self.calls["hessp"]
            tic = time.perf_counter()
            out = original(*args, **kwargs)
            self.seconds[key] += time.perf_counter() - tic
            self.calls[key] += 1
            if after is not None:
                after(args, out, self.calls["hessp"] - before)
            return out

        setattr(owner, name, wrapped)
        stack.callback(setattr, owner, name, original)

    def _on_evaluate(self, args, out, _):
        self.last_objective, self._gamma = args[0], out.gamma

    def _on_steihaug(self, args, out, n_hessp):
        self.cg_steps.append((self._gamma, n_hessp))

    def summary(self) -> dict:
        c, s = self.calls, self.seconds
        steps = len(self.cg_steps)
        cg = sum(n for _, n in self.cg_steps)
        return dict(newton_steps=steps, cg_iter=cg, cg_per_step=cg / max(steps, 1), hessp_s=s["hessp"],
                    evaluations=c["evaluate"], evaluate_s=s["evaluate"], line_searches=c["ray"],
                    line_s=s["ray"] + s["ray_minimum"], stop_test_s=s["scaled_bound"] + s["drift"],
                    searches=c["search"], search_s=s["search"], certificates=c["prove"],
                    certificate_s=s["prove"], escape_s=s["escape"], steihaug_s=s["steihaug"])


def _stage_summary(stages, result) -> dict:
    first = next((s.elapsed for s in stages if s.relative_gap <= 1e-2), np.nan)
    out = dict(first_phase_s=first, stages=len(stages))
    if result is not None:
        t = result.timings
        out.update(gap=result.relative_gap, certified=result.certified, newton_s=t["newton"],
                   solver_total_s=t["total"], solver_search_s=t["search"], solver_bounds_s=t["bounds"])
    elif stages:
        out.update(gap=stages[-1].relative_gap, certified=False, newton_s=np.nan)
    return out


def _conditioning(objective) -> dict:
    """Sizes and spreads at the last evaluated point (module docstring)."""
    if objective is None or objective.current is None:
        return {}
    ev = objective.current
    L, G = ev.L[0], ev.dual_matrix[0]
    m = np.linalg.eigvalsh(L.T @ L)
    positive = m[m > 1e-10 * m[-1]]
    g = np.linalg.eigvalsh(G)
    diag = _hessian_diagonal(objective)
    sv = np.linalg.svd(L, compute_uv=False)
    return dict(final_gamma=ev.gamma, n_active=ev.n_active, n_transition=ev.n_transition,
                n_working=len(objective.ws) * objective.targets.shape[1], metric_rank=len(positive),
                singular_values_above=[int(np.sum(sv > f * sv[0])) for f in (1e-2, 1e-4, 1e-6, 1e-8, 1e-12)],
                metric_spread=positive[-1] / positive[0], g_min=g[0], g_max=g[-1],
                g_spread=g[-1] / max(g[g > 1e-10 * g[-1]].min(), 1e-300),
                hess_diag_spread=diag.max() / max(diag[diag > 0].min(), 1e-300),
                hess_diag_quantiles=np.quantile(diag, [0, 0.01, 0.5, 0.99, 1]).tolist())


def _hessian_diagonal(objective) -> np.ndarray:
    """The diagonal of the Hessian in ``L`` (r, r) at the last evaluated point, one cluster:
    ``2 G_bb + (8 mu / gamma) sum_t ((L x_ij)_a (x_ij)_b - (L x_il)_a (x_il)_b)^2``
    over the transition triplets ``t = (i, j, l)``."""
    ev = objective.current
    L, G, X = ev.L[0], ev.dual_matrix[0], objective.X[0]
    diag = np.broadcast_to(2.0 * np.diag(G), L.shape).copy()
    if ev.n_transition == 0:
        return diag
    pair, rank = np.nonzero(objective.transition)
    t = objective.ws.triplets(objective.targets, pair, rank)
    for chunk in np.array_split(np.arange(len(t)), max(1, len(t) // 20_000)):
        i, j, l = t[chunk].T
        v, q = X[i] - X[j], X[i] - X[l]
        u, p = v @ L.T, q @ L.T
        diag += (8.0 * objective.mu / ev.gamma) * ((u * u).T @ (v * v) + (p * p).T @ (q * q)
                                                   - 2.0 * (u * p).T @ (v * q))
    return diag


def _print(row: dict) -> None:
    print(f"\nd={row['d']} (rank {row['rank']}): total {row['total_s']:.1f} s, gap {row.get('gap', np.nan):.2e}, "
          f"certified {row.get('certified')}")
    print(f"  Newton {row.get('newton_s', np.nan):.1f} s: {row['newton_steps']} steps, {row['cg_iter']} CG iterations "
          f"({row['cg_per_step']:.1f} a step) {row['hessp_s']:.1f} s; {row['evaluations']} evaluations "
          f"{row['evaluate_s']:.1f} s; {row['line_searches']} line searches {row['line_s']:.1f} s; stop tests "
          f"{row['stop_test_s']:.1f} s")
    print(f"  searches {row['searches']} {row['search_s']:.1f} s; certificates {row['certificates']} "
          f"{row['certificate_s']:.1f} s; escapes {row['escape_s']:.1f} s; first phase (1e-2) "
          f"{row['first_phase_s']:.1f} s")
    keys = ("final_gamma", "n_active", "n_transition", "n_working", "metric_rank", "metric_spread", "g_min",
            "g_max", "g_spread", "hess_diag_spread", "hess_diag_quantiles")
    print("  at the end: " + ", ".join(f"{k}={row.get(k)}" for k in keys))
    print("  " + row["detail"])
    print("  stages (gamma, newton, stop, est. gap, active, transition, working, elapsed):")
    for s in row["stage_table"]:
        print(f"    {s[0]:.2g} {s[1]:4d} {s[2]:<10} {s[3]:.2e} {s[4]:8d} {s[5]:8d} {s[6]:8d} {s[7]:7.1f}")
    if "profile" in row:
        print(row["profile"])


if __name__ == "__main__":
    sys.exit(main())
