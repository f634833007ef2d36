"""The Lagrange dual of the LMNN SDP (DESIGN.md) and multipliers for any metric.

With ``C_ab = (x_a - x_b)(x_a - x_b)^T`` and ``P = sum_{i, j~>i} C_ij`` the dual of the
SDP below eq. 14 is

    maximize  sum_t lambda_t
    s.t.      0 <= lambda_t <= mu,
              Z(lambda) = (1-mu) P - sum_t lambda_t (C_il - C_ij)  is PSD.

``dual_sdp`` writes it in cvxpy on the reduced space (``formulation``) with the
pair-distance trick: ``sum_t lambda_t (C_ij - C_il) = sum_p w_p C_p`` with
``w = S^T lambda``, so each triplet costs three nonzeros. An optional fixed part
``beta * F`` (``0 <= beta <= 1``, worth ``beta * fixed_value``) lets the
complementary-slackness certificate (``complementary_multipliers``) keep most
multipliers fixed at ``mu`` and leave free only the triplets near the margin.
The primal metric is the dual variable of the PSD constraint.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from lmnn_sdp.formulation import (
    ReducedSpace,
    pair_outer_svec,
    svec,
    svec_to_matrix,
    triplet_pairs,
)
from lmnn_sdp.problem import LMNNProblem


@dataclass
class SDPSolution:
    """Raw output of one SDP solve (primal or dual), before certification."""

    M_reduced: np.ndarray  # (r, r) metric in reduced coordinates
    multipliers: np.ndarray  # (T,) lambda of the (free) triplets, as the solver gave them
    status: str
    build_time: float
    solve_time: float
    beta: float = 0.0  # weight of the dual's fixed part (0 without one)


def dual_sdp(space: ReducedSpace, mu: float, pull: np.ndarray, triplets: np.ndarray,
             fixed: np.ndarray | None = None, fixed_value: float = 0.0):
    """cvxpy problem of the dual, its variables and its PSD constraint.

    ``pull`` (r, r) is ``P`` and ``fixed`` (r, r) is an optional ``F`` in
    reduced coordinates; ``triplets`` (T, 3) carry the free multipliers.
    Returns ``(problem, lam, beta, psd_constraint)``; ``lam``/``beta`` may be None."""
    r = space.rank
    z = (1.0 - mu) * svec(pull)
    objective, constraints, lam, beta = 0, [], None, None
    if len(triplets):
        tp = triplet_pairs(triplets, len(space.inputs))
        V = space.inputs[tp.pairs[:, 0]] - space.inputs[tp.pairs[:, 1]]
        lam = cp.Variable(len(triplets))
        w = cp.Variable(len(tp.pairs))
        constraints += [lam >= 0, lam <= mu, w == tp.signs.T @ lam]
        z = z + pair_outer_svec(V).T @ w
        objective = cp.sum(lam)
    if fixed is not None:
        beta = cp.Variable()
        constraints += [beta >= 0, beta <= 1]
        z = z - beta * svec(fixed)
        objective = objective + beta * fixed_value
    Z = cp.reshape(svec_to_matrix(r) @ z, (r, r), order="C")
    psd = Z >> 0
    problem = cp.Problem(cp.Maximize(objective), constraints + [psd])
    return problem, lam, beta, psd


def solve_dual(space: ReducedSpace, mu: float, pull: np.ndarray, triplets: np.ndarray,
               solver: str = "CLARABEL", fixed: np.ndarray | None = None,
               fixed_value: float = 0.0, solver_options: dict | None = None) -> SDPSolution:
    """Solve ``dual_sdp``; multipliers are returned as the solver gave them (unchecked)."""
    start = time.perf_counter()
    problem, lam, beta, psd = dual_sdp(space, mu, pull, triplets, fixed, fixed_value)
    if lam is None and beta is None:
        # No multiplier at all: the dual value is 0, attained by M = 0.
        return SDPSolution(np.zeros((space.rank,) * 2), np.zeros(0), "trivial", 0.0, 0.0)
    with warnings.catch_warnings():  # the status is reported; the certificate judges
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        problem.solve(solver=solver, **(solver_options or {}))
    total = time.perf_counter() - start
    solve_time = float(problem.solver_stats.solve_time or 0.0)
    M_r = psd.dual_value if psd.dual_value is not None else np.full((space.rank,) * 2, np.nan)
    return SDPSolution(
        M_reduced=(M_r + M_r.T) / 2,
        multipliers=variable_value(lam, len(triplets)),
        status=str(problem.status),
        build_time=total - solve_time,
        solve_time=solve_time,
        beta=float(beta.value) if beta is not None and beta.value is not None else 0.0,
    )


def complementary_multipliers(problem: LMNNProblem, space: ReducedSpace, M: np.ndarray,
                              band: float, solver: str = "CLARABEL",
                              solver_options: dict | None = None):
    """Dual multipliers for a candidate metric ``M`` (d, d) by complementary slackness.

    Triplets with margin ``1 + D_ij - D_il > band`` get ``lambda = beta * mu`` (one
    shared ``beta`` in [0, 1]), those below ``-band`` get 0, and those within the
    band are free in [0, mu]; a small dual SDP over ``beta`` and the free ones
    maximises the bound. Returns ``(triplets (T, 3), multipliers (T,), n_free)``."""
    near = problem.active_triplets(M, band=band)
    margins = problem.triplet_margins(M, near)
    active, free = near[margins > band], near[margins <= band]
    fixed = problem.mu * space.matrix(problem.triplet_scatter(active)) if len(active) else None
    sol = solve_dual(space, problem.mu, space.matrix(problem.pull_matrix()), free, solver,
                     fixed=fixed, fixed_value=problem.mu * len(active),
                     solver_options=solver_options)
    multipliers = np.concatenate([np.full(len(active), sol.beta * problem.mu), sol.multipliers])
    return np.concatenate([active, free]), multipliers, len(free)


def variable_value(variable, size: int) -> np.ndarray:
    """A cvxpy variable's value as a flat array (size,): zeros for no variable, NaN if unsolved."""
    if variable is None:
        return np.zeros(size)
    if variable.value is None:
        return np.full(size, np.nan)
    return np.asarray(variable.value, dtype=float).reshape(size)
