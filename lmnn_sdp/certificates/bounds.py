"""Rigorous dual lower bounds for LMNN, single- and multi-metric, in numpy and scipy only
(DESIGN.md, "Certificates").

Both sides of the library prove their answers here: ``lmnn_sdp.certify`` with
multipliers from an SDP, ``fast_solver`` with the multipliers of its smoothed
hinge. Nothing in this module imports cvxpy.

Upper bound: ``eps(M)`` of eq. 14 at a candidate ``M`` (any PSD metric is feasible).

Lower bound: for multipliers ``lambda`` in the box ``[0, mu]`` on distinct triplets of
the problem, weak duality gives ``opt >= sum_t lambda_t`` as soon as every

    Z_c(lambda) = (1-mu) P_c - sum_t lambda_t (C_il [c(l)=c] - C_ij [c(j)=c])

is PSD (multi-metric LMNN, sec. 5.2, the dual derived in ``lmnn_sdp.formulations.sdp``;
single-metric LMNN is the case of one cluster, ``Z = (1-mu) P - sum_t lambda_t
(C_il - C_ij)``). Triplets are checked to be genuine and distinct, multipliers
are clipped into the box, then each is scaled by ``alpha_{c(l)}`` in [0, 1], the scale
of its impostor's cluster, so the bound is ``sum_t alpha_{c(l_t)} lambda_t`` and no
solver status is ever trusted. With ``N_c = sum_{t: c(l)=c} lambda_t C_il`` and
``R_{c,c'} = sum_{t: c(j)=c, c(l)=c'} lambda_t C_ij``, the scaled dual matrices are

    Z_c(alpha) = A_c - alpha_c N_c + sum_c' alpha_c' R_{c,c'},   A_c = (1-mu) P_c.

One cluster's scale is the largest ``alpha_c`` that keeps ``Z_c`` PSD with the others
fixed: in closed form from the generalized eigenvalue problem ``Q u = theta (B - s_c I) u``
(``B`` the fixed part, ``Q = N_c - R_{c,c}``) when ``B - s_c I`` is positive definite,
by bisection otherwise. Sweeps over the clusters lower the scales until one sweep finds
every ``Z_c`` PSD as it stands (``_cluster_scales``), so the scales are checked together.
Every scale only falls, and never below the single scale that would serve all clusters
(a scale that keeps every ``Z_c`` PSD keeps each fixed part larger), so the bound is at
least that of one ``alpha`` for all; it costs ``(1 - alpha_c)`` of the impostor
multipliers of the clusters that need it instead of ``(1 - alpha)`` of all of them.
The shift ``s_c`` is a rounding allowance: ``Z_c`` is assembled from sums over pairs
and its eigenvalues computed in floating point, so we demand a computed smallest
eigenvalue of at least ``s_c = 16 eps sum_p |w_p| (|x_a|^2 + |x_b|^2) (m_p + r + k)``
over the pairs ``(a, b)`` with weight ``w_p`` that ``Z_c`` sums, ``m_p`` the roundings a
term of the pair passes through, at most ``2n`` (``_allowance``: about three times the
pairs at its ends plus ``core.space.cross_terms(n)``, some 1,030 at n = 60,000, where a
product over all rows would take n), which bounds those rounding errors (a Laplacian form ``X^T L X`` errs
with the sizes of the points, not of their differences, so the sums are of
``|x_a|^2 + |x_b|^2``). Near the optimum that one number for all directions can exceed the
curvature of ``Z_c`` along the directions where a cluster's differences are tiny; where it
costs more than half of what a cluster's scale gives up, that cluster is checked again in
its own eigenbasis with an allowance per direction (``own_basis``, ``_own_basis_scales``;
unless the one allowance already proves what suffices, ``enough``), and the scales that prove
more are kept. All of it runs in a reduced
space (``core.space.sphered_space`` by default, or any basis of the data range such as
the fast solver's whitened coordinates),
where ``Z_c`` is PSD iff it is on the inputs, and every sum is formed there; certificates
use the sphered data range (``core.space.sphered_space``), the same for every solver, so
that ``verify`` re-derives a bound in the coordinates that proved it.

Three exact facts keep singular clusters certifiable. A triplet whose impostor
coincides with its point on the inputs (``x_l = x_i`` exactly, as with binary features
or duplicates) has ``C_il = 0``: it adds ``lambda_t C_ij``, PSD, to ``Z``, so it counts
in full, unscaled, and its ``lambda_t C_ij`` joins ``A_c``. A cluster with no positive
impostor multiplier has ``Z_c`` a nonnegative sum of outer products, PSD for every
``alpha``: nothing to check numerically. A cluster whose pull matrix ``P_c`` is
singular on the data range cannot clear any allowance; its impostor multipliers
are set to 0 (still dual feasible) and the first fact applies. That is also what
the optimum does: ``M_c`` grows for free on the null space of ``P_c`` and pushes
its impostors out. When the bound then falls short, the certificate says
``certified=False`` rather than claim more. Every sum over triplets runs in
blocks, so millions of multipliers (a fast-solver certificate on 60,000 points)
need no ``(T, d)`` array.

Design note: docs/design/certificates.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

from lmnn_sdp.certificates.own_basis import MARGIN, own_basis_pieces
from lmnn_sdp.core.checks import check_triplets, triplet_keys
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import check_psd
from lmnn_sdp.core.space import (
    ReducedSpace,
    cluster_scatter,
    cross_terms,
    grouped_scatter,
    pull_matrices,
    sphered_space,
)

_EPS = np.finfo(float).eps
_BLOCK = 1 << 16  # triplets per block of difference vectors


def relative_gap(upper: float, lower: float) -> float:
    """``(upper - lower) / upper``; 0 when ``lower >= upper`` (both bounds exact)."""
    if lower >= upper:
        return 0.0
    return (upper - lower) / upper if upper > 0 else np.inf


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits (``format(value, ".3g")``), with as many
    more as it takes for a value below 1 not to show as 1: a relative gap of 0.99992 is
    "0.9999" (its bound proves a little), not "1" (a bound that proves nothing). It rounds
    to nearest, as ``format`` does, and never floors: a gap is not shown smaller than it is.

    Examples
    --------
    >>> significant(0.99992), significant(0.123456), significant(2.5e-7, 2)
    ('0.9999', '0.123', '2.5e-07')
    """
    text = f"{value:.{digits}g}"
    while value < 1 <= float(text) and digits < 17:
        digits += 1
        text = f"{value:.{digits}g}"
    return text


