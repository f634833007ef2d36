"""PSD projection (eq. 20), the factor L (eq. 2) and the contraction bound."""

from __future__ import annotations

import numpy as np

from fast_solver.psd import contraction_factor, project_psd, transformation_from_metric


def _symmetric(seed, d=6):
    A = np.random.default_rng(seed).standard_normal((d, d))
    return (A + A.T) / 2


def test_projection_clips_negative_eigenvalues():
    S = _symmetric(0)
    P = project_psd(S)
    w_s, w_p = np.linalg.eigvalsh(S), np.linalg.eigvalsh(P)
    np.testing.assert_allclose(np.sort(w_p), np.sort(np.maximum(w_s, 0)), atol=1e-12)
    np.testing.assert_array_equal(P, P.T)


def test_projection_is_nearest_psd_matrix_and_idempotent():
    S = _symmetric(1)
    P = project_psd(S)
    rng = np.random.default_rng(2)
    for _ in range(50):
        B = rng.standard_normal((6, 6))
        candidate = P + 0.1 * B @ B.T * rng.uniform() - 0.05 * np.eye(6) * rng.uniform()
        candidate = project_psd(candidate)
        assert np.linalg.norm(S - P) <= np.linalg.norm(S - candidate) + 1e-12
    np.testing.assert_allclose(project_psd(P), P, atol=1e-12)


def test_transformation_reproduces_metric_with_rank_rows():
    A = np.random.default_rng(3).standard_normal((6, 3))
    M = A @ A.T
    L = transformation_from_metric(M)
    assert L.shape == (3, 6)
    np.testing.assert_allclose(L.T @ L, M, atol=1e-10)
    assert transformation_from_metric(np.zeros((4, 4))).shape == (1, 4)


def test_contraction_factor_is_the_largest_feasible_scale():
    rng = np.random.default_rng(4)
    for rank in (6, 3):
        A = rng.standard_normal((6, rank))
        M_old = A @ A.T
        B = rng.standard_normal((6, 6))
        M_new = 0.8 * M_old + 0.1 * B @ B.T
        c = contraction_factor(M_old, M_new)
        assert c > 0.5
        assert np.linalg.eigvalsh(M_new - c * M_old)[0] >= -1e-9
        assert np.linalg.eigvalsh(M_new - 1.001 * c * M_old)[0] < 0


def test_contraction_factor_is_zero_when_new_metric_loses_a_direction():
    M_old = np.eye(3)
    M_new = np.diag([1.0, 1.0, 0.0])
    assert contraction_factor(M_old, M_new) == 0.0
