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
* exact impostor searches (count, time), certificates (``prove_projected``: count, time);
* the first phase: seconds until the estimated gap first reaches 1e-2 (the coarse stop
  of issue 29);
* at the last evaluated point: the smoothing width, active / transition / working-set
  triplets, the rank and eigenvalue spread of the whitened metric, the spread of ``G``'s
  eigenvalues, and the spread of the diagonal of the Hessian in ``L`` (formed exactly,
  ``sum_t (u_t v_t^T - p_t q_t^T)^2`` by three matrix products over the transition triplets).

``--budget`` stops a fit after that many seconds (checked after every continuation stage)
and records how far it got. ``--cprofile N`` prints the N functions of most cumulative time
per fit. The record is ``docs/results/high-d-profile.md`` and ``.csv``.

The cost model (the record ``NAME-cost``). This machine's GEMM peak, ``A @ B`` with ``A``
(4096, 1024) and ``B`` (1024, 1024) in float64 and float32 on 1 thread and on every core
(best of 5), and for every kernel of each fit its calls, seconds and floating-point operations
in float64 and float32, counted from the shapes at each call (``n`` points, ``r`` whitened
coordinates, ``L`` of shape (p, r), ``N`` nodes of a pair graph, ``E`` its edges, ``T``
triplets in transition, ``S`` of them sampled for the preconditioner):

* ``evaluate``: ``Z = X L^T`` (2 N r p), distances (3 (n k + P) p), ``G = X^T Lap X``
  (2 E r + 2 N r^2), the gradient ``2 L G`` (2 p r^2), or without ``G`` (the first phase's
  quasi-Newton steps) the gradient ``2 (X^T Lap Z)^T`` (2 E p + 2 N r p); ``advance`` the same without ``Z``
  (its ``Z + t Y``: 2 N p);
* ``hessp``: ``2 V G`` (2 p r^2, float64) and in float32 ``Y = X V^T`` and ``X^T Lap Z``
  over the transition graph (2 x 2 N r p), its Laplacian (8 T p) and the triplet products
  (12 T p);
* ``precondition`` (one application a CG iteration): four products in the eigenbases
  (4 p^2 r + 4 p r^2); ``preconditioner`` (one a Newton step): ``L L^T`` (2 p^2 r), two
  eigen-decompositions (9 p^3 + 9 r^3) and in float32 the sampled curvature
  (4 S r^2 + 10 S r p);
* ``ray``: ``Y = X V^T`` (2 N r p) and the distance polynomials (6 (n k + P) p);
  ``scaled_bound``: the smallest eigenvalue of ``G``, a reduction to tridiagonal form
  (4/3 r^3);
* ``search``: ``M = L^T L`` (2 r^2 p), ``Z`` (2 n r p), the principal coordinates
  (2 n p^2 + 9 p^3 + 2 n p s) and every float32 tile of distances (2 b m h for a tile of
  b x m from factors of h columns); ``certificate``: its float32 tiles (the two evaluations
  of eq. 14) counted the same way, the rest estimated as three products of the inputs with
  a (d, d) matrix and two eigen-decompositions (6 n d^2 + 18 d^3).

Each kernel's row gives its achieved GFLOPS and ``floor_s``, the seconds its operations
would take at the peak of their precision on every core; ``of_peak`` is ``floor_s /
seconds``. The ``floor`` row of the largest ``d``: the seconds of a certified solve whose
kernels ran at that peak with the calls of the smallest ``d`` of the run.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import threading
import time
from collections import defaultdict

import numpy as np

from lmnn_sdp.core.machine import THREAD_VARIABLES, available_cores
from validation.benchmarks.common import in_fresh_process
from validation.records import Recorder, add_record_option, module_command

COLUMNS = ("d", "rank", "total_s", "newton_s", "newton_steps", "cg_iter", "cg_per_step", "hessp_s",
           "evaluations", "evaluate_s", "line_searches", "line_s", "stop_test_s", "searches", "search_s",
           "certificates", "certificate_s", "escape_s", "first_phase_s", "stages", "gap", "certified",
           "final_gamma", "n_active", "n_transition", "n_working", "metric_rank", "metric_spread",
           "hess_diag_spread", "detail")
COST_COLUMNS = ("d", "kernel", "threads", "calls", "seconds", "gflop64", "gflop32", "gflops", "floor_s", "of_peak",
                "detail")