def boxed_multipliers(multipliers, n_triplets: int, mu: float) -> np.ndarray:
    """Multipliers (T,) clipped into the box ``[0, mu]`` (part of dual feasibility);
    a clear error for a wrong shape or non-finite entries."""
    lam = np.asarray(multipliers, dtype=float)
    if lam.shape != (n_triplets,):
        raise ValueError(f"multipliers must have shape ({n_triplets},), got {lam.shape}.")
    if not np.all(np.isfinite(lam)):
        raise ValueError("multipliers contain NaN or infinity (did the solver fail?).")
    return np.clip(lam, 0.0, mu)


@dataclass(frozen=True)
class DualBound:
    """What ``dual_lower_bound`` proves from a set of multipliers."""

    lower: float  # sum_t alpha_{c(l_t)} lambda_t after clipping and dropping (alpha 1 if x_l = x_i)
    alpha: float  # the smallest scale into the dual cone over the clusters
    min_eig_dual: float  # smallest computed eigenvalue of Z_c over the clusters, scaled
    multiplier_sum: float  # sum(lambda) after clipping and dropping, before scaling
    scales: tuple  # alpha_c of every cluster
    singular_clusters: tuple = ()  # clusters whose pull matrix is singular on the data range
    n_dropped: int = 0  # impostor multipliers set to 0 for them


