"""The scalable LMNN solver: smoothed-hinge continuation with a certified stop.

One algorithm and one stopping rule at every size (DESIGN.md, "One path at
every size"); size only picks block sizes and threads. It solves eq. 14 and,
with ``clusters``, multi-metric LMNN (sec. 5.2, eq. 16: one metric per cluster,
the distance to a point measured by its cluster's metric); LMNN is the case of
one cluster, so both run the same code, every step below applied per cluster
(``L`` is (C, p, r); the estimate that steers the stages scales all multipliers by
the smallest of the clusters' scales into the dual cone, the certificate each
cluster's impostor multipliers by its own).

1. **Coordinates.** The data range whitened by the pull matrix
   (``lmnn_sdp.core.whitening``): the problem and every step are the same for any
   linear map of the inputs, feature scaling included.
2. **Smoothed hinge, exact working set.** Each stage minimises ``F_gamma`` of
   ``fast_solver.lmnn.smoothed`` (eq. 14 with the hinge smoothed over a width
   ``gamma``) over ``L`` with ``M_w = L^T L``, on the pairs found by an exact
   impostor search (``fast_solver.lmnn.working_set``). The set is searched again
   when the metric has moved by ``STALE_DRIFT`` (relative, spectral norm) since
   the last search, and at the end of every stage. Newton's iterations between two
   searches are kept only if ``F_gamma`` over all triplets fell; otherwise they start
   again from where they began, on both sets and within a shorter radius (``_Run._retract``).
3. **Second order.** The Newton iterations are a trust-region method with
   truncated conjugate gradients and an exact line search along each step
   (``fast_solver.lmnn.trust_region``, ``SmoothedObjective.ray``): a Hessian-vector
   product costs one pass over the triplets in transition (``0 < h < gamma``), a
   point of the line search one pass over the working set without matrix products,
   and the evaluation at the point it picks reuses its distances
   (``SmoothedObjective.advance``).
   The conjugate gradients are preconditioned by the Hessian's diagonal in the
   eigenbases of ``L L^T`` and ``G`` (``SmoothedObjective.preconditioner``).
   Steps are capped at ``MAX_RADIUS |L|``, so no step lands on ``L = 0``, and when
   the negative eigenvalues of the dual matrix ``G`` (what the scale into the dual cone
   loses) dominate the gap for ``SADDLE_PATIENCE`` iterations, line searches along
   ``M_c + t P_S(-G_c)`` move the metrics in ``M`` (an escape): from a saddle of
   ``L -> L^T L`` on directions ``M`` lacks, and, as measured, from points where the
   steps in ``L`` end on negative curvature within ``M``'s range (design note, "Where
   ``G`` is indefinite").
   Before the first search, every later one, every escape and at the end of every stage
   the rows of ``L`` (square at the start unless the starting metric has a low rank, as
   ``_euclidean_start``'s may) are cut to the metrics' rank and a margin when that saves a
   quarter of them (``_narrowed``), so that at a low-rank optimum the products
   cost ``O(n p r)``, not ``O(n r^2)``; escapes add rows.
4. **Continuation with multiplier updates.** ``gamma`` starts at ``INITIAL_GAMMA``
   (several metrics: wider while few triplets are in transition, ``_first_width``)
   and, whenever the smoothing, not the optimisation, limits the gap, shrinks by
   ``SHRINK`` (less when the estimated gap is near the aim, ``_next_width``) while each
   hinge is shifted by the stage's multipliers
   (``SmoothedObjective.prior``): ``F_gamma`` is then the augmented Lagrangian of eq. 14
   and the stages are the method of multipliers with a growing penalty ``mu / gamma``,
   whose minimisers approach eq. 14's faster than ``gamma`` shrinks. The stage's metric
   is scored by eq. 14 after an exact search.
5. **Certified stop.** The smoothing multipliers ``lambda = mu clip(h / gamma, 0, 1)``
   are dual candidates (their dual matrix is the gradient ``G``); scaled into
   the dual cone by ``lmnn_sdp.certificates.bounds.dual_lower_bound`` (numpy and scipy only,
   here in the whitened coordinates) they give a rigorous lower bound, and the
   best metric's eq. 14 right after an exact search the upper bound.
   ``converged`` is True only when these prove ``relative_gap <= tol``. The
   certificate is computed once the estimated gap is within ``PROVE_WITHIN`` tol (after
   a failed proof, within the aim it set) and the multipliers' sum within tol of the
   upper bound (no scale or repair proves more): where the scale into the dual cone
   costs more than tol, ``prove`` also tries the multipliers lowered along the negative
   eigenvectors of ``Z`` (``bounds.repair_multipliers``). When the estimated gap is below
   ``UNPROVABLE_BELOW`` tol and the certificate still does not prove tol, the solve
   ends ``stalled``: what the proof loses (its rounding allowances) no longer
   shrinks with the iterations. When every impostor can be pushed out along the null
   space of its cluster's pull matrix (``ClusterWhitening.every_impostor_killable``, as
   with fewer points than features), eq. 14's optimum is 0: the solve ends at once with
   that metric, ``converged`` when eq. 14 there with its rounding is at most the
   certificate's ``atol`` (no relative gap proves 0), ``stalled`` otherwise.

Within a stage the Newton iterations stop when the estimated gap is no longer
dominated by optimisation error (``gap - comp <= comp / 2``, with ``comp`` the
complementarity ``sum (mu - lambda_t) h_t`` that the smoothing leaves), or when
the estimated gap against the best metric so far is below ``tol``; after a failed
proof, below ``RETRY_BELOW`` times the estimated gap it failed at, so that the next
proof has new candidates to try.

Design note: ``docs/design/fast-lmnn-solver.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from fast_solver.checkpoint import Checkpoint, Section, as_checkpoint, fingerprint
from fast_solver.lmnn import trust_region
from fast_solver.lmnn.impostors import SEARCH_METHODS, check_band
from fast_solver.lmnn.options import SolverOptions
from fast_solver.lmnn.result import FastLMNNResult, Stage
from fast_solver.lmnn.smoothed import Evaluation, SmoothedObjective, WorkingSet
from fast_solver.lmnn.start import best_scale
from fast_solver.lmnn.working_set import ExactSearch
from lmnn_sdp.certificates.bounds import largest_feasible_scale, relative_gap
from lmnn_sdp.certificates.certificate import Certificate, prove
from lmnn_sdp.core.line_search import ray_minimum
from lmnn_sdp.core.principal import principal_axes
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import check_psd, project_psd, psd_factor
from lmnn_sdp.core.space import sphered_space
from lmnn_sdp.core.whitening import ClusterWhitening, Whitening, whiten_clusters
from lmnn_sdp.status import CONVERGED, MAX_ITER, STALLED

ITERATIONS = 15  # version of the iterations a checkpoint replays (2: multiplier updates, 3: an upper bound
# at every search, 4: the first width of several metrics, 5: the aim after a failed proof, 6: float32
# Hessian products, 7: the data range from a QR factor, 8: compiled sums in any order, 9: compiled
# products of the stacked graphs of several clusters at up to 32 coordinates, 10: narrow L and Hessian
# products from Z = X L^T, 11: narrow starts and escapes, 12: an escape's line searches from one
# ray's coefficients, the drift from eigenvalues, 13: the default start on principal directions, 14: retractions,
# 15: a lighter shrink before a last stage, ``_next_width``), in its
# fingerprint
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

    Minimises eq. 14 of Weinberger & Saul (JMLR 2009) over positive semidefinite
    metrics, or with ``clusters`` the multi-metric objective of sec. 5.2 (eq. 16),
    by smoothed-hinge continuation with trust-region Newton steps (the module
    docstring; it replaces the sub-gradient method of Appendix A). The result is
    ``converged`` only when a rigorous dual lower bound proves the relative gap at
    most ``tol``.

    Parameters
    ----------
    problem : LMNNProblem
        Inputs, labels, target neighbours and ``mu``; with ``problem.clusters``, the
        multi-metric objective (eq. 16).
    M0 : array-like of shape (d, d) or (C, d, d), optional
        PSD starting metric(s), rescaled for LMNN by its best multiple on a sample
        (``fast_solver.lmnn.start``). By default the Euclidean metric on the principal
        directions of the inputs that hold all but ``START_TAIL`` (3%) of their variance,
        at least ``MIN_START_RANK`` (32) of them, or on all d when that is more than
        three quarters of them (``_euclidean_start``).
        With ``clusters``, every cluster starts at ``M0`` as given (one metric for
        all, or one each), by default at the LMNN optimum of the same problem
        (sec. 5.2; a solve of its own, with the same options).
    clusters : array-like of int, shape (n,), optional
        Cluster of each point (``0..C-1``, every cluster used): one metric per
        cluster (multi-metric LMNN, eq. 16), in place of the problem's own
        (``problem.with_clusters``). ``None`` solves the problem as it is: LMNN
        when it has no clusters.
    tol : float, default=1e-6
        Relative gap ``(upper - lower) / upper`` that ``converged`` must prove.
    max_iter : int, default=1000
        Budget of Newton iterations over all stages.
    band : float >= 0, default=0.5
        Slack of the working set: pairs within ``max_j D(i, j) + 1 + band``.
    search : {"auto", "blockwise", "balltree"}, default="auto"
        Impostor-search path (``fast_solver.lmnn.impostors``).
    callback : callable, optional
        Called with a ``Stage`` after every stage.
    progress : bool, default=False
        Show a tqdm bar over the Newton iterations.
    checkpoint : str, path-like, Checkpoint, Section or None, default=None
        File that keeps the solve's state (``fast_solver.checkpoint``), saved at the start
        of every trust-region Newton call (at most every ``checkpoint_interval`` seconds)
        and at the end. The same call with the same path resumes from the state saved last
        and ends bit-for-bit as an uninterrupted solve (metric, bounds, counters, stages;
        timings differ); after the end it returns the same result at once (the certificate
        is proved again). With ``clusters`` and no ``M0``, the LMNN solve of the start is
        kept in the same file. A ``Checkpoint`` or ``Section`` (a step of a larger fit, as
        ``solve_multipass`` passes) is used as given: its file checks kind and fingerprint.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every restart point.

    Returns
    -------
    result : FastLMNNResult
        The metric (d, d), or one per cluster (C, d, d), with its certificate:
        ``upper`` (the objective at the metric), ``lower``, ``relative_gap``,
        ``converged`` and the solver's counters.

    Raises
    ------
    ValueError
        If ``tol``, ``max_iter``, ``band``, ``search`` or ``checkpoint_interval`` is invalid,
        or ``M0`` is not PSD, is zero or has the wrong shape.
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

    A solve with a checkpoint file, run again with the same path once it has ended:

    >>> import tempfile
    >>> path = tempfile.mkdtemp() + "/lmnn.ckpt"
    >>> first = solve(problem, checkpoint=path)
    >>> again = solve(problem, checkpoint=path)
    >>> bool((again.metric == first.metric).all()), again.n_iter == first.n_iter
    (True, True)
    """
    _check_options(tol, max_iter, search)
    band = check_band(band)
    if clusters is not None:
        problem = problem.with_clusters(clusters)
    checkpoint = as_checkpoint(checkpoint, kind="lmnn", interval=checkpoint_interval,
                               fingerprint=lambda: solve_fingerprint(problem, M0, tol=tol, max_iter=max_iter,
                                                                     band=band, search=search))
    if problem.pull_vanishes():
        return _without_pull(problem, tol)
    if problem.clusters is not None and M0 is None:
        M0 = solve(problem.with_clusters(None), tol=tol, max_iter=max_iter, band=band, search=search,
                   checkpoint=checkpoint.section("global")).metric
        checkpoint = checkpoint.section("multi")
    with threadpool_limits(1, user_api="blas"):
        run = _Run(problem, band, search, tol, checkpoint, OPTIONS)
        return run.solve(_start(problem, run.whitening, M0, OPTIONS), max_iter, callback, progress)


