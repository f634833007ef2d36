"""Principal coordinates as lower bounds of distances (``lmnn_sdp.core.principal``), and the
impostor pairs of ``LMNNProblem.evaluate`` and ``active_triplets`` found through them, against
exact rational arithmetic."""

from fractions import Fraction

import numpy as np
import pytest

from lmnn_sdp import LMNNProblem
from lmnn_sdp.core import rounding
from lmnn_sdp.core.principal import metric_coordinates, principal_coordinates


def test_principal_coordinates_keep_the_leading_scatter_and_never_lengthen_a_distance(thin_tail_points):
    Z = thin_tail_points(6)
    W, centred_sq = principal_coordinates(Z, tail=1e-3)
    assert W.shape == (240, 5)
    np.testing.assert_allclose(centred_sq, ((Z - Z.mean(0)) ** 2).sum(1), rtol=1e-12)
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    D_W = ((W[:, None] - W[None]) ** 2).sum(-1)
    assert np.all(D_W <= D * (1 + 1e-12) + 1e-12)
    assert np.all(D - D_W < 0.01 * D.mean())  # only the thin tail is left out
    assert principal_coordinates(Z, tail=0.0)[0].shape == (240, 12)
    assert principal_coordinates(np.ones((4, 3)))[0].shape == (4, 0)  # all points in one place


def _rotation(d, seed):
    return np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))[0]


D5 = 5
CASES = {  # (inputs, metric): the bound's allowances each matter in one of them
    "thin tail": (lambda X: X, _rotation(D5, 1) @ np.diag([3.0, 2.0, 1.0, 1e-4, 1e-5]) @ _rotation(D5, 1).T),
    "far from the origin": (lambda X: X + 1e7, np.eye(D5)),
    "micrometres": (lambda X: X * 1e-6, 1e12 * np.diag([1.0, 1.0, 1.0, 1e-3, 0.0])),
    "every pair within reach": (lambda X: X * 1e-6, np.eye(D5)),  # distances ~1e-12, scaled up in float32
    "beyond float32": (lambda X: X * 1e-21, np.eye(D5)),  # reach / distances ~1e42: no threshold
    "one negative eigenvalue": (lambda X: X, _rotation(D5, 2) @ np.diag([2.0, 1.0, 1.0, 0.5, -2.0]) @ _rotation(D5, 2).T),
    "zero": (lambda X: X, np.zeros((D5, D5))),
}


def _problem(case):
    features, M = CASES[case]
    rng = np.random.default_rng(3)
    X = rng.normal(size=(36, D5)) * [2.0, 1.5, 1.0, 0.7, 0.5]
    return LMNNProblem(features(X), np.arange(36) % 3, k=2, mu=0.5), M


def _exact_distances(X, M, integers):
    """``(x_a - x_b)^T M (x_a - x_b)`` for every pair, in exact arithmetic on the floats: each
    array as Python integers over its common denominator (``integers``, the fixture ``as_integers``)."""
    (Xi, sx), (Mi, sm) = integers(X), integers(M)
    V = Xi[:, None, :] - Xi[None, :, :]
    D = ((V @ Mi) * V).sum(axis=-1)
    return [[Fraction(int(D[a, b]), sx * sx * sm) for b in range(len(Xi))] for a in range(len(Xi))]


@pytest.mark.parametrize("case", CASES)
def test_metric_coordinates_bound_every_exact_distance_from_below(case, as_integers):
    problem, M = _problem(case)
    Xo = problem.X_centered
    (s,), (t,), rho = rounding.metric_scales(M[None])
    sigma = rounding.point_sizes(Xo, s[None])[0]
    coords = metric_coordinates(M, s, Xo, sigma)
    exact = _exact_distances(problem.X, M, as_integers)
    W = coords.W / np.sqrt(coords.scale)
    gaps = []
    for a in range(problem.n_samples):
        for b in range(problem.n_samples):
            length = max(float(np.linalg.norm(W[a] - W[b])) * (1 - 1e-15) - coords.error[a] - coords.error[b], 0.0)
            lower = length**2 / (1 + 1e-10) - coords.kappa * (sigma[a] + sigma[b]) ** 2
            gaps.append(exact[a][b] - Fraction(lower))
    assert min(gaps) >= 0
    if case == "thin tail":
        assert coords.W.shape[1] == 3  # the bound is not vacuous: 2 of 5 directions left out


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("band", [0.0, 0.5])
def test_active_triplets_are_those_of_exact_arithmetic(case, band, as_integers):
    problem, M = _problem(case)
    exact = _exact_distances(problem.X, M, as_integers)
    found = {tuple(row) for row in problem.active_triplets(M, band)}
    codes = problem.label_codes
    sure = unsure = 0
    for i in range(problem.n_samples):
        for j in problem.targets[i]:
            for l in np.flatnonzero(codes != codes[i]):
                h = float(1 + exact[i][j] - exact[i][l]) + band
                tie = 1e-9 * (1 + abs(float(exact[i][j])) + abs(float(exact[i][l])))
                if abs(h) > tie:
                    assert ((i, j, l) in found) == (h > 0), (i, j, l, h)
                    sure += h > 0
                else:
                    unsure += 1
    assert sure > 50 and unsure < 5


@pytest.mark.parametrize("case", CASES)
def test_evaluate_is_within_its_rounding_bound_of_exact_arithmetic(case, as_integers):
    problem, M = _problem(case)
    exact = _exact_distances(problem.X, M, as_integers)
    codes, mu = problem.label_codes, Fraction(problem.mu)
    pull = push = Fraction(0)
    for i in range(problem.n_samples):
        for j in problem.targets[i]:
            pull += exact[i][j]
            for l in np.flatnonzero(codes != codes[i]):
                push += max(Fraction(0), 1 + exact[i][j] - exact[i][l])
    for origin in (None, problem.independent_origin()):
        computed = problem.evaluate(M, origin=origin)
        assert abs(Fraction(computed.value) - ((1 - mu) * pull + mu * push)) <= Fraction(computed.rounding)