def dual_lower_bound(problem: LMNNProblem, triplets, multipliers,
                     space: ReducedSpace | None = None, enough: float = np.inf) -> DualBound:
    """Rigorous lower bound on the optimum of eq. 14 (or of sec. 5.2 with clusters).

    Parameters
    ----------
    problem : LMNNProblem
        With ``clusters`` for multi-metric LMNN (eq. 16); without, LMNN, the case of one
        cluster.
    triplets : array-like of int, shape (T, 3)
        Distinct triplets of the problem (``check_genuine_triplets``) where the
        multiplier is positive; those with multiplier 0 are ignored.
    multipliers : array-like, shape (T,)
        Clipped into ``[0, mu]`` first.
    space : ReducedSpace, optional
        Coordinates of the data range to work in; ``core.space.sphered_space(problem)``
        by default (the coordinates of every certificate).
    enough : float, default=inf
        A bound that suffices (``prove``: the one that proves ``tol``): the clusters' own
        bases, two products of ``P x r x r`` over a cluster's ``P`` pairs, are formed only
        when the one allowance proves less.

    Returns
    -------
    DualBound
        ``sum_t alpha_{c(l_t)} lambda_t`` with scales ``alpha_c`` in [0, 1] that keep every
        ``Z_c`` PSD with the rounding allowance (module docstring).
    """
    space = space or sphered_space(problem)
    t = check_triplets(triplets, problem.n_samples)
    lam = boxed_multipliers(multipliers, len(t), problem.mu)
    keep = lam > 0
    t, lam = t[keep], lam[keep]
    check_genuine_triplets(problem, t)
    owner, C, Xr = problem.owner, problem.n_clusters, space.inputs
    A = (1.0 - problem.mu) * pull_matrices(problem, space)
    shift = _allowance(problem, space, owner, A, t, lam)
    free, F = _free_triplets(problem, Xr, owner, t, lam, C)
    A = A + F
    free_sum = float(lam[free].sum())
    t_free, lam_free = t[free], lam[free]
    t, lam = t[~free], lam[~free]
    singular, drop = _singular(A, shift, owner, t)
    lam = np.where(drop, 0.0, lam)
    N = grouped_scatter(Xr, t[:, 0], t[:, 2], lam, owner[t[:, 2]], C)
    R = grouped_scatter(Xr, t[:, 0], t[:, 1], lam, owner[t[:, 1]] * C + owner[t[:, 2]], C * C)
    R = R.reshape(C, C, *A.shape[1:])
    impostors = np.bincount(owner[t[:, 2]], weights=lam, minlength=C)
    checked = [c for c in range(C) if impostors[c] > 0]  # the others are PSD exactly
    alpha = _cluster_scales(A, N, R, shift, checked)
    if alpha @ impostors + free_sum < enough:
        own = _own_basis_scales(Xr, owner, problem, t, lam, t_free, lam_free, A, N, R, shift, checked, alpha)
        if own @ impostors > alpha @ impostors:
            alpha = own
    min_eig = min(float(np.linalg.eigvalsh(_scaled_dual(A, N, R, alpha, c))[0]) for c in range(C))
    return DualBound(lower=float(alpha @ impostors) + free_sum, alpha=float(alpha.min()),
                     min_eig_dual=min_eig, multiplier_sum=float(lam.sum()) + free_sum,
                     scales=tuple(alpha.tolist()), singular_clusters=tuple(singular),
                     n_dropped=int(np.sum(drop)))


SCALE_SWEEPS = 100  # sweeps of ``_cluster_scales`` before it settles for one scale for all
_UNDERSHOOT = 1e-12  # relative: with several clusters checked, a lowered scale stays this far
# inside its boundary, so that lowering the others by less does not undo it and the sweeps end


def _cluster_scales(A: np.ndarray, N: np.ndarray, R: np.ndarray, shift: np.ndarray,
                    checked: list) -> np.ndarray:
    """Scales ``alpha`` (C,) in [0, 1] with every ``Z_c(alpha)`` PSD up to ``shift``
    (module docstring); ``A``, ``N`` (C, r, r), ``R`` (C, C, r, r), only the ``checked``
    clusters can fail. Gauss-Seidel sweeps lower each failing cluster's scale given the
    others; a sweep in which every checked ``Z_c`` passes as it stands proves them all at
    once. Without one within ``SCALE_SWEEPS``, the one scale for all clusters."""
    alpha = np.ones(len(A))
    undershoot = _UNDERSHOOT if len(checked) > 1 else 0.0
    for _ in range(SCALE_SWEEPS):
        lowered = False
        for c in checked:
            Z = _scaled_dual(A, N, R, alpha, c)
            if np.linalg.eigvalsh(Z)[0] >= shift[c]:
                continue
            Q = N[c] - R[c, c]

            def formed(scale, c=c):  # Z_c as the next sweep forms it, so that a scale that passes passes there
                return _scaled_dual(A, N, R, np.where(np.arange(len(A)) == c, scale, alpha), c)
            alpha[c] = _feasible_below(Z + alpha[c] * Q, Q, shift[c], alpha[c], formed) * (1 - undershoot)
            lowered = True
        if not lowered:
            return alpha
    Q = N - np.einsum("cdrs->crs", R)
    common = _feasible_below(A[checked[0]], Q[checked[0]], shift[checked[0]], 1.0)
    while (failing := [c for c in checked if np.linalg.eigvalsh(A[c] - common * Q[c])[0] < shift[c]]):
        common = min(_feasible_below(A[c], Q[c], shift[c], common) for c in failing)
    return np.full(len(A), common)


