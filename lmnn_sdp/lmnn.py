"""The LMNN semidefinite program (JMLR 2009, eq. 14 and the SDP below it).

    minimize   (1-mu) <P, M> + mu sum_t xi_t
    s.t.       xi_t >= 1 + D_M(x_i, x_j) - D_M(x_i, x_l),  xi_t >= 0,  M PSD,

over a set of triplets ``t = (i, j, l)`` (all of them, or a working set for
constraint generation). The margins form one vectorised expression through pair
distances (``formulation``); the multipliers of the margin constraints are the
dual ``lambda`` that the certificate scales back into the dual cone.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from lmnn_sdp.bounds import Certificate
from lmnn_sdp.certificate import certify
from lmnn_sdp.dual import SDPSolution, solve_dual
from lmnn_sdp.formulation import (
    ReducedSpace,
    pair_outer_svec,
    reduced_space,
    svec,
    svec_to_matrix,
    svec_weights,
    triplet_pairs,
)
from lmnn_sdp.problem import LMNNProblem

SOLVERS = ("CLARABEL", "SCS")


@dataclass
class SDPResult:
    """An exact LMNN solve: the metric, its certificate and how it was found.

    ``objective`` is ``problem.objective(M)``, never the solver's value; the
    bounds and gap come from ``certificate``; ``status`` is the solver's word,
    reported, not trusted. ``rounds`` lists the constraint-generation rounds."""

    M: np.ndarray  # (d, d), symmetric PSD
    objective: float
    certificate: Certificate  # the better of ``certificates``
    certificates: dict  # name -> Certificate, one per way of finding multipliers
    status: str
    solver: str
    method: str
    n_triplets: int  # triplets in the (final) SDP
    triplets: np.ndarray  # (T, 3) those triplets
    multipliers: np.ndarray  # (T,) their dual multipliers as the solver returned them
    build_time: float  # seconds spent building and compiling the model(s)
    solve_time: float  # seconds inside the solver(s)
    rounds: list = field(default_factory=list)

    @property
    def lower_bound(self) -> float:
        return self.certificate.lower

    @property
    def relative_gap(self) -> float:
        return self.certificate.relative_gap

    def __repr__(self) -> str:
        return (f"SDPResult(method={self.method!r}, solver={self.solver!r}, status={self.status!r}, "
                f"objective={self.objective:.10g}, lower_bound={self.lower_bound:.10g}, "
                f"relative_gap={self.relative_gap:.3g}, triplets={self.n_triplets}, "
                f"build={self.build_time:.2f}s, solve={self.solve_time:.2f}s)")


def solve_lmnn(problem: LMNNProblem, solver: str = "CLARABEL", method: str = "full", *,
               working_set=None, tol: float = 1e-6, solver_options: dict | None = None,
               **options) -> SDPResult:
    """Solve the LMNN SDP exactly and certify the answer.

    ``method="full"`` puts every triplet into one SDP; ``method="cutting-plane"``
    solves on a working set and adds violated triplets until none is left
    (``cutting_plane.solve_cutting_plane``, which takes ``working_set`` and
    further options); ``method="aggregated"`` keeps only the triplets near the
    margin in the SDP (``aggregated.solve_aggregated``, options such as
    ``start`` and ``band``)."""
    solver = check_solver(solver)
    if method == "cutting-plane":
        from lmnn_sdp.cutting_plane import solve_cutting_plane
        return solve_cutting_plane(problem, solver, working_set=working_set, tol=tol,
                                   solver_options=solver_options, **options)
    if method == "aggregated":
        from lmnn_sdp.aggregated import solve_aggregated
        return solve_aggregated(problem, solver, tol=tol, solver_options=solver_options, **options)
    if method != "full":
        raise ValueError(f"method must be 'full', 'cutting-plane' or 'aggregated', got {method!r}.")
    if working_set is not None or options:
        raise ValueError("working_set and round options need method='cutting-plane' or 'aggregated'.")
    space = reduced_space(problem)
    triplets = problem.all_triplets()
    solution = solve_primal(problem, space, triplets, solver, solver_options)
    return certified_result(problem, space, solution, triplets, solver, "full", tol)


def solve_lmnn_dual(problem: LMNNProblem, solver: str = "CLARABEL", *, tol: float = 1e-6,
                    solver_options: dict | None = None) -> SDPResult:
    """Solve the dual SDP (``dual``) over every triplet; ``M`` is its PSD constraint's dual."""
    solver = check_solver(solver)
    space = reduced_space(problem)
    triplets = problem.all_triplets()
    solution = solve_dual_formulation(problem, space, triplets, solver, solver_options)
    return certified_result(problem, space, solution, triplets, solver, "dual", tol)