def solve_fingerprint(problem: LMNNProblem, M0=None, **options) -> str:
    """``fast_solver.checkpoint.fingerprint`` of a solve: the problem (inputs, label codes,
    targets, ``mu``, clusters), the start ``M0`` and the ``options`` that change the answer
    (``tol``, ``max_iter``, ``band``, ``search``).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=3)
    >>> solve_fingerprint(problem, tol=1e-6) == solve_fingerprint(problem, tol=1e-7)
    False
    """
    return fingerprint(problem.X, problem.label_codes, problem.targets, mu=problem.mu, clusters=problem.clusters,
                       M0=None if M0 is None else np.asarray(M0), iterations=ITERATIONS, **options)


@dataclass
class _Candidate:
    """A bound and its evidence: a metric (upper) or multipliers (lower)."""

    value: float
    metric: np.ndarray | None = None  # M_w (C, r, r)
    triplets: np.ndarray | None = None  # (T, 3)
    multipliers: np.ndarray | None = None  # (T,)


class _Run:
    """State of one solve: whitened space, searches, bounds found so far, counters.

    Its restart points are the starts of the trust-region Newton calls (``_stage``): each
    starts afresh from ``L``, so the rest of the solve is a function of the state saved
    there (``_state``): ``L``, ``gamma`` and the multipliers that shift the hinges, the
    working set of the objective and the search's (its floors and the metric of its last
    search), the best candidates, the stages and the counters. The certificate's cache is not
    saved: ``prove`` is deterministic, so it is proved again when asked."""

    def __init__(self, problem: LMNNProblem, band: float, search: str, tol: float,
                 checkpoint: Checkpoint | Section, options: SolverOptions):
        self.problem, self.tol, self.checkpoint, self.options = problem, tol, checkpoint, options
        self.whitening: ClusterWhitening = whiten_clusters(problem)
        self.search = ExactSearch(self.whitening, problem.targets, problem.label_codes, band, search)
        self.upper = _Candidate(np.inf)
        self.lower = _Candidate(0.0, triplets=np.empty((0, 3), np.intp), multipliers=np.zeros(0))
        self.certificate: Certificate | None = None
        self._proved_for: tuple[_Candidate, _Candidate] | None = None  # the candidates of ``certificate``
        self.stages: list[Stage] = []
        self.upper_path: list[tuple[float, float]] = []  # (elapsed, upper) at each improvement
        self.n_iter = self.n_evaluations = self.n_hessian_products = self.n_retreats = 0
        self.timings = dict.fromkeys(("search", "newton", "escape", "bounds"), 0.0)
        self.start_time = time.perf_counter()
        self.gamma = options.initial_gamma  # the stage's width
        self.aim = tol  # the estimated gap a stage stops at: tol, lowered by every failed proof
        self.prior: tuple[np.ndarray, np.ndarray] | None = None  # pair keys i n + l (P,), multipliers (P, k)
        self.retreat: float | None = None  # the next Newton call's radius after a retraction (``_retract``)

    def solve(self, L: np.ndarray, max_iter: int, callback, progress: bool) -> FastLMNNResult:
        saved = self.checkpoint.load()
        if saved is not None and saved["stop"] is not None:  # the solve had ended
            self._restore(saved)
            return self._result(self.upper.metric, saved["stop"], saved["max_iter"])
        if self.problem.mu == 0.0:  # eq. 14 is (pull >= 0), attained at M = 0
            return self._result(np.zeros_like(L), "mu=0")
        if saved is None and self.whitening.every_impostor_killable(self.problem.label_codes):
            r = L.shape[2]
            self.upper = _Candidate(0.0, metric=np.zeros((len(L), r, r)), triplets=self.lower.triplets)
            return self._result(self.upper.metric, "zero")  # pushed out along the null spaces
        if saved is None:
            L = _narrowed(L, self.options)  # a start of low rank, as the LMNN optimum that starts class metrics
            objective, nit = self._renew(L), 0
            self.gamma = _first_width(objective, L, self.options)
        else:
            objective, L, nit = self._restore(saved)
        bar = tqdm(total=max_iter, initial=self.n_iter, disable=not progress, desc="LMNN", unit="it")
        try:
            for _ in range(len(self.stages), self.options.max_stages):
                objective, L, nit, stop = self._stage(objective, L, max_iter, bar, nit)
                L = _narrowed(L, self.options)
                gamma = self.gamma
                ev = objective.evaluate(L, gamma)
                self._offer_lower(objective, ev)
                objective = self._renew(L, objective)  # eq. 14 exactly: every active triplet is in the set
                exact = objective.evaluate(L, gamma)
                self._offer_upper(objective, exact, _gram(L))
                self._record(gamma, nit, ev, exact, stop, callback)
                if self._estimated_gap() <= self._proof_within() and self._provable():
                    if self._certificate().certified:
                        return self._result(self.upper.metric, "proved")
                    self.aim = min(self.aim, self.options.retry_below * self._estimated_gap())
                if self._estimated_gap() <= self.options.unprovable_below * self.tol:  # what keeps the proof short
                    return self._result(self.upper.metric, "unprovable")  # is no longer the optimisation
                if self.n_iter >= max_iter:
                    break
                if ev.complementarity >= 0.5 * max(ev.objective - self._scaled_bound(ev), 0.0):
                    self.prior = (objective.ws.keys(), objective.pair_multipliers())
                    objective.prior = self.prior[1]
                    self.gamma = _next_width(gamma, self._estimated_gap(), self.aim, self.options.shrink)
                nit = 0
            else:
                return self._result(self.upper.metric, "stages")
        finally:
            bar.close()
        return self._result(self.upper.metric, "max_iter", max_iter)

    def _stage(self, objective: SmoothedObjective, L, max_iter, bar, nit: int = 0):
        """Newton iterations at ``self.gamma`` (``nit`` spent already): a fresh search whenever
        the metric leaves the region where the working set is provably complete, an escape
        step (``_escape``) whenever the negative eigenvalues of ``G`` dominate the estimated
        gap. The start of every Newton call is a restart point (``_state``).

        A Newton call that starts where its set holds every triplet with a loss (``F_gamma``
        there is its value over all triplets) is kept only if ``F_gamma`` over all triplets,
        on the set renewed where it ended, is lower. Otherwise the pairs the renewed set
        added had been left out of its model: it is retracted (``_retract``)."""
        gamma = self.gamma
        while True:
            if self.checkpoint.due():
                self.checkpoint.save(self._state(stop=None, objective=objective, L=L, nit=nit))
            start, radius, self.retreat = L, self.retreat, None
            complete = radius is not None or self._searched_at(objective, L)
            before = objective.evaluate(L, gamma).value if complete else None
            L, taken, stop = self._newton(objective, L, gamma, max_iter - self.n_iter, bar, radius)
            nit += taken
            if stop == "stale" and self.n_iter < max_iter:
                moved, kept = np.linalg.norm(L - start), objective.ws
                L = _narrowed(L, self.options)
                objective = self._renew(L, objective)
                if before is not None and not objective.evaluate(L, gamma).value < before:
                    objective, L = self._retract(objective, kept, moved), start
                continue
            if stop not in ("saddle", "stationary", "radius") or self.n_iter >= max_iter:
                return objective, L, nit, stop
            tic = time.perf_counter()
            narrow = _narrowed(L, self.options)  # rows that an earlier escape added and that stayed near 0 go
            if narrow is not L:
                L = narrow
                objective.evaluate(L, gamma)
            escaped = _escape(objective)
            self.timings["escape"] += time.perf_counter() - tic
            if escaped is None:
                return objective, L, nit, stop
            L = escaped

    def _retract(self, renewed: SmoothedObjective, kept: WorkingSet, moved: float) -> SmoothedObjective:
        """The objective to start again from where the Newton call that moved ``L`` by ``moved``
        (Frobenius) began on the set ``kept``, complete there: on ``kept`` and the ``renewed`` set
        together, so the next steps see the pairs that made the last ones fail, within a trust
        radius of ``RETREAT moved``."""
        renewed.release()
        both = WorkingSet.from_pairs(np.concatenate([kept.owner, renewed.ws.owner]),
                                     np.concatenate([kept.impostors, renewed.ws.impostors]), len(kept.ptr) - 1)
        self.retreat = self.options.retreat * moved
        self.n_retreats += 1
        return self._objective(both)

    # -- one stage ------------------------------------------------------------
    def _newton(self, objective: SmoothedObjective, L, gamma, budget, bar, radius: float | None = None):
        """Trust-region Newton on ``F_gamma`` from ``L`` (module docstring, steps 3 and 5), with
        trust radius ``radius`` (default ``INITIAL_RADIUS |L|``); when the working set was searched
        at ``L`` (``_searched_at``) the first evaluation is eq. 14 there and is offered as an upper
        bound."""
        tic = time.perf_counter()
        options = self.options
        shape = L.shape
        exact = [self._searched_at(objective, L)]
        moved = [None]  # the multiple of the last line's step, when ``x`` is where it leads

        def fun(x):
            t, moved[0] = moved[0], None
            ev = objective.advance(t) if t is not None else objective.current
            if ev is None or ev.gamma != gamma or not np.array_equal(ev.L.ravel(), x):
                ev = objective.evaluate(x.reshape(shape), gamma)
            if exact[0]:
                exact[0] = False
                self._offer_upper(objective, ev, _gram(ev.L))
            return ev.value, ev.gradient.ravel()

        saddle, stale = [0], [False]

        def stop(x) -> bool:
            bar.update(1)
            ev = objective.current
            bound = self._scaled_bound(ev)
            gap = ev.objective - bound
            if gap - ev.complementarity <= 0.5 * ev.complementarity or gap <= 0.5 * self.aim * ev.objective:
                return True
            if relative_gap(min(self.upper.value, ev.objective), bound) <= self.aim:
                return True  # with the best metric so far, the bound may already prove tol
            if self.search.drift(_gram(ev.L)) > options.stale_drift:
                stale[0] = True
                return True
            # the scaling into the dual cone loses most of the gap, iteration after iteration
            saddle[0] = saddle[0] + 1 if ev.multiplier_sum - bound > 0.5 * gap else 0
            return saddle[0] >= options.saddle_patience

        def line(p, t_max):
            t, change = ray_minimum(objective.ray(p.reshape(shape)), 1.0, t_max)
            moved[0] = t if change < 0.0 else None  # ``minimize`` then moves to ``x + t p``
            return t, change

        result = trust_region.minimize(
            fun, lambda v: objective.hessian_product(v.reshape(shape)).ravel(), line, L.ravel(),
            radius=options.initial_radius * np.linalg.norm(L) if radius is None else radius, max_iter=budget, stop=stop,
            max_radius=lambda x: options.max_radius * np.linalg.norm(x),
            max_cg=options.max_cg, min_radius_ratio=options.min_radius_ratio,
            preconditioner=lambda: _flat(objective.preconditioner(), shape))
        self.n_iter += result.nit
        self.n_evaluations += objective.n_evaluations
        self.n_hessian_products += objective.n_hessian_products
        objective.n_evaluations = objective.n_hessian_products = 0
        self.timings["newton"] += time.perf_counter() - tic
        reason = result.reason
        if reason == "stop" and stale[0]:
            reason = "stale"
        elif reason == "stop" and saddle[0] >= options.saddle_patience:
            reason = "saddle"
        return result.x.reshape(shape), result.nit, reason

    def _searched_at(self, objective: SmoothedObjective, L: np.ndarray) -> bool:
        """Whether ``objective``'s working set is the search's last, made at ``M_w = L^T L``:
        it then holds every active triplet at ``L``."""
        return (objective.ws is self.search.working_set and self.search.metric is not None
                and np.array_equal(self.search.metric, _gram(L)))

    def _renew(self, L: np.ndarray, replaced: SmoothedObjective | None = None) -> SmoothedObjective:
        """Exact search at ``L`` and the smoothed objective on the renewed working set; the
        ``replaced`` objective's arrays are released first (``SmoothedObjective.release``)."""
        if replaced is not None:
            replaced.release()
        tic = time.perf_counter()
        ws = self.search.search(L)
        self.timings["search"] += time.perf_counter() - tic
        return self._objective(ws)

    def _objective(self, ws: WorkingSet) -> SmoothedObjective:
        """The smoothed objective on ``ws``, its hinges shifted by the multipliers of the
        pairs it shares with the last update (``prior``; 0 for the others)."""
        objective = SmoothedObjective(self.whitening, self.problem.targets, self.problem.mu, ws, self.options)
        if self.prior is not None and len(self.prior[0]):
            keys, multipliers = self.prior
            wanted = ws.keys()
            at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
            shared = keys[at] == wanted
            objective.prior[shared] = multipliers[at[shared]]
        return objective

    # -- bounds ---------------------------------------------------------------
    def _scaled_bound(self, ev: Evaluation) -> float:
        """``alpha sum(lambda)`` in whitened coordinates, ``alpha`` the smallest over the
        clusters: the estimate that steers the stages."""
        alpha = min(_feasible_scale(self.problem.mu, space, G)
                    for space, G in zip(self.whitening.spaces, ev.dual_matrix))
        return alpha * ev.multiplier_sum

    def _offer_lower(self, objective: SmoothedObjective, ev: Evaluation) -> None:
        estimate = self._scaled_bound(ev)
        if estimate > self.lower.value:
            triplets, lam = objective.multipliers()
            self.lower = _Candidate(estimate, triplets=triplets, multipliers=lam)

    def _offer_upper(self, objective: SmoothedObjective, ev: Evaluation, M_w: np.ndarray) -> None:
        """``ev`` is eq. 14 at ``M_w`` right after an exact search: every active triplet is in the set."""
        if ev.objective < self.upper.value:
            triplets, _ = objective.multipliers()
            self.upper = _Candidate(ev.objective, metric=M_w, triplets=triplets)
            self.upper_path.append((time.perf_counter() - self.start_time, ev.objective))

    def _proof_within(self) -> float:
        """The estimated gap at which a certificate is tried: ``PROVE_WITHIN`` tol, and after a
        failed proof the aim it set, so that the next proof has new candidates to try."""
        return self.options.prove_within * self.tol if self.aim == self.tol else self.aim

    def _estimated_gap(self) -> float:
        return relative_gap(self.upper.value, self.lower.value)

    def _provable(self) -> bool:
        """False when the certificate of the candidates cannot prove tol: neither its scales
        into the dual cone nor its repair raise the bound above the sum of the multipliers, and
        its upper bound is eq. 14 at the same metric (the margin covers the rounding between
        the whitened and the input coordinates)."""
        reach = float(np.clip(self.lower.multipliers, 0.0, self.problem.mu).sum())
        return relative_gap(self.upper.value, reach) <= self.tol * (1.0 + self.options.provable_margin)

    def _certificate(self) -> Certificate:
        """The rigorous certificate of the best metric and the best multipliers
        (``lmnn_sdp.certificates.prove``): eq. 14 evaluated anew on the inputs with its
        rounding bound, the lower bound proved in the sphered data range. Proved once for
        each pair of candidates (they are replaced, never changed, when a better one comes)."""
        if self._proved_for is not None and all(a is b for a, b in zip(self._proved_for, (self.upper, self.lower))):
            return self.certificate
        self._proved_for = (self.upper, self.lower)
        tic = time.perf_counter()
        w = self.whitening
        metrics = w.lift(self.upper.metric)
        if w.singular:  # killable impostors were left out: push them out
            metrics = w.push_out(self.problem, metrics)
        single = self.problem.clusters is None
        self.certificate = prove(self.problem, metrics[0] if single else metrics,
                                 self.lower.triplets, self.lower.multipliers, tol=self.tol)
        self.timings["bounds"] += time.perf_counter() - tic
        return self.certificate

    # -- checkpoints ----------------------------------------------------------
    def _state(self, stop: str | None, objective: SmoothedObjective | None = None, L=None, nit: int = 0,
               max_iter: int = 0) -> dict:
        """The checkpoint of the solve at a restart point (``stop`` None: the objective, ``L``
        and the stage's Newton iterations ``nit`` so far) or at its end (why it ``stop``-ped)."""
        state = {"stop": stop, "max_iter": max_iter, "upper": vars(self.upper), "lower": vars(self.lower),
                 "stages": [vars(stage) for stage in self.stages], "upper_path": list(self.upper_path),
                 "counters": (self.n_iter, self.n_evaluations, self.n_hessian_products, self.n_retreats),
                 "searches": (self.search.n_searches, self.search.points_searched),
                 "timings": dict(self.timings), "elapsed": time.perf_counter() - self.start_time}
        if stop is None:
            own = None if objective.ws is self.search.working_set else vars(objective.ws)
            state.update(L=L, nit=nit, gamma=self.gamma, aim=self.aim, prior=self.prior, retreat=self.retreat,
                         search=self.search.state(),
                         working_set=own, evaluations=(objective.n_evaluations, objective.n_hessian_products))
        return state

    def _restore(self, state: dict):
        """Continue from ``_state``: at a restart point, the objective, ``L`` and ``nit`` to
        resume ``_stage`` with."""
        self.upper, self.lower = _Candidate(**state["upper"]), _Candidate(**state["lower"])
        self.stages = [Stage(**stage) for stage in state["stages"]]
        self.upper_path = [tuple(point) for point in state["upper_path"]]
        self.n_iter, self.n_evaluations, self.n_hessian_products, self.n_retreats = state["counters"]
        self.search.n_searches, self.search.points_searched = state["searches"]
        self.timings = dict(state["timings"])
        self.start_time = time.perf_counter() - state["elapsed"]
        if state["stop"] is not None:
            return None
        self.search.restore(state["search"])
        self.gamma, self.aim, self.prior, self.retreat = state["gamma"], state["aim"], state["prior"], state["retreat"]
        ws = self.search.working_set if state["working_set"] is None else WorkingSet(**state["working_set"])
        objective = self._objective(ws)
        objective.n_evaluations, objective.n_hessian_products = state["evaluations"]
        return objective, state["L"], state["nit"]

    # -- bookkeeping ----------------------------------------------------------
    def _record(self, gamma, nit, ev, ev_0, stop, callback) -> None:
        stage = Stage(stage=len(self.stages), gamma=gamma, newton_iterations=nit, stop=stop,
                      upper=self.upper.value, lower=self.lower.value, relative_gap=self._estimated_gap(),
                      n_active=ev_0.n_active, n_transition=ev.n_transition,
                      n_working=len(self.search.working_set) * self.problem.k,
                      elapsed=time.perf_counter() - self.start_time)
        self.stages.append(stage)
        if callback is not None:
            callback(stage)

    def _result(self, M_w: np.ndarray, stop: str, max_iter: int = 0) -> FastLMNNResult:
        """The result at ``M_w``; ``stop`` is why the iterations ended ("mu=0", "proved",
        "max_iter", "stages" (``MAX_STAGES``), "unprovable" or "zero" (every impostor killable)),
        and the certificate alone decides ``converged``."""
        if self.problem.mu == 0.0:
            self.upper = _Candidate(0.0, metric=M_w, triplets=np.empty((0, 3), np.intp))
        self.checkpoint.save(self._state(stop, max_iter=max_iter))
        certificate = self._certificate()
        self.timings["total"] = time.perf_counter() - self.start_time
        if certificate.certified:
            message = "converged: " + {"mu=0": "mu = 0, so M = 0 is optimal",
                                       "proved": "the certified gap is below tol",
                                       "max_iter": "the certified gap is below tol (proved at the "
                                                   "iteration limit)",
                                       "zero": f"eq. 14's optimum is 0 ({_ZERO_OPTIMUM}), and the metric "
                                               f"attains eq. 14 = {certificate.upper:.3g} +- "
                                               f"{certificate.upper_error:.3g}, within "
                                               f"atol={certificate.atol:g} of it"}[stop]
        elif stop == "zero":
            message = (f"not converged: eq. 14's optimum is 0 ({_ZERO_OPTIMUM}); the metric attains eq. 14 = "
                       f"{certificate.upper:.3g} +- {certificate.upper_error:.3g} in float64, more than "
                       f"atol={certificate.atol:g} with its rounding, and no relative gap is proved at "
                       "an optimum of 0")
        else:
            message = self._not_proved(certificate, stop, max_iter)
        status = CONVERGED if certificate.certified else MAX_ITER if stop == "max_iter" else STALLED
        return FastLMNNResult(
            certificate=certificate, status=status, message=message,
            n_iter=self.n_iter, n_stages=len(self.stages), n_searches=self.search.n_searches,
            n_evaluations=self.n_evaluations, n_hessian_products=self.n_hessian_products, n_retreats=self.n_retreats,
            search_fraction=self.search.points_searched / max(self.search.n_searches, 1) / self.problem.n_samples,
            n_active=len(self.upper.triplets), active_triplets=self.upper.triplets,
            stages=list(self.stages), upper_path=list(self.upper_path), timings=dict(self.timings))

    def _not_proved(self, certificate: Certificate, stop: str, max_iter: int) -> str:
        """The message of a solve that ended by ``stop`` without proving tol: why it ended,
        then what kept the certificate from proving more."""
        if stop == "max_iter":
            message = (f"not converged: max_iter={max_iter} Newton iterations spent before the "
                       "certified gap reached tol")
        elif stop == "stages":
            message = f"not converged: {self.options.max_stages} stages ended before the certified gap reached tol"
        else:
            message = (f"not converged: the estimated gap {self._estimated_gap():.2g} is below tol, but the "
                       f"certificate proves only {certificate.relative_gap:.3g}")
            if certificate.dual_scale is not None and 1.0 - certificate.dual_scale > self.tol / 2:
                message += (f"; the bound's scale into the dual cone is {certificate.dual_scale:.10g} (its "
                            "float64 rounding allowance grows with the number of points)")
        if certificate.refused:
            message += f"; {certificate.refused}"
        elif certificate.upper_error > self.tol * certificate.upper:
            top = np.linalg.eigvalsh(certificate.metric)[..., -1].max()
            message += (f"; eq. 14 at the metric is known only to +-{certificate.upper_error:.3g} in "
                        f"float64 (its largest eigenvalue is {top:.3g})")
        if certificate.singular_clusters:
            message += ("; the pull matrix is singular on the data range (target neighbours "
                        "coincide along some directions, as with duplicated points or binary "
                        "features), where the bound sets impostor multipliers to 0, so it is weak")
        return message


