r"""The dual bound of (MMC): weak duality from tangent points and one multiplier (numpy, scipy).

Notation of ``lmnn_sdp.mmc.problem``. The bound holds for (MMC) over PSD metrics and,
with the diagonal condition of step 2, over diagonal ones (the ``H*`` of (XING-MMC)).

1. Tangents of the square root. For ``s_p > 0`` and ``t >= 0``,
   ``sqrt(t) <= t / (2 s_p) + s_p / 2`` (AM-GM; equality at ``t = s_p^2``). Summed::

       f(A) <= <A, G_s> + sum_p s_p / 2,   G_s = sum_p u_p u_p^T / (2 s_p).

2. Weak duality. If ``lambda Sigma - G_s`` is PSD, every feasible ``A`` has
   ``<A, G_s> = lambda <A, Sigma> - <A, lambda Sigma - G_s> <= lambda`` (the inner product
   of two PSD matrices is non-negative), so::

       P* <= sum_p s_p / 2 + lambda.                                               (WD)

   Over diagonal ``A``, ``<A, Z> = sum_k a_k Z_kk``: only ``lambda Sigma_kk >= (G_s)_kk``
   is needed. (WD) is the Lagrange dual of ``max <A, G_s> s.t. <A, Sigma> <= 1``.
3. The smallest multiplier. Let ``W`` (d, r) satisfy ``W^T Sigma W = I_r`` with
   ``range(W) = range(Sigma)`` (``W = Q_r diag(1 / sigma_r)`` from the SVD of the stacked
   ``v_q``; diagonal: ``W = diag(sigma^{-1/2})`` on the features with ``sigma_k > 0``).
   If some ``u_p`` leaves ``range(Sigma)`` the problem is unbounded (``A = t z z^T`` with
   ``Sigma z = 0``, ``u_p^T z != 0`` is feasible for every ``t``) and we raise. Otherwise
   ``G_s`` lives on ``range(Sigma)`` and, by congruence with ``W``, ``lambda Sigma - G_s``
   is PSD iff ``lambda I_r - W^T G_s W`` is::

       lambda(s) = lambda_max(W^T G_s W)   (diagonal: max_k (G_s)_kk / sigma_k).

4. Tangent scale. ``s -> tau s`` turns the bound into ``tau sum(s) / 2 + lambda(s) / tau``,
   smallest at ``tau^2 = 2 lambda(s) / sum(s)``, where it is ``sqrt(2 lambda(s) sum(s))``.

Every ``s > 0`` gives a valid bound; it is exact at ``s_p = sqrt(D_{A*}(p))``: the KKT
conditions of (MMC) give ``lambda* Sigma - G_s`` PSD and, by Euler's identity,
``<A*, G_s> = f(A*) / 2 = lambda*``. A candidate's own roots ``sqrt(D_A(p))`` are the
tangent points; pairs it nearly collapses (tiny, inaccurate roots) would inflate
``lambda(s)``, so they are lifted to a floor, chosen on a grid, that costs little in
``sum(s)``.

Rounding. ``lambda(s)`` is one eigenvalue of a sum of ``P`` outer products formed in
whitened coordinates. The relative allowance ``e = 16 eps (P + S + d^2) + 2 ||W^T Sigma W - I||_2``
(the second term measured for the computed ``W``) covers its rounding to first order
(about 1e-10 on iris and wine): a multiplier proves (WD) only when it is at least
``(1 + e) lambda(s)``. A certificate stores ``(1 + 4 e) lambda(s)``, so that another
machine's rounding of ``lambda(s)`` (at most ``e`` either way) cannot reject it, and
the sum in (WD) is rounded up by ``(P + 2) eps``. When ``Sigma`` is singular, a
dissimilar difference whose component outside ``range(Sigma)`` is below ``1e-8`` of
the largest ``|u_p|`` entry is taken to lie in it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp.mmc.problem import MMCProblem

_EPS = np.finfo(float).eps
_SPAN_TOL = 1e-8  # relative size of a dissimilar difference outside range(Sigma)
STORED_ALLOWANCES = 4  # a stored multiplier is (1 + 4 e) lambda(s) (module docstring)
TANGENT_FLOORS = np.r_[0.0, np.logspace(-12, 0, 49)]  # tangent floors, relative to the largest root


@dataclass(frozen=True)
class Whitening:
    """Step 3's ``W`` (d, r), its measured defect, and the rounding allowance ``e``."""

    W: np.ndarray
    defect: float
    allowance: float