def solve_dual_formulation(problem: LMNNProblem, space: ReducedSpace, triplets: np.ndarray,
                           solver: str, solver_options: dict | None = None) -> SDPSolution:
    """Solve the dual SDP (``dual.dual_sdp``) on ``triplets`` (T, 3) in the reduced space."""
    return solve_dual(space, problem.mu, space.matrix(problem.pull_matrix()), triplets, solver,
                      solver_options=solver_options)


def solve_primal(problem: LMNNProblem, space: ReducedSpace, triplets: np.ndarray,
                 solver: str, solver_options: dict | None = None) -> SDPSolution:
    """Solve the SDP of this module on ``triplets`` (T, 3) in the reduced space."""
    start = time.perf_counter()
    cvx_problem, m, margins = primal_sdp(space, problem.mu, space.matrix(problem.pull_matrix()),
                                         triplets)
    with warnings.catch_warnings():  # the status is reported; the certificate judges
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        cvx_problem.solve(solver=solver, **(solver_options or {}))
    total = time.perf_counter() - start
    solve_time = float(cvx_problem.solver_stats.solve_time or 0.0)
    r = space.rank
    if m.value is None:
        M_r = np.full((r, r), np.nan)
    else:
        M_r = (svec_to_matrix(r) @ m.value).reshape(r, r)
    multipliers = np.zeros(0) if margins is None else dual_or_nan(margins, len(triplets))
    return SDPSolution(M_r, multipliers, str(cvx_problem.status), total - solve_time, solve_time)


def primal_sdp(space: ReducedSpace, mu: float, pull: np.ndarray, triplets: np.ndarray):
    """cvxpy problem of the primal SDP; returns ``(problem, svec_variable, margin_constraint)``.

    ``pull`` (r, r) is ``P`` in reduced coordinates; ``triplets`` (T, 3)."""
    r = space.rank
    m = cp.Variable(r * (r + 1) // 2)
    M = cp.reshape(svec_to_matrix(r) @ m, (r, r), order="C")
    objective = (1.0 - mu) * ((svec(pull) * svec_weights(r)) @ m)
    constraints, margins = [M >> 0], None
    if len(triplets):
        tp = triplet_pairs(triplets, len(space.inputs))
        V = space.inputs[tp.pairs[:, 0]] - space.inputs[tp.pairs[:, 1]]
        distances = cp.Variable(len(tp.pairs))
        slack = cp.Variable(len(triplets), nonneg=True)
        margins = slack >= 1 + tp.signs @ distances
        constraints += [distances == (pair_outer_svec(V) * svec_weights(r)) @ m, margins]
        objective = objective + mu * cp.sum(slack)
    return cp.Problem(cp.Minimize(objective), constraints), m, margins


def certified_result(problem: LMNNProblem, space: ReducedSpace, solution: SDPSolution,
                     triplets: np.ndarray, solver: str, method: str, tol: float,
                     rounds: list | None = None) -> SDPResult:
    """Project the solver's metric onto the PSD cone, lift it, and certify it.

    Two lower bounds are computed, from the solver's multipliers and from
    complementary slackness at the metric (``dual.complementary_multipliers``);
    the result's ``certificate`` is the better one, ``certificates`` holds both."""
    if not np.all(np.isfinite(solution.M_reduced)) or not np.all(np.isfinite(solution.multipliers)):
        raise RuntimeError(f"{solver} returned no usable solution (status "
                           f"{solution.status!r}); try the other solver or solver_options.")
    w, U = np.linalg.eigh(solution.M_reduced)
    M = space.lift((U * np.maximum(w, 0.0)) @ U.T)
    certificates = {
        "solver multipliers": certify(problem, M, triplets=triplets,
                                      multipliers=solution.multipliers, tol=tol, space=space),
        "complementary slackness": certify(problem, M, tol=tol, space=space),
    }
    certificate = max(certificates.values(), key=lambda c: c.lower)
    return SDPResult(M=M, objective=certificate.upper, certificate=certificate,
                     certificates=certificates,
                     status=solution.status, solver=solver, method=method,
                     n_triplets=len(triplets), triplets=triplets,
                     multipliers=solution.multipliers, build_time=solution.build_time,
                     solve_time=solution.solve_time, rounds=rounds or [])


def check_solver(solver: str) -> str:
    """The solver's name in upper case; a clear error unless it is one of ``SOLVERS``."""
    if not isinstance(solver, str) or solver.upper() not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}.")
    return solver.upper()


def dual_or_nan(constraint, size: int) -> np.ndarray:
    """A cvxpy constraint's dual value as a flat array (size,), NaN when the solver gave none."""
    if constraint.dual_value is None:
        return np.full(size, np.nan)
    return np.asarray(constraint.dual_value, dtype=float).reshape(size)