_ZERO_OPTIMUM = ("every impostor has a component on the null space of its cluster's pull matrix, as when "
                 "the points are fewer than the features, where the metric puts it beyond the margin and "
                 "leaves every target distance at 0")


def _without_pull(problem: LMNNProblem, tol: float) -> FastLMNNResult:
    """eq. 14 (eq. 16) when every point coincides with its target neighbours.

    The pull term vanishes and each triplet costs ``mu [1 - D(i, l)]_+``. With ``B`` the
    sphered basis (``core.space.sphered_space``), every metric ``t B B^T`` puts the
    impostors that differ from their point at distance ``>= 2`` for ``t = 2 / min D_I(i, l)``
    (``D_I`` in sphered coordinates), so it attains the minimum, ``mu`` times the number of
    triplets whose impostor coincides with its point; multipliers ``mu`` on those triplets
    prove it (their dual matrix is 0)."""
    start = time.perf_counter()
    space = sphered_space(problem)
    codes, Xr = problem.label_codes, space.inputs
    i, l = np.nonzero(codes[:, None] != codes[None, :])
    same = ~np.any(problem.X[i] != problem.X[l], axis=1)
    distances = np.sum((Xr[i[~same]] - Xr[l[~same]]) ** 2, axis=1)
    distances = distances[distances > 0]  # a difference below the sphered rounding stays
    t = 2.0 / distances.min() if len(distances) else 1.0
    M = t * (space.basis @ space.basis.T)
    metric = M if problem.clusters is None else np.broadcast_to(M, (problem.n_clusters, *M.shape))
    k = problem.k
    triplets = np.column_stack([np.repeat(i[same], k), problem.targets[i[same]].ravel(),
                                np.repeat(l[same], k)])
    certificate = prove(problem, metric, triplets, np.full(len(triplets), problem.mu), tol=tol)
    why = ("every point coincides with its target neighbours, so eq. 14 is minimised by any "
           "metric that puts the impostors that differ from their point beyond the margin")
    message = (f"converged: {why}" if certificate.certified else
               f"not converged: {why}; {certificate.refused or 'the gap in float64 is above tol'}")
    return FastLMNNResult(
        certificate=certificate, status=CONVERGED if certificate.certified else STALLED,
        message=message, n_iter=0, n_stages=0, n_searches=0,
        n_evaluations=0, n_hessian_products=0, n_retreats=0, search_fraction=0.0, n_active=len(triplets),
        active_triplets=triplets, timings={"total": time.perf_counter() - start})


