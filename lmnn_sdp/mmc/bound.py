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
   ``v_q``, or of the rows ``sqrt(n_c) (x_i - m_c)`` for label pairs, ``pairs.similar_factor``;
   diagonal: ``W = diag(sigma^{-1/2})`` on the features with ``sigma_k > 0``).
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
``sum(s)``. Explicit pairs store their tangents (P,); implicit label pairs store the
rule ``s_p = scale * max(sqrt(D_M(p)), floor)`` (``TangentRule``, two numbers) and every
sum over pairs is re-derived blockwise (``lmnn_sdp.mmc.pairs``). Their grid stops at
``IMPLICIT_FLOOR_CAP`` of the largest root: the kernels sum pairs below the largest
floor one by one, and larger floors only help poor candidates.

Rounding. ``lambda(s)`` is one eigenvalue of a sum of ``P`` outer products formed in
whitened coordinates (implicit pairs: on the inputs, then ``W^T G_s W``). The relative allowance ``e = 16 eps (N + d^2) + 2 ||W^T Sigma W - I||_2``
(the second term measured for the computed ``W``) covers its rounding to first order;
``N`` is the longest run of terms a sum over pairs
adds (``pairs.summation_depth``: ``P + S`` for explicit pairs, about ``P / 256`` for
implicit ones, whose kernels sum in chunks). A multiplier proves (WD) only when it is
at least ``(1 + e) lambda(s)``. A certificate stores ``(1 + 4 e) lambda(s)``, so that
another machine's rounding of ``lambda(s)`` (at most ``e`` either way) cannot reject it,
and the sum in (WD) is rounded up by ``(P + 2) eps`` (implicit: ``(N + 2) eps``). When
``Sigma`` is singular, a dissimilar difference whose component outside ``range(Sigma)``
is below ``1e-8`` of the largest ``|u_p|`` entry is taken to lie in it.

Design note: docs/design/mmc.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lmnn_sdp.mmc import pairs
from lmnn_sdp.mmc.problem import MMCProblem

_EPS = np.finfo(float).eps
_SPAN_TOL = 1e-8  # relative size of a dissimilar difference outside range(Sigma)
STORED_ALLOWANCES = 4  # a stored multiplier is (1 + 4 e) lambda(s) (module docstring)
TANGENT_FLOORS = np.r_[0.0, np.logspace(-12, 0, 49)]  # tangent floors, relative to the largest root
IMPLICIT_FLOOR_CAP = 1e-3
IMPLICIT_FLOORS = TANGENT_FLOORS[TANGENT_FLOORS <= IMPLICIT_FLOOR_CAP]


@dataclass(frozen=True)
class Whitening:
    """Step 3's ``W`` (d, r), its measured defect, the rounding allowance ``e`` and the
    summation depth ``N`` it was computed for."""

    W: np.ndarray
    defect: float
    allowance: float
    depth: int


@dataclass(frozen=True)
class TangentRule:
    """Tangent points of implicit pairs: ``s_p = scale * max(sqrt(D_M(p)), floor)``, with
    ``D_M`` the certificate's own metric (``floor = 0`` needs every root positive)."""

    floor: float
    scale: float


def whiten(problem: MMCProblem) -> Whitening:
    """``W`` (d, r) with ``W^T Sigma W = I_r`` on ``range(Sigma)`` (diagonal: of ``diag(Sigma)``).

    Raises a ValueError when a dissimilar difference leaves that range: the problem is
    unbounded (step 3)."""
    R = pairs.similar_factor(problem)
    d = problem.X.shape[1]
    if problem.diagonal:
        scatter = np.sum(R**2, axis=0)
        keep = scatter > 0
        W = np.eye(d)[:, keep] / np.sqrt(scatter[keep])
        basis = np.eye(d)[keep]
        defect = 0.0
    else:
        _, sv, Qt = np.linalg.svd(R, full_matrices=False)
        keep = sv > sv[0] * max(R.shape) * _EPS
        W = Qt[keep].T / sv[keep]
        basis = Qt[keep]
        white = R @ W
        defect = float(np.linalg.norm(white.T @ white - np.eye(W.shape[1]), 2))
    outside, largest = pairs.dissimilar_extent(problem, basis)
    if not keep.any() or outside > _SPAN_TOL * largest:
        raise ValueError(
            "the MMC problem is unbounded: some dissimilar pair differs along a direction "
            "in which no similar pair differs, so its distance can grow without limit. "
            "Add similar pairs that span that direction, or remove it from X."
        )
    depth = pairs.summation_depth(problem)
    return Whitening(W, defect, 16 * _EPS * (depth + d * d) + 2 * defect, depth)


def smallest_multiplier(Uw: np.ndarray, tangents: np.ndarray, diagonal: bool) -> float:
    """``lambda(s)`` of step 3 for whitened differences ``Uw`` (P, r) and ``s`` (P,) > 0.

    The largest eigenvalue (full) or diagonal entry (diagonal) of
    ``W^T G_s W = sum_p w_p w_p^T / (2 s_p)``, ``w_p`` the rows of ``Uw``."""
    weighted = Uw / (2.0 * tangents)[:, None]
    if diagonal:
        return float(np.max(np.einsum("pr,pr->r", weighted, Uw)))
    return float(np.linalg.eigvalsh(weighted.T @ Uw)[-1])


def whitened_top(G: np.ndarray, W: np.ndarray, diagonal: bool) -> float:
    """``lambda_max(W^T G W)`` for ``G`` (d, d) on the inputs, or its diagonal (d,)."""
    if diagonal:
        return float(np.max(G @ W**2))
    white = W.T @ G @ W
    return float(np.linalg.eigvalsh((white + white.T) / 2)[-1])


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
    s, scale = _best([(s, smallest_multiplier(Uw, s, diagonal), np.sum(s)) for s in candidates])
    return s * scale


