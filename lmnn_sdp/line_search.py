"""Golden-section search for the minimum of a unimodal function of one variable."""

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
