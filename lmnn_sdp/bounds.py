"""Rigorous dual lower bounds for LMNN, in numpy and scipy only (DESIGN.md, "Certificates").

Both sides of the library prove their answers here: ``lmnn_sdp.certify`` with
multipliers from an SDP, ``fast_solver`` with the multipliers of its smoothed
hinge. Nothing in this module imports cvxpy.

Upper bound: ``eps(M)`` of eq. 14 at a candidate ``M`` (any PSD metric is feasible).

Lower bound: for multipliers ``lambda`` in the box ``[0, mu]^T`` on any triplet set,
weak duality gives ``opt >= sum_t lambda_t`` as soon as
``Z(lambda) = (1-mu) P - sum_t lambda_t (C_il - C_ij)`` is PSD. Multipliers are
first clipped into the box, then scaled by the largest ``alpha`` in [0, 1] that
keeps ``Z(alpha lambda) = A - alpha Q`` PSD, so the bound is ``alpha * sum(lambda)``
and no solver status is ever trusted.

``alpha`` comes in closed form from the generalized eigenvalue problem
``Q u = theta (A - s I) u`` when ``A - s I`` is positive definite, and by bisection
otherwise. The shift ``s`` is a rounding allowance: ``Z`` is assembled from
``O(n)``-term sums and its eigenvalues computed in floating point, so we demand
a computed smallest eigenvalue of at least ``s = 8 (2n + r + k) eps (||A||_F +
alpha sum_t lambda_t (|C_ij| + |C_il|))``, which bounds those rounding errors.
All of it runs in a reduced space (``formulation.reduced_space`` by default, or
any basis of the data range such as the fast solver's whitened coordinates),
where ``Z`` is PSD iff it is on the inputs, and every sum is formed there. When the pull matrix is singular on the
data range, ``alpha`` can only be certified where ``Z`` is strictly positive, so
the bound may be weak; the certificate then says ``certified=False`` rather
than claim more. Every sum over triplets runs in blocks, so millions of
multipliers (a fast-solver certificate on 60,000 points) need no ``(T, d)`` array.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from lmnn_sdp.formulation import ReducedSpace, reduced_space
from lmnn_sdp.problem import LMNNProblem, check_triplets

_EPS = np.finfo(float).eps
_BLOCK = 1 << 16  # triplets per block of difference vectors


@dataclass(frozen=True)
class Certificate:
    """Bounds on the LMNN optimum proved for one metric.

    ``upper`` is ``eps(M)``; ``lower`` a rigorous lower bound on the optimum;
    ``relative_gap`` is ``(upper - lower) / upper`` (0 when both are 0);
    ``certified`` is ``relative_gap <= tol``. ``triplets`` (T, 3) and
    ``multipliers`` (T,) are the evidence when kept: ``dual_lower_bound`` of them
    re-derives ``lower``."""

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
    triplets: np.ndarray | None = None
    multipliers: np.ndarray | None = None

    def __repr__(self) -> str:
        verdict = "certified" if self.certified else "NOT certified"
        return (f"Certificate({verdict}: upper={self.upper:.10g}, lower={self.lower:.10g}, "
                f"relative_gap={self.relative_gap:.3g}, tol={self.tol:g}, "
                f"alpha={self.dual_scale:.6g}, multipliers={self.n_multipliers})")


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
    """Rigorous lower bound on the optimum of eq. 14 from multipliers on triplets.

    Parameters
    ----------
    problem : LMNNProblem
    triplets : array-like of int, shape (T, 3)
    multipliers : array-like, shape (T,)
        Clipped into ``[0, mu]`` first.
    space : ReducedSpace, optional
        ``formulation.reduced_space(problem)``, if already computed.

    Returns
    -------
    lower, alpha, min_eig_dual : float
        ``alpha * sum(lambda)``, the scale, and the smallest eigenvalue of
        ``Z(alpha lambda)`` in the reduced space (module docstring).
    """
    space = space or reduced_space(problem)
    t = check_triplets(triplets, problem.n_samples)
    lam = boxed_multipliers(multipliers, len(t), problem.mu)
    n, k = problem.targets.shape
    Xr = space.inputs
    A = (1.0 - problem.mu) * pair_scatter(Xr, np.repeat(np.arange(n), k), problem.targets.ravel(), np.ones(n * k))
    keep = lam > 0
    t, lam = t[keep], lam[keep]
    if len(lam) == 0:
        return 0.0, 1.0, float(np.linalg.eigvalsh(A)[0])
    Q = pair_scatter(Xr, np.concatenate([t[:, 0], t[:, 0]]), np.concatenate([t[:, 2], t[:, 1]]),
                     np.concatenate([lam, -lam]))
    factor = 8 * (2 * problem.n_samples + space.rank + problem.k) * _EPS
    shift = factor * (np.linalg.norm(A) + _weighted_lengths(space.inputs, t, lam))
    alpha = largest_feasible_scale(A, Q, shift)
    min_eig = float(np.linalg.eigvalsh(A - alpha * Q)[0])
    if min_eig < shift:  # the closed form was not accurate enough: bisect
        alpha = bisect_feasible_scale(A, Q, shift, hi=alpha)
        min_eig = float(np.linalg.eigvalsh(A - alpha * Q)[0])
    return float(alpha * lam.sum()), float(alpha), min_eig


def pair_scatter(Xr: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_p w_p (x_a - x_b)(x_a - x_b)^T`` (r, r) for rows ``Xr`` (n, r) through the
    graph Laplacian, ``Xr^T (Deg - W - W^T) Xr``, formed in the given coordinates (so a
    well-conditioned space keeps its accuracy)."""
    n = len(Xr)
    W = sp.coo_matrix((w, (a, b)), shape=(n, n)).tocsr()
    W = W + W.T
    laplacian = sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W
    S = Xr.T @ (laplacian @ Xr)
    return (S + S.T) / 2


def _weighted_lengths(Xr: np.ndarray, t: np.ndarray, lam: np.ndarray) -> float:
    """``sum_t lambda_t (|x_i - x_j|^2 + |x_i - x_l|^2)`` in blocks of ``_BLOCK`` triplets."""
    total = 0.0
    for start in range(0, len(t), _BLOCK):
        s, w = t[start:start + _BLOCK], lam[start:start + _BLOCK]
        a, b = Xr[s[:, 0]] - Xr[s[:, 1]], Xr[s[:, 0]] - Xr[s[:, 2]]
        total += float(w @ (np.einsum("tr,tr->t", a, a) + np.einsum("tr,tr->t", b, b)))
    return total


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
