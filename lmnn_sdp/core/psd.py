"""The PSD cone: the one check of a metric, projection (eq. 20) and factors ``L`` with
``L^T L = M`` (eq. 2), numpy only."""

from __future__ import annotations

import numpy as np

ASYMMETRY_TOL = 1e-10  # relative |M - M^T| taken as rounding
PSD_TOL = 1e-8  # relative negative eigenvalue taken as rounding


def check_psd(M: np.ndarray, name: str = "M", psd_tol: float = PSD_TOL) -> tuple[np.ndarray, float]:
    """``(symmetrised M, its smallest eigenvalue)`` for a finite square float ``M`` (d, d),
    or a ValueError naming ``name`` unless it is symmetric and PSD up to rounding
    (``ASYMMETRY_TOL`` and ``psd_tol`` of its largest entry). Nothing is projected."""
    size = max(float(np.abs(M).max()), np.finfo(float).tiny)
    asymmetry = float(np.abs(M - M.T).max())
    if asymmetry > ASYMMETRY_TOL * size:
        raise ValueError(f"{name} is not symmetric (max |{name} - {name}^T| = {asymmetry:.3g}); a "
                         f"Mahalanobis metric is symmetric: pass ({name} + {name}.T) / 2 if that "
                         "is what you meant.")
    M = (M + M.T) / 2
    smallest = float(np.linalg.eigvalsh(M)[0])
    if smallest < -psd_tol * size:
        raise ValueError(f"{name} is not positive semidefinite (smallest eigenvalue "
                         f"{smallest:.3g}); only PSD matrices are metrics. Project it with "
                         "lmnn_sdp.core.psd.project_psd if that is what you meant.")
    return M, smallest


def project_psd(M: np.ndarray) -> np.ndarray:
    """The nearest PSD matrix to ``M`` (d, d) in Frobenius norm (eq. 20), exactly symmetric.

    ``P_S(M) = V max(Delta, 0) V^T`` with ``M = V Delta V^T``; the input is
    symmetrised first, so round-off asymmetry never leaks into the result."""
    eigenvalues, V = np.linalg.eigh((M + M.T) / 2)
    positive = eigenvalues > 0
    V = V[:, positive]
    projected = (V * eigenvalues[positive]) @ V.T
    return (projected + projected.T) / 2


def psd_factor(M: np.ndarray, rtol: float | None = None) -> np.ndarray:
    """``L`` with ``L^T L = P_S(M)`` for ``M`` (d, d), rows by decreasing eigenvalue (eq. 2).

    Without ``rtol``, ``L`` is square (d, d), the components of a scikit-learn
    transformer. With ``rtol``, rows whose eigenvalue is at most ``rtol`` times the
    largest are dropped, so ``L`` has as many rows as the rank of ``M`` (at least one,
    zero when ``M = 0``) and distances can be computed in the space ``L x``."""
    eigenvalues, V = np.linalg.eigh((M + M.T) / 2)
    eigenvalues, V = eigenvalues[::-1], V[:, ::-1]
    if rtol is not None:
        top = max(float(eigenvalues[0]), 0.0)
        keep = eigenvalues > rtol * top if top > 0 else np.zeros(len(eigenvalues), dtype=bool)
        if not keep.any():
            return np.zeros((1, M.shape[0]))
        eigenvalues, V = eigenvalues[keep], V[:, keep]
    return (V * np.sqrt(np.maximum(eigenvalues, 0.0))).T