def whiten(problem: MMCProblem) -> Whitening:
    """``W`` (d, r) with ``W^T Sigma W = I_r`` on ``range(Sigma)`` (diagonal: of ``diag(Sigma)``).

    Raises a ValueError when a dissimilar difference leaves that range: the problem is
    unbounded (step 3)."""
    V, U = problem.similar_differences, problem.dissimilar_differences
    if problem.diagonal:
        scatter = np.sum(V**2, axis=0)
        keep = scatter > 0
        W = np.eye(len(scatter))[:, keep] / np.sqrt(scatter[keep])
        outside = np.abs(U[:, ~keep]).max(initial=0.0)
        defect = 0.0
    else:
        _, sv, Qt = np.linalg.svd(V, full_matrices=False)
        keep = sv > sv[0] * max(V.shape) * _EPS
        W = Qt[keep].T / sv[keep]
        outside = np.abs(U - U @ Qt[keep].T @ Qt[keep]).max()
        white = V @ W
        defect = float(np.linalg.norm(white.T @ white - np.eye(W.shape[1]), 2))
    if not keep.any() or outside > _SPAN_TOL * np.abs(U).max():
        raise ValueError(
            "the MMC problem is unbounded: some dissimilar pair differs along a direction "
            "in which no similar pair differs, so its distance can grow without limit. "
            "Add similar pairs that span that direction, or remove it from X."
        )
    d = problem.X.shape[1]
    allowance = 16 * _EPS * (len(U) + len(V) + d * d) + 2 * defect
    return Whitening(W, defect, allowance)


def smallest_multiplier(Uw: np.ndarray, tangents: np.ndarray, diagonal: bool) -> float:
    """``lambda(s)`` of step 3 for whitened differences ``Uw`` (P, r) and ``s`` (P,) > 0.

    The largest eigenvalue (full) or diagonal entry (diagonal) of
    ``W^T G_s W = sum_p w_p w_p^T / (2 s_p)``, ``w_p`` the rows of ``Uw``."""
    weighted = Uw / (2.0 * tangents)[:, None]
    if diagonal:
        return float(np.max(np.einsum("pr,pr->r", weighted, Uw)))
    return float(np.linalg.eigvalsh(weighted.T @ Uw)[-1])


def best_tangents(Uw: np.ndarray, roots: np.ndarray, diagonal: bool) -> np.ndarray:
    """Tangent points (P,) > 0 for (WD) from a candidate's roots ``sqrt(D_A(p))`` (P,).

    The roots lifted to ``floor * max(roots)`` for the floor on ``TANGENT_FLOORS`` that
    gives the smallest bound, then scaled by step 4's ``tau``."""
    top = roots.max()
    if top == 0:
        candidates = [np.ones_like(roots)]
    else:
        candidates = [np.maximum(roots, floor * top) for floor in TANGENT_FLOORS
                      if floor > 0 or roots.min() > 0]
    scaled = [(s, smallest_multiplier(Uw, s, diagonal)) for s in candidates]
    s, lam = min(scaled, key=lambda c: c[1] * np.sum(c[0]))  # step 4: bound^2 / 2
    return s * np.sqrt(2.0 * lam / np.sum(s))


def covering_multiplier(Uw: np.ndarray, tangents: np.ndarray, diagonal: bool,
                        allowance: float) -> float:
    """The multiplier a certificate stores: ``(1 + 4 e) lambda(s)`` (module docstring)."""
    return smallest_multiplier(Uw, tangents, diagonal) * (1 + STORED_ALLOWANCES * allowance)


def weak_duality_bound(Uw: np.ndarray, tangents, multiplier, diagonal: bool,
                       allowance: float) -> float:
    """(WD): ``sum(tangents) / 2 + multiplier``, rounded up, once the multiplier is proved.

    ``Uw`` (P, r) are the whitened dissimilar differences, ``tangents`` (P,) > 0.

    Raises
    ------
    ValueError
        Naming ``tangents`` or ``multiplier`` when they are malformed or the multiplier is
        below ``(1 + e) lambda(s)``: then ``lambda Sigma - G_s`` is not proved PSD."""
    s = np.asarray(tangents, dtype=float)
    if s.shape != (len(Uw),):
        raise ValueError(f"tangents must have shape ({len(Uw)},), one per dissimilar pair; "
                         f"got {s.shape}.")
    bad = np.flatnonzero(~(np.isfinite(s) & (s > 0)))
    if len(bad):
        raise ValueError(f"tangents must be finite and positive (step 1); "
                         f"tangents[{bad[0]}] = {s[bad[0]]!r}.")
    lam = float(multiplier)
    if not np.isfinite(lam):
        raise ValueError(f"the multiplier must be a finite number, got {multiplier!r}.")
    needed = smallest_multiplier(Uw, s, diagonal) * (1 + allowance)
    if lam < needed:
        condition = "lambda Sigma_kk >= (G_s)_kk" if diagonal else "lambda Sigma - G_s PSD"
        raise ValueError(f"certificate refused: multiplier={lam!r} does not prove {condition} "
                         f"at these tangents; that needs at least {needed!r} (weak duality, "
                         "lmnn_sdp.mmc.bound step 2).")
    return float((np.sum(s) / 2 + lam) * (1 + (len(s) + 2) * _EPS))