def _next_width(gamma: float, gap: float, aim: float, shrink: float) -> float:
    """The next stage's width after a stage at ``gamma`` that ended at the estimated relative
    ``gap`` above ``aim``: ``gamma max(shrink, sqrt(aim / (2 gap)))``, and ``gamma shrink``
    when the gap is already within the aim (what is left to prove is not the smoothing).
    With the multipliers carried over, the gap at a stage's end fell faster than ``gamma^2``
    in the measured solves; so a stage that ends just above the aim needs a shrink to about
    half of it, not a whole factor ``shrink`` whose narrower Hessian costs a stage of
    Newton iterations (design note, "Multi-metric LMNN at image scale").

    Examples
    --------
    >>> round(_next_width(0.03, 1.21e-4, 1e-4, 0.3) / 0.03, 3)
    0.643
    >>> _next_width(0.1, 0.05, 1e-4, 0.3) == 0.1 * 0.3
    True
    """
    if not gap > aim:
        return gamma * shrink
    return gamma * max(shrink, float(np.sqrt(aim / (2.0 * gap))))


def _first_width(objective: SmoothedObjective, L: np.ndarray, options: SolverOptions) -> float:
    """The first stage's width: ``initial_gamma``, and for several metrics (``L`` (C, r, r),
    C > 1) widened by ``1 / shrink`` (at most ``max_widenings`` times) while fewer triplets
    are in transition at ``L`` than ``L`` has entries. The Hessian of ``F_gamma`` has curvature
    only along the triplets in transition (``0 < h < gamma``) and ``G``; each class metric
    keeps the parameters of one metric but sees only its cluster's triplets, so with too few
    in transition the conjugate gradients meet the trust radius after a few products and the
    Newton steps are little more than gradient steps. One metric starts at ``initial_gamma``:
    widened, it took as many iterations or more (design note, "Multi-metric LMNN at image
    scale")."""
    gamma = options.initial_gamma
    for _ in range(options.max_widenings if len(L) > 1 else 0):
        if objective.evaluate(L, gamma).n_transition >= L.size:
            break
        gamma /= options.shrink
    return gamma


