"""Trust-region Newton-CG with a line search: reaches minima, follows negative curvature,
takes the best multiple of a poor step, reports a zero gradient and a collapsed region."""

from __future__ import annotations

import numpy as np
from scipy.optimize import rosen, rosen_der, rosen_hess_prod

from fast_solver.lmnn import trust_region
from lmnn_sdp.core.line_search import ray_minimum


def searching(f, point):
    """The line search along ``p`` from the last point ``fun`` saw (``point["x"]``)."""
    def line(p, t_max):
        x = point["x"]
        return ray_minimum(lambda t: f(x + t * p) - f(x), 1.0, t_max)
    return line


def test_minimises_the_rosenbrock_function():
    point = {}

    def fun(x):
        point["x"] = x
        return rosen(x), rosen_der(x)

    result = trust_region.minimize(fun, lambda v: rosen_hess_prod(point["x"], v), searching(rosen, point),
                                   np.full(6, -1.2),
                                   radius=0.5, max_iter=500, stop=lambda x: np.linalg.norm(rosen_der(x)) < 1e-10,
                                   max_radius=lambda x: 10.0)
    assert result.reason == "stop"
    np.testing.assert_allclose(result.x, np.ones(6), atol=1e-8)


def test_leaves_a_saddle_along_negative_curvature():
    # f = x^2 - y^2 + y^4 / 4: a saddle at 0, minima at y = +-sqrt(2)
    def fun(v):
        x, y = v
        return x * x - y * y + y**4 / 4, np.array([2 * x, -2 * y + y**3])

    def value(v):
        return fun(v)[0]

    state = {}

    def tracked(v):
        state["v"] = state["x"] = v
        return fun(v)

    def hessp(d):
        return np.array([2.0, -2.0 + 3 * state["v"][1] ** 2]) * d

    result = trust_region.minimize(tracked, hessp, searching(value, state), np.array([1.0, 1e-3]), radius=0.1,
                                   max_iter=100,
                                   stop=lambda v: np.linalg.norm(fun(v)[1]) < 1e-10, max_radius=lambda v: 1.0)
    np.testing.assert_allclose(np.abs(result.x), [0.0, np.sqrt(2.0)], atol=1e-8)


def test_zero_gradient_is_reported_not_divided_by():
    result = trust_region.minimize(lambda v: (float(v @ v), 2 * v), lambda d: 2 * d, lambda p, t: (0.0, 0.0),
                                   np.zeros(3), radius=1.0, max_iter=10, stop=lambda v: False,
                                   max_radius=lambda v: 1.0)
    assert result.reason == "stationary" and result.nit == 0


def test_a_radius_of_zero_is_reported_not_divided_by():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a division by the zero step would warn
        result = trust_region.minimize(lambda v: (float(v @ v), 2 * v), lambda d: 2 * d,
                                       lambda p, t: (_ for _ in ()).throw(AssertionError("searched")),
                                       np.ones(3), radius=0.0, max_iter=10, stop=lambda v: False,
                                       max_radius=lambda v: 1.0)
    assert result.reason == "radius" and result.nit == 0 and np.array_equal(result.x, np.ones(3))


def test_the_best_multiple_of_a_poor_newton_step_is_taken():
    # f = sum sqrt(1 + x^2): the Newton step from x is -x^3, far past the minimum when |x| > 1
    def f(x):
        return float(np.sum(np.sqrt(1 + x * x)))

    point = {}

    def fun(x):
        point["x"] = x
        return f(x), x / np.sqrt(1 + x * x)

    def hessp(v):
        return v / (1 + point["x"] ** 2) ** 1.5

    def line(p, t_max):  # f(x + t p) - f(x) without cancellation
        x = point["x"]
        return ray_minimum(lambda t: float(np.sum(t * p * (2 * x + t * p)
                                                  / (np.sqrt(1 + (x + t * p) ** 2) + np.sqrt(1 + x * x)))),
                           1.0, t_max)

    x0 = np.full(4, 3.0)
    steps = []
    result = trust_region.minimize(fun, hessp, line, x0, radius=100.0, max_iter=50,
                                   stop=lambda x: steps.append(x) or np.abs(x).max() < 1e-12,
                                   max_radius=lambda x: 100.0)
    assert result.reason == "stop" and result.nit <= 8
    assert np.abs(steps[0]).max() < 1.0  # the first step already lands near 0, not at -27
    assert all(f(b) < f(a) for a, b in zip([x0] + steps, steps))


def test_a_search_that_never_decreases_collapses_the_region():
    result = trust_region.minimize(lambda v: (float(v @ v), 2 * v), lambda d: 2 * d, lambda p, t: (0.0, 0.0),
                                   np.ones(3), radius=1.0, max_iter=100, stop=lambda v: False,
                                   max_radius=lambda v: 1.0)
    assert result.reason == "radius" and np.array_equal(result.x, np.ones(3))


def test_a_preconditioner_takes_fewer_hessian_products_to_the_same_minimum():
    """On a badly scaled quadratic, conjugate gradients preconditioned by the inverse diagonal
    reach the minimiser in fewer Hessian products than without."""
    scales = np.logspace(0, 4, 40)
    A = np.diag(scales) + 0.1 * np.ones((40, 40))
    b = np.linspace(1.0, 2.0, 40)
    x_star = np.linalg.solve(A, b)
    point, products = {}, [0]

    def fun(x):
        point["x"] = x
        return 0.5 * x @ A @ x - b @ x, A @ x - b

    def hessp(v):
        products[0] += 1
        return A @ v

    def line(p, t_max):
        x = point["x"]
        return ray_minimum(lambda t: fun(x + t * p)[0] - fun(x)[0], 1.0, t_max)

    counts = []
    for preconditioner in (None, lambda: (lambda r: r / np.diag(A))):
        products[0] = 0
        result = trust_region.minimize(fun, hessp, line, np.zeros(40), radius=1.0, max_iter=200,
                                       stop=lambda x: np.linalg.norm(A @ x - b) < 1e-6 * np.linalg.norm(b),
                                       max_radius=lambda x: 1e3, preconditioner=preconditioner)
        assert result.reason == "stop"
        np.testing.assert_allclose(result.x, x_star, rtol=1e-4)
        counts.append(products[0])
    assert counts[1] < counts[0] / 3
