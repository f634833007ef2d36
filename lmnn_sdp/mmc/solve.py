r"""``solve_mmc``: (MMC) or (XING) solved in cvxpy, refined, and certified.

Each attempt solves the program below, refines the solver's metric with the
generalised power method (``lmnn_sdp.mmc.refine``) and certifies both with the
library's own bound (``lmnn_sdp.mmc.certificate``); the better certificate is kept.
Attempts follow a ladder: the solver as asked, the same solver with tight
tolerances, then the other solver with tight tolerances. The ladder stops at the
first certified attempt, or as soon as a refinement reaches the rounding allowance of
the bound (then the gap is set by rounding, which no other solve changes). When no
attempt proves the gap, the best certificate is returned with ``certified=False``:
nothing rests on a solver status.

The program (hypograph form, whitened coordinates of ``lmnn_sdp.mmc.bound``)::

    max sum_p t_p / sqrt(P)   s.t.  t_p^2 <= w_p^T B w_p,  trace(B) <= 1,  B PSD (r, r)

or ``t_p^2 <= <w_p * w_p, b>``, ``sum(b) <= 1``, ``b >= 0`` (r,) over diagonal metrics;
``A = W B W^T`` maps back. (XING) is solved through (MMC) over diagonal metrics, (XING-MMC),
as a second-order cone program, not with ``-log`` (an exponential cone).

Conditioning. The program runs in the whitened coordinates, with the differences
scaled so that a typical distance is 1 and the objective divided by ``sqrt(P)``
(neither moves the maximiser). A solver's metric keeps small spurious eigenvalues,
which set its certified gap; the refinement removes them.

Design note: docs/design/mmc.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from lmnn_sdp.certificates.certified import CertifiedMMCResult
from lmnn_sdp.core.checks import check_tol
from lmnn_sdp.formulations.sdp import SOLVERS, TIGHT_OPTIONS, check_solver, solve_quietly
from lmnn_sdp.mmc.bound import Whitening, whiten
from lmnn_sdp.mmc.certificate import MMCCertificate, certify_metric
from lmnn_sdp.mmc.problem import MMCProblem, mmc_problem
from lmnn_sdp.mmc.refine import metric_of, refine, start_point
from lmnn_sdp.status import CONVERGED, STALLED


@dataclass(frozen=True)
class Attempt:
    """One rung of the ladder: a solve, its refinement and their certified gaps.

    ``solver_status`` is the solver's (reported, never trusted), or ``"failed: ..."``;
    ``solver_gap`` is the certified gap of the solver's metric (tangents at its own
    distances), ``relative_gap`` that of the kept one (NaN when the solver failed);
    ``steps`` counts refinement steps and ``estimated_gap`` is where they ended
    (``lmnn_sdp.mmc.refine``)."""

    solver: str
    options: dict
    solver_status: str
    solver_gap: float
    relative_gap: float
    steps: int
    estimated_gap: float


@dataclass(frozen=True, repr=False)
class MMCResult(CertifiedMMCResult):
    """Solution of :func:`solve_mmc`: its certificate plus how it was found.

    The vocabulary (``metric``, ``objective``, ``sense``, ``upper``, ``lower``,
    ``relative_gap``, ``certified``, ``tol``) is the certificate's.

    Attributes
    ----------
    certificate : MMCCertificate
        The bounds with their evidence; ``certificate.verify()`` re-derives them.
    status : {"converged", "stalled"}
        How the solve stopped (``lmnn_sdp.status``): the certificate proved the gap below
        ``tol``, or every rung of the ladder ended without that proof.
    message : str
        Why it stopped, for people.
    solver_status : str
        The solver's status on the kept attempt, reported and never trusted.
    solver : str
        The solver of the kept attempt.
    attempts : tuple of Attempt
        Every rung tried, in order.
    timings : dict of str to float
        Seconds to ``build`` the program, ``solve``, ``refine`` and ``certify`` (summed
        over attempts) and in ``total``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import solve_mmc
    >>> X, y = load_iris(return_X_y=True)
    >>> result = solve_mmc(X[::5], y[::5])
    >>> result.status, result.converged, result.certified
    ('converged', True, True)
    >>> result.metric.shape, result.sense
    ((4, 4), 'maximize')
    """

    certificate: MMCCertificate
    status: str
    message: str
    solver_status: str
    solver: str
    attempts: tuple
    timings: dict

    def __repr__(self) -> str:
        return (f"MMCResult({self.certificate.summary()}, status={self.status!r}, "
                f"solver={self.solver!r}, attempts={len(self.attempts)}, "
                f"time={self.timings['total']:.2f}s)")


def solve_mmc(X, y=None, similar=None, dissimilar=None, diagonal: bool = False,
              solver: str = "CLARABEL", tol: float = 1e-6,
              solver_options: dict | None = None) -> MMCResult:
    """Solve MMC exactly, refine the answer until the library's bound proves it, certify it.

    Full metric: (MMC), ``max sum_D sqrt(D_A)`` s.t. ``sum_S D_A <= 1``, ``A`` PSD
    (Weinberger & Saul, JMLR 2009, sec. 2.3.1). Diagonal: (XING), ``min sum_S D_a -
    log(sum_D sqrt(D_a))`` over ``a >= 0`` (Xing et al. 2002, sec. 2.1), solved through
    (XING-MMC) (``lmnn_sdp.mmc.problem``). Each attempt of the ladder (module docstring)
    solves the program in cvxpy, refines the solver's metric by the generalised power
    method and certifies both with ``certify_mmc``'s bound; the answer is the best
    certificate, ``certified=False`` when no attempt proves the gap.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs; finite real numbers.
    y : array-like of shape (n_samples,), optional
        Labels: all pairs ``i < j``, similar when the labels agree. Give either ``y``
        or both ``similar`` and ``dissimilar``.
    similar : array-like of int of shape (n_similar, 2), optional
        Index pairs of the set ``S``.
    dissimilar : array-like of int of shape (n_dissimilar, 2), optional
        Index pairs of the set ``D``.
    diagonal : bool, default=False
        Solve (XING) over diagonal metrics instead of (MMC).
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The first solver of the ladder, in any case.
    tol : float, default=1e-6
        ``relative_gap`` up to which the answer counts as certified; finite, >= 0. For (MMC) the
        relative gap ``(upper - lower) / upper``; with ``diagonal`` (XING) the absolute gap
        ``upper - lower`` of Xing's ``g``, ``log(bound / feasible_value)``: the maximisation's
        relative gap in log scale (``lmnn_sdp.mmc.certificate``).
        The ladder stops at the first certified attempt.
    solver_options : dict, optional
        Passed to ``cvxpy.Problem.solve`` on the first rung; the second adds
        ``TIGHT_OPTIONS[solver]`` to them.

    Returns
    -------
    MMCResult
        ``metric`` (ndarray of shape (n_features, n_features): ``A``, or ``diag(a)``
        for (XING)), ``objective`` (``f(A)`` or ``g(a)``), ``upper``, ``lower``,
        ``relative_gap``, ``certified``, the ``certificate`` with its evidence,
        ``status`` and ``message`` (``lmnn_sdp.status``), the solver's ``solver_status``, the ``attempts`` and ``timings``.

    Raises
    ------
    ValueError
        Bad inputs (as for ``certify_mmc``), an unknown ``solver``, a ``tol`` that is
        negative or not finite, or an unbounded problem (``lmnn_sdp.mmc.bound``,
        step 3).
    TypeError
        Non-real ``X``, non-integer pairs, or a ``tol`` that is not a real number.
    RuntimeError
        Every solver failed without returning a point.

    See Also
    --------
    lmnn_sdp.MMC : The scikit-learn transformer.
    lmnn_sdp.certify_mmc : Certify any candidate metric.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import label_pairs, pair_distances, solve_mmc, xing_objective
    >>> X, y = load_iris(return_X_y=True)
    >>> X, y = X[::5], y[::5]
    >>> result = solve_mmc(X, y)
    >>> result.certified, result.metric.shape
    (True, (4, 4))
    >>> round(result.objective, 2)
    206.47
    >>> similar, dissimilar = label_pairs(y)
    >>> round(float(pair_distances(X, similar, result.metric).sum()), 6)
    1.0

    Xing et al.'s diagonal problem is a minimisation:

    >>> diagonal = solve_mmc(X, y, diagonal=True)
    >>> diagonal.certified, diagonal.sense
    (True, 'minimize')
    >>> round(diagonal.objective, 3)
    -4.099
    >>> g = xing_objective(X, similar, dissimilar, np.diag(diagonal.metric))
    >>> bool(np.isclose(g, diagonal.objective))
    True
    """
    start = time.perf_counter()
    tol, ladder = check_tol(tol), _ladder(solver, solver_options or {})
    problem = mmc_problem(X, y, similar, dissimilar, diagonal)
    whitening = whiten(problem)
    program, B = _program(problem.dissimilar_differences @ whitening.W, diagonal)
    timings = {"build": time.perf_counter() - start, "solve": 0.0, "refine": 0.0, "certify": 0.0}
    attempts, best = [], None
    for name, options in ladder:
        attempt, certificate = _attempt(problem, whitening, program, B, name, options, tol,
                                        timings)
        attempts.append(attempt)
        if certificate is not None and (best is None or
                                        certificate.relative_gap < best[1].relative_gap):
            best = (attempt, certificate)
        at_floor = attempt.estimated_gap <= whitening.allowance
        if at_floor or (best is not None and best[1].certified):
            break
    if best is None:
        raise RuntimeError("every solver failed on this MMC instance: "
                           + "; ".join(f"{a.solver}: {a.solver_status}" for a in attempts))
    timings["total"] = time.perf_counter() - start
    certificate = best[1]
    status = CONVERGED if certificate.certified else STALLED
    message = ("converged: the certified gap is below tol" if certificate.certified else
               f"not converged: every rung ended above tol; the best certified gap is {certificate.relative_gap:.3g}")
    return MMCResult(certificate=certificate, status=status, message=message,
                     solver_status=best[0].solver_status, solver=best[0].solver,
                     attempts=tuple(attempts), timings=timings)


def _ladder(solver, options: dict) -> list[tuple[str, dict]]:
    """``(solver, options)`` of each rung: as asked, tight, the other solver tight."""
    first = check_solver(solver)
    other = next(name for name in SOLVERS if name != first)
    return [(first, dict(options)), (first, {**options, **TIGHT_OPTIONS[first]}),
            (other, dict(TIGHT_OPTIONS[other]))]


def _attempt(problem: MMCProblem, whitening: Whitening, program: cp.Problem, B: cp.Variable,
             solver: str, options: dict, tol: float,
             timings: dict) -> tuple[Attempt, MMCCertificate | None]:
    """One rung: solve, refine, certify the solver's and the refined metric; keep the
    better certificate. ``timings`` is updated in place."""
    start = time.perf_counter()
    try:
        status = _run(program, solver, options)
        answer = start_point(B.value, problem.diagonal)
    except RuntimeError as err:
        timings["solve"] += time.perf_counter() - start
        return Attempt(solver, options, f"failed: {err}", np.nan, np.nan, 0, np.inf), None
    solved = time.perf_counter()
    Uw = problem.dissimilar_differences @ whitening.W
    refinement = refine(Uw, answer, problem.diagonal, target=whitening.allowance)
    refined = time.perf_counter()
    own, polished = (certify_metric(problem, metric_of(whitening.W, b, problem.diagonal), tol,
                                    whitening) for b in (answer, refinement.B))
    kept = min(own, polished, key=lambda c: c.relative_gap)
    timings["solve"] += solved - start
    timings["refine"] += refined - solved
    timings["certify"] += time.perf_counter() - refined
    return Attempt(solver, options, status, own.relative_gap, kept.relative_gap,
                   refinement.steps, refinement.gap), kept


def _program(Uw: np.ndarray, diagonal: bool) -> tuple[cp.Problem, cp.Variable]:
    """The program of the module docstring for whitened differences ``Uw`` (P, r).

    ``Uw`` is scaled so that a typical distance under ``B = I / r`` is 1; the objective is
    divided by ``sqrt(P)``, which balances the P cone multipliers against the one on
    the trace. Returns ``(problem, B)``."""
    n_pairs, r = Uw.shape
    scaled = Uw * (np.sqrt(r) / np.mean(np.linalg.norm(Uw, axis=1)))
    if diagonal:
        B = cp.Variable(r, nonneg=True)
        distances, budget = scaled**2 @ B, cp.sum(B) <= 1
    else:
        B = cp.Variable((r, r), PSD=True)
        outer = (scaled[:, :, None] * scaled[:, None, :]).reshape(n_pairs, r * r)
        distances, budget = outer @ cp.vec(B, order="F"), cp.trace(B) <= 1
    t = cp.Variable(n_pairs)
    problem = cp.Problem(cp.Maximize(cp.sum(t) / np.sqrt(n_pairs)),
                         [cp.square(t) <= distances, budget])
    return problem, B


def _run(program: cp.Problem, solver: str, options: dict) -> str:
    """Solve; return the status string. A RuntimeError when no usable point comes back."""
    try:
        solve_quietly(program, solver, options)
    except cp.error.SolverError as err:
        raise RuntimeError(f"solver {solver} failed ({err})") from err
    values = [v.value for v in program.variables()]
    if any(v is None or not np.all(np.isfinite(v)) for v in values):
        raise RuntimeError(f"solver {solver} returned no point (status {program.status!r})")
    return str(program.status)
