"""Line searches: golden section in one variable, along a segment, and along a ray."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.optimize

_RATIO = (np.sqrt(5) - 1) / 2


def golden_section(f: Callable[[float], float], lo: float, hi: float,
                   iterations: int = 30) -> tuple[float, float]:
    """``(x, f(x))`` near the minimiser of ``f`` on ``[lo, hi]``; ``f`` unimodal there.

    Each iteration shrinks the bracket by 0.618 with one evaluation of ``f``."""
    a, b = hi - _RATIO * (hi - lo), lo + _RATIO * (hi - lo)
    fa, fb = f(a), f(b)
    for _ in range(iterations):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - _RATIO * (hi - lo)
            fa = f(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + _RATIO * (hi - lo)
            fb = f(b)
    return (a, fa) if fa <= fb else (b, fb)


def segment_search(f: Callable[[np.ndarray], float], start: np.ndarray, value: float,
                   target: np.ndarray) -> tuple[float, np.ndarray, float]:
    """Least ``f`` on the segment from ``start`` to ``target`` (arrays of any one shape),
    ``f`` convex there and ``value = f(start)``.

    Returns ``(step, point, f(point))``: the full step when it does not increase ``f``,
    no step when nothing on the segment improves, else a golden-section step (45
    iterations, a bracket of 4e-10)."""
    full = f(target)
    if full <= value:
        return 1.0, target, full
    t, best = golden_section(lambda t: f(start + t * (target - start)), 0.0, 1.0, 45)
    if best >= value:
        return 0.0, start, value
    return t, start + t * (target - start), best


def ray_minimum(change: Callable[[float], float], t: float, t_max: float = np.inf,
                xtol: float = 1e-3) -> tuple[float, float]:
    """``(t, change(t))`` near the least ``change`` on ``(0, t_max]``, where ``change(0) = 0``.

    Doubles ``t`` (at most 60 times, never past ``t_max``) while ``change`` decreases, then
    runs SciPy's bounded Brent search on ``(0, 2 t]`` to ``xtol`` of that bracket; ``change``
    need not be convex, and the best point seen is returned. ``(0.0, 0.0)`` when no point
    seen decreases ``change``."""
    t = min(t, t_max)
    value = change(t)
    for _ in range(60):
        if 2.0 * t > t_max:
            break
        doubled = change(2.0 * t)
        if doubled >= value:
            break
        t, value = 2.0 * t, doubled
    high = min(2.0 * t, t_max)
    best = scipy.optimize.minimize_scalar(change, bounds=(0.0, high), method="bounded",
                                          options={"xatol": xtol * high})
    if best.fun < value:
        t, value = float(best.x), float(best.fun)
    return (t, value) if value < 0.0 else (0.0, 0.0)
