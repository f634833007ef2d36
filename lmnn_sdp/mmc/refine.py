r"""Refinement of a solver's MMC metric: the generalised power method, numpy only.

In whitened coordinates (``lmnn_sdp.mmc.bound``, step 3; ``w_p = W^T u_p`` the rows of
``Uw`` (P, r)) (MMC) reads ``max sum_p sqrt(w_p^T B w_p)`` s.t. ``trace(B) <= 1``,
``B`` PSD. Writing ``B = L L^T`` (L of shape (r, r)) turns it into the maximisation
of a convex function on the unit sphere::

    max  phi(L) = sum_p ||L^T w_p||   s.t.  ||L||_F = 1.

phi is positively homogeneous of degree 1 and convex, so for any subgradient
``Gamma`` at ``L`` (``<Gamma, L> = phi(L)``, Euler), the step ``L' = Gamma / ||Gamma||_F``
climbs: ``phi(L') >= <Gamma, L'> = ||Gamma||_F >= <Gamma, L> = phi(L)`` (convexity,
then Cauchy-Schwarz). That is the generalised power method of Journee, Nesterov,
Richtarik & Sepulchre (JMLR 2010): ``L' = argmax_{||Y||_F = 1} <Gamma, Y>``. Here ``Gamma = 2 G L`` with
``G = sum_p w_p w_p^T / (2 s_p)``, ``s_p = sqrt(w_p^T B w_p)`` (a pair with ``s_p = 0``
contributes the subgradient 0), so in terms of ``B``::

    B  <-  G B G / trace(G B G).                                                  (GPM)

Over diagonal metrics ``L = diag(l)`` and only ``diag(G)`` matters:
``b <- g^2 b / <g^2, b>`` with ``g = diag(G)``. The iteration needs neither
smoothness nor a step size, keeps ``B`` PSD with unit trace, and its fixed points are
the KKT points of (MMC): ``G B = lambda B`` with ``lambda = lambda_max(G)``. Near a
rank-deficient optimum (the usual case: iris and wine have rank-one optima) the
spurious eigenvalues that an interior-point solver leaves behind shrink by
``(g_j / lambda)^2`` per step; those are what make the solver's own certified gap
depend on its stopping point.

Progress is measured by the gap of (WD) at tangents ``s`` (``bound.py``, step 4:
``sqrt(2 lambda_max(G) sum(s))`` against ``f = sum(s)``), an estimate that costs one
(r, r) eigenvalue problem per step; the certificate proper is computed afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_STEPS = 2000  # (GPM) steps per refinement
STALL = 50  # steps in which neither the objective rises nor the estimated gap shrinks
START_FLOOR = 1e-12  # eigenvalues (weights) of a start lifted to this fraction of the largest


@dataclass(frozen=True)
class Refinement:
    """A refined whitened metric and how it got there.

    ``B`` is (r, r) PSD with unit trace, or (r,) >= 0 summing to 1 (diagonal);
    ``gap`` is the estimated gap at ``B`` after ``steps`` steps."""

    B: np.ndarray
    steps: int
    gap: float


def refine(Uw: np.ndarray, start: np.ndarray, diagonal: bool, target: float) -> Refinement:
    """(GPM) from ``start`` until the estimated gap is at most ``target``, ``STALL`` steps
    pass in which neither the objective rises (it does at every step in exact
    arithmetic) nor the estimated gap reaches a new low, or ``MAX_STEPS`` run out.
    Returns the step with the smallest estimated gap.

    Parameters
    ----------
    Uw : ndarray of shape (P, r)
        Whitened dissimilar differences.
    start : ndarray of shape (r, r) or (r,)
        PSD with unit trace (``start_point`` of a solver's whitened metric).
    diagonal : bool
    target : float
        Estimated gap at which to stop (the certificate's rounding allowance).
    """
    Uw = Uw[np.any(Uw != 0, axis=1)]  # identical points: 0 in f for every metric
    B, value, progress = start, -np.inf, 0
    best = None
    for step in range(MAX_STEPS + 1):
        roots = np.sqrt(np.maximum(_distances(Uw, B, diagonal), 0.0))
        G = _half_gradient(Uw, roots, diagonal)
        gap = _estimated_gap(G, roots, diagonal)
        if best is None or gap < best[1]:
            best, progress = (B, gap), step
        if np.sum(roots) > value:
            value, progress = np.sum(roots), step
        if gap <= target or step - progress >= STALL:
            break
        B = _power_step(G, B, diagonal)
    return Refinement(best[0], step, best[1])


def start_point(B: np.ndarray, diagonal: bool) -> np.ndarray:
    """A solver's whitened ``B`` (r, r) or (r,) made PSD (non-negative) with unit trace, its
    eigenvalues (weights) lifted to ``START_FLOOR`` of the largest so that (GPM), which
    keeps a zero direction at zero, loses none for good. A RuntimeError when ``B`` has
    no positive part: the solver failed."""
    if diagonal:
        top = B.max()
        if not top > 0:
            raise RuntimeError("the solver returned the zero metric")
        b = np.maximum(B, START_FLOOR * top)
        return b / b.sum()
    eigval, eigvec = np.linalg.eigh((B + B.T) / 2)
    if not eigval[-1] > 0:
        raise RuntimeError("the solver returned no positive semidefinite metric")
    eigval = np.maximum(eigval, START_FLOOR * eigval[-1])
    return (eigvec * (eigval / eigval.sum())) @ eigvec.T


def _distances(Uw: np.ndarray, B: np.ndarray, diagonal: bool) -> np.ndarray:
    """``w_p^T B w_p`` (P,)."""
    return Uw**2 @ B if diagonal else np.einsum("pr,rs,ps->p", Uw, B, Uw)


def _half_gradient(Uw: np.ndarray, roots: np.ndarray, diagonal: bool) -> np.ndarray:
    """``G = sum_{s_p > 0} w_p w_p^T / (2 s_p)`` (r, r), or its diagonal (r,)."""
    with np.errstate(divide="ignore"):
        weights = np.where(roots > 0, 0.5 / roots, 0.0)
    if diagonal:
        return weights @ Uw**2
    return (Uw * weights[:, None]).T @ Uw


def _estimated_gap(G: np.ndarray, roots: np.ndarray, diagonal: bool) -> float:
    """``1 - f / sqrt(2 lambda sum(s))`` at tangents ``s = roots`` (inf if a root is 0)."""
    if not roots.min() > 0:
        return np.inf
    lam = G.max() if diagonal else np.linalg.eigvalsh(G)[-1]
    return float(1.0 - np.sum(roots) / np.sqrt(2.0 * lam * np.sum(roots)))


def _power_step(G: np.ndarray, B: np.ndarray, diagonal: bool) -> np.ndarray:
    """(GPM): ``G B G / trace(G B G)``, or ``g^2 b / <g^2, b>``."""
    if diagonal:
        b = G**2 * B
        return b / b.sum()
    B = G @ B @ G
    B = (B + B.T) / 2
    return B / np.trace(B)
