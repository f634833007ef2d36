"""The scalable LMNN solver: smoothed-hinge continuation with a certified stop.

One algorithm and one stopping rule at every size (DESIGN.md, "One path at every size"); size
only picks block sizes and threads. It solves eq. 14 and, with ``clusters``, multi-metric LMNN
(sec. 5.2, eq. 16: one metric per cluster, the distance to a point measured by its cluster's
metric); LMNN is the case of one cluster, so both run the same code, every step below applied
per cluster (``L`` is (C, p, r); the estimate that steers the stages scales all multipliers by
the smallest of the clusters' scales into the dual cone, the certificate each cluster's impostor
multipliers by its own).

1. **Coordinates.** The data range whitened by the pull matrix (``lmnn_sdp.core.whitening``):
   the problem and every step are the same for any linear map of the inputs, feature scaling
   included.
2. **Smoothed hinge, exact working set.** Each stage minimises ``F_gamma`` of
   ``fast_solver.lmnn.smoothed`` (eq. 14 with the hinge smoothed over a width ``gamma``) over
   ``L`` with ``M_w = L^T L``, on the pairs found by an exact impostor search
   (``fast_solver.lmnn.working_set``). The set is searched again when the metric has moved by
   ``stale_drift`` (relative, spectral norm) since the last search, and at the end of every
   stage. Newton's iterations between two searches are kept only if ``F_gamma`` over all
   triplets fell; otherwise they start again from where they began, on both sets and within a
   shorter radius (``_Run._retract``).
3. **First phase, then second order.** The first stage starts with quasi-Newton steps
   (``_Run._quasi_newton``): L-BFGS directions along the same exact line search, each step one
   gradient formed from ``Z = X L^T`` without the dual matrix ``G`` (an (r, r) matrix of
   ``2 N r^2`` operations, the cost of a Newton step in many coordinates), until their fall
   over ``quasi_newton_window`` steps is below ``quasi_newton_fall`` of ``F_gamma``; Newton's
   iterations take over there. They are a trust-region method with truncated conjugate
   gradients and an exact line search along each step (``fast_solver.lmnn.trust_region``,
   ``SmoothedObjective.ray``): a Hessian-vector product costs one pass over the triplets in
   transition (``0 < h < gamma``), a point of the line search one pass over the working set
   without matrix products, and the evaluation at the point it picks reuses its distances
   (``SmoothedObjective.advance``). The conjugate gradients are preconditioned by the Hessian's
   diagonal in the eigenbases of ``L L^T`` and ``G`` (``SmoothedObjective.preconditioner``).
   Steps are capped at ``max_radius |L|``, so no step lands on ``L = 0``. When the negative
   eigenvalues of the dual matrix ``G`` dominate the gap for ``saddle_patience`` iterations, an
   escape moves the metrics in ``M``; before every search and escape and at the end of every
   stage ``L`` is cut to the metrics' rank and a margin (``fast_solver.lmnn.factors``:
   ``escape``, ``narrowed``).
4. **Continuation with multiplier updates.** ``gamma`` starts at ``initial_gamma`` (several
   metrics: wider while few triplets are in transition, ``continuation.first_width``) and,
   whenever the smoothing, not the optimisation, limits the gap (at ``mu = 1``, where the
   estimate cannot tell, after every stage), shrinks by ``shrink`` (less
   when the estimated gap is near the aim, ``continuation.next_width``) while each hinge is
   shifted by the stage's multipliers (``SmoothedObjective.prior``): ``F_gamma`` is then the
   augmented Lagrangian of eq. 14 and the stages are the method of multipliers with a growing
   penalty ``mu / gamma``, whose minimisers approach eq. 14's faster than ``gamma`` shrinks. The
   stage's metric is scored by eq. 14 after an exact search.
5. **Certified stop.** The smoothing multipliers ``lambda = mu clip(h / gamma, 0, 1)`` are dual
   candidates (their dual matrix is the gradient ``G``); scaled into the dual cone by
   ``lmnn_sdp.certificates.bounds.dual_lower_bound`` (numpy and scipy only, here in the whitened
   coordinates) they give a rigorous lower bound, and the best metric's eq. 14 right after an
   exact search the upper bound. ``converged`` is True only when these prove
   ``relative_gap <= tol``. The certificate is computed once the estimated gap is within ``prove_within`` tol
   (after a failed proof, within the aim it set) and the multipliers' sum within tol of the
   upper bound (no scale or repair proves more): where the scale into the dual cone costs more
   than tol, ``prove`` also tries the multipliers lowered along the negative eigenvectors of
   ``Z`` (``bounds.repair_multipliers``). When the estimated gap is below ``unprovable_below``
   tol and the certificate still does not prove tol, the solve ends ``stalled``: what the proof
   loses (its rounding allowances) no longer shrinks with the iterations. Where the optimum is
   known (``mu = 0``, a zero optimum, a vanishing pull), the solve ends at once
   (``fast_solver.lmnn.degenerate``). At ``mu = 1`` (push only) the bound proves no positive
   optimum: the solve ends ``converged`` once its best objective is within ``atol`` of 0, and
   ``stalled`` once it stops falling (``degenerate.push_only_stop``).

Within a stage the Newton iterations stop when the estimated gap is no longer dominated by
optimisation error (``gap - comp <= comp / 2``, with ``comp`` the complementarity
``sum (mu - lambda_t) h_t`` that the smoothing leaves), or when the estimated gap against the best metric so
far is below ``tol``; after a failed proof, below ``retry_below`` times the estimated gap it
failed at, so that the next proof has new candidates to try.

The tuned values named here are ``SolverOptions`` (``fast_solver.lmnn.options``); the
checkpoint's state is ``fast_solver.lmnn.state``. Design note:
``docs/design/fast-lmnn-solver.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from fast_solver.checkpoint import Checkpoint, Section
from fast_solver.lmnn import trust_region
from fast_solver.lmnn.continuation import first_width, next_width, scaled_bound, smoothing_limits
from fast_solver.lmnn.degenerate import known_optimum, push_only_stop, recent_fall, without_pull
from fast_solver.lmnn.factors import escape, gram, narrowed
from fast_solver.lmnn.impostors import check_band
from fast_solver.lmnn.options import SolverOptions, check_solve_options
from fast_solver.lmnn.quasi_newton import Memory
from fast_solver.lmnn.result import FastLMNNResult, Stage, solve_message, solve_status
from fast_solver.lmnn.smoothed import Evaluation, SmoothedObjective, WorkingSet
from fast_solver.lmnn.start import starting_factors
from fast_solver.lmnn.state import Candidate, SolveState, restored, resumed, saved, solve_checkpoint
from fast_solver.lmnn.working_set import ExactSearch
from lmnn_sdp.certificates.bounds import relative_gap
from lmnn_sdp.certificates.certificate import ATOL, Certificate, prove_projected
from lmnn_sdp.core.line_search import ray_minimum
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.whitening import ClusterWhitening, whiten_clusters

OPTIONS = SolverOptions()  # the tuned values every solve runs with (``fast_solver.lmnn.options``)


def solve(
    problem: LMNNProblem,
    M0=None,
    *,
    clusters=None,
    tol: float = 1e-6,
    max_iter: int = 1000,
    band: float = 0.5,
    search: str = "auto",
    callback: Callable[[Stage], None] | None = None,
    progress: bool = False,
    checkpoint=None,
    checkpoint_interval: float = 60.0,
) -> FastLMNNResult:
    """Minimise the LMNN objective and prove how close the answer is.

    Minimises eq. 14 of Weinberger & Saul (JMLR 2009) over positive semidefinite metrics, or
    with ``clusters`` the multi-metric objective of sec. 5.2 (eq. 16), by smoothed-hinge
    continuation with trust-region Newton steps (the module docstring; it replaces the
    sub-gradient method of Appendix A). The result is ``converged`` only when a rigorous dual
    lower bound proves the relative gap at most ``tol``.

    Parameters
    ----------
    problem : LMNNProblem
        Inputs, labels, target neighbours and ``mu``; with ``problem.clusters``, the
        multi-metric objective (eq. 16).
    M0 : array-like of shape (d, d) or (C, d, d), optional
        PSD starting metric(s), rescaled for LMNN by its best multiple on a sample; by default
        the Euclidean metric on the principal directions of the inputs that hold all but 3% of
        their variance, at least 32 of them, or on all d when that is more than three quarters
        of them (``fast_solver.lmnn.start``). With ``clusters``, every cluster starts at ``M0``
        as given (one metric for all, or one each), by default at the LMNN optimum of the same
        problem (sec. 5.2; a solve of its own, with the same options).
    clusters : array-like of int, shape (n,), optional
        Cluster of each point (``0..C-1``, every cluster used): one metric per cluster
        (multi-metric LMNN, eq. 16), in place of the problem's own (``problem.with_clusters``).
        ``None`` solves the problem as it is: LMNN when it has no clusters.
    tol : float >= 0, default=1e-6
        Relative gap ``(upper - lower) / upper`` that ``converged`` must prove.
    max_iter : int >= 1, default=1000
        Budget of iterations over all stages: the first phase's quasi-Newton steps and the
        Newton steps.
    band : float >= 0, default=0.5
        Slack of the working set: pairs within ``max_j D(i, j) + 1 + band``.
    search : {"auto", "blockwise", "balltree"}, default="auto"
        Impostor-search path (``fast_solver.lmnn.impostors``).
    callback : callable, optional
        Called with a ``Stage`` after every stage.
    progress : bool, default=False
        Show a tqdm bar over the Newton iterations.
    checkpoint : str, path-like, Checkpoint, Section or None, default=None
        File that keeps the solve's state (``fast_solver.lmnn.state``), saved at the start
        of every trust-region Newton call (at most every ``checkpoint_interval`` seconds)
        and at the end. The same call with the same path resumes from the state saved last
        and ends bit-for-bit as an uninterrupted solve (timings differ); after the end it
        returns the same result at once. With ``clusters`` and no ``M0``, the LMNN solve of
        the start is kept in the same file. A ``Checkpoint`` or ``Section`` (a step of a
        larger fit, as ``solve_multipass`` passes) is used as given.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every restart point.

    Returns
    -------
    result : FastLMNNResult
        The metric (d, d), or one per cluster (C, d, d), with its certificate: ``upper`` (the
        objective at the metric), ``lower``, ``relative_gap``, ``converged`` and the counters.

    Raises
    ------
    TypeError
        If ``tol``, ``max_iter`` or ``band`` is not a number of its kind (``True``, ``"0.5"``,
        ``max_iter=1.5``; ``lmnn_sdp.core.checks``).
    ValueError
        If ``tol``, ``max_iter``, ``band``, ``search`` or ``checkpoint_interval`` is out of its
        range, or ``M0`` is not PSD, is zero or has the wrong shape.
    CheckpointError
        If the ``checkpoint`` file is damaged, or was written by another kind of fit or for
        other inputs or options (a ValueError).

    See Also
    --------
    LMNN : The scikit-learn estimator over this solver.
    solve_multipass : Passes of this solver with re-chosen targets (sec. 5.1).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> from fast_solver import solve
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=3, mu=0.5)
    >>> result = solve(problem, tol=1e-6)
    >>> result.converged, result.metric.shape
    (True, (4, 4))
    >>> bool(result.relative_gap <= 1e-6)
    True
    >>> round(result.upper, 1)
    14.7

    One metric per class (eq. 16), started from the LMNN optimum (the default
    start, given here so that it is not solved again):

    >>> multi = solve(problem, result.metric, clusters=problem.label_codes)
    >>> multi.converged, multi.metric.shape
    (True, (3, 4, 4))
    >>> bool(multi.upper <= result.upper)
    True
    """
    check_solve_options(tol, max_iter, search)
    band = check_band(band)
    if clusters is not None:
        problem = problem.with_clusters(clusters)
    checkpoint = solve_checkpoint(problem, M0, checkpoint, checkpoint_interval,
                                  tol=tol, max_iter=max_iter, band=band, search=search)
    if problem.pull_vanishes():
        return without_pull(problem, tol)
    if problem.clusters is not None and M0 is None:  # class metrics start at the LMNN optimum (sec. 5.2)
        M0 = solve(problem.with_clusters(None), tol=tol, max_iter=max_iter, band=band, search=search,
                   checkpoint=checkpoint.section("global")).metric
        checkpoint = checkpoint.section("multi")
    with threadpool_limits(1, user_api="blas"):
        run = _Run(problem, band, search, tol, checkpoint, OPTIONS)
        return run.solve(starting_factors(problem, run.whitening, M0, OPTIONS), max_iter, callback, progress)


class _Run:
    """One solve: its whitened space, exact search and options, what it has found so far
    (``state.SolveState``, saved at its restart points) and the certificate of its candidates."""

    def __init__(self, problem: LMNNProblem, band: float, search: str, tol: float,
                 checkpoint: Checkpoint | Section, options: SolverOptions):
        self.problem, self.tol, self.checkpoint, self.options = problem, tol, checkpoint, options
        self.whitening: ClusterWhitening = whiten_clusters(problem)
        self.search = ExactSearch(self.whitening, problem.targets, problem.label_codes, band, search)
        self.state = SolveState(gamma=options.initial_gamma, aim=tol)
        self.certificate: Certificate | None = None
        self._proved_for: tuple[Candidate, Candidate] | None = None  # the candidates of ``certificate``

    def solve(self, L: np.ndarray, max_iter: int, callback, progress: bool) -> FastLMNNResult:
        """The solve from ``L`` (C, r, r): resumed from its checkpoint's restart point, or its
        result at once when the checkpoint holds its end or the optimum is known
        (``degenerate.known_optimum``)."""
        tree = self.checkpoint.load()
        if tree is not None:
            restored(tree, self.search, self.state)
            if tree["stop"] is not None:  # the solve had ended
                return self._result(tree["stop"], tree["max_iter"])
        known = known_optimum(self.problem, self.whitening, L, resumed=tree is not None)
        if known is not None:
            stop, metric = known
            self.state.upper = Candidate(0.0, metric=metric, triplets=np.empty((0, 3), np.intp))
            return self._result(stop)
        if tree is None:
            L = narrowed(L, self.options)  # a start of low rank, as the LMNN optimum that starts class metrics
            objective, nit = self._renew(L), 0
            self.state.gamma = first_width(objective, L, self.options)
        else:  # from the restart point saved last
            ws, L, nit, counts = resumed(tree, self.search)
            objective = self._objective(ws)
            objective.n_evaluations, objective.n_hessian_products = counts
        return self._stages(objective, L, nit, max_iter, callback, progress)

    def _stages(self, objective: SmoothedObjective, L, nit: int, max_iter: int, callback,
                progress: bool) -> FastLMNNResult:
        """The continuation (module docstring, steps 4 and 5): a stage of Newton iterations at
        ``state.gamma``, its bounds right after an exact search, a proof once the estimate is
        near tol, then the next width with the stage's multipliers."""
        state, options = self.state, self.options
        bar = tqdm(total=max_iter, initial=state.n_iter, disable=not progress, desc="LMNN", unit="it")
        try:
            for _ in range(len(state.stages), options.max_stages):
                objective, L, nit, stop = self._stage(objective, L, max_iter, bar, nit)
                L = narrowed(L, options)
                gamma = state.gamma
                ev = objective.evaluate(L, gamma)
                self._offer_lower(objective, ev)
                objective = self._renew(L, objective)  # eq. 14 exactly: every active triplet is in the set
                exact = objective.evaluate(L, gamma)
                self._offer_upper(objective, exact, gram(L))
                self._record(gamma, nit, ev, exact, stop, callback)
                if self._estimated_gap() <= self._proof_within() and self._provable():
                    if self._certificate().certified:
                        return self._result("proved")
                    state.aim = min(state.aim, options.retry_below * self._estimated_gap())
                if self._estimated_gap() <= options.unprovable_below * self.tol:  # what keeps the proof short
                    return self._result("unprovable")  # is no longer the optimisation
                if self.problem.mu == 1.0:  # push only: the bound proves a zero optimum or nothing
                    if state.upper.value <= ATOL and self._certificate().certified:
                        return self._result("atol")
                    stop = push_only_stop(state.stages, gamma, options)
                    if stop is not None:
                        return self._result(stop)
                if state.n_iter >= max_iter:
                    break
                if smoothing_limits(self.problem.mu, ev, lambda: self.scaled_bound(ev)):
                    state.prior = (objective.ws.keys(), objective.pair_multipliers())
                    objective.prior = state.prior[1]
                    state.gamma = next_width(gamma, self._estimated_gap(), state.aim, options.shrink)
                nit = 0
            else:
                return self._result("stages")
        finally:
            bar.close()
        return self._result("max_iter", max_iter)

    # -- the first phase --------------------------------------------------------
    def _quasi_newton(self, objective: SmoothedObjective, L, max_iter: int, bar: tqdm):
        """Quasi-Newton steps on ``F_gamma`` at the first width from the start ``L`` (module
        docstring, step 3): L-BFGS directions (``quasi_newton.Memory``) along the exact line
        search, each step one gradient from ``Z`` without ``G``; a new search (``L`` narrowed, the
        memory cleared, eq. 14 there offered as an upper bound) when the metric has drifted by
        ``stale_drift``. Newton takes over once the fall of ``F_gamma`` over the last
        ``quasi_newton_window`` steps is at most ``quasi_newton_fall`` of ``F_gamma``, or a step
        finds no decrease; a window of 0 takes no step. Returns the objective, ``L`` and the
        steps taken (iterations)."""
        state, options, gamma = self.state, self.options, self.state.gamma
        memory, falls, nit, window = Memory(options.quasi_newton_memory), [], 0, options.quasi_newton_window
        if window == 0:
            return objective, L, 0
        tic, searched = time.perf_counter(), state.timings["search"]
        ev = objective.evaluate(L, gamma, dual=False)
        if self._searched_at(objective, L):
            self._offer_upper(objective, ev, gram(L))
        while state.n_iter + nit < max_iter:
            if len(falls) >= window and sum(falls[len(falls) - window:]) <= options.quasi_newton_fall * abs(ev.value):
                break
            V = memory.direction(ev.gradient)
            if not memory:  # a first step of ``initial_radius`` |L|, the Newton calls' first radius
                V *= options.initial_radius * np.linalg.norm(ev.L) / max(np.linalg.norm(V), 1e-300)
            t, change = ray_minimum(objective.ray(V), 1.0)
            if not change < 0.0:
                break
            new = objective.advance(t, dual=False)
            memory.update(new.L - ev.L, new.gradient - ev.gradient)
            ev, nit = new, nit + 1
            falls.append(-change)
            bar.update(1)
            if self.search.drift(gram(ev.L)) > options.stale_drift:
                L = narrowed(ev.L, options)
                state.n_evaluations += objective.n_evaluations
                objective = self._renew(L, objective)
                ev = objective.evaluate(L, gamma, dual=False)  # eq. 14 at L: every active triplet is in the set
                self._offer_upper(objective, ev, gram(L))
                memory.clear()
        state.n_iter += nit
        state.n_evaluations += objective.n_evaluations
        objective.n_evaluations = 0
        state.timings["quasi_newton"] += time.perf_counter() - tic - (state.timings["search"] - searched)
        return objective, ev.L, nit

    # -- one stage ------------------------------------------------------------
    def _stage(self, objective: SmoothedObjective, L, max_iter, bar, nit: int = 0):
        """Newton iterations at ``state.gamma`` (``nit`` spent already): a fresh search whenever
        the metric leaves the region where the working set is provably complete, an escape step
        (``factors.escape``) whenever the negative eigenvalues of ``G`` dominate the estimated
        gap. The start of every Newton call is a restart point (``state.saved``).

        A Newton call that starts where its set holds every triplet with a loss (``F_gamma`` there
        is its value over all triplets) is kept only if ``F_gamma`` over all triplets, on the set
        renewed where it ended, is lower; otherwise the renewed set's new pairs had been left out
        of its model, and it is retracted (``_retract``)."""
        state, options, gamma = self.state, self.options, self.state.gamma
        if not state.stages and nit == 0:  # the first stage, from the start
            objective, L, nit = self._quasi_newton(objective, L, max_iter, bar)
        while True:
            if self.checkpoint.due():
                self.checkpoint.save(saved(state, self.search, None, objective=objective, L=L, nit=nit))
            start, radius, state.retreat = L, state.retreat, None
            complete = radius is not None or self._searched_at(objective, L)
            before = objective.evaluate(L, gamma).value if complete else None
            L, taken, stop = self._newton(objective, L, gamma, max_iter - state.n_iter, bar, radius)
            nit += taken
            if stop == "stale" and state.n_iter < max_iter:
                moved, kept = np.linalg.norm(L - start), objective.ws
                L = narrowed(L, options)
                objective = self._renew(L, objective)
                if before is not None and not objective.evaluate(L, gamma).value < before:
                    objective, L = self._retract(objective, kept, moved), start
                continue
            if stop not in ("saddle", "stationary", "radius") or state.n_iter >= max_iter:
                return objective, L, nit, stop
            tic = time.perf_counter()
            narrow = narrowed(L, options)  # rows that an earlier escape added and that stayed near 0 go
            if narrow is not L:
                L = narrow
                objective.evaluate(L, gamma)
            escaped = escape(objective)
            state.timings["escape"] += time.perf_counter() - tic
            if escaped is None:
                return objective, L, nit, stop
            L = escaped

    def _newton(self, objective: SmoothedObjective, L, gamma, budget, bar, radius: float | None = None):
        """Trust-region Newton on ``F_gamma`` from ``L`` (module docstring, steps 3 and 5), with
        trust radius ``radius`` (default ``initial_radius |L|``); when the working set was searched
        at ``L`` (``_searched_at``) the first evaluation is eq. 14 there and is offered as an upper
        bound. Returns the last ``L``, the iterations and why they ended (``_NewtonCall.reason``)."""
        tic = time.perf_counter()
        options, shape = self.options, L.shape
        call = _NewtonCall(self, objective, gamma, shape, bar, exact=self._searched_at(objective, L))
        result = trust_region.minimize(
            call.fun, lambda v: objective.hessian_product(v.reshape(shape)).ravel(), call.line, L.ravel(),
            radius=options.initial_radius * np.linalg.norm(L) if radius is None else radius, max_iter=budget,
            stop=call.stop, max_radius=lambda x: options.max_radius * np.linalg.norm(x),
            preconditioner=lambda: trust_region.flat(objective.preconditioner(), shape),
            max_cg=options.max_cg, min_radius_ratio=options.min_radius_ratio)
        state = self.state
        state.n_iter += result.nit
        state.n_evaluations += objective.n_evaluations
        state.n_hessian_products += objective.n_hessian_products
        objective.n_evaluations = objective.n_hessian_products = 0
        state.timings["newton"] += time.perf_counter() - tic
        return result.x.reshape(shape), result.nit, call.reason(result.reason)

    def _retract(self, renewed: SmoothedObjective, kept: WorkingSet, moved: float) -> SmoothedObjective:
        """The objective to start again where the Newton call that moved ``L`` by ``moved`` began on
        the set ``kept``, complete there: on ``kept`` and the ``renewed`` set together, so the next
        steps see the pairs that made the last ones fail, within a trust radius ``retreat moved``."""
        renewed.release()
        both = WorkingSet.from_pairs(np.concatenate([kept.owner, renewed.ws.owner]),
                                     np.concatenate([kept.impostors, renewed.ws.impostors]), len(kept.ptr) - 1)
        self.state.retreat = self.options.retreat * moved
        self.state.n_retreats += 1
        return self._objective(both)

    # -- searches -------------------------------------------------------------
    def _searched_at(self, objective: SmoothedObjective, L: np.ndarray) -> bool:
        """Whether ``objective``'s working set is the search's last, made at ``M_w = L^T L``:
        it then holds every active triplet at ``L``."""
        return (objective.ws is self.search.working_set and self.search.metric is not None
                and np.array_equal(self.search.metric, gram(L)))

    def _renew(self, L: np.ndarray, replaced: SmoothedObjective | None = None) -> SmoothedObjective:
        """Exact search at ``L`` and the smoothed objective on the renewed working set; the
        ``replaced`` objective's arrays are released first (``SmoothedObjective.release``)."""
        if replaced is not None:
            replaced.release()
        tic = time.perf_counter()
        ws = self.search.search(L)
        self.state.timings["search"] += time.perf_counter() - tic
        return self._objective(ws)

    def _objective(self, ws: WorkingSet) -> SmoothedObjective:
        """The smoothed objective on ``ws``, its hinges shifted by the multipliers of the
        pairs it shares with the last update (``state.prior``; 0 for the others)."""
        objective = SmoothedObjective(self.whitening, self.problem.targets, self.problem.mu, ws, self.options)
        if self.state.prior is not None and len(self.state.prior[0]):
            keys, multipliers = self.state.prior
            wanted = ws.keys()
            at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
            shared = keys[at] == wanted
            objective.prior[shared] = multipliers[at[shared]]
        return objective

    # -- bounds and the proof -------------------------------------------------
    def scaled_bound(self, ev: Evaluation) -> float:
        """The lower bound that steers the stages (``continuation.scaled_bound``)."""
        return scaled_bound(self.problem.mu, self.whitening, ev)

    def _offer_lower(self, objective: SmoothedObjective, ev: Evaluation) -> None:
        estimate = self.scaled_bound(ev)
        if estimate > self.state.lower.value:
            triplets, lam = objective.multipliers()
            self.state.lower = Candidate(estimate, triplets=triplets, multipliers=lam)

    def _offer_upper(self, objective: SmoothedObjective, ev: Evaluation, M_w: np.ndarray) -> None:
        """``ev`` is eq. 14 at ``M_w`` right after an exact search: every active triplet is in the set."""
        if ev.objective < self.state.upper.value:
            triplets, _ = objective.multipliers()
            self.state.upper = Candidate(ev.objective, metric=M_w, triplets=triplets)
            self.state.upper_path.append((time.perf_counter() - self.state.start_time, ev.objective))

    def _proof_within(self) -> float:
        """The estimated gap at which a certificate is tried: ``prove_within`` tol, and after a
        failed proof the aim it set, so that the next proof has new candidates to try."""
        return self.options.prove_within * self.tol if self.state.aim == self.tol else self.state.aim

    def _estimated_gap(self) -> float:
        return relative_gap(self.state.upper.value, self.state.lower.value)

    def _provable(self) -> bool:
        """False when the certificate of the candidates cannot prove tol: neither its scales into
        the dual cone nor its repair raise the bound above the multipliers' sum, and its upper bound
        is eq. 14 at the same metric (the margin covers the rounding between the coordinates)."""
        reach = float(np.clip(self.state.lower.multipliers, 0.0, self.problem.mu).sum())
        return relative_gap(self.state.upper.value, reach) <= self.tol * (1.0 + self.options.provable_margin)

    def _certificate(self) -> Certificate:
        """The rigorous certificate of the best metric and multipliers (``certificate.prove_projected``):
        eq. 14 evaluated anew on the inputs with its rounding bound, the lower bound proved in the
        sphered data range; once for each pair of candidates (replaced, never changed)."""
        upper, lower = self.state.upper, self.state.lower
        if self._proved_for is not None and all(a is b for a, b in zip(self._proved_for, (upper, lower))):
            return self.certificate
        self._proved_for = (upper, lower)
        tic = time.perf_counter()
        w = self.whitening
        metrics = w.lift(upper.metric)
        if w.singular:  # killable impostors were left out: push them out
            metrics = w.push_out(self.problem, metrics)
        single = self.problem.clusters is None
        self.certificate = prove_projected(self.problem, metrics[0] if single else metrics,
                                           lower.triplets, lower.multipliers, tol=self.tol)
        self.state.timings["bounds"] += time.perf_counter() - tic
        return self.certificate

    # -- the record and the result --------------------------------------------
    def _record(self, gamma, nit, ev, ev_0, stop, callback) -> None:
        state = self.state
        stage = Stage(stage=len(state.stages), gamma=gamma, newton_iterations=nit, stop=stop,
                      upper=state.upper.value, lower=state.lower.value, relative_gap=self._estimated_gap(),
                      n_active=ev_0.n_active, n_transition=ev.n_transition,
                      n_working=len(self.search.working_set) * self.problem.k,
                      elapsed=time.perf_counter() - state.start_time)
        state.stages.append(stage)
        if callback is not None:
            callback(stage)

    def _result(self, stop: str, max_iter: int = 0) -> FastLMNNResult:
        """The result at the best metric, saved as the checkpoint's end; ``stop`` is why the
        iterations ended (``result.solve_message``), and the certificate alone decides
        ``converged``."""
        state, search = self.state, self.search
        self.checkpoint.save(saved(state, search, stop, max_iter=max_iter))
        certificate = self._certificate()
        state.timings["total"] = time.perf_counter() - state.start_time
        window = self.options.push_only_window
        message = solve_message(certificate, stop, max_iter=max_iter, max_stages=self.options.max_stages,
                                estimated_gap=self._estimated_gap(), tol=self.tol,
                                fall=recent_fall(state.stages, window), window=window)
        return FastLMNNResult(
            certificate=certificate, status=solve_status(certificate, stop), message=message,
            n_iter=state.n_iter, n_stages=len(state.stages), n_searches=search.n_searches,
            n_evaluations=state.n_evaluations, n_hessian_products=state.n_hessian_products,
            n_retreats=state.n_retreats,
            search_fraction=search.points_searched / max(search.n_searches, 1) / self.problem.n_samples,
            n_active=len(state.upper.triplets), active_triplets=state.upper.triplets,
            stages=list(state.stages), upper_path=list(state.upper_path), timings=dict(state.timings))


