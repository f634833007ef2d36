"""Principal coordinates: lower bounds of distances, for the searches of pairs within a radius.

The impostor searches (``LMNNProblem.evaluate``, ``active_triplets`` and the fast solver's)
compare millions of distances with a radius and keep the few below it. They compare lower
bounds first, the distances between the points' principal coordinates: the centred points in
the leading eigenvectors of their scatter (``principal_coordinates``), a projection, so the
bound never exceeds the distance. A learned metric concentrates the data in few directions,
so the coordinates that hold all but ``SEARCH_TAIL`` of the scatter are far fewer than the
features, and the bounds' matrix products shrink with them; the pairs the bounds do not
exclude are measured exactly.

``metric_coordinates`` gives the coordinates of the inputs under a metric ``M`` with the
allowances that make them a rigorous lower bound of a distance as ``LMNNProblem.evaluate``
computes it (``lmnn_sdp.core.rounding``: ``s``, ``sigma``, ``e_ab``). With ``S = M / (s s^T)``
and ``S = U Theta U^T``, ``z_a = Theta_+^{1/2} U^T (s * x~_a)`` has
``D_M(x_a, x_b) >= |z_a - z_b|^2 - kappa (sigma_a + sigma_b)^2``, ``kappa`` the negative
eigenvalues of ``S`` and the eigensolver's error (``16 d^2 eps``, four times the rounding
module's ``4 d eps |S|_F`` with ``|S|_F <= d``); the principal coordinates ``w`` of ``z`` computed in floating
point lie within ``zeta_a`` of exact ones (Higham sec. 3.1: the product ``x~ B`` errs by
``gamma_{d+4} b sigma_a``, ``b`` the largest row norm of ``U Theta_+^{1/2}``; the centring and
the rotation by ``gamma_d sqrt(h) + 2 eps`` times ``|z_a - m|``; a common shift cancels). So

    D~(a, b) >= (|w_a - w_b| - zeta_a - zeta_b)_+^2 / (1 + 1e-10) - kappa (sigma_a + sigma_b)^2 - e_ab,

the ``1e-10`` for the rotation's departure from orthonormal columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp.core.rounding import EPS

SEARCH_TAIL = 1e-3  # share of the scatter the principal coordinates may leave out (design note
# ``docs/design/fast-lmnn-solver.md``, "The impostor search")


def principal_coordinates(Z: np.ndarray, tail: float = SEARCH_TAIL) -> tuple[np.ndarray, np.ndarray]:
    """Centred ``Z`` in the leading eigenvectors of its scatter, and its squared norms.

    With ``Z - mean = W_all Q^T`` (``Q`` the eigenvectors of the scatter, largest
    first), ``W`` is the fewest leading columns of ``W_all`` whose eigenvalues hold all
    but ``tail`` of the trace. A projection, so ``|w_i - w_l|^2 <= |z_i - z_l|^2`` for
    every pair: a search that compares ``W``'s distances with the radii loses no pair.

    Parameters
    ----------
    Z : ndarray of shape (n, r)
    tail : float, default=SEARCH_TAIL
        Share of the scatter's trace the columns left out may hold.

    Returns
    -------
    W : ndarray of shape (n, s), s <= r
    centred_sq : ndarray of shape (n,)
        ``|z_i - mean|^2``, which bounds ``|w_i|^2`` (for rounding allowances).

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp.core.principal import principal_coordinates
    >>> Z = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 0.01], [0.0, 2.0, 0.0], [4.0, 2.0, 0.0]])
    >>> W, centred_sq = principal_coordinates(Z, tail=1e-3)
    >>> W.shape
    (4, 2)
    """
    centred = Z - Z.mean(axis=0)
    Q, s = principal_axes(centred, tail)
    return centred @ Q[:, :s], np.einsum("nr,nr->n", centred, centred)


def principal_axes(centred: np.ndarray, tail: float) -> tuple[np.ndarray, int]:
    """The eigenvectors ``Q`` (r, r) of the scatter ``centred^T centred``, largest first, and the
    fewest ``s`` of them whose eigenvalues hold all but ``tail`` of its trace.

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp.core.principal import principal_axes
    >>> Q, s = principal_axes(np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 0.1], [0.0, -0.1]]), tail=1e-2)
    >>> s, np.abs(Q[:, 0]).tolist()
    (1, [1.0, 0.0])
    """
    eigenvalues, Q = np.linalg.eigh(centred.T @ centred)
    left_out = np.cumsum(eigenvalues)  # ascending: the trace of the i + 1 smallest
    s = len(eigenvalues) - int(np.count_nonzero(left_out <= tail * left_out[-1])) if len(left_out) else 0
    return Q[:, ::-1], s


def unit_scale(sq_norms: np.ndarray) -> float:
    """The power of 4 that brings the largest of ``sq_norms`` (squared lengths, float64) to
    between 1/4 and 1, 1 when all are zero: coordinates times its square root, a power of 2
    (exact), have float32 squares and Gram products far inside float32's range.

    Examples
    --------
    >>> float(unit_scale(np.array([0.0, 3e40])) * 3e40)
    0.344...
    """
    top = float(sq_norms.max()) if len(sq_norms) else 0.0
    return float(4.0 ** -np.ceil(np.log2(top) / 2)) if top > 0 else 1.0


def gram_factors(W: np.ndarray, norms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 factors whose product is ``|w_a - w_b|^2``: rows ``[w_a, 1, |w_a|^2]`` and columns
    ``[-2 w_b, |w_b|^2, 1]``, each (n, h + 2), for ``W`` (n, h) and its ``norms`` (n,). Rounding
    the factors and the product errs by at most ``(h + 4) 2^-24 * 2 (|w_a|^2 + |w_b|^2)``
    (Higham sec. 3.1; ``sum_k |a_k b_k| <= 2 (|w_a|^2 + |w_b|^2)``)."""
    ones = np.ones((len(W), 1))
    return (np.hstack([W, ones, norms[:, None]]).astype(np.float32),
            np.hstack([-2.0 * W, norms[:, None], ones]).astype(np.float32))


