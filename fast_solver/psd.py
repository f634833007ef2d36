"""The PSD cone: projection (eq. 20) and the factor L of M = L^T L (eq. 2)."""

from __future__ import annotations

import numpy as np


def project_psd(M: np.ndarray) -> np.ndarray:
    """Project a symmetric matrix onto the PSD cone (eq. 20).

    ``P_S(M) = V max(Delta, 0) V^T`` with ``M = V Delta V^T``; the input is
    symmetrised first, so round-off asymmetry never leaks into the result.

    Parameters
    ----------
    M : ndarray of shape (d, d)

    Returns
    -------
    ndarray of shape (d, d)
        The nearest PSD matrix in Frobenius norm, exactly symmetric.
    """
    eigenvalues, V = np.linalg.eigh((M + M.T) / 2)
    positive = eigenvalues > 0
    V = V[:, positive]
    projected = (V * eigenvalues[positive]) @ V.T
    return (projected + projected.T) / 2


def transformation_from_metric(M: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """The factor ``L`` with ``L^T L = M`` and only the numerically non-zero rows (eq. 2).

    ``L = sqrt(Delta_+) V_+^T`` from the eigendecomposition of ``M``; rows whose
    eigenvalue is below ``rtol * max(eigenvalue)`` are dropped, so ``L`` has as
    many rows as the rank of ``M``. Distances ``D_M(x, z) = ||L x - L z||^2``
    are then computed in the (possibly lower-dimensional) space ``L x``.

    Parameters
    ----------
    M : ndarray of shape (d, d), PSD
    rtol : float
        Relative eigenvalue threshold for the rank.

    Returns
    -------
    ndarray of shape (r, d)
        ``r = rank(M)``; at least one row (zero when ``M = 0``).
    """
    eigenvalues, V = np.linalg.eigh((M + M.T) / 2)
    top = max(float(eigenvalues[-1]), 0.0)
    keep = eigenvalues > rtol * top if top > 0 else np.zeros(len(eigenvalues), dtype=bool)
    if not keep.any():
        return np.zeros((1, M.shape[0]))
    return (V[:, keep] * np.sqrt(eigenvalues[keep])).T[::-1]


def contraction_factor(M_old: np.ndarray, M_new: np.ndarray, rtol: float = 1e-12) -> float:
    """The largest ``c >= 0`` with ``M_new - c M_old`` PSD, so ``D_new(x, z) >= c D_old(x, z)``.

    This bound on how much any distance can shrink lets a re-check skip the
    points whose impostor radius is still covered (``fast_solver.working_set``).
    With ``M_old = U Lambda U^T`` (``U`` of shape (d, r), its range) and ``N``
    its null space, ``c`` is the smallest eigenvalue of
    ``Lambda^{-1/2} S Lambda^{-1/2}`` where ``S`` is the Schur complement of
    ``N^T M_new N`` in ``M_new`` written in the basis ``[U, N]``; a factor
    ``1 - 1e-9`` absorbs round-off.

    Parameters
    ----------
    M_old, M_new : ndarray of shape (d, d), PSD

    Returns
    -------
    float
        ``c``; 0 when ``M_old`` is zero.
    """
    eigenvalues, V = np.linalg.eigh((M_old + M_old.T) / 2)
    top = float(eigenvalues[-1])
    if top <= 0:
        return 0.0
    positive = eigenvalues > rtol * top
    U, N = V[:, positive], V[:, ~positive]
    S = U.T @ M_new @ U
    if N.shape[1]:
        cross = U.T @ M_new @ N
        S = S - cross @ np.linalg.pinv(N.T @ M_new @ N, rcond=1e-12, hermitian=True) @ cross.T
    scale = 1.0 / np.sqrt(eigenvalues[positive])
    smallest = float(np.linalg.eigvalsh((S * scale[:, None]) * scale[None, :])[0])
    return max(smallest, 0.0) * (1.0 - 1e-9)