def _own_basis_scales(Xr, owner, problem, t, lam, t_free, lam_free, A, N, R, shift, checked,
                      alpha) -> np.ndarray:
    """Scales (C,) with every checked cluster whose allowance costs more than half of what its
    scale gives up checked in its own basis (``own_basis``), or ``alpha`` when there is none.
    ``t``, ``lam``: the triplets whose impostor differs from its point, their multipliers
    (0 for singular clusters); ``t_free``, ``lam_free``: the others, whose ``lambda_t C_ij``
    joined ``A``; ``A``, ``N``, ``R``, ``shift``, ``alpha`` as in ``dual_lower_bound``."""
    C = len(A)
    limited = {}  # cluster: its scale without the allowance, the others fixed
    for c in checked:
        if alpha[c] < 1.0:
            Q = N[c] - R[c, c]
            unshifted = _feasible_below(_scaled_dual(A, N, R, alpha, c) + alpha[c] * Q, Q, 0.0, 1.0)
            if unshifted - alpha[c] > 0.5 * (1.0 - alpha[c]):
                limited[c] = unshifted
    if not limited:
        return alpha
    n, k = problem.targets.shape
    i, j = np.repeat(np.arange(n), k), problem.targets.ravel()
    A, N, R, shift = A.copy(), N.copy(), R.copy(), shift.copy()
    for c, unshifted in limited.items():
        pull, free = owner[j] == c, owner[t_free[:, 1]] == c
        pushed = (owner[t[:, 2]] == c) & (lam > 0)
        pieces = [(np.concatenate([i[pull], t_free[free, 0]]), np.concatenate([j[pull], t_free[free, 1]]),
                   np.concatenate([np.full(pull.sum(), 1.0 - problem.mu), lam_free[free]])),
                  (t[pushed, 0], t[pushed, 2], lam[pushed])]
        for c2 in range(C):
            pulled = (owner[t[:, 1]] == c) & (owner[t[:, 2]] == c2) & (lam > 0)
            pieces.append((t[pulled, 0], t[pulled, 1], lam[pulled]))
        basis = np.linalg.eigh(_scaled_dual(A, N, R, np.where(np.arange(C) == c, unshifted, alpha), c))[1]
        found = own_basis_pieces(Xr, basis, pieces)
        if found is None:
            continue
        scaled, _, shift[c] = found
        A[c], N[c], R[c] = scaled[0], scaled[1], scaled[2:]
    return _cluster_scales(A, N, R, shift, checked)


def _feasible_below(A: np.ndarray, Q: np.ndarray, shift: float, hi: float, formed=None) -> float:
    """Largest ``alpha`` in [0, ``hi``] with ``A - alpha Q - shift I`` PSD, checked: the closed
    form, lowered by steps growing fourfold from ``1e-15 alpha`` while rounding leaves it
    outside, and bisected once a step would reach half of it (each check is an eigenvalue
    solve; a bisection takes 60). ``formed(alpha)``, when given, is the matrix every check
    decomposes: ``A - alpha Q`` summed as the caller sums it, so that a scale accepted here
    passes the caller's own check, not only the same matrix rounded otherwise (design note:
    docs/design/high-dimension.md, "The first changes")."""
    formed = formed or (lambda alpha: A - alpha * Q)
    alpha = min(hi, largest_feasible_scale(A, Q, shift))
    step = 1e-15 * alpha
    while np.linalg.eigvalsh(formed(alpha))[0] < shift:
        if step >= alpha / 2:
            return bisect_feasible_scale(A, Q, shift, hi=alpha, formed=formed)
        alpha, step = alpha - step, 4 * step
    return alpha


def _scaled_dual(A: np.ndarray, N: np.ndarray, R: np.ndarray, alpha: np.ndarray, c: int) -> np.ndarray:
    """``Z_c(alpha) = A_c - alpha_c N_c + sum_c' alpha_c' R_{c,c'}`` (r, r)."""
    return A[c] - alpha[c] * N[c] + np.tensordot(alpha, R[c], axes=1)


