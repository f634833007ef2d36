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
rank-deficient optimum (the usual case) the
spurious eigenvalues that an interior-point solver leaves behind shrink by
``(g_j / lambda)^2`` per step; those are what make the solver's own certified gap
depend on its stopping point.

Progress is measured by the gap of (WD) at tangents ``s`` (``bound.py``, step 4:
``sqrt(2 lambda_max(G) sum(s))`` against ``f = sum(s)``), an estimate that costs one
(r, r) eigenvalue problem per step; the certificate proper is computed afterwards.

``ascend`` runs (GPM) on any oracle for ``f`` and ``G`` (here the whitened differences
(P, r); ``fast_solver.mmc.solver`` sums over implicit label pairs) and can extrapolate it
(Anderson acceleration, Walker & Ni, SIAM J. Numer. Anal. 49, 2011): the next point
is the combination of the last ``memory`` steps ``B_i -> T(B_i)`` whose residuals
``T(B_i) - B_i`` combine to the smallest norm, taken back to the cone by
``start_point``. The objective is then no longer monotone, so a step below the best
objective restarts from the best point.

Design note: docs/design/mmc.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

MAX_STEPS = 2000  # (GPM) steps per refinement
STALL = 50  # steps in which neither the objective rises nor the estimated gap shrinks
START_FLOOR = 1e-12  # eigenvalues (weights) of a start lifted to this fraction of the largest


@dataclass(frozen=True)
class Gradient:
    """``f(B) = sum_p s_p``, ``G`` (r, r) (or its diagonal (r,)) and whether some pair with
    ``w_p != 0`` has ``s_p = 0`` (then the estimated gap is infinite)."""

    value: float
    G: np.ndarray
    collapsed: bool


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
    return ascend(lambda B: explicit_gradient(Uw, B, diagonal), start, diagonal, target)


def ascend(gradient: Callable[[np.ndarray], Gradient], start: np.ndarray, diagonal: bool,
           target: float, max_steps: int = MAX_STEPS, memory: int = 0,
           callback: Callable | None = None, resume: Ascent | None = None,
           save: Callable[[Ascent], None] | None = None) -> Refinement:
    """``refine``'s loop on the oracle ``gradient(B) -> Gradient``, with Anderson
    extrapolation over ``memory`` steps when ``memory >= 2`` (module docstring);
    ``callback(step, value, gap)`` after every step. ``save(ascent)`` is called at the top
    of every step with the loop's whole state (an ``Ascent``, updated in place as the loop
    goes on); ``ascend(..., resume=ascent)`` continues from it exactly as the loop would have."""
    s = Ascent(0, start) if resume is None else resume
    while True:
        if save is not None:
            save(s)
        at = gradient(s.B)
        gap = _estimated_gap(at, diagonal)
        if callback is not None:
            callback(s.step, at.value, gap)
        if s.best is None or gap < s.best[1]:
            s.best, s.progress = (s.B, gap), s.step
        if at.value > s.value:
            s.value, s.progress, s.peak = at.value, s.step, (s.B, at)
        elif memory >= 2 and at.value < s.value * (1 - 1e-12):
            s.history, (s.B, at) = [], s.peak  # extrapolation lost ground: restart from the peak
        if gap <= target or s.step - s.progress >= STALL or s.step >= max_steps:
            return Refinement(s.best[0], s.step, s.best[1])
        s.B = _next_point(s.history, s.B, _power_step(at.G, s.B, diagonal), diagonal, memory)
        s.step += 1


@dataclass
class Ascent:
    """What ``ascend`` carries from one step to the next: from it the loop continues exactly.

    ``B`` is the point of step ``step``; ``value`` the highest objective seen, at ``peak``
    ``(B, Gradient)``; ``best`` the ``(B, gap)`` of the smallest estimated gap; ``progress``
    the last step that improved either; ``history`` Anderson's raveled ``(B_i, T(B_i))`` pairs."""

    step: int
    B: np.ndarray
    value: float = -np.inf
    progress: int = 0
    best: tuple | None = None
    peak: tuple | None = None
    history: list = field(default_factory=list)


def explicit_gradient(Uw: np.ndarray, B: np.ndarray, diagonal: bool) -> Gradient:
    """The ``Gradient`` of the whitened differences ``Uw`` (P, r), rows nonzero, at ``B``."""
    roots = np.sqrt(np.maximum(_distances(Uw, B, diagonal), 0.0))
    return Gradient(float(np.sum(roots)), _half_gradient(Uw, roots, diagonal),
                    bool(len(roots) and roots.min() == 0))


def metric_of(W: np.ndarray, B: np.ndarray, diagonal: bool) -> np.ndarray:
    """``A = W B W^T`` (d, d) from a whitened ``B`` (r, r), or ``W diag(b) W^T``."""
    return (W * B) @ W.T if diagonal else W @ ((B + B.T) / 2) @ W.T


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


def _estimated_gap(at: Gradient, diagonal: bool) -> float:
    """``1 - f / sqrt(2 lambda f)`` at tangents ``s = roots`` (inf if a root is 0)."""
    if at.collapsed or not at.value > 0:
        return np.inf
    lam = at.G.max() if diagonal else np.linalg.eigvalsh(at.G)[-1]
    return float(1.0 - at.value / np.sqrt(2.0 * lam * at.value))


def _next_point(history: list, B: np.ndarray, stepped: np.ndarray, diagonal: bool,
                memory: int) -> np.ndarray:
    """The (GPM) point ``stepped = T(B)``, or with ``memory >= 2`` the Anderson combination
    of the last ``memory`` pairs ``(B_i, T(B_i))`` (``history`` is updated in place)."""
    if memory < 2:
        return stepped
    history.append((B.ravel(), stepped.ravel()))
    del history[:-memory]
    if len(history) < 2:
        return stepped
    residuals = np.array([t - b for b, t in history])
    gram = residuals @ residuals.T
    gram += 1e-14 * np.trace(gram) * np.eye(len(gram))
    weights = np.linalg.solve(gram, np.ones(len(gram)))
    combined = (weights / weights.sum()) @ np.array([t for _, t in history])
    return start_point(combined.reshape(B.shape), diagonal)


def _power_step(G: np.ndarray, B: np.ndarray, diagonal: bool) -> np.ndarray:
    """(GPM): ``G B G / trace(G B G)``, or ``g^2 b / <g^2, b>``."""
    if diagonal:
        b = G**2 * B
        return b / b.sum()
    B = G @ B @ G
    B = (B + B.T) / 2
    return B / np.trace(B)
