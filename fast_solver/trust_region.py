"""Trust-region Newton with truncated conjugate gradients (Steihaug 1983; Nocedal & Wright, Alg. 7.2).

Minimises a smooth function from its value, gradient and Hessian-vector
products. Each iteration solves the quadratic model within the trust radius by
conjugate gradients, stopped at the boundary, at negative curvature (followed
to the boundary) or at the forcing tolerance ``min(0.5, sqrt(|g|)) |g|``; the
radius grows after good steps that reach it and shrinks after poor ones.
Written here rather than taken from SciPy so that the caller's stopping rule
decides, and a zero gradient at a saddle is reported instead of producing NaN.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MAX_CG = 250
MIN_RADIUS_RATIO = 1e-14


@dataclass
class TrustRegionResult:
    """``x`` the last accepted point; ``nit`` iterations; ``reason`` why it stopped:
    ``"stop"`` (the caller's rule), ``"budget"``, ``"stationary"`` (zero gradient) or
    ``"radius"`` (the trust region collapsed: no decrease is measurable)."""

    x: np.ndarray
    nit: int
    reason: str


def minimize(fun: Callable, hessp: Callable, x0: np.ndarray, radius: float, max_iter: int,
             stop: Callable[[np.ndarray], bool], max_radius: Callable[[np.ndarray], float]) -> TrustRegionResult:
    """Trust-region Newton-CG from ``x0``.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)``; it also fixes the point ``hessp`` acts at.
    hessp : callable
        ``hessp(v) -> H(x) v`` at the point of the last ``fun`` call.
    x0 : ndarray
    radius : float
        Initial trust radius.
    max_iter : int
    stop : callable
        ``stop(x) -> bool`` after every accepted step, right after ``fun(x)``.
    max_radius : callable
        ``max_radius(x)``: largest radius allowed at ``x``.
    """
    x = x0
    value, grad = fun(x)
    for nit in range(1, max_iter + 1):
        g_norm = np.linalg.norm(grad)
        if g_norm == 0.0:
            return TrustRegionResult(x, nit - 1, "stationary")
        step, model_decrease, at_boundary = _steihaug(grad, hessp, radius, min(0.5, np.sqrt(g_norm)) * g_norm)
        trial_value, trial_grad = fun(x + step)
        actual = value - trial_value
        ratio = actual / model_decrease if model_decrease > 0 else -np.inf
        if ratio < 0.25:
            radius *= 0.25
        elif ratio > 0.75 and at_boundary:
            radius = min(2.0 * radius, max_radius(x + step))
        if ratio > 0.1 and actual > 0:
            x, value, grad = x + step, trial_value, trial_grad
            if stop(x):
                return TrustRegionResult(x, nit, "stop")
        else:
            value, grad = fun(x)
            if radius <= MIN_RADIUS_RATIO * max(np.linalg.norm(x), 1.0):
                return TrustRegionResult(x, nit, "radius")
    return TrustRegionResult(x, max_iter, "budget")


def _steihaug(grad: np.ndarray, hessp: Callable, radius: float, tolerance: float):
    """Approximate minimiser of ``g.p + p.H p / 2`` over ``|p| <= radius``.

    Returns the step, the model decrease ``-(g.p + p.H p / 2)`` and whether the
    step lies on the boundary."""
    p = np.zeros_like(grad)
    Hp = np.zeros_like(grad)
    residual = grad.copy()
    direction = -residual
    rr = residual @ residual
    for _ in range(MAX_CG):
        Hd = hessp(direction)
        curvature = direction @ Hd
        if curvature <= 0:
            tau = _to_boundary(p, direction, radius)
            return _finish(grad, p + tau * direction, Hp + tau * Hd, True)
        alpha = rr / curvature
        if np.linalg.norm(p + alpha * direction) >= radius:
            tau = _to_boundary(p, direction, radius)
            return _finish(grad, p + tau * direction, Hp + tau * Hd, True)
        p, Hp = p + alpha * direction, Hp + alpha * Hd
        residual = residual + alpha * Hd
        rr_new = residual @ residual
        if np.sqrt(rr_new) <= tolerance:
            break
        direction = -residual + (rr_new / rr) * direction
        rr = rr_new
    return _finish(grad, p, Hp, False)


def _to_boundary(p: np.ndarray, d: np.ndarray, radius: float) -> float:
    """The ``tau >= 0`` with ``|p + tau d| = radius``."""
    a, b, c = d @ d, 2.0 * (p @ d), p @ p - radius**2
    return (-b + np.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a)


def _finish(grad, p, Hp, at_boundary):
    return p, -(grad @ p + 0.5 * (p @ Hp)), at_boundary