GEMM_SHAPE = (4096, 1024, 1024)  # A (m, k) @ B (k, n) of the peak
KERNELS = ("evaluate", "advance", "hessp", "precondition", "preconditioner", "ray", "scaled_bound", "search",
           "certificate")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", nargs="+", type=int, default=[64, 164, 300, 784])
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--budget", type=float, default=900.0, help="seconds before a fit is stopped")
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--cprofile", type=int, default=0, help="print this many top functions per fit")
    add_record_option(parser, "high-d-profile")
    args = parser.parse_args(argv)
    command = module_command("validation.benchmarks.high_d_profile", argv)
    threads = "threads: " + ", ".join(f"{name}={os.environ.get(name, 'unset')}" for name in THREAD_VARIABLES)
    record = Recorder(args.record, "Where the time of a certified solve goes: Fashion-MNIST 10,000 x d",
                      notes=f"k=3, mu=0.5, certified tol {args.tol:g}; every fit in a fresh process, "
                            f"{available_cores()} cores, {threads}; wall-clock seconds. "
                            "`newton_steps`: truncated-CG solves; `cg_iter`: Hessian-vector products "
                            "inside CG; `line_s`: ray coefficients and ray_minimum; `stop_test_s`: the "
                            "scaled bound and drift test after every step; `first_phase_s`: until the "
                            "estimated gap reaches 1e-2; spreads are largest / smallest positive.",
                      command=command, columns=COLUMNS,
                      formats={c: ".1f" for c in COLUMNS if c.endswith("_s")}
                      | {"gap": ".2e", "final_gamma": ".2g", "metric_spread": ".3g",
                         "hess_diag_spread": ".3g", "cg_per_step": ".1f"})
    cost = Recorder(args.record and f"{args.record}-cost",
                    "The cost model of a certified solve: operations per kernel against the GEMM peak",
                    notes=f"Fashion-MNIST 10,000 x d, k=3, mu=0.5, certified tol {args.tol:g}; {threads}. "
                          "Operations as the module docstring of validation.benchmarks.high_d_profile "
                          "counts them; `gflops` achieved, `floor_s` at the peak of every core, "
                          "`of_peak` = floor_s / seconds.",
                    command=command, columns=COST_COLUMNS,
                    formats={"seconds": ".2f", "floor_s": ".2f", "gflop64": ".4g", "gflop32": ".4g",
                             "gflops": ".1f", "of_peak": ".2f"})
    print(f"machine: {available_cores()} cores available; wall-clock times; {threads}")
    peaks = in_fresh_process(gemm_peaks)
    print("GEMM peak, GFLOPS: " + ", ".join(f"{dtype} on {t} thread(s) {g:.1f}" for (dtype, t), g in peaks.items()))
    rows = []
    for d in args.dims:
        row = in_fresh_process(profile_fit, d, args.tol, args.max_iter, args.budget, args.cprofile)
        rows.append(row)
        record(rows)
        cost(cost_rows(rows, peaks))
        _print(row)
    return 0


def gemm_peaks(shape: tuple[int, int, int] = GEMM_SHAPE, repeats: int = 5) -> dict:
    """GFLOPS of ``A @ B``, ``A`` (m, k) and ``B`` (k, n) for ``shape`` (m, k, n), by precision and
    threads: {(dtype, threads): GFLOPS}, on 1 thread and on every core, the best of ``repeats``."""
    from threadpoolctl import threadpool_limits

    m, k, n = shape
    rng = np.random.default_rng(0)
    peaks = {}
    for dtype in ("float64", "float32"):
        A, B = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
        out = np.empty((m, n), dtype)
        for threads in sorted({1, available_cores()}):
            with threadpool_limits(threads, user_api="blas"):
                np.matmul(A, B, out=out)
                best = np.inf
                for _ in range(repeats):
                    tic = time.perf_counter()
                    np.matmul(A, B, out=out)
                    best = min(best, time.perf_counter() - tic)
            peaks[dtype, threads] = 2.0 * m * k * n / best / 1e9
    return peaks


