r"""Xing et al.'s diagonal problem (XING) by a projected Newton method, in whitened coordinates.

Xing, Ng, Jordan & Russell (NIPS 2002, sec. 2.1) minimise
``g(a) = sum_S D_a - log(sum_D sqrt(D_a))`` over ``a >= 0`` by Newton-Raphson. In the
whitened coordinates of ``lmnn_sdp.mmc.bound`` (step 3; ``sum_S D_b = sum(b)``) that is::

    phi(b) = sum(b) - log f(b),   f(b) = sum_p sqrt(<a_p, b>),   a_p = w_p * w_p,   b >= 0,

convex, with ``grad phi = 1 - g / f`` and ``hess phi = H / f + g g^T / f^2`` for
``g = sum a_p / (2 s_p)`` and ``H = sum a_p a_p^T / (4 s_p^3)`` (``s_p = sqrt(<a_p, b>)``),
one pass over the pairs (``fast_solver.mmc.compiled.xing_sums``). Its minimiser has
``sum(b) = 1/2`` and solves (MMC) over diagonal metrics ((XING-MMC)).

Some weights are 0 at the optimum, so the iteration is Bertsekas's projected Newton
method (SIAM J. Control Optim. 20, 1982): weights within ``epsilon`` of 0 whose
derivative is positive are held at 0 and moved by a scaled gradient step, Newton's
step moves the others, and an Armijo search runs along the projected arc
``max(b + t d, 0)``. A weight of 0 can hide an infinite slope: a pair that differs only
in features of weight 0 has ``s_p = 0``, and ``sqrt`` grows without bound at 0
(docs/design/fast-mmc.md). The pass reports each weight's collapsed mass ``C_k = sum |w_pk|``
over such pairs; a held weight with ``C_k > 0`` is
first released to the minimiser ``t = (C_k / (2 f dphi_k))^2`` of its model
``phi + t dphi_k - sqrt(t) C_k / f``. The iteration stops when the estimated gap of
``lmnn_sdp.mmc.refine`` is at most ``target``, when Newton's decrement ``-grad . d``
on the free weights falls below ``target^2`` with no held weight wanting to grow (the
bound is more sensitive to small weights than ``phi`` is, and the last iterations are
quadratic), or when the search stalls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

EPSILON = 1e-3  # largest width of the band of weights held at 0
ARMIJO = 1e-4
SHORTEST_STEP = 1e-12


@dataclass(frozen=True)
class XingSums:
    """``f``, ``g`` (r,), ``H`` (r, r) (None when not asked) and the collapsed mass ``C``
    (r,) at ``b``."""

    value: float
    g: np.ndarray
    H: np.ndarray | None
    collapsed: np.ndarray


@dataclass(frozen=True)
class NewtonRun:
    """Where the iteration stopped: ``b`` (r,), iterations, the estimated gap and why
    (``"target"``, ``"decrement"``, ``"max_iter"`` or ``"stalled"``)."""

    b: np.ndarray
    iterations: int
    gap: float
    stop: str


def projected_newton(sums: Callable[[np.ndarray, bool], XingSums], b: np.ndarray,
                     target: float, max_iter: int, callback: Callable | None = None,
                     start: int = 0, save: Callable[[int, np.ndarray], None] | None = None) -> NewtonRun:
    """Minimise ``phi`` from ``b`` (r,) >= 0 (module docstring); ``sums(b, hessian)`` is one
    pass over the pairs, ``callback(iteration, f, gap)`` follows every iteration. The method
    carries nothing but ``b`` from one iteration to the next: ``save(iteration, b)`` is called
    at the top of every iteration, and ``projected_newton(sums, b, ..., start=iteration)``
    continues from there exactly as the loop would have."""
    for iteration in range(start, max_iter + 1):
        if save is not None:
            save(iteration, b)
        at = sums(b, True)
        gap = estimated_gap(b, at)
        if callback is not None:
            callback(iteration, at.value, gap)
        if gap <= target:
            return NewtonRun(b, iteration, gap, "target")
        if iteration == max_iter:
            return NewtonRun(b, iteration, gap, "max_iter")
        gradient = 1.0 - at.g / at.value
        direction, held = _direction(b, gradient, at)
        released = _release(sums, b, at, gradient, held)
        decrement = -gradient[~held] @ direction[~held]
        if released is None and decrement <= target**2 and not np.any(held & (gradient < 0)):
            return NewtonRun(b, iteration, gap, "decrement")
        step = released if released is not None else _search(sums, b, at, gradient,
                                                               direction, held, decrement)
        if step is None:
            return NewtonRun(b, iteration, gap, "stalled")
        b = step
    raise AssertionError("unreachable")  # pragma: no cover


def estimated_gap(b: np.ndarray, at: XingSums) -> float:
    """``lmnn_sdp.mmc.refine``'s estimate at the unit-sum rescaling of ``b``:
    ``1 - sqrt(f / (2 sum(b) max g))`` (inf when a pair is collapsed)."""
    if at.collapsed.any() or not at.value > 0:
        return np.inf
    return float(1.0 - np.sqrt(at.value / (2.0 * b.sum() * at.g.max())))


def _direction(b: np.ndarray, gradient: np.ndarray,
               at: XingSums) -> tuple[np.ndarray, np.ndarray]:
    """Bertsekas's direction (r,) and the held weights (bool, r)."""
    hessian = at.H / at.value + np.outer(at.g, at.g) / at.value**2
    band = min(EPSILON, float(np.linalg.norm(b - np.maximum(b - gradient, 0.0))))
    held = (b <= band) & (gradient > 0)
    free = ~held
    direction = np.zeros_like(b)
    diagonal = np.diag(hessian)
    direction[held] = -gradient[held] / np.maximum(diagonal[held], np.finfo(float).tiny)
    block = hessian[np.ix_(free, free)]
    ridge = 1e-14 * max(float(np.abs(np.diag(block)).max(initial=0.0)), 1.0)
    direction[free] = -np.linalg.solve(block + ridge * np.eye(len(block)), gradient[free])
    return direction, held


def _release(sums, b, at, gradient, held) -> np.ndarray | None:
    """``b`` with the held weights of positive collapsed mass moved to the minimisers of
    their models (module docstring), halved until ``phi`` falls; None if there are none."""
    hidden = held & (at.collapsed > 0)
    if not hidden.any():
        return None
    phi = b.sum() - np.log(at.value)
    jump = np.zeros_like(b)
    jump[hidden] = (at.collapsed[hidden] / (2.0 * at.value * gradient[hidden])) ** 2
    while jump.max() > SHORTEST_STEP * b.max():
        trial = b + jump
        if trial.sum() - np.log(sums(trial, False).value) < phi:
            return trial
        jump /= 2
    return None


def _search(sums, b, at, gradient, direction, held, decrement) -> np.ndarray | None:
    """Armijo's search along ``max(b + t d, 0)``, halving ``t`` from 1; None if it stalls."""
    phi = b.sum() - np.log(at.value)
    t = 1.0
    while t >= SHORTEST_STEP:
        trial = np.maximum(b + t * direction, 0.0)
        value = sums(trial, False).value
        if value > 0:
            drop = t * decrement + gradient[held] @ (b - trial)[held]
            if trial.sum() - np.log(value) <= phi - ARMIJO * drop:
                return trial
        t /= 2
    return None