REPAIR_ROUNDS = 3  # linear programmes of ``repair_multipliers``
REPAIR_CANDIDATES = 1000  # triplets per negative direction offered to each programme
def snap_multipliers(multipliers: np.ndarray, mu: float, within: float = 1e-3) -> np.ndarray:
    """``multipliers`` (T,) with those within ``within mu`` of 0 or of ``mu`` set there: an
    interior-point solver stops short of the bounds ``[0, mu]`` by its tolerance, which at a
    small objective can be the whole gap (design note docs/design/certificates.md, "The
    property test over mu, at length")."""
    near_mu = multipliers >= (1.0 - within) * mu
    return np.where(near_mu, mu, np.where(multipliers <= within * mu, 0.0, multipliers))


REPAIR_DIRECTIONS = 16  # eigenvectors per programme, the lowest relative to their allowance


def repair_multipliers(problem: LMNNProblem, triplets, multipliers, space: ReducedSpace | None = None,
                       max_decrease: float = np.inf) -> np.ndarray:
    """Multipliers (T,) lowered where ``Z_c(lambda)`` falls below its rounding allowance, by
    the least total decrease, so that ``dual_lower_bound`` needs no (or less) scaling.

    Near the optimum, multipliers from a solver or from the smoothed hinge leave some
    ``Z_c`` with a tiny negative eigenvalue, and the scale ``alpha_c`` into the dual cone
    then costs ``(1 - alpha_c)`` of the impostor multipliers of that cluster. Lowering only
    the multipliers that push along the offending eigenvectors can cost less. Each of ``REPAIR_ROUNDS`` rounds takes every eigenpair
    ``(theta, v)`` of every checked ``Z_c`` with ``theta < 2 s_c`` (the allowance of
    ``dual_lower_bound``; the ``REPAIR_DIRECTIONS`` lowest relative to ``s_c``: near an
    optimum of full rank every eigenvalue of ``Z`` is close to 0) and solves the linear
    programme

        min sum_t delta_t  s.t.  sum_t delta_t a_t(v) >= 4 s_c - theta,  0 <= delta_t <= lambda_t,

    where ``a_t(v) = (v . (x_i - x_l))^2 [c(l)=c] - (v . (x_i - x_j))^2 [c(j)=c]`` is how much
    lowering ``lambda_t`` raises ``v^T Z_c v`` (over the ``REPAIR_CANDIDATES`` triplets of
    largest ``a_t`` per direction); impostor multipliers of a singular cluster are set to 0
    first, as ``dual_lower_bound`` does. The result is only a candidate: ``dual_lower_bound``
    checks it like any multipliers, and callers keep whichever proves more. A round that would
    take the total decrease past ``max_decrease`` (what the scale costs: then scaling is the
    better repair, as when every direction is short) is not taken. Other arguments as for
    ``dual_lower_bound``; zeros stay in place, so the result aligns with ``triplets``.
    """
    space = space or sphered_space(problem)
    t = check_triplets(triplets, problem.n_samples)
    lam = boxed_multipliers(multipliers, len(t), problem.mu)
    owner, C, Xr = problem.owner, problem.n_clusters, space.inputs
    A = (1.0 - problem.mu) * pull_matrices(problem, space)
    for round in range(REPAIR_ROUNDS):
        shift = _allowance(problem, space, owner, A, t, lam)
        if round == 0:  # as dual_lower_bound: no impostor multipliers for a singular cluster
            free, F = _free_triplets(problem, Xr, owner, t, lam, C)  # (their Z is A + F)
            lam = np.where(_singular(A + F, shift, owner, t)[1] & ~free, 0.0, lam)
        Q = _multiplier_scatter(Xr, owner, t, lam, C)
        impostors = np.bincount(owner[t[:, 2]], weights=lam, minlength=C)
        found = []  # (theta / s_c, cluster, theta, eigenvector) below twice the allowance
        for c in np.flatnonzero(impostors > 0):
            theta, V = np.linalg.eigh(A[c] - Q[c])
            found += [(theta[m] / shift[c], c, theta[m], V[:, m]) for m in np.flatnonzero(theta < 2 * shift[c])]
        if not found:
            break
        found = sorted(found, key=lambda f: f[0])[:REPAIR_DIRECTIONS]
        cluster = np.array([f[1] for f in found])
        deficit = np.array([4 * shift[f[1]] - f[2] for f in found])
        V = np.column_stack([f[3] for f in found])
        candidates = _candidates(Xr, owner, t, lam, V, cluster)
        delta = _least_decrease(_direction_gains(Xr, owner, t[candidates], V, cluster), deficit,
                                lam[candidates])
        if delta is None or delta.sum() > max_decrease:
            break
        max_decrease -= delta.sum()
        lam[candidates] = np.maximum(lam[candidates] - delta, 0.0)
    return lam


