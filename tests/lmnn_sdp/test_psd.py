"""PSD projection (eq. 20) and the factor L (eq. 2)."""

from __future__ import annotations

import numpy as np

from lmnn_sdp.core.psd import project_psd, psd_factor


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
    L = psd_factor(M, rtol=1e-12)
    assert L.shape == (3, 6)
    np.testing.assert_allclose(L.T @ L, M, atol=1e-10)
    assert psd_factor(np.zeros((4, 4)), rtol=1e-12).shape == (1, 4)
    square = psd_factor(M)
    assert square.shape == (6, 6)
    np.testing.assert_allclose(square.T @ square, M, atol=1e-10)
    norms = np.linalg.norm(square, axis=1)
    assert np.all(np.diff(norms) <= 1e-12)  # rows by decreasing eigenvalue
