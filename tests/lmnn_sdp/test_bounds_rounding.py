"""The rounding counts behind the certificate's allowance (``bounds._allowance``) against
exact rational arithmetic: a sum of pair outer products formed through the graph Laplacian
(``core.space.pair_scatter``) and a product over many rows (``core.space.blocked_cross``)
err by no more than ``gamma_m`` with the counts the allowance uses."""

from fractions import Fraction

import numpy as np
import pytest

from lmnn_sdp.certificates.bounds import _pair_roundings
from lmnn_sdp.core import space
from lmnn_sdp.core.space import blocked_cross, cross_terms, pair_scatter

U = np.finfo(float).eps / 2  # unit roundoff


def gamma(m) -> float:
    return m * U / (1 - m * U)


def exact(values) -> list:
    return [[Fraction(float(v)) for v in row] for row in np.atleast_2d(values)]


def test_blocked_cross_errs_within_its_rounding_count(monkeypatch):
    monkeypatch.setattr(space, "CROSS_BLOCK", 64)  # many blocks over few rows, so exact sums stay fast
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 2)) * np.logspace(0, 8, 1000)[:, None]  # terms of every size
    Y = rng.normal(size=(1000, 2))
    computed = blocked_cross(X, Y)
    Xe, Ye = exact(X), exact(Y)
    m = cross_terms(len(X))
    assert m == 64 + 4  # 16 blocks, summed pairwise
    for r in range(2):
        for s in range(2):
            truth = sum(Xe[u][r] * Ye[u][s] for u in range(len(X)))
            size = sum(abs(X[:, r] * Y[:, s]))
            assert abs(Fraction(float(computed[r, s])) - truth) <= Fraction(gamma(m) * size)
    np.testing.assert_array_equal(blocked_cross(X[:64], Y[:64]), X[:64].T @ Y[:64])  # one block: one product


@pytest.mark.parametrize("offset", [0.0, 1e6])
def test_pair_scatter_errs_within_the_counts_of_the_allowance(offset, monkeypatch):
    """A hub point in most pairs, repeated pairs, weights of both signs and, with ``offset``,
    points far from the origin (the Laplacian form errs with |x|^2, not |x_a - x_b|^2)."""
    monkeypatch.setattr(space, "CROSS_BLOCK", 32)
    rng = np.random.default_rng(1)
    n = 300
    X = offset + rng.normal(size=(n, 2)) * rng.uniform(0.1, 10.0, size=(n, 1))
    a = np.concatenate([np.zeros(400, int), rng.integers(0, n, 600), np.full(50, 7)])
    b = np.concatenate([rng.integers(1, n, 400), rng.integers(0, n, 600), np.full(50, 9)])  # pair (7, 9) 50 times
    keep = a != b
    a, b = a[keep], b[keep]
    w = rng.uniform(-1.0, 1.0, len(a))
    computed = pair_scatter(X, a, b, w)
    m = _pair_roundings([(a, b)], n)(a, b)
    assert m.max() > 3 * 400 and m.min() < 3 * 100  # the hub's pairs count its 400 and more
    Xe = exact(X)
    for r in range(2):
        for s in range(2):
            truth = sum(Fraction(float(wp)) * (Xe[p][r] - Xe[q][r]) * (Xe[p][s] - Xe[q][s])
                        for wp, p, q in zip(w, a, b))
            size = np.abs(w) * (np.abs(X[a, r]) + np.abs(X[b, r])) * (np.abs(X[a, s]) + np.abs(X[b, s]))
            bound = sum(gamma(mp) * sp for mp, sp in zip(m, size))
            assert abs(Fraction(float(computed[r, s])) - truth) <= Fraction(bound)
