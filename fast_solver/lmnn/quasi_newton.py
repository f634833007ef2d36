"""Limited-memory BFGS directions (Nocedal & Wright, 2006, Alg. 7.4), for the first phase of
``fast_solver.solve``: steps that cost one gradient each, taken along an exact line search.

Design note: ``docs/design/high-dimension.md``, "A first phase of quasi-Newton steps".
"""

from __future__ import annotations

from collections import deque

import numpy as np


class Memory:
    """The last ``size`` pairs ``s = x_new - x``, ``y = g_new - g`` of arrays of one shape.

    ``direction(g)`` is ``-H g`` for the L-BFGS inverse Hessian ``H`` of those pairs, scaled
    by ``s^T y / y^T y`` of the last pair (Nocedal & Wright, eq. 7.20); a pair with
    ``s^T y <= 0`` (no positive curvature along ``s``) is not kept, so ``H`` stays positive
    definite and every direction descends.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.diag([1.0, 10.0])
    >>> memory, x = Memory(5), np.array([1.0, 1.0])
    >>> for _ in range(3):  # exact line searches on x^T A x / 2
    ...     p = memory.direction(A @ x)
    ...     step = -(p @ A @ x) / (p @ A @ p) * p
    ...     memory.update(step, A @ step)
    ...     x = x + step
    >>> bool(np.abs(x).max() < 1e-12)
    True
    """

    def __init__(self, size: int):
        self.pairs: deque[tuple[np.ndarray, np.ndarray, float]] = deque(maxlen=size)

    def __len__(self) -> int:
        return len(self.pairs)

    def update(self, s: np.ndarray, y: np.ndarray) -> None:
        """Keep the pair ``(s, y)`` when ``s^T y > 0``, dropping the oldest beyond ``size``."""
        sy = float(np.vdot(s, y))
        if sy > 0.0:
            self.pairs.append((s, y, sy))

    def clear(self) -> None:
        self.pairs.clear()

    def direction(self, g: np.ndarray) -> np.ndarray:
        """``-H g`` (the shape of ``g``); ``-g`` while no pair is kept."""
        q = np.array(g, dtype=float)
        alphas = []
        for s, y, sy in reversed(self.pairs):
            alpha = float(np.vdot(s, q)) / sy
            q -= alpha * y
            alphas.append(alpha)
        if self.pairs:
            s, y, sy = self.pairs[-1]
            q *= sy / float(np.vdot(y, y))
        for (s, y, sy), alpha in zip(self.pairs, reversed(alphas)):
            q += (alpha - float(np.vdot(y, q)) / sy) * s
        return -q
