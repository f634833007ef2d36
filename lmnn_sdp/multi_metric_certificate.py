"""Dual of multi-metric LMNN (sec. 5.2) and rigorous certificates for any metrics.

The dual is derived in the docstring of ``lmnn_sdp.multi_metric``:

    maximize  sum_t lambda_t   s.t.  0 <= lambda_t <= mu,
              Z_c(lambda) = (1-mu) P_c - sum_t lambda_t (C_il [c(l)=c] - C_ij [c(j)=c])  PSD
              for every cluster c.

Lower bound. Multipliers (from a solver or from complementary slackness at a
candidate) are clipped into the box and scaled by one ``alpha`` in [0, 1], the
largest keeping every ``Z_c(alpha lambda)`` PSD: ``alpha = min_c alpha_c``
(each feasible set ``{alpha: Z_c(alpha lambda) >= s_c I}`` is an interval
containing 0). ``alpha_c`` comes from ``certificate.largest_feasible_scale``
with the rounding allowance ``s_c`` of ``certificate.py`` computed from cluster
``c``'s own terms, and the smallest computed eigenvalue of every checked
``Z_c`` at the common ``alpha`` is verified to be at least ``s_c``. All of it
runs on the data range (``formulation.reduced_space``), where ``Z_c`` is PSD iff
it is on the inputs.

Two exact facts keep singular clusters certifiable:

* A cluster with no positive multiplier on an impostor ``l`` in it has
  ``Z_c = (1-mu) P_c + sum_t lambda_t C_ij [c(j)=c]``, a nonnegative sum of
  outer products: PSD for every ``alpha``, with nothing to check numerically.
* A cluster whose target differences do not span the data range has a
  singular ``P_c``; no computed eigenvalue of ``Z_c`` can then clear the
  allowance. Its impostor multipliers are set to 0 (still a dual feasible
  choice, so the bound stays rigorous) and the fact above applies. This is
  also what the optimum does in the generic case: ``M_c`` can grow for free
  on the null space of ``P_c``, which pushes every impostor of cluster ``c``
  out of the margin. When the bound then falls short of the tolerance the
  certificate says ``certified=False``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp.bounds import (
    Certificate,
    bisect_feasible_scale,
    boxed_multipliers,
    check_candidate_metric,
    largest_feasible_scale,
    relative_gap,
)
from lmnn_sdp.formulation import ReducedSpace, reduced_space
from lmnn_sdp.multi_metric_objective import (
    check_clusters,
    cluster_triplet_scatter,
    mm_active_triplets,
    mm_objective,
    mm_triplet_margins,
)
from lmnn_sdp.multi_metric_sdp import (
    cluster_spaces,
    fixed_groups,
    killable,
    reduced_pulls,
    solve_mm_dual,
)
from lmnn_sdp.problem import LMNNProblem


@dataclass(frozen=True, repr=False)
class MMCertificate(Certificate):
    """``Certificate`` of multi-metric LMNN; eigenvalues are minima over the clusters.

    ``singular_clusters`` lists the clusters whose pull matrix is singular on the
    data range; ``n_dropped`` counts the impostor multipliers set to 0 for them.
    ``min_eig_dual`` may show rounding (about -1e-16) for a cluster without impostor
    multipliers: its ``Z_c`` is PSD exactly and is not checked numerically."""

    singular_clusters: tuple = ()
    n_dropped: int = 0

    def __repr__(self) -> str:
        singular = (f", singular_clusters={self.singular_clusters}, dropped={self.n_dropped})"
                    if self.singular_clusters else ")")
        return "MM" + super().__repr__()[:-1] + singular


def certify_mm(problem: LMNNProblem, metrics, clusters=None, *, triplets=None, multipliers=None,
               tol: float = 1e-6, band: float = 1e-3, solver: str = "CLARABEL",
               solver_options: dict | None = None,
               space: ReducedSpace | None = None) -> MMCertificate:
    """Certify how close ``metrics`` (C, d, d) are to the multi-metric LMNN optimum (sec. 5.2).

    Parameters
    ----------
    problem : LMNNProblem
    metrics : array-like of shape (C, d, d)
        Candidate metrics, symmetric PSD (rounding-level negative eigenvalues are clipped).
    clusters : array-like of int, shape (n,), optional
        Cluster of each point (eq. 16); default one per class.
    triplets, multipliers : arrays of shape (T, 3) and (T,), optional
        Multipliers to bound with; default: complementary slackness at ``metrics``
        (tied at ``beta_g * mu`` above the margin band, 0 below, free within ``band``).
    tol : float
        ``certified`` is ``relative_gap <= tol``.

    Returns
    -------
    MMCertificate
    """
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol}.")
    clusters = check_clusters(problem, clusters)
    metrics, min_eig = check_candidate_metrics(problem, metrics, clusters)
    space = space or reduced_space(problem)
    upper = mm_objective(problem, metrics, clusters)
    if (triplets is None) != (multipliers is None):
        raise ValueError("pass triplets and multipliers together, or neither.")
    n_free = 0
    if triplets is None:
        triplets, multipliers, n_free, _ = mm_complementary_multipliers(
            problem, space, clusters, metrics, band, solver, solver_options)
    bound = mm_dual_lower_bound(problem, clusters, triplets, multipliers, space)
    gap = relative_gap(upper, bound.lower)
    return MMCertificate(upper=upper, lower=bound.lower, relative_gap=gap,
                         certified=bool(gap <= tol), tol=float(tol), min_eig_metric=min_eig,
                         min_eig_dual=bound.min_eig_dual, dual_scale=bound.alpha,
                         n_multipliers=len(triplets), n_free=n_free,
                         singular_clusters=bound.singular_clusters, n_dropped=bound.n_dropped)


def check_candidate_metrics(problem: LMNNProblem, metrics, clusters: np.ndarray):
    """Validate candidate metrics (C, d, d) one by one (``certificate.check_candidate_metric``).

    Returns ``(metrics, min_eig)`` with the smallest eigenvalue over all clusters as given."""
    M = np.asarray(metrics, dtype=float)
    C = int(clusters.max()) + 1
    if M.ndim != 3 or len(M) != C:
        raise ValueError(f"metrics must have shape (n_clusters, d, d) with n_clusters={C}, "
                         f"got {M.shape}: one metric per cluster (eq. 16).")
    checked, smallest = [], np.inf
    for c in range(C):
        try:
            Mc, eig = check_candidate_metric(problem, M[c])
        except ValueError as err:
            raise ValueError(f"metrics[{c}]: {err}") from None
        checked.append(Mc)
        smallest = min(smallest, eig)
    return np.stack(checked), float(smallest)


@dataclass(frozen=True)
class DualBound:
    """Output of ``mm_dual_lower_bound``."""

    lower: float  # alpha * sum(lambda) after clipping and dropping
    alpha: float
    min_eig_dual: float  # smallest computed eigenvalue of Z_c(alpha lambda) over all clusters
    singular_clusters: tuple
    n_dropped: int


def mm_dual_lower_bound(problem: LMNNProblem, clusters: np.ndarray, triplets, multipliers,
                        space: ReducedSpace | None = None) -> DualBound:
    """Rigorous lower bound on the optimum of sec. 5.2 from multipliers on triplets (T, 3)."""
    space = space or reduced_space(problem)
    t = np.asarray(triplets, dtype=np.intp).reshape(-1, 3)
    lam = boxed_multipliers(multipliers, len(t), problem.mu)
    A = (1.0 - problem.mu) * reduced_pulls(problem, space, clusters)
    shift = _rounding_allowance(problem, space, clusters, t, lam, A)
    singular = [c for c in range(len(A)) if np.linalg.eigvalsh(A[c])[0] <= shift[c]]
    drop = np.isin(clusters[t[:, 2]], singular) & (lam > 0)
    lam[drop] = 0.0
    Q = _reduced_scatter(problem, space, clusters, t, lam)
    impostors = np.bincount(clusters[t[:, 2]], weights=lam, minlength=len(A))
    checked = [c for c in range(len(A)) if impostors[c] > 0]  # others are PSD exactly
    alpha = min((largest_feasible_scale(A[c], Q[c], shift[c]) for c in checked), default=1.0)
    while alpha > 0 and (failing := [c for c in checked
                                     if np.linalg.eigvalsh(A[c] - alpha * Q[c])[0] < shift[c]]):
        alpha = min(bisect_feasible_scale(A[c], Q[c], shift[c], hi=alpha) for c in failing)
    min_eig = min(float(np.linalg.eigvalsh(A[c] - alpha * Q[c])[0]) for c in range(len(A)))
    return DualBound(lower=float(alpha * lam.sum()), alpha=float(alpha), min_eig_dual=min_eig,
                     singular_clusters=tuple(singular), n_dropped=int(drop.sum()))


def _rounding_allowance(problem: LMNNProblem, space: ReducedSpace, clusters: np.ndarray,
                        t: np.ndarray, lam: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``s_c`` of ``certificate.py`` per cluster, from cluster ``c``'s terms; shape (C,)."""
    Xr = space.inputs
    target = lam * np.sum((Xr[t[:, 0]] - Xr[t[:, 1]]) ** 2, axis=1)
    impostor = lam * np.sum((Xr[t[:, 0]] - Xr[t[:, 2]]) ** 2, axis=1)
    C = len(A)
    weight = (np.bincount(clusters[t[:, 1]], weights=target, minlength=C)
              + np.bincount(clusters[t[:, 2]], weights=impostor, minlength=C))
    factor = 8 * (2 * problem.n_samples + space.rank + problem.k) * np.finfo(float).eps
    return factor * (np.linalg.norm(A, axis=(1, 2)) + weight)


