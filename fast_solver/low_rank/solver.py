"""Minimising eq. 14 over a low-rank map by L-BFGS (JMLR 2009, sec. 5.4; LMCA, eq. 1-5).

The parameters ``x`` (``L`` (r, d) for LMCA, ``Omega`` (r, n) for kernel LMCA)
enter eq. 14 only through the embedding ``Z = embed(x)`` (n, r), and
``pullback(dZ)`` turns ``dF/dZ`` (``fast_solver.low_rank.embedding_loss``) into ``dF/dx``.
eq. 14 in ``x`` is not convex: L-BFGS (scipy) finds a stationary point and
nothing here certifies it; the full-rank certified lower bound measures it
(``fast_solver.low_rank.lmca.price_of_rank``).

1. **Working set.** An exact impostor search at ``Z`` (radius
   ``max_j D(i, j) + 1 + BAND``, ``fast_solver.lmnn.impostors``) gives the pairs L-BFGS
   works on. L-BFGS stops when the centred embedding has moved by ``STALE_DRIFT``
   (relative, Frobenius) since the search, or by its tolerance; a search follows,
   its pairs join the set, and L-BFGS goes on unless it stopped by its tolerance
   and the value on the new set is the value it saw (no triplet outside the set
   was active). Within a stage the set only grows, so L-BFGS cannot cycle between
   regions whose impostors the set forgets; each stage starts on a fresh search.
   Triplets are never listed: each pair stands for the ``k`` triplets of its point,
   and memory grows with the pairs and ``n r``. The alternatives tried:
   ``docs/design/low-rank.md``, "The working set of L-BFGS".
2. **Hinge.** ``"smooth"``: the smooth hinge of the LMCA paper (Rennie & Srebro's,
   Huber of width ``SMOOTH_WIDTH = 1``), one stage. ``"linear"``: eq. 14's hinge by
   continuation, widths ``1, 0.1, 0.01, ...``, each stage starting at the last
   answer; since ``F_w <= eps <= F_w + mu w n_active / 2``, the stages stop when
   that smoothing term is at most ``tol`` times eq. 14, or when a stage lowers eq. 14
   by less than ``tol`` (relative). L-BFGS never runs on the kinks themselves.
3. **Answer.** The stage answer with the lowest eq. 14, reported exactly: right
   after a search every active triplet is in the set.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from numbers import Integral

import numpy as np
import scipy.optimize

from fast_solver.checkpoint import Checkpoint, as_checkpoint, fingerprint
from fast_solver.lmnn.smoothed import WorkingSet
from fast_solver.lmnn.start import best_scale
from fast_solver.low_rank.embedding_loss import EmbeddingEvaluation, EmbeddingLoss, search_working_set
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.status import CONVERGED, MAX_ITER, Stopped

HINGES = ("linear", "smooth")
SMOOTH_WIDTH = 1.0  # the smooth hinge of Rennie & Srebro, as in the LMCA paper (sec. 2)
SHRINK = 0.1
MAX_STAGES = 12
BAND = 0.5
WINDOW = 10
STALE_DRIFT = 0.1


@dataclass(frozen=True)
class LowRankStage:
    """One smoothing width and the answer L-BFGS reached at it."""

    stage: int
    width: float  # 0 < width: the Huber width of the hinge
    n_iter: int  # L-BFGS iterations in this stage
    value: float  # F_width at the stage's answer
    objective: float  # eq. 14 exactly at the stage's answer
    n_active: int  # triplets with a positive hinge there
    n_pairs: int  # impostor pairs of the working set
    stop: str  # why L-BFGS stopped last
    elapsed: float  # seconds since the start


@dataclass(repr=False)
class LMCAResult(Stopped):
    """A low-rank fit of eq. 14 (LMCA or kernel LMCA); nothing is printed.

    Attributes
    ----------
    components : ndarray of shape (r, d) or (r, n)
        ``L`` for LMCA, ``Omega`` (``L = Omega Phi^T``, Lemma 3.1) for kernel LMCA.
    embedding : ndarray of shape (n, r)
        ``embed(components)``: the training points mapped (LMCA: the centred inputs).
    objective : float
        eq. 14 (linear hinge) exactly at ``components``.
    value : float
        ``F_width`` at ``components`` (the smooth-hinge objective when ``hinge="smooth"``).
    hinge : {"linear", "smooth"}
    width : float
        Huber width of the stage whose answer this is.
    status : {"converged", "max_iter"}
        How the fit stopped (``lmnn_sdp.status``): L-BFGS stopped by its tolerance at the
        last width (a stationary point as far as it can tell; eq. 14 in ``L`` is not
        convex, so not a proof of optimality), or ``max_iter`` iterations were spent first.
    message : str
        Why it stopped, for people.
    n_iter, n_stages, n_searches, n_evaluations, n_active : int
    stages : list of LowRankStage
    timings : dict of str to float
        Seconds in ``search``, ``lbfgs`` and ``total``.
    price_of_rank : float or None
        ``(objective - lower_full) / lower_full`` against a certified full-rank lower
        bound (``fast_solver.low_rank.lmca.price_of_rank``); None until computed.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> from fast_solver import solve_lmca
    >>> result = solve_lmca(problem, 2, random_state=0)
    >>> result.status, result.converged
    ('converged', True)
    >>> result.components.shape, result.embedding.shape
    ((2, 4), (30, 2))
    """

    components: np.ndarray
    embedding: np.ndarray
    objective: float
    value: float
    hinge: str
    width: float
    status: str
    message: str
    n_iter: int
    n_stages: int
    n_searches: int
    n_evaluations: int
    n_active: int
    stages: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    price_of_rank: float | None = None

    def __repr__(self) -> str:
        price = "None" if self.price_of_rank is None else f"{self.price_of_rank:.3g}"
        return (f"LMCAResult(objective={self.objective:.10g}, rank={len(self.components)}, "
                f"hinge={self.hinge!r}, status={self.status!r}, n_iter={self.n_iter}, "
                f"stages={self.n_stages}, searches={self.n_searches}, active={self.n_active}, "
                f"price_of_rank={price}, time={self.timings.get('total', float('nan')):.3g} s)")


def minimise(
    problem: LMNNProblem,
    x0: np.ndarray,
    embed: Callable[[np.ndarray], np.ndarray],
    pullback: Callable[[np.ndarray], np.ndarray],
    *,
    hinge: str = "linear",
    tol: float = 1e-5,
    max_iter: int = 1000,
    callback: Callable[[np.ndarray, int], None] | None = None,
    report: Callable[[LowRankStage], None] | None = None,
    checkpoint: Checkpoint | None = None,
) -> LMCAResult:
    """Minimise eq. 14 (or its smooth hinge) over ``x`` (module docstring). The callers run it,
    and the start they compute, on one BLAS thread (L-BFGS-B's products are small, ours run on
    threads), so that the answer has the same bits whatever the process's BLAS threads.

    Parameters
    ----------
    problem : LMNNProblem
        Targets, labels and ``mu``.
    x0 : ndarray of shape (r, p)
        Starting parameters, used as given.
    embed : callable
        ``x`` (r, p) -> ``Z`` (n, r).
    pullback : callable
        ``dF/dZ`` (n, r) -> ``dF/dx`` (r, p).
    hinge : {"linear", "smooth"}
    tol : float >= 0
        L-BFGS stops when ``F_width`` falls by at most ``tol`` (relative) over ``WINDOW``
        iterations; the continuation's tolerance (module docstring).
    max_iter : int >= 1
        Budget of L-BFGS iterations over all stages (checked by the callers,
        ``solve_lmca`` and ``solve_kernel_lmca``).
    callback : callable, optional
        ``callback(x, n_iter)`` after every L-BFGS iteration.
    report : callable, optional
        Called with a ``LowRankStage`` after every stage.
    checkpoint : Checkpoint, optional
        Where the run saves its state when ``checkpoint.due()``, at every start of L-BFGS
        (the restart points: L-BFGS starts afresh on each working set, so the iterate, the
        set, the stage and the counters determine the rest of the run), and its result at the
        end; a run given a checkpoint that holds a state continues from it and ends as an
        uninterrupted run does, bit for bit; one that holds a result returns it at once.

    Returns
    -------
    LMCAResult
    """
    if hinge not in HINGES:
        raise ValueError(f"hinge must be one of {HINGES}, got {hinge!r}.")
    x0 = np.asarray(x0, dtype=float)
    if not np.all(np.isfinite(x0)):
        raise ValueError("the starting map contains NaN or infinity; pass finite numbers.")
    run = _Run(problem, embed, pullback, tol, callback, checkpoint or Checkpoint(None, kind="", fingerprint=""))
    return run.solve(x0, hinge, max_iter, report)


def low_rank_checkpoint(path, interval: float, kind: str, problem: LMNNProblem, x0: np.ndarray, init,
                        random_state, **options) -> Checkpoint:
    """The ``Checkpoint`` of a low-rank fit at ``path`` (None: inert). Its fingerprint covers the
    problem (inputs, labels, targets, ``mu``), the start and ``options`` (those that change
    the answer: hinge, tol, max_iter, the kernel...). The start is named by ``init`` (a name,
    or the array given) and the shape of ``x0``; a random start also by ``random_state`` when
    that is a seed (an int or None), else by ``x0`` itself. A named start is not fingerprinted
    by its computed numbers, so a checkpoint resumes where those numbers differ in their last
    bits (another BLAS or thread count): the fit continues from the state saved."""
    start = {"init": init, "shape": list(x0.shape)}
    if isinstance(init, str) and init == "random":
        if random_state is None or (isinstance(random_state, Integral) and not isinstance(random_state, bool)):
            start["random_state"] = random_state
        else:  # a RandomState or Generator: its draws name the start
            start["start"] = x0
    return as_checkpoint(path, kind=kind, interval=interval, fingerprint=lambda: fingerprint(
        problem.X, problem.label_codes, problem.targets, mu=problem.mu, **start, **options))


def start_scale(problem: LMNNProblem, Z: np.ndarray) -> float:
    """The factor ``c > 0`` for which ``c Z`` (n, r) minimises the sampled eq. 14 of
    ``fast_solver.lmnn.start`` (a map is scaled by ``c``); a ValueError when ``Z`` is one point."""
    Zc = Z - Z.mean(axis=0)
    if not np.any(Zc):
        raise ValueError("init maps every training point to the same point, so eq. 14 has no "
                         "gradient there; choose another init.")
    embedded = LMNNProblem(Zc, problem.label_codes, targets=problem.targets, mu=problem.mu)
    return float(np.sqrt(best_scale(embedded, np.eye(Z.shape[1]))))


class _Run:
    """State of one minimisation: the working set, the stage, the best answer, counters."""

    def __init__(self, problem: LMNNProblem, embed, pullback, tol: float, callback, checkpoint: Checkpoint):
        self.problem, self.embed, self.pullback = problem, embed, pullback
        self.tol, self.callback, self.checkpoint = float(tol), callback, checkpoint
        self.n_iter = self.n_searches = self.n_evaluations = 0
        self.stages: list[LowRankStage] = []
        self.timings = dict.fromkeys(("search", "lbfgs"), 0.0)
        self.start = time.perf_counter()
        self.loss: EmbeddingLoss | None = None
        self.last_search: tuple | None = None  # (x, pairs found at x)
        self.width, self.best = SMOOTH_WIDTH, None  # best: (x, evaluation, width) of the lowest eq. 14

    def solve(self, x: np.ndarray, hinge: str, max_iter: int, report) -> LMCAResult:
        state, ws = self.checkpoint.load(), None
        if state is not None and "result" in state:
            return _result_from(state["result"])
        if self.problem.mu == 0.0:  # eq. 14 is the pull term alone, 0 at the zero map
            x = np.zeros_like(x)
            zero = EmbeddingEvaluation(value=0.0, objective=0.0, gradient=np.zeros(0),
                                       n_active=self.problem.n_triplets)
            return self._result(x, zero, 0.0, hinge, CONVERGED, "converged: mu = 0, so the zero map is optimal")
        if state is not None:
            x, ws = self._restore(state)
        elif not np.any(_centred(self.embed(x))):  # every pair within the radius: n^2 impostor pairs
            raise ValueError("the starting map sends every training point to the same point, where "
                             "eq. 14 has no gradient; start from another map (init).")
        while len(self.stages) < (1 if hinge == "smooth" else MAX_STAGES):
            x, stop = self._stage(x, max_iter, ws)
            ws = None
            ev = self.loss.evaluate(self.embed(x), self.width)  # the set was searched at x: exact
            self._record(self.width, ev, stop, report)
            prior = None if self.best is None else self.best[1].objective
            if prior is None or ev.objective < prior:
                self.best = (x, ev, self.width)
            if stop == "max_iter":
                break
            if self.problem.mu * self.width / 2 * ev.n_active <= self.tol * ev.objective:
                break  # the smoothing changes eq. 14 by at most tol
            if prior is not None and ev.objective > prior * (1 - self.tol):
                break  # the stage lowered eq. 14 by less than tol
            self.width *= SHRINK
        x, ev, width = self.best
        status = MAX_ITER if stop == "max_iter" else CONVERGED
        message = (f"not converged: max_iter={max_iter} L-BFGS iterations spent" if stop == "max_iter"
                   else f"converged: L-BFGS stopped ({stop}) at width {width:g}, a stationary point")
        return self._result(x, ev, width, hinge, status, message)

    def _stage(self, x: np.ndarray, max_iter: int, ws: WorkingSet | None = None) -> tuple[np.ndarray, str]:
        """L-BFGS at ``self.width`` until it stops on a working set complete at its answer. The
        stage starts on the pairs of a search at ``x`` (or on ``ws``, resuming); later searches
        add to them. Each start of L-BFGS is a restart point (``_save``)."""
        if ws is None:
            self._renew(x, grow=False)
        else:
            self.loss = EmbeddingLoss(self.problem.targets, self.problem.mu, ws)
        while True:
            self._save(x)
            if self.n_iter >= max_iter:
                return x, "max_iter"
            x, seen, stop = self._lbfgs(x, self.width, max_iter - self.n_iter)
            self._renew(x, grow=True)
            value = self.loss.evaluate(self.embed(x), self.width).value
            if self.n_iter >= max_iter:
                return x, "max_iter"
            if stop != "drift" and value <= seen + 1e-12 * abs(seen):  # no triplet outside the set was active
                return x, stop

    def _save(self, x: np.ndarray) -> None:
        """At a restart point, when due: what the rest of the run follows from."""
        if not self.checkpoint.due():
            return
        best = None if self.best is None else {"x": self.best[0], "evaluation": asdict(self.best[1]),
                                               "width": self.best[2]}
        self.checkpoint.save({
            "x": x, "pairs": (self.loss.ws.owner, self.loss.ws.impostors), "width": self.width, "best": best,
            "stages": [asdict(stage) for stage in self.stages], "timings": dict(self.timings),
            "counters": (self.n_iter, self.n_searches, self.n_evaluations),
            "elapsed": time.perf_counter() - self.start})

    def _restore(self, state: dict) -> tuple[np.ndarray, WorkingSet]:
        """Take the state ``_save`` wrote; ``(x, working set)`` to resume the stage with."""
        best = state["best"]
        self.best = None if best is None else (best["x"], EmbeddingEvaluation(**best["evaluation"]), best["width"])
        self.width, self.timings = state["width"], state["timings"]
        self.stages = [LowRankStage(**stage) for stage in state["stages"]]
        self.n_iter, self.n_searches, self.n_evaluations = state["counters"]
        self.start = time.perf_counter() - state["elapsed"]
        return state["x"], WorkingSet.from_pairs(*state["pairs"], self.problem.n_samples)

    def _lbfgs(self, x: np.ndarray, width: float, budget: int):
        """L-BFGS on the current working set; ``(x, value seen at x, why it stopped)``. It
        stops when ``F_width`` fell by at most ``tol`` (relative) over the last ``WINDOW``
        iterations, when ``Z`` drifted (module docstring), or when scipy stops it (a failed
        line search, the budget)."""
        tic = time.perf_counter()
        shape, loss, history, last, drifted = x.shape, self.loss, [], {}, []
        searched = _centred(self.embed(x))

        def fun(v):
            self.n_evaluations += 1
            Z = self.embed(v.reshape(shape))
            ev = loss.evaluate(Z, width)
            last.update(v=v.copy(), Z=Z)
            return ev.value, self.pullback(ev.gradient).ravel()

        def step(intermediate_result):
            self.n_iter += 1
            v = intermediate_result.x
            if self.callback is not None:
                self.callback(v.reshape(shape).copy(), self.n_iter)
            history.append(float(intermediate_result.fun))
            if len(history) > WINDOW and history[-WINDOW - 1] - history[-1] <= self.tol * abs(history[-1]):
                raise StopIteration
            Z = last["Z"] if np.array_equal(v, last.get("v")) else self.embed(v.reshape(shape))
            if np.linalg.norm(_centred(Z) - searched) > STALE_DRIFT * np.linalg.norm(searched):
                drifted.append(True)
                raise StopIteration

        result = scipy.optimize.minimize(
            fun, x.ravel(), jac=True, method="L-BFGS-B", callback=step,
            options={"maxiter": budget, "maxfun": 20 * budget + 100, "ftol": 0.0, "gtol": 0.0})
        self.timings["lbfgs"] += time.perf_counter() - tic
        stop = "drift" if drifted else "tol" if result.status in (0, 99) else str(result.message)
        return result.x.reshape(shape), float(result.fun), stop

    def _renew(self, x: np.ndarray, grow: bool) -> None:
        """Exact search at ``x``; with ``grow`` its pairs join the working set, else they
        replace it (the last search's pairs are reused when it was made at ``x``)."""
        if not grow and self.last_search is not None and self.last_search[0] is x:
            ws = self.last_search[1]
        else:
            tic = time.perf_counter()
            ws = search_working_set(self.embed(x), self.problem.targets, self.problem.label_codes, BAND)
            self.last_search = (x, ws)
            self.n_searches += 1
            self.timings["search"] += time.perf_counter() - tic
            if grow:
                old = self.loss.ws
                ws = WorkingSet.from_pairs(np.concatenate([old.owner, ws.owner]),
                                           np.concatenate([old.impostors, ws.impostors]), len(ws.ptr) - 1)
        self.loss = EmbeddingLoss(self.problem.targets, self.problem.mu, ws)

    def _record(self, width: float, ev: EmbeddingEvaluation, stop: str, report) -> None:
        done = sum(s.n_iter for s in self.stages)
        stage = LowRankStage(stage=len(self.stages), width=width, n_iter=self.n_iter - done,
                             value=ev.value, objective=ev.objective, n_active=ev.n_active,
                             n_pairs=len(self.loss.ws), stop=stop,
                             elapsed=time.perf_counter() - self.start)
        self.stages.append(stage)
        if report is not None:
            report(stage)

    def _result(self, x, ev: EmbeddingEvaluation, width, hinge, status, message) -> LMCAResult:
        self.timings["total"] = time.perf_counter() - self.start
        result = LMCAResult(components=x, embedding=self.embed(x), objective=ev.objective,
                            value=ev.value, hinge=hinge, width=width, status=status, message=message,
                            n_iter=self.n_iter, n_stages=len(self.stages), n_searches=self.n_searches,
                            n_evaluations=self.n_evaluations, n_active=ev.n_active,
                            stages=list(self.stages), timings=dict(self.timings))
        self.checkpoint.save({"result": asdict(result)})
        return result


def _result_from(state: dict) -> LMCAResult:
    """The ``LMCAResult`` that ``_Run._result`` saved."""
    return LMCAResult(**{**state, "stages": [LowRankStage(**stage) for stage in state["stages"]]})


def _centred(Z: np.ndarray) -> np.ndarray:
    return Z - Z.mean(axis=0)
