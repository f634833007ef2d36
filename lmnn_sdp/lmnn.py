"""Exact LMNN and multi-metric LMNN, certified: the entry points ``solve_lmnn``,
``solve_lmnn_dual`` and ``solve_mm_lmnn`` (JMLR 2009, eq. 14 and its SDP; sec. 5.2).

LMNN is multi-metric LMNN with one cluster, so both run the same code: the SDP
and its dual (``sdp``), constraint generation (``cutting_plane``, ``aggregated``)
and the certificate (``certificate``). ``method="full"`` puts every triplet into
one SDP; ``"cutting-plane"`` and ``"aggregated"`` generate constraints.
"""

from __future__ import annotations

from lmnn_sdp.core.problem import LMNNProblem, check_clusters, cluster_owner
from lmnn_sdp.core.space import reduced_space
from lmnn_sdp.formulations.sdp import FORMULATIONS, check_solver
from lmnn_sdp.generation.aggregated import solve_aggregated
from lmnn_sdp.generation.cutting_plane import solve_cutting_plane
from lmnn_sdp.result import SDPResult, certified_result

METHODS = ("full", "cutting-plane", "aggregated")


def solve_lmnn(problem: LMNNProblem, solver: str = "CLARABEL", method: str = "full", *,
               tol: float = 1e-6, formulation: str | None = None,
               solver_options: dict | None = None, **options) -> SDPResult:
    """Solve the LMNN SDP exactly and certify the answer; ``metric`` is (d, d).

    ``method="cutting-plane"`` takes ``working_set``, ``start``, ``add_band``,
    ``drop_band``, ``max_rounds``, ``progress`` (``cutting_plane.solve_cutting_plane``);
    ``method="aggregated"`` takes ``start``, ``band``, ``max_rounds``, ``progress``
    (``aggregated.solve_aggregated``). ``formulation`` ("primal" or "dual") is the SDP
    solved: default "primal" for "full", "dual" for "cutting-plane"."""
    return _solve(problem, None, solver, method, tol, formulation, solver_options, options)


def solve_lmnn_dual(problem: LMNNProblem, solver: str = "CLARABEL", *, tol: float = 1e-6,
                    solver_options: dict | None = None) -> SDPResult:
    """Solve the dual SDP over every triplet; the metric is its PSD constraint's dual."""
    return solve_lmnn(problem, solver, "full", tol=tol, formulation="dual",
                      solver_options=solver_options)


def solve_mm_lmnn(problem: LMNNProblem, clusters=None, solver: str = "CLARABEL",
                  method: str = "full", *, tol: float = 1e-6, formulation: str | None = None,
                  solver_options: dict | None = None, **options) -> SDPResult:
    """Solve multi-metric LMNN (sec. 5.2) exactly, all metrics jointly, and certify it.

    ``clusters`` (n,) holds each point's cluster, values 0..C-1 (e.g. k-means labels);
    default one per class. ``metric`` of the result is (C, d, d). ``method``,
    ``formulation`` and ``options`` as for ``solve_lmnn``."""
    clusters = check_clusters(problem, clusters)
    return _solve(problem, clusters, solver, method, tol, formulation, solver_options, options)


def _solve(problem, clusters, solver, method, tol, formulation, solver_options, options):
    solver = check_solver(solver)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    if formulation is not None and formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {tuple(FORMULATIONS)}, got {formulation!r}.")
    if method == "aggregated":
        if formulation is not None:
            raise ValueError("formulation applies to method='full' or 'cutting-plane'; the "
                             "aggregated scheme always solves the dual.")
        return solve_aggregated(problem, clusters, solver, tol=tol,
                                solver_options=solver_options, **options)
    if method == "cutting-plane":
        return solve_cutting_plane(problem, clusters, solver, tol=tol,
                                   formulation=formulation or "dual",
                                   solver_options=solver_options, **options)
    if options:
        raise ValueError(f"options {sorted(options)} need method='cutting-plane' or 'aggregated'.")
    space = reduced_space(problem)
    triplets = problem.all_triplets()
    solve = FORMULATIONS[formulation or "primal"]
    solution = solve(problem, space, cluster_owner(problem, clusters), triplets, solver,
                     solver_options=solver_options)
    label = "dual" if formulation == "dual" else "full"
    return certified_result(problem, space, clusters, solution, triplets, solver, label, tol)
