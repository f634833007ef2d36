"""The state of one ``fast_solver.solve``: what its checkpoint saves and restores.

A solve's restart points are the starts of its trust-region Newton calls: each starts
afresh from ``L``, so the rest of the solve is a function of the state saved there: ``L``,
the stage's width, aim and the multipliers that shift the hinges, the working set of the
objective and the search's (its floors and the metric of its last search), the best
candidates, the stages and the counters. ``SolveState`` holds what the solver changes as it
goes; ``saved`` and ``restored`` turn it into the checkpoint's tree and back, and
``solve_fingerprint`` ties a file to the inputs and options it was written for. The
certificate is not saved: ``prove`` is deterministic, so it is proved again when asked.

A solve with a checkpoint file, run again with the same path once it has ended:

>>> import tempfile
>>> from sklearn.datasets import load_iris
>>> from lmnn_sdp import LMNNProblem
>>> from fast_solver import solve
>>> X, y = load_iris(return_X_y=True)
>>> problem = LMNNProblem(X[::5], y[::5], k=3, mu=0.5)
>>> path = tempfile.mkdtemp() + "/lmnn.ckpt"
>>> first = solve(problem, checkpoint=path)
>>> again = solve(problem, checkpoint=path)
>>> bool((again.metric == first.metric).all()), again.n_iter == first.n_iter
(True, True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from fast_solver.checkpoint import Checkpoint, Section, as_checkpoint, fingerprint
from fast_solver.lmnn.result import Stage
from fast_solver.lmnn.smoothed import WorkingSet
from fast_solver.lmnn.working_set import ExactSearch
from lmnn_sdp.core.problem import LMNNProblem

ITERATIONS = 17  # version of the iterations a checkpoint replays, in its fingerprint (history: the design note)


@dataclass
class Candidate:
    """A bound and its evidence: a metric (upper) or multipliers (lower)."""

    value: float
    metric: np.ndarray | None = None  # M_w (C, r, r)
    triplets: np.ndarray | None = None  # (T, 3)
    multipliers: np.ndarray | None = None  # (T,)


@dataclass
class SolveState:
    """What a solve changes as it goes, beside its search: bounds, stages, counters, timings.

    Attributes
    ----------
    gamma : float
        The stage's smoothing width.
    aim : float
        The estimated gap a stage stops at: ``tol``, lowered by every failed proof.
    upper, lower : Candidate
        The best metric (eq. 14 right after an exact search) and the best multipliers.
    prior : tuple of ndarray or None
        Pair keys ``i n + l`` (P,) and their multipliers (P, k) of the last update between
        stages, which shift the hinges.
    retreat : float or None
        The next Newton call's trust radius after a retraction.
    stages, upper_path, timings
        As in ``FastLMNNResult``; ``start_time`` is the ``perf_counter`` of the solve's start.
    n_iter, n_evaluations, n_hessian_products, n_retreats : int
        The counters of ``FastLMNNResult``.
    """

    gamma: float
    aim: float
    upper: Candidate = field(default_factory=lambda: Candidate(np.inf))
    lower: Candidate = field(default_factory=lambda: Candidate(0.0, triplets=np.empty((0, 3), np.intp),
                                                               multipliers=np.zeros(0)))
    prior: tuple[np.ndarray, np.ndarray] | None = None
    retreat: float | None = None
    stages: list[Stage] = field(default_factory=list)
    upper_path: list[tuple[float, float]] = field(default_factory=list)  # (elapsed, upper) at each improvement
    timings: dict = field(default_factory=lambda: dict.fromkeys(("search", "quasi_newton", "newton", "escape", "bounds"), 0.0))
    start_time: float = field(default_factory=time.perf_counter)
    n_iter: int = 0
    n_evaluations: int = 0
    n_hessian_products: int = 0
    n_retreats: int = 0


def solve_checkpoint(problem: LMNNProblem, M0, checkpoint, interval: float, **options) -> Checkpoint | Section:
    """The checkpoint of ``solve(problem, M0, checkpoint=checkpoint, **options)``
    (``fast_solver.checkpoint.as_checkpoint``, kind "lmnn", ``solve_fingerprint``)."""
    return as_checkpoint(checkpoint, kind="lmnn", interval=interval,
                         fingerprint=lambda: solve_fingerprint(problem, M0, **options))


def solve_fingerprint(problem: LMNNProblem, M0=None, **options) -> str:
    """``fast_solver.checkpoint.fingerprint`` of a solve: the problem (inputs, label codes,
    targets, ``mu``, clusters), the start ``M0``, the version of the iterations and the
    ``options`` that change the answer (``tol``, ``max_iter``, ``band``, ``search``).

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
                       M0=None if M0 is None else np.asarray(M0),
                       iterations=ITERATIONS, **options)


def saved(state: SolveState, search: ExactSearch, stop: str | None, *, objective=None, L=None, nit: int = 0,
          max_iter: int = 0) -> dict:
    """The checkpoint of a solve at a restart point (``stop`` None: its ``SmoothedObjective``,
    ``L`` and the stage's Newton iterations ``nit`` so far) or at its end (why it ``stop``-ped)."""
    tree = {"stop": stop, "max_iter": max_iter, "upper": vars(state.upper), "lower": vars(state.lower),
            "stages": [vars(stage) for stage in state.stages], "upper_path": list(state.upper_path),
            "counters": (state.n_iter, state.n_evaluations, state.n_hessian_products, state.n_retreats),
            "searches": (search.n_searches, search.points_searched),
            "timings": dict(state.timings), "elapsed": time.perf_counter() - state.start_time}
    if stop is None:
        own = None if objective.ws is search.working_set else vars(objective.ws)
        tree.update(L=L, nit=nit, gamma=state.gamma, aim=state.aim, prior=state.prior, retreat=state.retreat,
                    search=search.state(), working_set=own,
                    evaluations=(objective.n_evaluations, objective.n_hessian_products))
    return tree


def restored(tree: dict, search: ExactSearch, state: SolveState) -> None:
    """Continue ``state`` and ``search`` from ``saved``'s ``tree``; at a restart point also the
    stage's width, aim, multipliers and retreat (``resumed`` gives where to resume)."""
    state.upper, state.lower = Candidate(**tree["upper"]), Candidate(**tree["lower"])
    state.stages = [Stage(**stage) for stage in tree["stages"]]
    state.upper_path = [tuple(point) for point in tree["upper_path"]]
    state.n_iter, state.n_evaluations, state.n_hessian_products, state.n_retreats = tree["counters"]
    search.n_searches, search.points_searched = tree["searches"]
    state.timings = dict(tree["timings"])
    state.start_time = time.perf_counter() - tree["elapsed"]
    if tree["stop"] is None:
        search.restore(tree["search"])
        state.gamma, state.aim, state.prior, state.retreat = tree["gamma"], tree["aim"], tree["prior"], tree["retreat"]


def resumed(tree: dict, search: ExactSearch) -> tuple[WorkingSet, np.ndarray, int, tuple[int, int]]:
    """Where a restart point's Newton call starts: the objective's working set, ``L``, the
    stage's Newton iterations so far and the objective's counters (evaluations, Hessian products)."""
    ws = search.working_set if tree["working_set"] is None else WorkingSet(**tree["working_set"])
    return ws, tree["L"], tree["nit"], tree["evaluations"]