def best_rule(sums: pairs.TangentSums, W: np.ndarray, diagonal: bool) -> tuple[TangentRule, float]:
    """The ``TangentRule`` with the smallest bound among the floors of ``sums`` (the grid
    ``IMPLICIT_FLOORS`` times the largest root), scaled by step 4's ``tau``, and its
    ``lambda(s)``."""
    candidates = []
    for j, floor in enumerate(sums.floors):
        at_floor = floor_sums(sums, j)
        if at_floor is not None:
            lam = whitened_top(at_floor[0], W, diagonal)
            candidates.append(((floor, lam), lam, at_floor[1]))
    (floor, lam), scale = _best(candidates)
    return TangentRule(float(floor), float(scale)), lam / scale


def floor_sums(sums: pairs.TangentSums, j: int) -> tuple[np.ndarray, float] | None:
    """``(G, sum(s))`` of step 1 at tangents ``max(r_p, floors[j])`` (before step 4's
    scale), or None when ``floors[j] = 0`` and some root is 0."""
    floor = sums.floors[j]
    G, total = sums.over_roots[j + 1:].sum(axis=0), float(sums.roots[j + 1:].sum())
    below = float(sums.counts[:j + 1].sum())
    if below > 0:
        if floor == 0:
            return None
        G = G + sums.plain[:j + 1].sum(axis=0) / (2.0 * floor)
        total += floor * below
    return G, total


def _best(candidates: list) -> tuple:
    """``(key, tau)`` of the ``(key, lambda(s), sum(s))`` with the smallest bound, which is
    ``sqrt(2 lambda(s) sum(s))`` at step 4's ``tau = sqrt(2 lambda(s) / sum(s))``."""
    key, lam, total = min(candidates, key=lambda c: c[1] * c[2])
    return key, np.sqrt(2.0 * lam / total)


def covering_multiplier(lam: float, allowance: float) -> float:
    """The multiplier a certificate stores for ``lambda(s)``: ``(1 + 4 e) lambda(s)``."""
    return lam * (1 + STORED_ALLOWANCES * allowance)


def weak_duality_bound(Uw: np.ndarray, tangents, multiplier, diagonal: bool,
                       allowance: float) -> float:
    """(WD) at explicit ``tangents`` (P,) > 0 for the whitened differences ``Uw`` (P, r).

    Raises
    ------
    ValueError
        Naming ``tangents`` or ``multiplier`` when they are malformed or the multiplier is
        below ``(1 + e) lambda(s)`` (``proved_bound``)."""
    s = np.asarray(tangents, dtype=float)
    if s.shape != (len(Uw),):
        raise ValueError(f"tangents must have shape ({len(Uw)},), one per dissimilar pair; "
                         f"got {s.shape}.")
    bad = np.flatnonzero(~(np.isfinite(s) & (s > 0)))
    if len(bad):
        raise ValueError(f"tangents must be finite and positive (step 1); "
                         f"tangents[{bad[0]}] = {s[bad[0]]!r}.")
    return proved_bound(float(np.sum(s)), smallest_multiplier(Uw, s, diagonal), multiplier,
                        diagonal, allowance, len(s))


def check_rule(rule) -> TangentRule:
    """``rule`` as a ``TangentRule`` with a finite ``floor >= 0`` and ``scale > 0``, or a
    ValueError naming the bad number."""
    if not isinstance(rule, TangentRule):
        raise ValueError(f"implicit pairs take their tangents from a TangentRule, got "
                         f"{type(rule).__name__}.")
    if not (np.isfinite(rule.floor) and rule.floor >= 0):
        raise ValueError(f"tangent_floor must be a finite number >= 0, got {rule.floor!r}.")
    if not (np.isfinite(rule.scale) and rule.scale > 0):
        raise ValueError(f"tangent_scale must be a finite number > 0, got {rule.scale!r}.")
    return rule


def rule_bound(sums: pairs.TangentSums, rule: TangentRule, multiplier, W: np.ndarray,
               diagonal: bool, allowance: float, depth: int) -> float:
    """(WD) at the tangents of ``rule``, from ``sums`` at the single floor ``rule.floor``.

    Raises
    ------
    ValueError
        When the rule is malformed or the multiplier is below ``(1 + e) lambda(s)``."""
    at_floor = floor_sums(sums, 0)
    if at_floor is None:
        raise ValueError("certificate refused: tangent_floor=0 but the metric gives some "
                         "dissimilar pair distance 0, where a tangent must be positive "
                         "(step 1).")
    G, total = at_floor
    lam = whitened_top(G, W, diagonal) / rule.scale
    return proved_bound(total * rule.scale, lam, multiplier, diagonal, allowance, depth)


def proved_bound(tangent_sum: float, lam: float, multiplier, diagonal: bool,
                 allowance: float, terms: int) -> float:
    """(WD): ``sum(s) / 2 + multiplier``, rounded up by ``(terms + 2) eps``, once the
    multiplier is proved: at least ``(1 + e) lambda(s)``, else a ValueError."""
    lam_stated = float(multiplier)
    if not np.isfinite(lam_stated):
        raise ValueError(f"the multiplier must be a finite number, got {multiplier!r}.")
    needed = lam * (1 + allowance)
    if lam_stated < needed:
        condition = "lambda Sigma_kk >= (G_s)_kk" if diagonal else "lambda Sigma - G_s PSD"
        raise ValueError(f"certificate refused: multiplier={lam_stated!r} does not prove "
                         f"{condition} at these tangents; that needs at least {needed!r} "
                         "(weak duality, lmnn_sdp.mmc.bound step 2).")
    return float((tangent_sum / 2 + lam_stated) * (1 + (terms + 2) * _EPS))
