"""Exact multi-metric LMNN (Weinberger & Saul, JMLR 2009, sec. 5.2, eq. 16) with certificates.

The points are split into clusters (by default one per class, as in the paper's
experiments; or any assignment such as k-means) and cluster ``c`` gets its own
metric ``M_c``; the distance to ``x_j`` uses ``M_{c(j)}`` (eq. 16). With
``C_ab = (x_a - x_b)(x_a - x_b)^T`` the SDP of sec. 5.2 is

    minimize   sum_c (1-mu) <P_c, M_c> + mu sum_t xi_t
    s.t.       xi_t >= 1 + <C_ij, M_{c(j)}> - <C_il, M_{c(l)}>,  xi_t >= 0,
               M_c PSD for c = 1..C,

over the triplets ``t = (i, j, l)`` (``j`` a target of ``i``, ``y_l != y_i``), where
``P_c = sum_{i, j~>i, c(j)=c} C_ij`` is the pull matrix of the targets in cluster ``c``.
Its value at any metrics is ``multi_metric_objective.mm_objective``.

The dual. With multipliers ``lambda_t`` for the margin constraints, ``nu_t`` for
``xi_t >= 0`` and ``Z_c`` for ``M_c >= 0``, the Lagrangian is

    L = sum_t lambda_t + sum_t (mu - lambda_t - nu_t) xi_t + sum_c <Z'_c(lambda) - Z_c, M_c>,
    Z'_c(lambda) = (1-mu) P_c - sum_t lambda_t (C_il [c(l)=c] - C_ij [c(j)=c]),

since the margin constraint of ``t`` puts ``+lambda_t C_ij`` on the metric of
``c(j)`` and ``-lambda_t C_il`` on that of ``c(l)``. It is bounded below in ``xi``
and ``M`` only when ``lambda_t + nu_t = mu`` and ``Z_c = Z'_c``, which gives

    maximize  sum_t lambda_t   s.t.  0 <= lambda_t <= mu,
              Z_c(lambda) = (1-mu) P_c - sum_t lambda_t (C_il [c(l)=c] - C_ij [c(j)=c])  PSD
              for every cluster c:

one PSD dual matrix per cluster, coupled by the shared multipliers. Weak duality
(``eps >= sum_t lambda_t + sum_c <Z_c, M_c> >= sum_t lambda_t``) makes any such
``lambda`` a lower bound; ``multi_metric_certificate`` turns arbitrary multipliers
into a rigorous one. With one cluster everything reduces to ``lmnn.py`` / ``dual.py``.

Formulation. Both SDPs run in the reduced space of ``formulation`` (the data
range, target distances near 1; one basis for all clusters, since every ``M_c``
sees differences ``x_i - x_j`` from the whole data range), with margins written
through pair distances and singular clusters taken out exactly
(``multi_metric_sdp``). Modules: ``multi_metric_objective`` (the objective,
numpy only), ``multi_metric_sdp`` (the SDPs), ``multi_metric_certificate``
(bounds), ``multi_metric_generation`` (constraint generation), this one (the
entry point).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp.dual import SDPSolution
from lmnn_sdp.formulation import ReducedSpace, reduced_space
from lmnn_sdp.lmnn import SDPResult, check_solver
from lmnn_sdp.multi_metric_certificate import certify_mm
from lmnn_sdp.multi_metric_objective import check_clusters
from lmnn_sdp.multi_metric_sdp import push_out_of_null_spaces, solve_mm_dual, solve_mm_primal
from lmnn_sdp.problem import LMNNProblem


@dataclass(repr=False)
class MMResult(SDPResult):
    """An exact multi-metric solve: ``SDPResult`` whose ``M`` holds the metrics (C, d, d).

    ``objective`` is ``mm_objective(problem, metrics, clusters)``, never the
    solver's value; ``certificate`` is an ``MMCertificate``."""

    clusters: np.ndarray | None = None  # (n,) cluster of each point

    @property
    def metrics(self) -> np.ndarray:
        """The metrics (C, d, d); ``metrics[c]`` measures distances to points of cluster c."""
        return self.M

    def __repr__(self) -> str:
        return super().__repr__().replace("SDPResult(", "MMResult(", 1)[:-1] + \
            f", clusters={len(self.M)})"