def _direction_gains(Xr: np.ndarray, owner: np.ndarray, t: np.ndarray, V: np.ndarray,
                     cluster: np.ndarray) -> np.ndarray:
    """``a_t(v)`` of ``repair_multipliers`` for the columns ``v`` of ``V`` (r, m), column ``m``
    in cluster ``cluster[m]``, and the triplets ``t`` (T, 3): shape (m, T)."""
    pushed = ((Xr[t[:, 0]] - Xr[t[:, 2]]) @ V) ** 2 * (owner[t[:, 2], None] == cluster)
    pulled = ((Xr[t[:, 0]] - Xr[t[:, 1]]) @ V) ** 2 * (owner[t[:, 1], None] == cluster)
    return (pushed - pulled).T


def _candidates(Xr: np.ndarray, owner: np.ndarray, t: np.ndarray, lam: np.ndarray, V: np.ndarray,
                cluster: np.ndarray) -> np.ndarray:
    """Indices of the triplets with a positive multiplier among the ``REPAIR_CANDIDATES`` of
    largest positive gain for some column of ``V``, in blocks of ``_BLOCK`` triplets (a
    certificate of 60,000 points holds millions)."""
    best = [np.empty(0, np.intp) for _ in range(V.shape[1])]
    best_gain = [np.empty(0) for _ in range(V.shape[1])]
    for start in range(0, len(t), _BLOCK):
        index = start + np.flatnonzero(lam[start:start + _BLOCK] > 0)
        gains = _direction_gains(Xr, owner, t[index], V, cluster)
        for m, row in enumerate(gains):
            keep = row > 0
            pool_index = np.concatenate([best[m], index[keep]])
            pool_gain = np.concatenate([best_gain[m], row[keep]])
            top = np.argsort(-pool_gain, kind="stable")[:REPAIR_CANDIDATES]
            best[m], best_gain[m] = pool_index[top], pool_gain[top]
    return np.unique(np.concatenate(best))


def _least_decrease(gains: np.ndarray, deficit: np.ndarray, lam: np.ndarray) -> np.ndarray | None:
    """The linear programme of ``repair_multipliers`` over the candidate triplets (``gains``
    (m, T), their multipliers ``lam`` (T,)): ``delta`` (T,), or None when it has no solution.
    Solved in the fractions ``delta_t / lambda_t`` with every row divided by its deficit, so
    that HiGHS's absolute tolerances (1e-7) do not swallow deficits of 1e-10."""
    if not len(lam):
        return None
    rows = gains * lam / deficit[:, None]
    solution = scipy.optimize.linprog(lam / lam.max(), A_ub=-rows, b_ub=-np.ones(len(deficit)),
                                      bounds=(0.0, 1.0), method="highs")
    if solution.status != 0:
        return None
    return np.clip(solution.x, 0.0, 1.0) * lam


def check_genuine_triplets(problem: LMNNProblem, triplets: np.ndarray) -> None:
    """A ValueError unless every row ``(i, j, l)`` of ``triplets`` (T, 3) is a distinct
    triplet of eq. 14: ``j`` a target neighbour of ``i`` and ``y_l != y_i``.

    Weak duality holds only for multipliers of the problem's own margin
    constraints, at most ``mu`` each: a multiplier on anything else, or two on
    one triplet, could prove a bound above the optimum."""
    codes = problem.label_codes
    for start in range(0, len(triplets), _BLOCK):
        s = triplets[start:start + _BLOCK]
        found = (problem.targets[s[:, 0]] == s[:, 1, None]).any(axis=1)
        if not found.all():
            bad = start + int(np.argmin(found))
            raise ValueError(f"triplets[{bad}] = {tuple(triplets[bad].tolist())} is not a triplet of "
                             f"eq. 14: point {triplets[bad, 1]} is not a target neighbour of point "
                             f"{triplets[bad, 0]}; multipliers belong on the problem's triplets only.")
    same = np.flatnonzero(codes[triplets[:, 2]] == codes[triplets[:, 0]])
    if len(same):
        bad = int(same[0])
        raise ValueError(f"triplets[{bad}] = {tuple(triplets[bad].tolist())} is not a triplet of "
                         f"eq. 14: point {triplets[bad, 2]} has the label of point {triplets[bad, 0]}, "
                         "so it is no impostor.")
    keys = triplet_keys(triplets, problem.n_samples)
    order = np.argsort(keys, kind="stable")
    repeated = np.flatnonzero(keys[order[1:]] == keys[order[:-1]])
    if len(repeated):
        bad = int(order[repeated[0] + 1])
        raise ValueError(f"triplets[{bad}] = {tuple(triplets[bad].tolist())} appears twice; give "
                         "each triplet one multiplier in [0, mu] (add them up and clip).")