def _escape(objective: SmoothedObjective) -> np.ndarray:
    """A step in ``M`` at the objective's last evaluated point (where Newton's iterations
    stopped): move each ``M_c`` along ``D_c = P_S(-G_c)``; the new ``L``, or None when nothing
    decreases ``F_gamma``.

    Where ``G_c`` has negative eigenvalues on directions that ``M_c`` lacks (a saddle of
    ``L -> F_gamma(L)``), the gradient ``2 L_c G_c`` vanishes along them and Newton's method
    on ``L`` can stop; where they lie within ``M_c``'s range, the steps in ``L`` can end on
    negative curvature long before they vanish (design note, "Where ``G`` is indefinite").
    ``F_gamma`` is convex in ``M``: an exact line search finds each cluster's best step
    ``t_c`` along ``M_c + t D_c`` (the clusters' metrics differ in scale), and a last one
    the best multiple ``s`` of all of them together (all from one pass over the working
    set, ``SmoothedObjective.metric_rays``), so the
    move ``M_c + s t_c D_c`` decreases ``F_gamma`` although triplets join clusters. With
    ``L`` narrow (p rows, p < r), ``D_c`` is cut to its ``p`` largest eigenvalues (still a
    direction of descent) and the new ``L`` stacks its factor under ``L`` while that stays
    narrow."""
    ev = objective.current
    L = ev.L
    C, p, r = L.shape
    D = _project(-ev.dual_matrix)
    M = _gram(L)
    moving = np.flatnonzero(np.linalg.norm(D, axis=(1, 2)) > 0)
    if not len(moving):
        return None
    directions = np.zeros_like(L)
    for c in moving:
        directions[c] = psd_factor(D[c])[:p]
    along = objective.metric_rays(directions)
    steps = np.zeros(C)
    for c in moving:
        t0 = 1e-3 * max(np.linalg.norm(M[c]), 1.0) / np.linalg.norm(D[c])
        steps[c], _ = ray_minimum(along(np.eye(C)[c]), t0, xtol=1e-6)
    if not steps.any():
        return None
    s, _ = ray_minimum(along(steps), 1.0, xtol=1e-6)
    if s == 0.0:
        return None
    factors = np.sqrt(steps)[:, None, None] * directions
    norms = np.linalg.norm(factors, axis=2).max(axis=0)  # rows by decreasing eigenvalue of D_c
    added = 1 + int(np.flatnonzero(norms > 1e-8 * norms.max()).max())
    if p + added > r:
        return _factor(M + s * _gram(factors))
    return np.ascontiguousarray(np.concatenate([L, np.sqrt(s) * factors[:, :added]], axis=1))


