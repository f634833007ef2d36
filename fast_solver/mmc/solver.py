r"""``solve_mmc_fast``: MMC at scale (Xing et al. 2002; JMLR 2009, sec. 2.3.1), full and
diagonal, on all label pairs without forming them, stopped by a certificate.

The problem is that of ``lmnn_sdp.mmc`` with implicit label pairs (``mmc_problem(...,
implicit=True)``), solved in its whitened coordinates (``lmnn_sdp.mmc.bound``, step 3):

- full metric: the generalised power method of ``lmnn_sdp.mmc.refine`` with Anderson
  extrapolation (``ascend``), each step one pass over the pairs
  (``compiled.gradient_rows``, ``O(P (k + r))`` for a metric of rank ``k``);
- diagonal metric: Xing et al.'s Newton method made projected (``fast_solver.mmc.xing``),
  each iteration one pass with the (r, r) Hessian (``compiled.xing_sums``).

Either runs until its estimated gap is below ``tol / 4`` (or it can do no better); then
the certificate of ``lmnn_sdp.mmc.certificate`` is computed at its answer with the
library's own bound. The solver says converged only when that certificate proves the
relative gap at most ``tol``; otherwise it goes on with a target 100 times smaller
until ``max_iter`` steps are spent. numpy, scipy and numba only: no cvxpy.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from tqdm.auto import tqdm

from fast_solver.checkpoint import Checkpoint, as_checkpoint, fingerprint
from fast_solver.mmc.compiled import gradient_rows, xing_sums
from fast_solver.mmc.xing import XingSums, projected_newton
from lmnn_sdp.certificates.certified import CertifiedMMCResult
from lmnn_sdp.core.checks import check_max_iter, check_tol
from lmnn_sdp.mmc.bound import Whitening, whiten
from lmnn_sdp.mmc.certificate import MMCCertificate, certify_metric
from lmnn_sdp.mmc.pairs import implicit_layout
from lmnn_sdp.mmc.problem import MMCProblem, mmc_problem
from lmnn_sdp.mmc.refine import Ascent, Gradient, ascend, metric_of, start_point
from lmnn_sdp.status import CONVERGED, MAX_ITER, STALLED

ANDERSON_MEMORY = 5
FIRST_TARGET = 0.25  # of tol: the estimated gap at which the first certificate is computed
TARGET_STEP = 0.01  # the target's factor after a certificate that does not prove tol
_MESSAGES = {CONVERGED: "converged: the certified gap is below tol",
             MAX_ITER: "not converged: max_iter steps spent before the certified gap reached tol",
             STALLED: "not converged: no further progress in floating point before the certified gap "
                      "reached tol"}
RANK_FLOOR = 1e-14  # eigenvalues of B below this fraction of the largest leave the factor L


@dataclass(frozen=True, repr=False)
class FastMMCResult(CertifiedMMCResult):
    """A fast MMC solve and its proof; nothing is printed.

    ``metric`` (d, d), ``objective``, ``sense``, ``upper``, ``lower``, ``relative_gap``,
    ``certified`` and ``tol`` are the certificate's. The solver's stopping rule is the
    certificate, so ``converged`` is ``certified``.

    Attributes
    ----------
    certificate : MMCCertificate
        Of the implicit label pairs (``TangentRule`` evidence); ``verify()`` re-derives it.
    status : {"converged", "max_iter", "stalled"}
        How the solve stopped (``lmnn_sdp.status``): its certificate proved the gap below
        ``tol``; ``max_iter`` steps were spent first; or the inner method made no further
        progress in floating point.
    message : str
        Why it stopped, for people.
    n_iter : int
        Power steps (full) or Newton iterations (diagonal), over all rounds.
    n_certificates : int
        Certificates computed (one per round).
    estimated_gap : float
        The solver's own estimate at its answer (``lmnn_sdp.mmc.refine``).
    timings : dict of str to float
        Seconds to ``whiten``, ``solve``, ``certify`` and in ``total``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import solve_mmc_fast
    >>> X, y = load_iris(return_X_y=True)
    >>> result = solve_mmc_fast(X[::5], y[::5])
    >>> result.status, result.converged, result.certified
    ('converged', True, True)
    >>> result.metric.shape, result.sense
    ((4, 4), 'maximize')
    """

    certificate: MMCCertificate
    status: str
    message: str
    n_iter: int
    n_certificates: int
    estimated_gap: float
    timings: dict

    def __repr__(self) -> str:
        return (f"FastMMCResult({self.certificate.summary()}, status={self.status!r}, "
                f"n_iter={self.n_iter}, time={self.timings['total']:.3g} s)")


def solve_mmc_fast(X, y, diagonal: bool = False, tol: float = 1e-6, max_iter: int = 2000,
                   progress: bool = False, checkpoint=None, checkpoint_interval: float = 60.0) -> FastMMCResult:
    """Solve MMC on all label pairs and certify the answer.

    Mahalanobis metric for clustering (Xing, Ng, Jordan & Russell, NIPS 2002;
    Weinberger & Saul, JMLR 2009, sec. 2.3.1): maximise ``sum_D sqrt(D_A)`` over the
    dissimilar pairs subject to ``sum_S D_A <= 1`` over the similar pairs, ``A`` PSD,
    or minimise Xing et al.'s ``g(a)`` over diagonal metrics (sec. 2.1), without
    forming the pairs (module docstring). The result is ``converged`` only when its
    certificate proves the gap at most ``tol``.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Real inputs.
    y : array-like of shape (n,)
        Labels, at least two classes and one repeated label: the similar pairs are the
        same-label pairs ``i < j``, the dissimilar ones the others.
    diagonal : bool, default=False
        Xing et al.'s diagonal metric instead of the full one.
    tol : float >= 0, default=1e-6
        Relative gap that the certificate must prove; with ``diagonal``, the absolute gap of
        Xing's ``g`` (``lmnn_sdp.solve_mmc``).
    max_iter : int >= 1, default=2000
        Power steps (full) or Newton iterations (diagonal) over all rounds.
    progress : bool, default=False
        Show a tqdm bar with the objective and estimated gap.
    checkpoint : str or path-like, optional
        File in which the solve saves its state (``fast_solver.checkpoint``: the point, the
        round, its target and counters, and the inner method's state: Anderson's history for
        the full metric) at the top of a step, at most every ``checkpoint_interval`` seconds,
        and its final state at the end. The same call with the same path resumes from the
        state saved last and ends with the same metric, certificate and ``n_iter`` as an
        uninterrupted solve, bit for bit; when the file holds a finished solve it returns
        its result after computing its certificate again, without a step. A file written for
        other inputs or options, or damaged, raises ``CheckpointError``.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every step.

    Returns
    -------
    result : FastMMCResult
        The metric (d, d), the objective (``sense`` "maximize" for the full problem,
        "minimize" for the diagonal one), its certificate and counters.

    Raises
    ------
    ValueError, TypeError
        Bad inputs (``lmnn_sdp.mmc.problem.mmc_problem``), or an unbounded problem; ``tol`` or
        ``max_iter`` out of range (ValueError) or not a number of its kind (TypeError:
        ``True``, ``"0.5"``, ``max_iter=1.5``).
    CheckpointError
        If ``checkpoint`` is damaged or was written by another fit.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import solve_mmc_fast
    >>> X, y = load_iris(return_X_y=True)
    >>> result = solve_mmc_fast(X[::5], y[::5])
    >>> result.converged, result.sense, result.metric.shape
    (True, 'maximize', (4, 4))
    >>> round(result.objective, 2)
    206.47
    >>> diagonal = solve_mmc_fast(X[::5], y[::5], diagonal=True)
    >>> diagonal.converged, diagonal.sense
    (True, 'minimize')
    >>> round(diagonal.objective, 2)
    -4.1
    """
    start = time.perf_counter()
    tol, max_iter = check_tol(tol), check_max_iter(max_iter)
    problem = mmc_problem(X, y, diagonal=diagonal, implicit=True)
    checkpoint = as_checkpoint(checkpoint, kind="mmc", interval=checkpoint_interval, fingerprint=lambda: fingerprint(
        problem.X, problem.y, diagonal=diagonal, tol=tol, max_iter=max_iter))
    whitening = whiten(problem)
    space = _WhitenedPairs.of(problem, whitening)
    timings = {"whiten": time.perf_counter() - start, "solve": 0.0, "certify": 0.0}
    state = checkpoint.load() or {
        "point": np.full(space.rank, 0.5 / space.rank) if diagonal else np.eye(space.rank) / space.rank,
        "target": FIRST_TARGET * tol, "n_iter": 0, "rounds": 0, "gap": np.inf, "status": None, "inner": None}

    def certify(point: np.ndarray) -> MMCCertificate:
        tick = time.perf_counter()
        certificate = certify_metric(problem, metric_of(whitening.W, point, diagonal), tol, whitening)
        timings["certify"] += time.perf_counter() - tick
        return certificate

    certificate = None
    with tqdm(total=max_iter, initial=state["n_iter"], disable=not progress, desc="MMC") as bar:
        while state["status"] is None:
            tick = time.perf_counter()
            point, steps, gap, stop = space.run(state["point"], state["target"], max_iter - state["n_iter"],
                                                bar, state["inner"], _saver(checkpoint, state))
            timings["solve"] += time.perf_counter() - tick
            certificate = certify(point)
            n_iter = state["n_iter"] + steps
            state = {**state, "point": point, "n_iter": n_iter, "rounds": state["rounds"] + 1, "gap": gap,
                     "inner": None, "status": _round_status(certificate, n_iter, max_iter, stop, steps)}
            if state["status"] is None:
                state["target"] *= TARGET_STEP
    if certificate is None:  # a finished solve read from its checkpoint
        certificate = certify(state["point"])
    else:
        checkpoint.save(state)
    timings["total"] = time.perf_counter() - start
    return FastMMCResult(certificate, state["status"], _MESSAGES[state["status"]], state["n_iter"],
                         state["rounds"], state["gap"], timings)


def _round_status(certificate: MMCCertificate, n_iter: int, max_iter: int, stop: str, steps: int) -> str | None:
    """How the solve ends after a round, or None when a round with a smaller target follows."""
    if certificate.certified:
        return CONVERGED
    if n_iter >= max_iter:
        return MAX_ITER
    if stop == "stalled" or steps == 0:
        return STALLED
    return None


def _saver(checkpoint: Checkpoint, state: dict):
    """``save(inner)`` for ``_WhitenedPairs.run``: the round's ``state`` with the inner method's, when due."""
    def save(inner: dict) -> None:
        if checkpoint.due():
            checkpoint.save({**state, "inner": inner})
    return save


@dataclass(frozen=True)
class _WhitenedPairs:
    """The whitened inputs ``z`` sorted by class, ``ZT`` (r, n), and the class bounds."""

    problem: MMCProblem
    ZT: np.ndarray
    class_start: np.ndarray
    class_end: np.ndarray
    chunks: np.ndarray

    @classmethod
    def of(cls, problem: MMCProblem, whitening: Whitening) -> _WhitenedPairs:
        layout, XT = implicit_layout(problem)
        centred = XT - XT.mean(axis=1, keepdims=True)
        return cls(problem, np.ascontiguousarray(whitening.W.T @ centred), layout.class_start,
                   layout.class_end, layout.dissimilar_chunks)

    @property
    def rank(self) -> int:
        return self.ZT.shape[0]

    def run(self, point: np.ndarray, target: float, budget: int, bar, resume: dict | None = None,
            save=None) -> tuple:
        """One round of the inner method from ``point``, or from ``resume``, a state that
        ``save`` was given in this round: ``(point, steps, gap, stop)``, the stop as in
        ``fast_solver.mmc.xing.NewtonRun``. ``save(inner)`` is called at the top of every step
        with the inner method's state, a tree of arrays and numbers."""
        def callback(step, value, gap):
            bar.update(1 if step else 0)
            bar.set_postfix(f=f"{value:.10g}", gap=f"{gap:.2e}", refresh=False)

        if self.problem.diagonal:
            iteration, b = (0, point) if resume is None else (resume["iteration"], resume["b"])
            run = projected_newton(self.xing, b, target, budget, callback, iteration,
                                   None if save is None else lambda i, b: save({"iteration": i, "b": b}))
            return run.b, run.iterations, run.gap, run.stop
        run = ascend(self.gradient, start_point(point, False), False, target, budget, ANDERSON_MEMORY,
                     callback, None if resume is None else _ascent_from(resume),
                     None if save is None else lambda ascent: save(_ascent_state(ascent)))
        stop = "target" if run.gap <= target else "stalled" if run.steps < budget else "max_iter"
        return run.B, run.steps, run.gap, stop

    def gradient(self, B: np.ndarray) -> Gradient:
        """``f`` and ``G`` of (GPM) at ``B`` (r, r), one pass (``gradient_rows``)."""
        eigenvalues, vectors = np.linalg.eigh((B + B.T) / 2)
        keep = eigenvalues > RANK_FLOOR * eigenvalues[-1]
        TT = np.ascontiguousarray((vectors[:, keep] * np.sqrt(eigenvalues[keep])).T @ self.ZT)
        n = self.ZT.shape[1]
        H, values = np.empty((n, self.rank)), np.empty(n)
        collapsed = gradient_rows(self.ZT, TT, self.class_start, self.class_end, H, values)
        G = self.ZT @ H
        return Gradient(float(values.sum() / 2), (G + G.T) / 2, bool(collapsed.any()))

    def xing(self, b: np.ndarray, hessian: bool) -> XingSums:
        """``fast_solver.mmc.xing``'s sums at ``b`` (r,), one pass (``xing_sums``)."""
        values, gradients, packed, collapsed = xing_sums(self.ZT, b, self.class_end,
                                                         self.chunks, hessian)
        H = None
        if hessian:
            rows, cols = np.triu_indices(self.rank)
            H = np.zeros((self.rank, self.rank))
            H[rows, cols] = packed.sum(axis=0)
            H[cols, rows] = H[rows, cols]
        return XingSums(float(values.sum()), gradients.sum(axis=0), H, collapsed.sum(axis=0))


def _ascent_state(ascent: Ascent) -> dict:
    """An ``Ascent`` as a checkpoint's tree (its ``Gradient`` as a dict)."""
    peak = None if ascent.peak is None else (ascent.peak[0], dataclasses.asdict(ascent.peak[1]))
    return {"step": ascent.step, "B": ascent.B, "value": ascent.value, "progress": ascent.progress,
            "best": ascent.best, "peak": peak, "history": list(ascent.history)}


def _ascent_from(state: dict) -> Ascent:
    """The ``Ascent`` that ``_ascent_state`` wrote."""
    peak = None if state["peak"] is None else (state["peak"][0], Gradient(**state["peak"][1]))
    return Ascent(state["step"], state["B"], state["value"], state["progress"], state["best"], peak,
                  list(state["history"]))


def _check_max_iter(max_iter) -> int:
    if isinstance(max_iter, bool) or not isinstance(max_iter, Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}.")
    return int(max_iter)
