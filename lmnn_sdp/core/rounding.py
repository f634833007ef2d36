"""A bound on the floating-point error of eq. 14 evaluated at a metric (numpy only).

Let ``x~_a`` be the inputs less an origin (the mean, or another point for an independent
evaluation), rounded. For a metric ``M`` (d, d) let ``s_k = sqrt(M_kk)``, floored at
``sqrt(eps max_k M_kk)`` and raised where needed to ``max_l |M_kl| / s_l``, so that
``|M_kl| <= s_k s_l``. With the size of a point ``sigma_a = sum_k s_k |x~_a,k|``, every
distance ``D_M(x_a, x_b)`` computed in floating point, by the Gram identity
``x_a^T M x_a + x_b^T M x_b - 2 x_a^T M x_b`` or from the difference ``x_a - x_b``, in any
order of summation (BLAS blocking and fused multiply-adds included), lies within
``rho (sigma_a + sigma_b)^2`` of ``D_M``, ``rho = (4 d + 24) eps`` (Higham, *Accuracy and
Stability of Numerical Algorithms*, sec. 3.1: an inner product of length ``m`` errs by at
most ``gamma_m |u|^T |v|``; the Gram identity needs two of length ``2d`` and two additions,
the origin one subtraction per coordinate, and ``rho`` is twice that count). The scale is
that of the metric along the coordinates, not its norm: a feature measured in millimetres
next to one in kilometres does not inflate it.

A computed metric is PSD only up to rounding. With ``S = M / (s s^T)`` and its negative part
``N = sum_{theta_m < 0} |theta_m| u_m u_m^T``, ``N <= d diag(N)`` (Cauchy-Schwarz on each
rank-one term), so ``M+ = M + diag(t)^2`` with ``t_k = s_k sqrt(d N_kk + 4 d eps |S|_F)``
(the last term bounds the eigensolver's error; ``t = 0`` when the smallest computed eigenvalue
of ``S`` exceeds that error) is PSD in exact arithmetic, and
``D_M+ - D_M <= (tau_a + tau_b)^2`` with ``tau_a = sum_k t_k |x~_a,k|``: the correction sits on
the coordinates that need it, so rounding on a direction the metric ignores costs nothing
elsewhere. Each distance is thus within ``e_ab = rho (sigma_a + sigma_b)^2 + (tau_a + tau_b)^2``
of both ``D_M`` and ``D_M+``.

A hinge ``1 + D_ij - D_il`` then errs by at most ``e_t = e_ij + e_il + 4 eps (1 + |D_ij|)``,
so a triplet whose computed hinge is ``<= -e_t`` is inactive, and one above it contributes at
most ``e_t`` of error to the sum. ``LMNNProblem.evaluate`` adds these over the triplets, the
pull term's ``e_ij``, and ``eps`` per term summed: the result is a bound ``r`` with
``|computed - eps(M+)| <= r`` where ``M+`` is PSD, so ``computed + r`` is a rigorous upper
bound on the optimum of eq. 14.
"""

from __future__ import annotations

import numpy as np

EPS = np.finfo(float).eps


def metric_scales(metrics: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(s (C, d), t (C, d), rho)`` of the module docstring for metrics (C, d, d)."""
    metrics = np.asarray(metrics, dtype=float)
    C, d, _ = metrics.shape
    diagonal = np.einsum("cdd->cd", metrics)
    floor = EPS * np.maximum(diagonal.max(axis=1, keepdims=True), np.finfo(float).tiny)
    s = np.sqrt(np.maximum(diagonal, floor))
    s = np.maximum(s, np.max(np.abs(metrics) / s[:, None, :], axis=2))  # |M_kl| <= s_k s_l
    S = metrics / (s[:, :, None] * s[:, None, :])
    theta, U = np.linalg.eigh((S + S.transpose(0, 2, 1)) / 2)
    negative = np.einsum("cdm,cm->cd", U**2, np.maximum(-theta, 0.0))  # diag(N)
    solver = 4 * d * EPS * np.linalg.norm(S, axis=(1, 2))
    definite = theta[:, 0] >= solver  # PSD however the eigenvalues err: no correction
    t = np.where(definite[:, None], 0.0, s * np.sqrt(d * negative + solver[:, None]))
    return s, t, (4 * d + 24) * EPS


def point_sizes(Xo: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``sigma`` (C, n): ``sum_k s_ck |x~_a,k|`` for inputs ``Xo`` (n, d) less the origin
    (``tau`` with ``t`` in place of ``s``)."""
    return s @ np.abs(Xo).T


def distance_rounding(sigma_a, sigma_b, tau_a, tau_b, rho: float):
    """``e_ab = rho (sigma_a + sigma_b)^2 + (tau_a + tau_b)^2`` (module docstring), broadcast."""
    return rho * (sigma_a + sigma_b) ** 2 + (tau_a + tau_b) ** 2


def summation(n_terms: int, total: float) -> float:
    """Error bound of a sum of ``n_terms`` numbers whose absolute values add up to ``total``,
    summed in any order: ``n_terms eps total`` (Higham, eq. 4.4, generously)."""
    return 2.0 * n_terms * EPS * total
