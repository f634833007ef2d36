"""eq. 14 with its rounding bound (``LMNNProblem.evaluate``) against exact rational arithmetic."""

from fractions import Fraction

import numpy as np
import pytest
from sklearn.datasets import load_iris

from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import project_psd
from lmnn_sdp.core.rounding import metric_scales


def small_iris(features=None):
    X, y = load_iris(return_X_y=True)
    rows = np.r_[0:8, 50:58, 100:108]
    X = X[rows] if features is None else features(X[rows])
    return LMNNProblem(X, y[rows], k=2, mu=0.5)


@pytest.mark.parametrize("M", [np.eye(4), np.diag([1e-3, 1.0, 1e3, 0.0]),
                               np.outer([1.0, -2.0, 0.5, 3.0], [1.0, -2.0, 0.5, 3.0]) * 1e12])
@pytest.mark.parametrize("origin", ["mean", "median"])
def test_the_rounding_bound_holds_against_exact_arithmetic(M, origin, exact_objective):
    problem = small_iris()
    at = None if origin == "mean" else problem.independent_origin()
    computed = problem.evaluate(M, origin=at)
    exact = exact_objective(problem, M)
    assert abs(Fraction(computed.value) - exact) <= Fraction(computed.rounding)


def test_the_bound_is_tight_for_a_well_scaled_metric_and_grows_with_its_size():
    problem = small_iris()
    normal = problem.evaluate(np.eye(4))
    assert normal.rounding < 1e-12 * normal.value
    # a metric 1e13 times larger along one direction: the bound grows with it
    huge = problem.evaluate(np.eye(4) + 1e13 * np.outer([0, 0, 0, 1.0], [0, 0, 0, 1.0]))
    assert huge.rounding > 1e9 * normal.rounding


def test_feature_scales_do_not_widen_the_bound():
    problem = small_iris()
    scales = np.array([1e4, 1.0, 1e-4, 1.0])
    scaled = LMNNProblem(problem.X * scales, problem.y, targets=problem.targets, mu=problem.mu)
    M = np.diag(1 / scales**2)
    assert scaled.evaluate(M).rounding < 1e3 * problem.evaluate(np.eye(4)).rounding


def test_multi_metric_bound_holds_against_exact_arithmetic(exact_objective):
    problem = small_iris()
    clusters = problem.label_codes
    metrics = np.stack([np.eye(4), np.diag([4.0, 1.0, 0.25, 1.0]), 1e9 * np.eye(4)])
    computed = problem.evaluate(metrics, clusters)
    exact = exact_objective(problem, metrics, clusters)
    assert abs(Fraction(computed.value) - exact) <= Fraction(computed.rounding)


def test_a_metric_psd_only_up_to_rounding_is_bounded_against_its_psd_neighbour(exact_objective):
    # a rank-2 metric a rounding away from the PSD cone (eigenvalues of -1e-14);
    # the bound speaks of M+ = M + diag(t)^2, which is PSD in exact arithmetic
    problem = small_iris()
    rng = np.random.default_rng(0)
    M = project_psd(rng.normal(size=(4, 2)) @ rng.normal(size=(2, 4)) * 10.0) - 1e-14 * np.eye(4)
    assert np.linalg.eigvalsh(M)[0] < 0
    (_,), (t,), _ = metric_scales(M[None])
    plus = [[Fraction(float(M[a, b])) + (Fraction(float(t[a])) ** 2 if a == b else 0)
             for b in range(4)] for a in range(4)]
    assert exactly_psd(plus)
    computed = problem.evaluate(M)
    for metric in (np.array(plus, dtype=object), M):
        assert abs(Fraction(computed.value) - exact_objective(problem, metric)) <= Fraction(computed.rounding)
    assert computed.rounding < 1e-11 * computed.value


def exactly_psd(A) -> bool:
    """Whether the symmetric rational matrix ``A`` is PSD: an exact LDL^T with pivoting on zeros."""
    A = [row[:] for row in A]
    n = len(A)
    for p in range(n):
        if A[p][p] < 0:
            return False
        if A[p][p] == 0:
            if any(A[p][q] != 0 for q in range(p + 1, n)):
                return False
            continue
        for r in range(p + 1, n):
            f = A[r][p] / A[p][p]
            for c in range(p + 1, n):
                A[r][c] -= f * A[p][c]
    return True