@dataclass
class _NewtonCall:
    """The callbacks of one trust-region Newton call (``trust_region.minimize``) on ``F_gamma``
    over flat ``L`` of ``shape``, and what they carry from one call to the next."""

    run: _Run
    objective: SmoothedObjective
    gamma: float
    shape: tuple
    bar: tqdm
    exact: bool  # the next evaluation is eq. 14 (its set was searched there): offered as an upper bound
    moved: float | None = None  # the multiple of the last line's step, when ``x`` is where it leads
    saddle: int = 0  # iterations in a row whose gap the scale into the dual cone dominates
    stale: bool = False  # the metric has drifted by ``stale_drift`` since the last search

    def fun(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``F_gamma`` and its gradient at ``x``, reusing the line search's last point there."""
        t, self.moved = self.moved, None
        ev = self.objective.advance(t) if t is not None else self.objective.current
        if (ev is None or ev.dual_matrix is None or ev.gamma != self.gamma
                or not np.array_equal(ev.L.ravel(), x)):
            ev = self.objective.evaluate(x.reshape(self.shape), self.gamma)
        if self.exact:
            self.exact = False
            self.run._offer_upper(self.objective, ev, gram(ev.L))
        return ev.value, ev.gradient.ravel()

    def line(self, p: np.ndarray, t_max: float) -> tuple[float, float]:
        t, change = ray_minimum(self.objective.ray(p.reshape(self.shape)), 1.0, t_max)
        self.moved = t if change < 0.0 else None  # ``minimize`` then moves to ``x + t p``
        return t, change

    def stop(self, x: np.ndarray) -> bool:
        """The stage's rule after every step (the module docstring's last paragraph), a drift
        that calls for a search (``stale``) or a gap that calls for an escape (``saddle``)."""
        self.bar.update(1)
        run, ev = self.run, self.objective.current
        bound = run.scaled_bound(ev)
        gap = ev.objective - bound
        if gap - ev.complementarity <= 0.5 * ev.complementarity or gap <= 0.5 * run.state.aim * ev.objective:
            return True
        if relative_gap(min(run.state.upper.value, ev.objective), bound) <= run.state.aim:
            return True  # with the best metric so far, the bound may already prove tol
        if run.search.drift(gram(ev.L)) > run.options.stale_drift:
            self.stale = True
            return True
        # the scaling into the dual cone loses most of the gap, iteration after iteration
        self.saddle = self.saddle + 1 if ev.multiplier_sum - bound > 0.5 * gap else 0
        return self.saddle >= run.options.saddle_patience

    def reason(self, reason: str) -> str:
        """Why the call ended: ``minimize``'s ``reason``, its "stop" told apart as "stale" or "saddle"."""
        if reason == "stop" and self.stale:
            return "stale"
        if reason == "stop" and self.saddle >= self.run.options.saddle_patience:
            return "saddle"
        return reason