def solve_mm_lmnn(problem: LMNNProblem, clusters=None, solver: str = "CLARABEL",
                  method: str = "full", *, tol: float = 1e-6, formulation: str | None = None,
                  solver_options: dict | None = None, **options) -> MMResult:
    """Solve multi-metric LMNN (sec. 5.2) exactly, all metrics jointly, and certify it.

    Parameters
    ----------
    problem : LMNNProblem
    clusters : array-like of int, shape (n,), optional
        Cluster of each point, values 0..C-1 (e.g. k-means labels); default one per class.
    solver : {"CLARABEL", "SCS"}
    method : {"full", "cutting-plane", "aggregated"}
        ``"full"`` puts every triplet into one SDP; the others are the constraint
        generation schemes of ``multi_metric_generation`` (``options`` go there:
        ``working_set``, ``start``, ``band``, ``max_rounds``, ``progress``, ...).
    tol : float
        Relative gap for ``certificate.certified``.
    formulation : {"primal", "dual"}, optional
        SDP solved per round; default "primal" for "full", "dual" for "cutting-plane".

    Returns
    -------
    MMResult
    """
    solver = check_solver(solver)
    clusters = check_clusters(problem, clusters)
    if method in ("cutting-plane", "aggregated"):
        from lmnn_sdp import multi_metric_generation as generation
        run = generation.mm_cutting_plane if method == "cutting-plane" else generation.mm_aggregated
        if formulation is not None:
            if method == "aggregated":
                raise ValueError("formulation applies to method='full' or 'cutting-plane'; "
                                 "the aggregated scheme always solves the dual.")
            options["formulation"] = formulation
        return run(problem, clusters, solver, tol=tol, solver_options=solver_options, **options)
    if method != "full":
        raise ValueError(f"method must be 'full', 'cutting-plane' or 'aggregated', got {method!r}.")
    if options:
        raise ValueError(f"options {sorted(options)} need method='cutting-plane' or 'aggregated'.")
    space = reduced_space(problem)
    triplets = problem.all_triplets()
    solve = formulation_solver(formulation or "primal")
    solution = solve(problem, space, clusters, triplets, solver, solver_options=solver_options)
    return mm_certified_result(problem, space, clusters, solution, triplets, solver, "full", tol)


def formulation_solver(formulation: str):
    """``multi_metric_sdp.solve_mm_primal`` or ``solve_mm_dual`` by name."""
    solvers = {"primal": solve_mm_primal, "dual": solve_mm_dual}
    if formulation not in solvers:
        raise ValueError(f"formulation must be one of {tuple(solvers)}, got {formulation!r}.")
    return solvers[formulation]


def mm_certified_result(problem: LMNNProblem, space: ReducedSpace, clusters: np.ndarray,
                        solution: SDPSolution, triplets: np.ndarray, solver: str, method: str,
                        tol: float, rounds: list | None = None) -> MMResult:
    """Project the solver's metrics onto the PSD cone, lift them, push killable impostors
    out (``multi_metric_sdp.push_out_of_null_spaces``) and certify them.

    Two lower bounds: from the solver's multipliers and from complementary
    slackness at the metrics; ``certificate`` is the better one."""
    if not np.all(np.isfinite(solution.M_reduced)) or not np.all(np.isfinite(solution.multipliers)):
        raise RuntimeError(f"{solver} returned no usable solution (status "
                           f"{solution.status!r}); try the other solver or solver_options.")
    metrics = push_out_of_null_spaces(problem, space, clusters, lift_psd(space, solution.M_reduced))
    certificates = {
        "solver multipliers": certify_mm(problem, metrics, clusters, triplets=triplets,
                                         multipliers=solution.multipliers, tol=tol, space=space),
        "complementary slackness": certify_mm(problem, metrics, clusters, tol=tol, space=space),
    }
    certificate = max(certificates.values(), key=lambda c: c.lower)
    return MMResult(M=metrics, objective=certificate.upper, certificate=certificate,
                    certificates=certificates, status=solution.status, solver=solver,
                    method=method, n_triplets=len(triplets), triplets=triplets,
                    multipliers=solution.multipliers, build_time=solution.build_time,
                    solve_time=solution.solve_time, rounds=rounds or [], clusters=clusters)


def lift_psd(space: ReducedSpace, M_reduced: np.ndarray) -> np.ndarray:
    """Reduced metrics (C, r, r), projected onto the PSD cone, as metrics (C, d, d)."""
    if not np.all(np.isfinite(M_reduced)):
        raise RuntimeError("the SDP solver returned no metric; try the other solver.")
    w, U = np.linalg.eigh(M_reduced)
    return np.stack([space.lift((U[c] * np.maximum(w[c], 0.0)) @ U[c].T)
                     for c in range(len(M_reduced))])
