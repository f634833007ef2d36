"""L-BFGS directions against the dense BFGS inverse Hessian of the same pairs."""

from __future__ import annotations

import numpy as np
import pytest

from fast_solver.lmnn.quasi_newton import Memory


def dense_direction(pairs, g):
    """``-H g`` with ``H`` built densely by the BFGS update (Nocedal & Wright, eq. 6.17) from
    ``H_0 = (s^T y / y^T y) I`` of the last pair, over the pairs in order."""
    s, y = pairs[-1]
    H = np.eye(len(g)) * (s @ y) / (y @ y)
    for s, y in pairs:
        rho = 1.0 / (s @ y)
        E = np.eye(len(g)) - rho * np.outer(s, y)
        H = E @ H @ E.T + rho * np.outer(s, s)
    return -H @ g


@pytest.mark.parametrize("size", [1, 3, 8])
def test_directions_equal_the_dense_bfgs_update_of_the_last_pairs(size):
    rng = np.random.default_rng(size)
    A = rng.normal(size=(6, 6))
    A = A @ A.T + np.eye(6)  # pairs of a convex quadratic: s^T y > 0
    memory, kept = Memory(size), []
    for _ in range(10):
        s = rng.normal(size=6)
        memory.update(s, A @ s)
        kept = (kept + [(s, A @ s)])[-size:]
        g = rng.normal(size=6)
        np.testing.assert_allclose(memory.direction(g), dense_direction(kept, g), rtol=1e-10)
    assert len(memory) == size


def test_pairs_without_positive_curvature_are_not_kept_and_shapes_are_kept():
    memory = Memory(4)
    g = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(memory.direction(g), -g)  # no pair: steepest descent
    memory.update(np.ones((2, 3)), -np.ones((2, 3)))  # s^T y < 0
    memory.update(np.ones((2, 3)), np.zeros((2, 3)))  # s^T y = 0
    assert len(memory) == 0
    memory.update(np.ones((2, 3)), 2.0 * np.ones((2, 3)))
    p = memory.direction(g)
    assert p.shape == (2, 3) and np.vdot(p, g) < 0
    memory.clear()
    assert len(memory) == 0
    np.testing.assert_array_equal(memory.direction(g), -g)
