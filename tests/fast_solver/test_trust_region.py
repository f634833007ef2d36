"""Trust-region Newton-CG: reaches minima, follows negative curvature, reports a zero gradient."""

from __future__ import annotations

import numpy as np
from scipy.optimize import rosen, rosen_der, rosen_hess_prod

from fast_solver import trust_region


def test_minimises_the_rosenbrock_function():
    point = {}

    def fun(x):
        point["x"] = x
        return rosen(x), rosen_der(x)

    result = trust_region.minimize(fun, lambda v: rosen_hess_prod(point["x"], v), np.full(6, -1.2),
                                   radius=0.5, max_iter=500, stop=lambda x: np.linalg.norm(rosen_der(x)) < 1e-10,
                                   max_radius=lambda x: 10.0)
    assert result.reason == "stop"
    np.testing.assert_allclose(result.x, np.ones(6), atol=1e-8)


def test_leaves_a_saddle_along_negative_curvature():
    # f = x^2 - y^2 + y^4 / 4: a saddle at 0, minima at y = +-sqrt(2)
    def fun(v):
        x, y = v
        return x * x - y * y + y**4 / 4, np.array([2 * x, -2 * y + y**3])

    state = {}

    def tracked(v):
        state["v"] = v
        return fun(v)

    def hessp(d):
        return np.array([2.0, -2.0 + 3 * state["v"][1] ** 2]) * d

    result = trust_region.minimize(tracked, hessp, np.array([1.0, 1e-3]), radius=0.1, max_iter=100,
                                   stop=lambda v: np.linalg.norm(fun(v)[1]) < 1e-10, max_radius=lambda v: 1.0)
    np.testing.assert_allclose(np.abs(result.x), [0.0, np.sqrt(2.0)], atol=1e-8)


def test_zero_gradient_is_reported_not_divided_by():
    result = trust_region.minimize(lambda v: (float(v @ v), 2 * v), lambda d: 2 * d, np.zeros(3),
                                   radius=1.0, max_iter=10, stop=lambda v: False, max_radius=lambda v: 1.0)
    assert result.reason == "stationary" and result.nit == 0