def _allowance(problem: LMNNProblem, space: ReducedSpace, owner: np.ndarray, A: np.ndarray,
               t: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The rounding allowance ``s_c`` of every cluster, shape (C,):
    ``16 eps sum_p |w_p| (|x_a|^2 + |x_b|^2) (m_p + r + k)`` over the pairs ``(a, b)`` with
    weight ``w_p`` that ``Z_c`` sums (targets with ``1 - mu``, triplets' target and impostor
    pairs with ``lambda_t``), ``m_p`` the smaller of ``2n`` and the roundings a term of pair
    ``p`` passes through in ``core.space.pair_scatter`` (``_pair_roundings``), ``r + k`` for
    assembling ``Z_c`` and its eigenvalues. The error of an entry of ``Xr^T Lap Xr`` is at
    most ``gamma_m`` times ``sum_p |w_p| (|x_a| + |x_b|)(|x_a| + |x_b|)^T`` taken entrywise,
    whose spectral norm is at most ``2 sum_p |w_p| (|x_a|^2 + |x_b|^2)``: a Laplacian form
    errs with the sizes of the points, not of their differences. With
    ``gamma_m = m (eps/2) / (1 - m eps/2)``, the factor ``16 eps`` leaves a margin of 16 on
    ``_pair_roundings`` (and of 3 on ``2n``, the count of the product over all rows that the
    allowance took before; a term passes through at most about ``5n`` roundings there), wide
    enough for the ``C + 2`` sums that assemble ``Z_c``. ``2n`` keeps every certificate of
    the earlier allowance valid. Tested against exact arithmetic in
    ``tests/lmnn_sdp/test_bounds_rounding.py``."""
    n, k = problem.targets.shape
    Xr = space.inputs
    sq = np.einsum("nr,nr->n", Xr, Xr)
    i, j = np.repeat(np.arange(n), k), problem.targets.ravel()
    pairs = [(i, j, np.full(len(j), 1.0 - problem.mu), owner[j]),
             (t[:, 0], t[:, 1], lam, owner[t[:, 1]]), (t[:, 0], t[:, 2], lam, owner[t[:, 2]])]
    roundings = _pair_roundings([(a, b) for a, b, _, _ in pairs], n)
    total = np.zeros(len(A))
    for a, b, w, group in pairs:
        m = np.minimum(roundings(a, b), 2 * n) + space.rank + k
        total += np.bincount(group, weights=np.abs(w) * (sq[a] + sq[b]) * m, minlength=len(A))
    return MARGIN * _EPS * total


def _pair_roundings(pairs: list, n: int):
    """``(a, b) -> m_p`` (P,), the roundings a term of pair ``(a, b)`` passes
    through in ``core.space.pair_scatter`` on any graph of some of ``pairs`` (lists of ends
    ``(a, b)``) over at most ``n`` points: with ``inc(u)`` the pairs at ``u`` (both ends,
    duplicates counted), an entry of ``W + W^T`` sums at most ``inc(u)`` weights, a degree at
    most ``inc(u)`` entries, a row of ``Lap Xr`` at most ``inc(u) + 1`` products, so a term of
    row ``u`` takes at most ``3 inc(u) + 3`` roundings there, ``core.space.cross_terms(n)`` in
    the product over the rows and 2 in the symmetrisation."""
    inc = np.bincount(np.concatenate([np.concatenate([a, b]) for a, b in pairs]), minlength=n)
    rest = cross_terms(n) + 5
    return lambda a, b: 3.0 * np.maximum(inc[a], inc[b]) + rest


def _free_triplets(problem: LMNNProblem, Xr: np.ndarray, owner: np.ndarray, t: np.ndarray,
                   lam: np.ndarray, C: int) -> tuple[np.ndarray, np.ndarray]:
    """The triplets (T,) whose impostor equals its point on the inputs (``C_il = 0`` exactly,
    module docstring) and their ``sum_t lambda_t C_ij`` per cluster of ``j``, PSD: (C, r, r)."""
    rows = problem.row_labels()
    free = rows[t[:, 0]] == rows[t[:, 2]]
    return free, grouped_scatter(Xr, t[free, 0], t[free, 1], lam[free], owner[t[free, 1]], C)


def _singular(A: np.ndarray, shift: np.ndarray, owner: np.ndarray, t: np.ndarray) -> tuple[list, np.ndarray]:
    """The clusters whose ``A_c`` cannot clear its allowance (module docstring), and the mask
    (T,) of the triplets whose impostor lies in one of them."""
    singular = [c for c in range(len(A)) if np.linalg.eigvalsh(A[c])[0] <= shift[c]]
    return singular, np.isin(owner[t[:, 2]], singular)


def _multiplier_scatter(Xr: np.ndarray, owner: np.ndarray, t: np.ndarray, lam: np.ndarray,
                        C: int) -> np.ndarray:
    """``Q_c = sum_t lambda_t (C_il [c(l)=c] - C_ij [c(j)=c])``, shape (C, r, r)."""
    return cluster_scatter(Xr, owner, np.concatenate([t[:, 0], t[:, 0]]),
                           np.concatenate([t[:, 2], t[:, 1]]), np.concatenate([lam, -lam]), C)


def largest_feasible_scale(A: np.ndarray, Q: np.ndarray, shift: float = 0.0) -> float:
    """Largest ``alpha`` in [0, 1] with ``A - alpha Q - shift I`` PSD; A, Q of shape (r, r)."""
    A_shifted = A - shift * np.eye(len(A))
    if np.linalg.eigvalsh(A_shifted)[0] <= 0:
        return bisect_feasible_scale(A, Q, shift, hi=1.0)
    theta = scipy.linalg.eigh(Q, A_shifted, eigvals_only=True)[-1]
    return 1.0 if theta <= 1.0 else float(1.0 / theta)


def bisect_feasible_scale(A: np.ndarray, Q: np.ndarray, shift: float, hi: float, formed=None) -> float:
    """Bisection for ``largest_feasible_scale`` below ``hi`` (60 halvings); ``formed`` as in
    ``_feasible_below``."""
    formed = formed or (lambda alpha: A - alpha * Q)

    def feasible(alpha: float) -> bool:
        return np.linalg.eigvalsh(formed(alpha))[0] >= shift

    if feasible(hi):
        return hi
    lo = 0.0
    if not feasible(lo):
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
    return lo


def check_candidate_metric(problem: LMNNProblem, M):
    """Validate a candidate metric (d, d), or for a problem with clusters the metrics (C, d, d),
    one per cluster (eq. 16): finite, symmetric, PSD up to rounding.

    Eigenvalues in ``[-1e-8 max|M|, 0)`` are rounding (``core.psd.check_psd``); the metric is
    kept as given, and the upper bound's rounding bound covers the distance to the PSD cone
    (``core.rounding``), so that ``verify`` evaluates exactly the matrix that was proved.
    Returns ``(M, min_eig)`` with ``min_eig`` the smallest eigenvalue of the matrices."""
    M = np.asarray(M)
    if problem.clusters is None:
        if M.ndim != 2:
            raise ValueError(f"M must be one metric of shape (d, d), got {M.shape}; pass "
                             "clusters for one metric per cluster.")
        return check_psd(problem.check_metric(M))
    C = problem.n_clusters
    if M.ndim != 3 or len(M) != C:
        raise ValueError(f"metrics must have shape (n_clusters, d, d) with n_clusters={C}, "
                         f"got {M.shape}: one metric per cluster (eq. 16).")
    checked = []
    for c in range(C):
        try:
            checked.append(check_psd(problem.check_metric(M[c])))
        except ValueError as err:
            raise ValueError(f"metrics[{c}]: {err}") from None
    return np.stack([m for m, _ in checked]), float(min(e for _, e in checked))