def _narrowed(L: np.ndarray, options: SolverOptions) -> np.ndarray:
    """``L`` (C, p, r) cut to the rows that the metrics ``M_c = L_c^T L_c`` use: the singular
    directions of each ``L_c`` by decreasing singular value, as many as the largest rank over
    the clusters (eigenvalues above ``rank_floor`` of their largest) plus a margin; ``L``
    itself when that keeps more than ``narrow_below`` of its rows (``options``).

    ``F_gamma`` is convex in ``M``, so a minimiser of it over ``L`` with fewer rows than ``r``
    that leaves ``L`` rank-deficient is a minimiser over every metric (Burer & Monteiro 2005);
    the margin keeps ``L`` rank-deficient, and where the rank the metrics need grows beyond
    it, the escape steps (``_escape``) add rows. A narrow ``L`` makes every
    Hessian product, line search and search cost ``O(p)`` instead of ``O(r)`` per point and
    coordinate."""
    _, s, Wt = np.linalg.svd(L, full_matrices=False)
    rank = max(int(np.count_nonzero(sc * sc > options.rank_floor * sc[0] * sc[0])) for sc in s)
    width = rank + max(options.min_margin, int(np.ceil(options.rank_margin * rank)))
    if width > options.narrow_below * L.shape[1]:
        return L
    return np.ascontiguousarray(s[:, :width, None] * Wt[:, :width])


