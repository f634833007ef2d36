"""Trust-region Newton with truncated conjugate gradients and a line search along the step.

Each iteration solves the quadratic model within the trust radius by conjugate
gradients (Steihaug 1983; Nocedal & Wright, Alg. 7.2), stopped at the boundary, at
negative curvature (followed to the boundary) or at the forcing tolerance
``min(0.5, sqrt(|g|)) |g|``, and then, instead of accepting or rejecting that step by
the model's prediction, searches for the best multiple of it (trust region and line
search combined, as Nocedal & Yuan 1998): the radius follows the multiple found.
Written here rather than taken from SciPy so that the caller's stopping rule
decides, the caller's exact line search is used, and a zero gradient at a saddle is
reported instead of producing NaN.

Why the line search: ``docs/design/fast-lmnn-solver.md``, "Line searches on changes".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fast_solver.lmnn.options import SolverOptions


@dataclass
class TrustRegionResult:
    """``x`` the last accepted point; ``nit`` iterations; ``reason`` why it stopped:
    ``"stop"`` (the caller's rule), ``"budget"``, ``"stationary"`` (zero gradient) or
    ``"radius"`` (the trust region collapsed: no decrease is found)."""

    x: np.ndarray
    nit: int
    reason: str


def flat(apply: Callable, shape: tuple) -> Callable:
    """``apply`` on arrays of ``shape`` as a function of flat vectors (a preconditioner)."""
    return lambda v: apply(v.reshape(shape)).ravel()


def minimize(fun: Callable, hessp: Callable, line: Callable, x0: np.ndarray, radius: float,
             max_iter: int, stop: Callable[[np.ndarray], bool],
             max_radius: Callable[[np.ndarray], float],
             preconditioner: Callable[[], Callable] | None = None,
             max_cg: int = SolverOptions.max_cg,
             min_radius_ratio: float = SolverOptions.min_radius_ratio) -> TrustRegionResult:
    """Trust-region Newton-CG with a line search from ``x0``.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)``; it also fixes the point ``hessp`` and ``line`` act at.
    hessp : callable
        ``hessp(v) -> H(x) v`` at the point of the last ``fun`` call.
    line : callable
        ``line(p, t_max) -> (t, change)``: a multiple ``t`` in ``[0, t_max]`` of the step
        ``p`` from the point of the last ``fun`` call and the change of the function
        there (``(0, 0)`` when none decreases it), e.g. ``lmnn_sdp.core.line_search.ray_minimum``.
        After a decrease the next call of ``fun`` is at ``x + t p``.
    x0 : ndarray
    radius : float
        Initial trust radius.
    max_iter : int
    stop : callable
        ``stop(x) -> bool`` after every accepted step, right after ``fun(x)``.
    max_radius : callable
        ``max_radius(x)``: largest radius (and step) allowed at ``x``.
    preconditioner : callable, optional
        ``preconditioner() -> apply`` at the point of the last ``fun`` call, ``apply(r)`` an
        approximate ``H(x)^-1 r`` (symmetric positive definite): conjugate gradients are
        preconditioned by it (the radius stays Euclidean).
    max_cg : int, default=SolverOptions.max_cg
        Conjugate-gradient steps of one Newton step at most.
    min_radius_ratio : float, default=SolverOptions.min_radius_ratio
        Radius, relative to ``max(|x|, 1)``, at which the trust region has collapsed.

    Radius: a quarter after a search that found no decrease; ``max(2 t |p|, radius / 10)``
    after a multiple ``t < 1/2``; ``min(2 max(radius, t |p|), max_radius)`` after a
    multiple ``t > 1`` or a step on the boundary; unchanged otherwise.
    """
    x = x0
    _, grad = fun(x)
    for nit in range(1, max_iter + 1):
        g_norm = np.linalg.norm(grad)
        if g_norm == 0.0:
            return TrustRegionResult(x, nit - 1, "stationary")
        apply = preconditioner() if preconditioner is not None else None
        step, at_boundary = _steihaug(grad, hessp, radius, min(0.5, np.sqrt(g_norm)) * g_norm, max_cg, apply)
        length = np.linalg.norm(step)
        if length == 0.0:  # a radius of 0: no step to search along
            return TrustRegionResult(x, nit - 1, "radius")
        t, change = line(step, max_radius(x) / length)
        if not change < 0.0:
            radius *= 0.25
            if radius <= min_radius_ratio * max(np.linalg.norm(x), 1.0):
                return TrustRegionResult(x, nit, "radius")
            continue
        x = x + t * step
        if t < 0.5:
            radius = max(2.0 * t * length, 0.1 * radius)
        elif t > 1.0 or at_boundary:
            radius = min(2.0 * max(radius, t * length), max_radius(x))
        _, grad = fun(x)
        if stop(x):
            return TrustRegionResult(x, nit, "stop")
    return TrustRegionResult(x, max_iter, "budget")


def _steihaug(grad: np.ndarray, hessp: Callable, radius: float, tolerance: float, max_cg: int,
              apply: Callable | None = None):
    """Approximate minimiser of ``g.p + p.H p / 2`` over ``|p| <= radius``, by conjugate
    gradients preconditioned by ``apply`` (an approximate ``H^-1``) when given, at most ``max_cg``
    steps.

    The model decreases along every conjugate direction up to its minimiser, so a step cut at
    the (Euclidean) boundary still decreases it. Returns the step and whether it lies on
    the boundary."""
    apply = apply or (lambda r: r)
    p = np.zeros_like(grad)
    residual = grad.copy()
    z = apply(residual)
    direction = -z
    rr = residual @ z
    for _ in range(max_cg):
        Hd = hessp(direction)
        curvature = direction @ Hd
        if curvature <= 0:
            tau = _to_boundary(p, direction, radius)
            return p + tau * direction, True
        alpha = rr / curvature
        if np.linalg.norm(p + alpha * direction) >= radius:
            tau = _to_boundary(p, direction, radius)
            return p + tau * direction, True
        p = p + alpha * direction
        residual = residual + alpha * Hd
        if np.linalg.norm(residual) <= tolerance:
            break
        z = apply(residual)
        rr_new = residual @ z
        direction = -z + (rr_new / rr) * direction
        rr = rr_new
    return p, False


def _to_boundary(p: np.ndarray, d: np.ndarray, radius: float) -> float:
    """The ``tau >= 0`` with ``|p + tau d| = radius``."""
    a, b, c = d @ d, 2.0 * (p @ d), p @ p - radius**2
    return (-b + np.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a)
