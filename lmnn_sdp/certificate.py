"""Rigorous optimality certificates for LMNN metrics (DESIGN.md, "Certificates").

Upper bound: ``eps(M)`` of eq. 14 at the candidate ``M`` (any PSD metric is feasible).

Lower bound: for multipliers ``lambda`` in the box ``[0, mu]^T`` on any triplet set,
weak duality gives ``opt >= sum_t lambda_t`` as soon as
``Z(lambda) = (1-mu) P - sum_t lambda_t (C_il - C_ij)`` is PSD. Multipliers from a
solver are first clipped into the box, then scaled by the largest ``alpha`` in
[0, 1] that keeps ``Z(alpha lambda) = A - alpha Q`` PSD, so the bound is
``alpha * sum(lambda)`` and no solver status is ever trusted.

``alpha`` comes in closed form from the generalized eigenvalue problem
``Q u = theta (A - s I) u`` when ``A - s I`` is positive definite, and by bisection
otherwise. The shift ``s`` is a rounding allowance: ``Z`` is assembled from
``O(n)``-term sums and its eigenvalues computed in floating point, so we demand
a computed smallest eigenvalue of at least ``s = 8 (2n + r + k) eps (||A||_F +
alpha sum_t lambda_t (|C_ij| + |C_il|))``, which bounds those rounding errors.
All of it runs in the reduced space of ``formulation`` (the data range, where
``Z`` is PSD iff it is on the inputs). When the pull matrix is singular on the
data range, ``alpha`` can only be certified where ``Z`` is strictly positive, so
the bound may be weak; the certificate then says ``certified=False`` rather
than claim more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from lmnn_sdp.dual import complementary_multipliers
from lmnn_sdp.formulation import ReducedSpace, reduced_space
from lmnn_sdp.problem import LMNNProblem

_EPS = np.finfo(float).eps


@dataclass(frozen=True)
class Certificate:
    """Bounds on the LMNN optimum proved for one metric.

    ``upper`` is ``eps(M)``; ``lower`` a rigorous lower bound on the optimum;
    ``relative_gap`` is ``(upper - lower) / upper`` (0 when both are 0);
    ``certified`` is ``relative_gap <= tol``."""

    upper: float
    lower: float
    relative_gap: float
    certified: bool
    tol: float
    min_eig_metric: float  # smallest eigenvalue of M
    min_eig_dual: float  # smallest eigenvalue of Z(alpha lambda), reduced space
    dual_scale: float  # alpha
    n_multipliers: int  # triplets carrying a multiplier
    n_free: int  # of which free in the complementary-slackness SDP (0 if given)

    def __repr__(self) -> str:
        verdict = "certified" if self.certified else "NOT certified"
        return (f"Certificate({verdict}: upper={self.upper:.10g}, lower={self.lower:.10g}, "
                f"relative_gap={self.relative_gap:.3g}, tol={self.tol:g}, "
                f"alpha={self.dual_scale:.6g}, multipliers={self.n_multipliers})")


def certify(problem: LMNNProblem, M, *, triplets=None, multipliers=None, tol: float = 1e-6,
            band: float = 1e-3, solver: str = "CLARABEL", solver_options: dict | None = None,
            space: ReducedSpace | None = None) -> Certificate:
    """Certify how close the metric ``M`` (d, d) is to the LMNN optimum.

    With ``triplets`` (T, 3) and ``multipliers`` (T,) (for example from an SDP
    solve) the lower bound uses those. Otherwise the multipliers come from
    complementary slackness at ``M`` (``dual.complementary_multipliers``): fixed
    at ``mu`` above the margin band, 0 below it, free within ``band``."""
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol}.")
    M, min_eig = check_candidate_metric(problem, M)
    space = space or reduced_space(problem)
    upper = problem.objective(M)
    n_free = 0
    if (triplets is None) != (multipliers is None):
        raise ValueError("pass triplets and multipliers together, or neither.")
    if triplets is None:
        triplets, multipliers, n_free = complementary_multipliers(
            problem, space, M, band, solver, solver_options)
    lower, alpha, min_eig_dual = dual_lower_bound(problem, triplets, multipliers, space)
    gap = relative_gap(upper, lower)
    return Certificate(upper=upper, lower=lower, relative_gap=gap, certified=bool(gap <= tol),
                       tol=float(tol), min_eig_metric=min_eig, min_eig_dual=min_eig_dual,
                       dual_scale=alpha, n_multipliers=len(triplets), n_free=n_free)


def relative_gap(upper: float, lower: float) -> float:
    """``(upper - lower) / upper``; 0 when ``lower >= upper`` (both bounds exact)."""
    if lower >= upper:
        return 0.0
    return (upper - lower) / upper if upper > 0 else np.inf


def boxed_multipliers(multipliers, n_triplets: int, mu: float) -> np.ndarray:
    """Multipliers (T,) clipped into the box ``[0, mu]`` (part of dual feasibility);
    a clear error for a wrong shape or non-finite entries."""
    lam = np.asarray(multipliers, dtype=float)
    if lam.shape != (n_triplets,):
        raise ValueError(f"multipliers must have shape ({n_triplets},), got {lam.shape}.")
    if not np.all(np.isfinite(lam)):
        raise ValueError("multipliers contain NaN or infinity (did the solver fail?).")
    return np.clip(lam, 0.0, mu)


def dual_lower_bound(problem: LMNNProblem, triplets, multipliers,
                     space: ReducedSpace | None = None) -> tuple[float, float, float]:
    """Rigorous lower bound from multipliers on triplets (T, 3).

    Returns ``(lower, alpha, min_eig_dual)``; see the module docstring."""
    space = space or reduced_space(problem)
    lam = boxed_multipliers(multipliers, len(triplets), problem.mu)
    A = (1.0 - problem.mu) * space.matrix(problem.pull_matrix())
    if lam.sum() == 0:
        return 0.0, 1.0, float(np.linalg.eigvalsh(A)[0])
    t = np.asarray(triplets, dtype=np.intp)
    Q = space.matrix(problem.triplet_scatter(t, lam))
    Xr = space.inputs
    weight = np.sum(lam * (np.sum((Xr[t[:, 0]] - Xr[t[:, 1]]) ** 2, axis=1)
                           + np.sum((Xr[t[:, 0]] - Xr[t[:, 2]]) ** 2, axis=1)))
    factor = 8 * (2 * problem.n_samples + space.rank + problem.k) * _EPS
    shift = factor * (np.linalg.norm(A) + weight)
    alpha = largest_feasible_scale(A, Q, shift)
    min_eig = float(np.linalg.eigvalsh(A - alpha * Q)[0])
    if min_eig < shift:  # the closed form was not accurate enough: bisect
        alpha = bisect_feasible_scale(A, Q, shift, hi=alpha)
        min_eig = float(np.linalg.eigvalsh(A - alpha * Q)[0])
    return float(alpha * lam.sum()), float(alpha), min_eig


def largest_feasible_scale(A: np.ndarray, Q: np.ndarray, shift: float = 0.0) -> float:
    """Largest ``alpha`` in [0, 1] with ``A - alpha Q - shift I`` PSD; A, Q of shape (r, r)."""
    A_shifted = A - shift * np.eye(len(A))
    if np.linalg.eigvalsh(A_shifted)[0] <= 0:
        return bisect_feasible_scale(A, Q, shift, hi=1.0)
    theta = scipy.linalg.eigh(Q, A_shifted, eigvals_only=True)[-1]
    return 1.0 if theta <= 1.0 else float(1.0 / theta)


def bisect_feasible_scale(A: np.ndarray, Q: np.ndarray, shift: float, hi: float) -> float:
    """Bisection for ``largest_feasible_scale`` below ``hi`` (60 halvings)."""
    def feasible(alpha: float) -> bool:
        return np.linalg.eigvalsh(A - alpha * Q)[0] >= shift

    if feasible(hi):
        return hi
    lo = 0.0
    if not feasible(lo):
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
    return lo


def check_candidate_metric(problem: LMNNProblem, M, psd_tol: float = 1e-8):
    """Validate a candidate metric (d, d): finite, symmetric, PSD up to rounding.

    Eigenvalues in ``[-psd_tol * ||M||, 0)`` are rounding and set to 0, so the
    upper bound is the objective of a feasible metric. Returns ``(M, min_eig)``
    with ``min_eig`` the smallest eigenvalue of the matrix as given."""
    M = problem.check_metric(M)
    size = max(np.abs(M).max(), np.finfo(float).tiny)
    asymmetry = np.abs(M - M.T).max()
    if asymmetry > 1e-10 * size:
        raise ValueError(f"M is not symmetric (max |M - M^T| = {asymmetry:.3g}); a Mahalanobis "
                         "metric is symmetric: pass (M + M.T) / 2 if that is what you meant.")
    M = (M + M.T) / 2
    eigenvalues, vectors = np.linalg.eigh(M)
    if eigenvalues[0] < -psd_tol * size:
        raise ValueError(f"M is not positive semidefinite (smallest eigenvalue "
                         f"{eigenvalues[0]:.3g}); only PSD matrices are metrics. Project it "
                         "onto the PSD cone yourself if that is what you meant.")
    if eigenvalues[0] < 0:
        M = (vectors * np.maximum(eigenvalues, 0.0)) @ vectors.T
    return M, float(eigenvalues[0])