def float32_above(bound: np.ndarray) -> np.ndarray:
    """The float32 numbers just above ``bound`` (float64), ``inf`` beyond float32's range: a
    float32 value below them is below ``bound``'s exact value too."""
    out = np.full(np.shape(bound), np.inf, dtype=np.float32)
    finite = bound < 1e38
    out[finite] = np.nextafter(bound[finite].astype(np.float32), np.float32(np.inf))
    return out


@dataclass(frozen=True)
class MetricCoordinates:
    """Principal coordinates of the inputs under a metric, with their allowances (module
    docstring): ``W`` (n, h) and ``norms`` ``|w_a|^2`` (n,), both times ``scale`` (a power of 4,
    so that the largest norm is about 1), ``error`` ``zeta_a`` (n,) and ``kappa`` unscaled."""

    W: np.ndarray
    norms: np.ndarray
    error: np.ndarray
    kappa: float
    scale: float


def metric_coordinates(metric: np.ndarray, s: np.ndarray, Xo: np.ndarray, sigma: np.ndarray,
                       tail: float = SEARCH_TAIL) -> MetricCoordinates:
    """Principal coordinates of the inputs ``Xo`` (n, d) under ``metric`` (d, d) and their
    allowances (module docstring); ``s`` (d,) and ``sigma`` (n,) of ``lmnn_sdp.core.rounding``
    for this metric and these inputs.

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp.core import rounding
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> M = np.diag([4.0, 1.0, 0.0])
    >>> s, _, _ = rounding.metric_scales(M[None])
    >>> coords = metric_coordinates(M, s[0], X, rounding.point_sizes(X, s)[0])
    >>> coords.W.shape
    (50, 2)
    """
    d = len(metric)
    S = metric / (s[:, None] * s[None, :])
    theta, U = np.linalg.eigh((S + S.T) / 2)
    kappa = 1.01 * max(-float(theta[0]), 0.0) + 16.0 * d * d * EPS
    positive = theta > 0
    root = U[:, positive] * np.sqrt(theta[positive])  # U Theta_+^{1/2}, (d, p)
    b = float(np.sqrt(np.einsum("dp,dp->d", root, root).max())) if root.size else 0.0
    W, centred_sq = principal_coordinates(Xo @ (s[:, None] * root), tail)
    gamma = (d + 4) * EPS / (1.0 - (d + 4) * EPS)
    error = 1.01 * (gamma * b * sigma + (gamma * np.sqrt(max(W.shape[1], 1)) + 2 * EPS) * np.sqrt(centred_sq))
    norms = np.einsum("nh,nh->n", W, W)
    scale = unit_scale(norms)
    return MetricCoordinates(W * np.sqrt(scale), norms * scale, error, kappa, scale)