def _feasible_scale(mu: float, space: Whitening, G: np.ndarray) -> float:
    """Largest ``alpha`` in [0, 1] with ``(1 - alpha)(1 - mu) P + alpha G`` PSD on the range
    of one cluster's pull matrix ``P`` (whitened, ``G`` of shape (r, r)):
    ``bounds.largest_feasible_scale`` with ``A = (1 - mu) P`` and ``Q = A - G``."""
    m = space.pull_rank
    G = G[:m, :m]
    if np.linalg.eigvalsh(G)[0] >= 0:
        return 1.0
    A = (1.0 - mu) * space.pull[:m, :m]
    return largest_feasible_scale(A, A - G)


def _start(problem: LMNNProblem, whitening: ClusterWhitening, M0, options: SolverOptions) -> np.ndarray:
    """``L`` (C, r, r) of the starting metrics in whitened coordinates (``solve``'s ``M0``)."""
    C = whitening.n_clusters
    M0 = _euclidean_start(problem, options) if M0 is None else np.asarray(M0)
    if M0.ndim == 3 and len(M0) != C:
        raise ValueError(f"M0 has {len(M0)} metrics for {C} clusters; give one metric (d, d) "
                         f"or one per cluster ({C}, {problem.n_features}, {problem.n_features}).")
    M0 = np.broadcast_to(M0, (C, *M0.shape[-2:]))
    checked = []
    for c, M in enumerate(M0):
        M = check_psd(problem.check_metric(M), "M0" if C == 1 else f"M0[{c}]")[0]
        if not M.any():
            raise ValueError("M0 is the zero matrix; start from a metric with at least one positive eigenvalue.")
        checked.append(best_scale(problem, M, options) * M if C == 1 else M)
    return _factor(whitening.whitened(np.stack(checked)))


