"""A cluster's dual matrix in its own basis (``certificates.own_basis``): its allowance covers
the rounding against exact rational arithmetic, direction by direction, and it proves more
than the one allowance for all directions where a direction's curvature is tiny."""

from fractions import Fraction

import numpy as np
import pytest
from sklearn.datasets import load_wine

from fast_solver import solve
from lmnn_sdp import LMNNProblem
from lmnn_sdp.certificates import bounds
from lmnn_sdp.certificates.certificate import prove
from lmnn_sdp.certificates.own_basis import MARGIN, own_basis_pieces


def exact_piece(X, a, b, w, Q):
    """``Q^T (sum_p w_p d_p d_p^T) Q`` in rational arithmetic, ``d_p = x_a - x_b``."""
    r = X.shape[1]
    Xe = [[Fraction(float(v)) for v in row] for row in X]
    Qe = [[Fraction(float(v)) for v in row] for row in Q]
    out = [[Fraction(0)] * r for _ in range(r)]
    for wp, p, q in zip(w, a, b):
        d = [Xe[p][s] - Xe[q][s] for s in range(r)]
        y = [sum(d[s] * Qe[s][t] for s in range(r)) for t in range(r)]
        for s in range(r):
            for t in range(r):
                out[s][t] += Fraction(float(wp)) * y[s] * y[t]
    return out


def test_the_allowance_covers_the_error_of_every_direction():
    """Points 1e3 from the origin whose differences are 1e-7 along one direction: the one
    allowance of ``bounds`` (the sizes of the points) is far above that direction's
    curvature, the own basis's is far below it, and the computed pieces err within it."""
    rng = np.random.default_rng(3)
    n, r = 40, 3
    X = 1e3 + rng.normal(size=(n, r)) * np.array([1.0, 1.0, 1e-7])
    a, b = rng.integers(0, n, 120), rng.integers(0, n, 120)
    keep = a != b
    a, b = a[keep], b[keep]
    pieces = [(a[:60], b[:60], rng.uniform(0.0, 1.0, 60)), (a[60:], b[60:], rng.uniform(0.0, 0.5, len(a) - 60))]
    D = [X[pa] - X[pb] for pa, pb, _ in pieces]
    Q = np.linalg.eigh(sum((d * w[:, None]).T @ d for d, (_, _, w) in zip(D, pieces)))[1]  # as dual_lower_bound
    scaled, scale, allowance = own_basis_pieces(X, Q, pieces)
    assert np.all(np.log2(scale) == np.round(np.log2(scale)))  # powers of two: the scaling is exact
    total = np.zeros((r, r))
    for (pa, pb, w), computed in zip(pieces, scaled):
        truth = exact_piece(X, pa, pb, w, Q)
        error = np.array([[float(Fraction(float(computed[s, t])) - truth[s][t] / Fraction(float(scale[s] * scale[t])))
                           for t in range(r)] for s in range(r)])
        total += np.abs(error)
        assert np.linalg.norm(error) <= allowance / MARGIN
    assert np.linalg.norm(total) <= allowance / MARGIN
    # the direction of size 1e-7 is resolved: its scaled curvature is about 1, far above the allowance
    assert np.linalg.eigvalsh(scaled.sum(axis=0))[0] > 1e6 * allowance
    # while one allowance for all directions, from the sizes of the points (|x|^2 ~ 3e6), exceeds
    # its curvature unscaled
    curvature = np.linalg.eigvalsh(scaled.sum(axis=0) * np.outer(scale, scale))[0]
    assert MARGIN * np.finfo(float).eps * sum(w.sum() for _, _, w in pieces) * 2 * 3e6 > 10 * curvature


def test_a_basis_that_is_not_invertible_is_refused():
    X = np.random.default_rng(0).normal(size=(5, 2))
    pieces = [(np.array([0, 1]), np.array([2, 3]), np.array([1.0, 1.0]))]
    assert own_basis_pieces(X, np.array([[1.0, 1.0], [0.0, 0.0]]), pieces) is None
    assert own_basis_pieces(X, np.eye(2), [(np.array([0]), np.array([1]), np.array([0.0]))]) is None  # size 0


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    problem = LMNNProblem(X, y, k=3, mu=0.5)
    return problem, solve(problem, tol=1e-8)


def test_own_bases_prove_more_where_the_allowance_limits(wine):
    """Wine's 13 raw features (LMNN, certified 1e-8): with one allowance for all directions the
    solver's multipliers lose 1.6e-8 of the upper bound in the scale; in its own basis 3.3e-9.
    A bound that is ``enough`` already (here any) is not refined."""
    problem, result = wine
    c = result.certificate
    own = bounds.dual_lower_bound(problem, c.triplets, c.multipliers)
    one = bounds.dual_lower_bound(problem, c.triplets, c.multipliers, enough=0.0)
    assert own.multiplier_sum == one.multiplier_sum
    lost_own, lost_one = [(b.multiplier_sum - b.lower) / c.upper for b in (own, one)]
    assert lost_one > 1e-8 and lost_own < 0.5 * lost_one
    assert one.alpha < own.alpha < 1.0
    assert own.lower <= c.upper


def test_a_certificate_forms_own_bases_only_when_the_one_allowance_falls_short(wine):
    problem, result = wine
    c = result.certificate
    one = bounds.dual_lower_bound(problem, c.triplets, c.multipliers, enough=0.0)
    short = prove(problem, c.metric, c.triplets, c.multipliers, tol=1e-9)  # the one allowance: 1.6e-8
    assert short.lower > one.lower and short.verify().lower == short.lower
    enough = prove(problem, c.metric, c.triplets, c.multipliers, tol=1e-7)
    assert enough.certified and enough.lower == one.lower and enough.verify().lower == enough.lower