def cost_rows(rows, peaks: dict) -> list[dict]:
    """The rows of the cost record (module docstring) from the profile's ``rows`` and ``peaks``."""
    cores = max(t for _, t in peaks)
    out = [dict(d=None, kernel=f"GEMM {dtype} {GEMM_SHAPE[0]}x{GEMM_SHAPE[1]}x{GEMM_SHAPE[2]}", threads=t,
                calls=None, seconds=None, gflop64=None, gflop32=None, gflops=g, floor_s=None, of_peak=None,
                detail="best of 5") for (dtype, t), g in sorted(peaks.items())]
    peak64, peak32 = peaks["float64", cores], peaks["float32", cores]

    def floor(f64, f32):
        return f64 / 1e9 / peak64 + f32 / 1e9 / peak32

    for row in rows:
        for kernel in KERNELS:
            calls, seconds = row["calls"].get(kernel, 0), row["seconds"].get(kernel, 0.0)
            f64, f32 = row["flops"].get(kernel, (0.0, 0.0))
            if not calls:
                continue
            at_peak = floor(f64, f32)
            out.append(dict(d=row["d"], kernel=kernel, threads=cores, calls=calls, seconds=seconds,
                            gflop64=f64 / 1e9, gflop32=f32 / 1e9,
                            gflops=(f64 + f32) / 1e9 / seconds if seconds > 0 else None, floor_s=at_peak,
                            of_peak=at_peak / seconds if seconds > 0 else None,
                            detail=f"per call: {f64 / calls / 1e9:.3g} GFLOP float64, "
                                   f"{f32 / calls / 1e9:.3g} float32, {seconds / calls:.3g} s"
                                   + (_shapes(row["shapes"]) if kernel == "evaluate" else "")))
    if len(rows) > 1:
        small, large = min(rows, key=lambda r: r["d"]), max(rows, key=lambda r: r["d"])
        total, parts = 0.0, []
        for kernel in KERNELS:
            calls = large["calls"].get(kernel, 0)
            if not calls:
                continue
            f64, f32 = large["flops"].get(kernel, (0.0, 0.0))
            seconds = small["calls"].get(kernel, 0) * floor(f64, f32) / calls
            total += seconds
            parts.append(f"{kernel} {small['calls'].get(kernel, 0)} x {floor(f64, f32) / calls:.3g} s")
        out.append(dict(d=large["d"], kernel="floor", threads=cores, calls=None, seconds=total, gflop64=None,
                        gflop32=None, gflops=None, floor_s=total, of_peak=None,
                        detail=f"the calls of d={small['d']}, each at the peak with the operations of a call at "
                               f"d={large['d']}: " + "; ".join(parts)))
    return out


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
    """Counts, seconds and operations (float64, float32) of the solver's parts, by wrapping
    them while ``installed``; the operations as the module docstring counts them."""

    def __init__(self):
        self.calls, self.seconds = defaultdict(int), defaultdict(float)
        self.flops = defaultdict(lambda: [0.0, 0.0])
        self.cg_steps = []  # (gamma, CG iterations) per truncated-CG solve
        self.last_objective = None
        self._gamma = np.nan
        self._phase = None  # the kernel whose float32 tiles run now (``search`` or ``certificate``)
        self._lock = threading.Lock()
        self.shapes = []  # (p, r) of ``L`` at every evaluation

    def installed(self):
        from contextlib import ExitStack

        from fast_solver.lmnn import impostors, solver, trust_region
        from fast_solver.lmnn.smoothed import SmoothedObjective
        from fast_solver.lmnn.working_set import ExactSearch
        from lmnn_sdp.core import pair_search, principal

        stack = ExitStack()
        self._wrap(stack, SmoothedObjective, "evaluate", "evaluate", self._on_evaluate)
        self._wrap(stack, SmoothedObjective, "advance", "advance", self._on_advance)
        self._wrap(stack, SmoothedObjective, "hessian_product", "hessp", self._on_hessp)
        self._wrap(stack, SmoothedObjective, "preconditioner", "preconditioner", self._on_preconditioner)
        self._wrap(stack, SmoothedObjective, "ray", "ray", self._on_ray)
        self._wrap(stack, solver, "ray_minimum", "ray_minimum")
        self._wrap(stack, solver._Run, "scaled_bound", "scaled_bound", self._on_scaled_bound)
        self._wrap(stack, ExactSearch, "drift", "drift")
        self._wrap(stack, ExactSearch, "search", "search", self._on_search)
        self._wrap(stack, solver, "prove_projected", "certificate", self._on_certificate)
        self._wrap(stack, solver, "escape", "escape")
        self._wrap(stack, trust_region, "_steihaug", "steihaug", self._on_steihaug)
        self._wrap(stack, principal, "principal_axes", "principal_axes", self._on_principal_axes)
        for module in (impostors, pair_search):
            self._wrap(stack, module, "float32_tiles", "tiles", self._on_tiles)
        return stack

    def _wrap(self, stack, owner, name, key, after=None):
        original = getattr(owner, name)

        def wrapped(*args, **kwargs):
            before, phase = self.calls["hessp"], self._phase
            if key in ("search", "certificate"):
                self._phase = key
            tic = time.perf_counter()
            try:
                out = original(*args, **kwargs)
            finally:
                self._phase = phase
            with self._lock:
                self.seconds[key] += time.perf_counter() - tic
                self.calls[key] += 1
            if after is not None:
                out = after(args, out, self.calls["hessp"] - before) or out
            return out

        setattr(owner, name, wrapped)
        stack.callback(setattr, owner, name, original)

    def _count(self, key, f64=0.0, f32=0.0):
        with self._lock:
            self.flops[key][0] += f64
            self.flops[key][1] += f32

    def _on_evaluate(self, args, out, _):
        objective, L = args[0], args[1]
        self.last_objective, self._gamma = objective, out.gamma
        C, p, r = L.shape
        self.shapes.append((p, r))
        self._count("evaluate", 2.0 * len(objective.graphs.rows) * r * p + self._distances(objective, p)
                    + self._scatter(objective, out, C, p, r))

    def _on_advance(self, args, out, _):
        objective = args[0]
        C, p, r = out.L.shape
        self._count("advance", 2.0 * len(objective.graphs.rows) * p + self._scatter(objective, out, C, p, r))

    @staticmethod
    def _distances(objective, p):
        n, k = objective.targets.shape
        return 3.0 * (n * k + len(objective.ws)) * p

    @staticmethod
    def _scatter(objective, out, C, p, r):
        """``G = X^T Lap X`` and the gradient ``2 L G``, or without ``G`` (the first phase's
        evaluations) the gradient ``2 (X^T Lap Z)^T``."""
        rows, edges = len(objective.graphs.rows), 2 * objective.graphs.graph.n_pairs
        if out.dual_matrix is None:
            return 2.0 * edges * p + 2.0 * rows * r * p
        return 2.0 * edges * r + 2.0 * rows * r * r + 2.0 * C * p * r * r

    def _on_hessp(self, args, out, _):
        objective, V = args[0], args[1]
        C, p, r = V.shape
        f32 = 0.0
        if objective.current.n_transition:
            T = len(objective._transition)
            f32 = 4.0 * len(objective._transition_graph.rows) * r * p + 20.0 * T * p
        self._count("hessp", 2.0 * C * p * r * r, f32)

    def _on_preconditioner(self, args, apply, _):
        objective = args[0]
        ev = objective.current
        C, p, r = ev.L.shape
        S = min(ev.n_transition, objective.options.precondition_sample)
        self._count("preconditioner", C * (2.0 * p * p * r + 9.0 * p ** 3 + 9.0 * r ** 3),
                    C * (4.0 * S * r * r + 10.0 * S * r * p))

        def counted(R):
            tic = time.perf_counter()
            result = apply(R)
            with self._lock:
                self.seconds["precondition"] += time.perf_counter() - tic
                self.calls["precondition"] += 1
            self._count("precondition", C * (4.0 * p * p * r + 4.0 * p * r * r))
            return result
        return counted

    def _on_ray(self, args, out, _):
        objective, V = args[0], args[1]
        C, p, r = V.shape
        self._count("ray", 2.0 * len(objective.graphs.rows) * r * p + 2.0 * self._distances(objective, p))

    def _on_scaled_bound(self, args, out, _):
        G = args[1].dual_matrix
        self._count("scaled_bound", 4.0 / 3.0 * G.shape[0] * G.shape[1] ** 3)

    def _on_search(self, args, out, _):
        search, L = args[0], args[1]
        C, p, r = L.shape
        n = search.X.shape[1]
        self._count("search", C * (2.0 * r * r * p + 2.0 * n * r * p))

    def _on_principal_axes(self, args, out, _):
        centred, (_, s) = args[0], out
        n, p = centred.shape
        if self._phase is not None:
            self._count(self._phase, 2.0 * n * p * p + 9.0 * p ** 3 + 2.0 * n * p * s)

    def _on_tiles(self, args, out, _):
        rows, cols = args[0], args[1]
        if self._phase is not None:
            self._count(self._phase, 0.0, 2.0 * rows.shape[0] * cols.shape[0] * rows.shape[1])

    def _on_certificate(self, args, out, _):
        problem = args[0]
        n, d = problem.n_samples, problem.n_features
        self._count("certificate", 6.0 * n * d * d + 18.0 * d ** 3)

    def _on_steihaug(self, args, out, n_hessp):
        self.cg_steps.append((self._gamma, n_hessp))

    def summary(self) -> dict:
        c, s = self.calls, self.seconds
        steps = len(self.cg_steps)
        cg = sum(n for _, n in self.cg_steps)
        return dict(newton_steps=steps, cg_iter=cg, cg_per_step=cg / max(steps, 1), hessp_s=s["hessp"],
                    evaluations=c["evaluate"], evaluate_s=s["evaluate"], line_searches=c["ray"],
                    line_s=s["ray"] + s["ray_minimum"], stop_test_s=s["scaled_bound"] + s["drift"],
                    searches=c["search"], search_s=s["search"], certificates=c["certificate"],
                    certificate_s=s["certificate"], escape_s=s["escape"], steihaug_s=s["steihaug"],
                    calls=dict(c), seconds=dict(s), flops={key: tuple(v) for key, v in self.flops.items()},
                    shapes=self.shapes)


def _shapes(shapes) -> str:
    """``L``'s shapes (p, r) over a fit's evaluations: the first, the last and the extremes of p."""
    if not shapes:
        return ""
    p = [shape[0] for shape in shapes]
    return (f"; L (p, r): {shapes[0]} at the first evaluation, {shapes[-1]} at the last, p from {min(p)} "
            f"to {max(p)}")


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
