"""A cluster's dual matrix in its own eigenbasis, with an allowance per direction
(numpy only; used by ``bounds.dual_lower_bound``).

The allowance ``s_c`` of ``bounds`` bounds the rounding of ``Z_c`` by one number for every
direction, because a Laplacian form errs with the sizes of the points. Near the optimum
``Z_c`` is singular on the range of ``M_c``, and where a class's target differences are
tiny along some direction (a near-singular pull matrix ``P_c``: Fashion-MNIST classes
whose images barely vary along some principal components), the curvature of ``Z_c`` there
is of the order of ``s_c`` itself, so the scale into the dual cone gives up far more than
the multipliers' infeasibility.

Here each piece of ``Z_c`` (``A_c``, ``N_c`` and every ``R_{c,c'}`` of ``bounds``) is
formed again from the differences ``d = x_a - x_b`` in a basis ``Q`` (r, r) of the
cluster's choosing (the eigenvectors of its ``Z_c``): ``sum_p w_p y_p y_p^T`` with
``y = d Q``. Then every entry errs with the sizes of the differences along its own two
directions. With ``sigma_q^2 >= sum_p |w_p| y_{p,q}^2`` over all pieces (the size of
direction ``q``) and ``eps_{p,q} <= (gamma_r + u) |d_p| |Q_q|`` the error of ``y_{p,q}``
(a difference rounds once, relatively, then ``r`` products), Cauchy-Schwarz bounds the
error of entry ``(q, q')`` of the computed sum by ``sigma_q sigma_q' (rho_q + rho_q' +
rho_q rho_q' + gamma_m)`` with ``rho_q = e_q / sigma_q``, ``e_q^2 = sum_p |w_p| eps_{p,q}^2``
and ``m`` the roundings of the blocked product. Scaling rows and columns by powers of two
``s_q`` near ``sigma_q`` (exact in floating point) makes every direction of size about 1,
so the pieces are returned scaled, ``S^-1 piece S^-1``, with one allowance ``s'_c`` that
covers their errors, the ``C + 8`` roundings of combining them with the scales, and the
eigenvalue solver (``(r + 2) u |Z'|``), all times the margin 16 of ``bounds``. ``Z_c`` is
PSD iff ``Q^T Z_c Q`` is, for ``Q`` invertible: checked (``|Q^T Q - I| <= 1/2``).

Design note: docs/design/certificates.md, "A cluster's own basis".
"""

from __future__ import annotations

import numpy as np

from lmnn_sdp.core.space import blocked_cross, cross_terms

_U = np.finfo(float).eps / 2  # unit roundoff
MARGIN = 16  # on every rounding allowance of the dual bound (here and ``bounds._allowance``)
_BLOCK = 1 << 15  # pairs per block of difference vectors


def _gamma(m: float) -> float:
    return m * _U / (1 - m * _U)


def own_basis_pieces(Xr: np.ndarray, basis: np.ndarray, pieces: list) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The ``pieces`` of one cluster's dual matrix in ``basis``, scaled, and their allowance.

    Parameters
    ----------
    Xr : ndarray of shape (n, r)
        The points, in the coordinates of ``bounds.dual_lower_bound``.
    basis : ndarray of shape (r, r)
        ``Q``: any invertible matrix; the eigenvectors of the cluster's ``Z_c``.
    pieces : list of (a, b, w)
        Pairs ``(a, b)`` (P,) and weights ``w >= 0`` (P,) of each piece
        ``sum_p w_p (x_a - x_b)(x_a - x_b)^T``.

    Returns
    -------
    scaled : ndarray of shape (len(pieces), r, r)
        ``S^-1 Q^T piece Q S^-1`` for every piece, as computed.
    scale : ndarray of shape (r,)
        The diagonal of ``S``: powers of two, one per direction (column of ``basis``).
    allowance : float
        Bounds the error of any combination ``sum_j c_j scaled_j`` with ``|c_j| <= 1``
        formed in at most ``len(pieces) + 8`` roundings, plus that of its smallest
        eigenvalue (module docstring).

    None when ``basis`` is not safely invertible or a direction has size 0.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [1.0, 1e-6], [2.0, 0.0]])
    >>> pieces = [(np.array([0, 1]), np.array([1, 2]), np.array([1.0, 1.0]))]
    >>> scaled, scale, allowance = own_basis_pieces(X, np.eye(2), pieces)
    >>> bool(np.linalg.eigvalsh(scaled[0])[0] > allowance)
    True
    """
    r = basis.shape[0]
    if np.linalg.norm(basis.T @ basis - np.eye(r), 2) > 0.5:
        return None
    column = np.linalg.norm(basis, axis=0) * (1 + 2 * r * _U)
    sums, size, spread, rounds = [], np.zeros(r), 0.0, 0
    for a, b, w in pieces:
        total = np.zeros((r, r))
        blocks = range(0, len(a), _BLOCK)
        for start in blocks:
            s = slice(start, start + _BLOCK)
            D = Xr[a[s]] - Xr[b[s]]
            Y = D @ basis
            total += blocked_cross(Y * w[s, None], Y)
            size += np.einsum("p,pq->q", w[s], Y * Y)
            spread += float(w[s] @ np.einsum("pr,pr->p", D, D))
        rounds = max(rounds, cross_terms(min(len(a), _BLOCK)) + len(blocks) + 4)
        sums.append((total + total.T) / 2)
    sigma = np.sqrt(size * (1 + 1e-6))
    if not sigma.all():
        return None
    e = (_gamma(r) + _U) * column * np.sqrt(spread * (1 + 1e-6))
    rho = e / sigma
    scale = 2.0 ** np.round(np.log2(sigma))
    tau = sigma / scale
    bound = np.outer(tau, tau) * (rho[:, None] + rho[None, :] + np.outer(rho, rho)
                                  + _gamma(rounds) + _gamma(len(pieces) + 8))
    allowance = MARGIN * (np.linalg.norm(bound) + (r + 2) * _U * float(tau @ tau))
    scaled = np.stack(sums) / np.outer(scale, scale)
    return scaled, scale, allowance