def _euclidean_start(problem: LMNNProblem, options: SolverOptions) -> np.ndarray:
    """The default starting metric (d, d): Euclidean on the principal directions of the centred
    inputs that hold all but ``start_tail`` of their variance, at least ``min_start_rank`` of
    them; the identity when that keeps more than ``narrow_below`` of the d directions.

    A learned metric has fewer directions than d, and a start on the rest costs Newton
    iterations at full width (design note, "The starting rank")."""
    d = problem.n_features
    U, s = principal_axes(problem.X_centered, options.start_tail)
    q = max(options.min_start_rank, s)
    if q > options.narrow_below * d:
        return np.eye(d)
    return U[:, :q] @ U[:, :q].T


def _flat(apply, shape):
    """``apply`` on arrays of ``shape`` as a function of flat vectors."""
    return lambda v: apply(v.reshape(shape)).ravel()


def _gram(L: np.ndarray) -> np.ndarray:
    """``L_c^T L_c`` for every cluster: (C, r, r)."""
    return np.matmul(L.transpose(0, 2, 1), L)


def _factor(M: np.ndarray) -> np.ndarray:
    """Square factors ``L_c`` of ``P_S(M_c)`` for every cluster: (C, r, r), C-contiguous like
    every iterate (reductions such as ``np.linalg.norm`` sum in memory order, and a resumed
    solve's arrays come back C-contiguous from its checkpoint)."""
    return np.ascontiguousarray(np.stack([psd_factor(m) for m in M]))


def _project(M: np.ndarray) -> np.ndarray:
    """``P_S(M_c)`` for every cluster: (C, r, r), C-contiguous (``_factor``)."""
    return np.ascontiguousarray(np.stack([project_psd(m) for m in M]))


def _check_options(tol, max_iter, search) -> None:
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}.")
    if not (isinstance(tol, (int, float, np.floating)) and np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}.")
    if search not in SEARCH_METHODS:
        raise ValueError(f"search must be one of {SEARCH_METHODS}, got {search!r}.")
