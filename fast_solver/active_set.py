"""Alg. 1 of App. A: projected sub-gradient descent on M with an active set of triplets.

One iteration takes ``M <- P_S(M - alpha G)`` (eq. 20) with the gradient ``G``
of eq. 18, evaluates eq. 14 on the working set only, and

* accepts the step when the objective decreased: ``alpha <- 1.01 alpha`` and
  ``G`` is updated from the difference of the active sets (eq. 19);
* otherwise rolls back to the previous ``M`` and halves ``alpha``.

Working set and re-checks: the working set holds the pairs ``(i, l)`` within
``impostor_radius = max_j D(i, j) + 1 + band`` found by the last exact search.
Alg. 1 keeps the union over all searches (``N^(t)``); we replace the set
instead: the search is exact at the current ``M``, so a dropped pair is
inactive there, and the set does not keep the impostors of early long steps.
A full re-check searches all triplets; the interval rule is: start at ``RECHECK_INTERVAL`` (20)
iterations; a "quiet" re-check, one whose new violated triplets (outside the
working set) number at most ``RECHECK_QUIET_FRACTION`` (1%) of the active
triplets, doubles the interval (up to ``MAX_RECHECK_INTERVAL``); any other
resets it to 20 (the paper re-checks every 10-20 iterations "depending on
fluctuations of N_t"; the MATLAB code lengthens the interval likewise).

Every check is exact but skips provably clean points. When point ``i`` is
searched at metric ``M_s``, every pair ``(i, l)`` left outside the working set
has ``D_s(i, l) >= floor(i)``, its search radius. At a later metric ``M``,
``D(i, l) >= c floor(i)`` with ``c = contraction_factor(M_s, M)``, the largest
``c`` with ``M - c M_s`` PSD; a point whose bound still reaches
``max_j D(i, j) + 1`` has no violated triplet outside the set and is not
searched again. The ``band`` is the slack that lets points be skipped.

Convergence ("almost converged" in Alg. 1, line 6): when the working-set
objective fell by less than ``tol`` (relative) over the last ``STALL_WINDOW``
iterations, a verification pass searches all triplets; only if it finds no
violated triplet outside the working set is convergence declared, otherwise
the descent resumes on the enlarged set. "Converged" thus means the stopping
rule of Alg. 1 held at a verified point, not that eq. 14 is minimal: projected
sub-gradient descent can stall at a kink. The exact finishing stage
(``fast_solver.polish``, a barrier method on the working set) then pins the
minimum down on problems small enough (``POLISH_MAX_ENTRIES``).

The objective reported is ``LMNNProblem.objective`` when ``n`` is at most
``DIRECT_OBJECTIVE_MAX_SAMPLES`` and otherwise the working-set value right
after a full check (exact: every violated triplet is then in the set), since
the blockwise ``LMNNProblem.objective`` costs ``O(n^2 k)`` at large ``n``. The
exported working set holds the watched triplets within ``band`` of the margin.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from fast_solver.gradient import pull_gradient
from fast_solver.impostors import (
    SEARCH_METHODS, check_band, check_psd_metric, impostor_pairs, impostor_radius,
    map_rows, target_distances,
)
from fast_solver.polish import polish_metric
from fast_solver.psd import contraction_factor, project_psd, transformation_from_metric
from fast_solver.result import FastLMNNResult
from fast_solver.working_set import (
    WorkingSet, evaluate, push_scatter, target_difference_vectors,
)
from lmnn_sdp.problem import LMNNProblem

RECHECK_INTERVAL = 20
MAX_RECHECK_INTERVAL = 160
RECHECK_QUIET_FRACTION = 1e-2
STALL_WINDOW = 20
STEP_GROWTH, STEP_SHRINK = 1.01, 0.5
INITIAL_RELATIVE_STEP = 0.02
POLISH_MAX_ENTRIES = 4_000_000
DIRECT_OBJECTIVE_MAX_SAMPLES = 5000


@dataclass
class IterationInfo:
    """One row of the progress table handed to ``callback``."""

    iteration: int
    objective: float
    step: float
    n_active: int
    n_working: int
    full_check: bool
    elapsed: float


def solve(
    problem: LMNNProblem,
    M0=None,
    *,
    max_iter: int = 1000,
    tol: float = 1e-5,
    step_size: float | None = None,
    band: float = 0.5,
    search: str = "auto",
    polish: bool | str = "auto",
    callback: Callable[[IterationInfo], None] | None = None,
    progress: bool = False,
) -> FastLMNNResult:
    """Minimise eq. 14 with Alg. 1 (App. A), then optionally polish exactly.

    Parameters
    ----------
    problem : LMNNProblem
    M0 : array-like of shape (d, d), optional
        PSD starting metric; the identity by default (Alg. 1, line 1).
    max_iter : int
        Budget of sub-gradient iterations (accepted plus rejected steps).
    tol : float
        Relative decrease over ``STALL_WINDOW`` iterations below which the
        descent counts as stalled and a verification pass is made.
    step_size : float, optional
        Initial ``alpha``; default ``0.02 |M0|_F / |G0|_F``.
    band : float >= 0
        Safety band added to the impostor radius of the working set: triplets
        within ``band`` of their margin are watched between re-checks, so a
        triplet can only become violated unseen by moving more than ``band``.
        A smaller band means fewer pairs per iteration and more re-checks:
        letters fitted in 10.2 / 9.3 / 8.6 s at band 1 / 0.5 / 0.25, and 200
        iterations on 20,000 Fashion-MNIST points took 117 s at 1 and 89 s at
        0.25 with the same objectives; but at 0.25 a 60-point blob instance
        kept finding new violations at every verification and never converged.
    search : {"auto", "blockwise", "balltree"}
        Impostor-search path (``fast_solver.impostors``).
    polish : bool or "auto"
        Run the exact finishing stage (``fast_solver.polish``); ``"auto"``
        when its Newton systems have at most ``POLISH_MAX_ENTRIES`` dense
        coefficients (working-set triplets x d(d+1)/2).
    callback : callable, optional
        Called with an ``IterationInfo`` after every iteration.
    progress : bool
        Show a tqdm progress bar.

    Returns
    -------
    FastLMNNResult
    """
    _check_options(max_iter, tol, step_size, search, polish)
    # BLAS on one thread: the products here are tall-skinny (P x d times d x d) or
    # small (eigendecompositions of d x d), which threads slow down; the impostor
    # search runs its own threads, one class each.
    with threadpool_limits(1, user_api="blas"):
        return _solve(problem, _start_metric(problem, M0), max_iter, tol, step_size,
                      check_band(band), search, polish, callback, progress)


def _solve(problem, M0, max_iter, tol, step_size, band, search, polish, callback, progress):
    run = _Run(problem, M0, band, search)
    run.step = step_size or INITIAL_RELATIVE_STEP * np.linalg.norm(run.point.M) / max(np.linalg.norm(run.G), 1e-300)
    converged = _descend(run, max_iter, tol, callback, progress)
    polished = False
    if _polish_wanted(polish, run):
        polished = run.polish()
        converged = converged or polished
    return run.result(converged, polished, max_iter)


def _descend(run, max_iter, tol, callback, progress) -> bool:
    """The while-loop of Alg. 1; True when a verification pass confirmed convergence."""
    with tqdm(total=max_iter, disable=not progress, desc="LMNN", unit="it") as bar:
        while run.n_iter < max_iter:
            full = run.n_iter - run.last_check >= run.interval
            if full:
                run.recheck()
            run.take_step()
            bar.update(1)
            if callback is not None:
                callback(run.info(full))
            if run.stalled(tol) and run.verify():
                return True
    return False


class _Run:
    """Mutable state of one solve: metric, working set, gradient, step, counters."""

    def __init__(self, problem: LMNNProblem, M: np.ndarray, band: float, search: str):
        self.problem, self.band, self.search = problem, band, search
        self.Xc = problem.X_centered
        self.target_diff = target_difference_vectors(self.Xc, problem.targets)
        self.ws = WorkingSet.empty()
        self.timings = dict.fromkeys(("search", "gradient", "steps", "polish", "objective"), 0.0)
        self.start_time = time.perf_counter()
        self.n_iter = self.n_checks = 0
        self.interval, self.last_check = RECHECK_INTERVAL, 0
        self.history: list[float] = []
        self.stall_from = 0
        self.floor = np.zeros(problem.n_samples)
        self.searched_at = np.full(problem.n_samples, -1)
        self.search_metrics: dict[int, np.ndarray] = {}
        self.points_searched = 0
        self.point = evaluate(self.Xc, self.problem.targets, self.target_diff, problem.mu, M, self.ws)
        self.full_check()

    # -- exact searches ----------------------------------------------------
    def full_check(self) -> int:
        """Exact check of all triplets at the current M; renew the working set and G.

        Points whose certified lower bound on their non-candidate distances
        (``floor``) still reaches ``max_j D(i, j) + 1`` cannot have a violated
        triplet outside the set and keep their pairs; the others are searched
        with radius ``max_j D(i, j) + 1 + band``. Returns the number of violated
        triplets that were outside the working set."""
        tic = time.perf_counter()
        M = self.point.M
        Z = map_rows(self.Xc, transformation_from_metric(M))
        radius = impostor_radius(target_distances(Z, self.problem.targets), self.band)
        searched = self._certified_floor(M) < radius - self.band
        i, l, _ = impostor_pairs(Z, self.problem.label_codes, radius, self.search, searched)
        kept = ~searched[self.ws.i]
        self.ws, added = self.ws.replace(np.concatenate([self.ws.i[kept], i]),
                                         np.concatenate([self.ws.l[kept], l]), self.problem.n_samples)
        self.ws = self.ws.with_differences(self.Xc)
        self.floor[searched] = radius[searched] * (1.0 - 1e-9)
        self.searched_at[searched] = self.n_checks
        self.search_metrics[self.n_checks] = M
        self.search_metrics = {c: self.search_metrics[c] for c in np.unique(self.searched_at) if c >= 0}
        self.points_searched += int(np.count_nonzero(searched))
        self.point = evaluate(self.Xc, self.problem.targets, self.target_diff, self.problem.mu, M, self.ws)
        self.timings["search"] += time.perf_counter() - tic
        self.n_checks += 1
        self.last_check, self.checked_current = self.n_iter, True
        self._full_gradient()
        return int(np.count_nonzero(self.point.hinge[added] > 0))

    def _certified_floor(self, M: np.ndarray) -> np.ndarray:
        """Lower bound (n,) on ``D_M(i, l)`` for every pair outside the working set:
        ``floor(i)`` at the metric of point i's last search times the contraction since."""
        factor = np.zeros(len(self.floor))
        for check, M_then in self.search_metrics.items():
            factor[self.searched_at == check] = contraction_factor(M_then, M)
        return self.floor * factor

    def recheck(self) -> None:
        """Periodic re-check with the interval rule of the module docstring."""
        new_violations = self.full_check()
        quiet = new_violations <= RECHECK_QUIET_FRACTION * np.count_nonzero(self.point.active)
        self.interval = min(2 * self.interval, MAX_RECHECK_INTERVAL) if quiet else RECHECK_INTERVAL
        self.history.append(self.point.objective)
        self.stall_from = len(self.history) - 1

    def verify(self) -> bool:
        """Final check of App. A: True if no violated triplet lies outside the working set."""
        if self.checked_current:
            return True
        if self.full_check() == 0:
            return True
        self.interval = RECHECK_INTERVAL
        self.history.append(self.point.objective)
        self.stall_from = len(self.history) - 1
        return False

    # -- one iteration -------------------------------------------------------
    def take_step(self) -> None:
        """``M <- P_S(M - alpha G)`` (eq. 20) with the 1.01 / 0.5 step rule and rollback."""
        tic = time.perf_counter()
        trial = evaluate(self.Xc, self.problem.targets, self.target_diff, self.problem.mu,
                         project_psd(self.point.M - self.step * self.G), self.ws)
        self.timings["steps"] += time.perf_counter() - tic
        if trial.objective < self.point.objective:
            self._incremental_gradient(trial)
            self.point, self.checked_current = trial, False
            self.step *= STEP_GROWTH
        else:
            self.step *= STEP_SHRINK
        self.n_iter += 1
        self.history.append(self.point.objective)

    def stalled(self, tol: float) -> bool:
        """Relative decrease below ``tol`` over the last ``STALL_WINDOW`` iterations."""
        recent = self.history[self.stall_from:]
        if len(recent) <= STALL_WINDOW:
            return False
        drop = recent[-STALL_WINDOW - 1] - recent[-1]
        return drop <= tol * max(abs(recent[-1]), 1e-300)

    def _full_gradient(self) -> None:
        """Eq. 18 from the active triplets of the working set."""
        tic = time.perf_counter()
        pair, rank = np.nonzero(self.point.active)
        push = push_scatter(self.Xc, self.problem.targets, self.ws, pair, rank, np.ones(len(pair)))
        self.G = pull_gradient(self.problem) + self.problem.mu * push
        self.timings["gradient"] += time.perf_counter() - tic

    def _incremental_gradient(self, trial) -> None:
        """Eq. 19: add the triplets that became active, subtract those that left."""
        tic = time.perf_counter()
        pair, rank = np.nonzero(trial.active != self.point.active)
        sign = np.where(trial.active[pair, rank], 1.0, -1.0)
        change = push_scatter(self.Xc, self.problem.targets, self.ws, pair, rank, sign)
        self.G = self.G + self.problem.mu * change
        self.timings["gradient"] += time.perf_counter() - tic

    # -- finishing -----------------------------------------------------------
    def polish(self) -> bool:
        """Exact finishing stage; keeps the polished M if eq. 14 is lower there.

        True when it was kept and the stage is complete (gap and triplet checks)."""
        tic = time.perf_counter()
        if not self.checked_current:
            self.full_check()
        before = self.point.M
        outcome = polish_metric(self.problem, before, self.ws.triplets(self.problem.targets), self.search)
        self.n_checks += outcome.n_searches
        improved = self._move_to(outcome.M) < self._move_to(before)
        if improved:
            self._move_to(outcome.M)
        self.timings["polish"] += time.perf_counter() - tic
        return improved and outcome.complete

    def _move_to(self, M: np.ndarray) -> float:
        """Make ``M`` the current point after an exact check there; returns eq. 14 at M."""
        self.point = evaluate(self.Xc, self.problem.targets, self.target_diff, self.problem.mu, M, self.ws)
        self.floor[:] = 0.0
        self.full_check()
        return self.point.objective

    def info(self, full: bool) -> IterationInfo:
        return IterationInfo(self.n_iter, self.point.objective, self.step,
                             int(np.count_nonzero(self.point.active)),
                             len(self.ws) * self.problem.k, full,
                             time.perf_counter() - self.start_time)

    def result(self, converged: bool, polished: bool, max_iter: int) -> FastLMNNResult:
        """Final verification at the returned M, the objective, and the result object."""
        if not self.checked_current:
            self.full_check()
        objective, source = self._final_objective()
        M = self.point.M
        self.timings["total"] = time.perf_counter() - self.start_time
        message = ("converged: verification pass found no violated triplet outside the working set"
                   if converged else f"iteration budget max_iter={max_iter} exhausted before convergence")
        return FastLMNNResult(
            M=M, L=transformation_from_metric(M), objective=objective, objective_source=source,
            n_iter=self.n_iter, n_full_checks=self.n_checks,
            search_fraction=self.points_searched / max(self.n_checks, 1) / self.problem.n_samples,
            n_active=int(np.count_nonzero(self.point.active)),
            working_set=self.ws.triplets(self.problem.targets, self.point.hinge > -self.band),
            converged=converged, polished=polished, message=message,
            timings=dict(self.timings), history=list(self.history),
        )

    def _final_objective(self) -> tuple[float, str]:
        """problem.objective for small n; otherwise the exact-search value just computed."""
        if self.problem.n_samples > DIRECT_OBJECTIVE_MAX_SAMPLES:
            return self.point.objective, "exact search"
        tic = time.perf_counter()
        value = self.problem.objective(self.point.M)
        self.timings["objective"] += time.perf_counter() - tic
        return value, "problem.objective"


def _polish_wanted(polish, run: _Run) -> bool:
    if polish != "auto":
        return bool(polish)
    d = run.problem.n_features
    return run.point.hinge.size * d * (d + 1) // 2 <= POLISH_MAX_ENTRIES


def _start_metric(problem: LMNNProblem, M0) -> np.ndarray:
    if M0 is None:
        return np.eye(problem.n_features)
    return check_psd_metric(problem, M0).copy()


def _check_options(max_iter, tol, step_size, search, polish) -> None:
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
        raise ValueError(f"max_iter must be an integer >= 0, got {max_iter!r}.")
    if not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}.")
    if step_size is not None and not (np.isfinite(step_size) and step_size > 0):
        raise ValueError(f"step_size must be a positive number or None, got {step_size!r}.")
    if search not in SEARCH_METHODS:
        raise ValueError(f"search must be one of {SEARCH_METHODS}, got {search!r}.")
    if polish not in (True, False, "auto"):
        raise ValueError(f"polish must be True, False or 'auto', got {polish!r}.")