def _reduced_scatter(problem: LMNNProblem, space: ReducedSpace, clusters: np.ndarray,
                     triplets: np.ndarray, weights=None) -> np.ndarray:
    """``cluster_triplet_scatter`` in reduced coordinates, shape (C, r, r)."""
    return np.stack([space.matrix(S)
                     for S in cluster_triplet_scatter(problem, clusters, triplets, weights)])


def mm_complementary_multipliers(problem: LMNNProblem, space: ReducedSpace, clusters: np.ndarray,
                                 metrics: np.ndarray, band: float, solver: str = "CLARABEL",
                                 solver_options: dict | None = None):
    """Multipliers for candidate metrics (C, d, d) by complementary slackness.

    Triplets with margin above ``band`` get ``beta_g * mu``, one ``beta_g`` per group
    ``(i, c(j), c(l))`` (``multi_metric_sdp.FixedGroups``), those below ``-band`` get 0
    and those within the band are free in [0, mu]; the dual SDP over the ``beta_g``
    and the free ones maximises the bound. Killable impostors of singular clusters
    (``multi_metric_sdp``) get 0. Returns ``(triplets (T, 3), multipliers (T,),
    n_free, solution)``; ``solution.M_reduced`` minimises the model of
    ``multi_metric_generation`` (aggregated active sets)."""
    near = mm_active_triplets(problem, metrics, clusters, band=band)
    cspaces = cluster_spaces(reduced_pulls(problem, space, clusters))
    near = near[~killable(space, cspaces, clusters, near)]
    margins = mm_triplet_margins(problem, metrics, clusters, near)
    active, free = near[margins > band], near[np.abs(margins) <= band]
    fixed = fixed_groups(space, clusters, active) if len(active) else None
    sol = solve_mm_dual(problem, space, clusters, free, solver, fixed=fixed,
                        solver_options=solver_options)
    tied = problem.mu * sol.beta[fixed.index] if len(active) else np.zeros(0)
    multipliers = np.concatenate([tied, sol.multipliers])
    return np.concatenate([active, free]), multipliers, len(free), sol
