"""Line searches on convex functions: golden section in one variable, and along a segment."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

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
