r"""MMC: Mahalanobis Metric for Clustering (Xing, Ng, Jordan & Russell, NIPS 2002).

The exact convex problem of Weinberger & Saul (JMLR 2009, sec. 2.3.1), solved in
cvxpy and returned with a rigorous bound on its optimum.

Notation. ``S`` holds the similar pairs, ``D`` the dissimilar ones;
``u_p = x_i - x_j`` for ``p = (i, j)`` in ``D``, ``v_q`` likewise for ``q`` in
``S``; ``D_A(p) = u_p^T A u_p``; ``Sigma = sum_q v_q v_q^T`` (the similar
scatter), so ``sum_S D_A = <A, Sigma>``.

Full metric (sec. 2.3.1)::

    P* = max  f(A) = sum_{p in D} sqrt(D_A(p))   s.t.  <A, Sigma> <= 1,  A PSD.   (MMC)

Diagonal metric (Xing et al., eq. 6), ``A = diag(a)``, ``w_p = u_p * u_p``
(elementwise), ``s = sum_q v_q * v_q``::

    g* = min  g(a) = <s, a> - log h(a),   h(a) = sum_{p in D} sqrt(<w_p, a>),   a >= 0.   (XING)

Upper bound on P*
-----------------
1. Tangents of the square root. For ``s_p > 0`` and ``t >= 0``,
   ``sqrt(t) <= t / (2 s_p) + s_p / 2`` (AM-GM; equality at ``t = s_p^2``). Summed::

       f(A) <= <A, G_s> + c_s,   G_s = sum_p u_p u_p^T / (2 s_p),   c_s = sum_p s_p / 2.

2. Lagrange dual of the linear SDP ``max <A, G_s> s.t. <A, Sigma> <= 1, A PSD``.
   With multiplier ``lambda >= 0`` on the similar constraint and ``Z PSD`` on
   ``A PSD`` the Lagrangian is ``<A, G_s - lambda Sigma + Z> + lambda``; it is
   bounded in ``A`` only if ``Z = lambda Sigma - G_s``, so the dual is
   ``min lambda s.t. lambda Sigma - G_s PSD``. Weak duality, directly: for
   feasible ``A``, ``<A, G_s> = lambda <A, Sigma> - <A, lambda Sigma - G_s>
   <= lambda`` (the inner product of two PSD matrices is >= 0).
3. The smallest such multiplier. Let ``W`` (d, r) satisfy ``W^T Sigma W = I_r``
   with ``range(W) = range(Sigma)`` (``W = Q_r diag(1/sigma_r)`` from the SVD of
   the stacked ``v_q``). If some ``u_p`` leaves ``range(Sigma)`` the problem is
   unbounded (``A = t z z^T`` with ``Sigma z = 0``, ``u_p^T z != 0`` is feasible
   for every ``t``), and we raise. Otherwise ``G_s`` lives on ``range(Sigma)``
   and, by congruence with ``W``, ``lambda Sigma - G_s`` is PSD iff
   ``lambda I - W^T G_s W`` is, so

       lambda(s) = lambda_max(W^T G_s W) = ||B_s||_2^2,   B_s = diag(1 / sqrt(2 s)) U W,

   the largest generalised eigenvalue of ``(G_s, Sigma)``.
4. Tangent scale. ``s -> tau s`` gives ``tau c_s + lambda(s) / tau``; its minimum
   over ``tau > 0`` is the bound we report::

       P* <= UB(s) = 2 sqrt(c_s lambda(s)) = sqrt(2 lambda(s) sum_p s_p).

We take ``s_p = sqrt(D_A(p))`` at the candidate ``A``. At the optimum the bound
is exact: the KKT conditions of (MMC) give ``Z* = lambda* Sigma - G_s`` PSD, so
``lambda(s) <= lambda*``, and homogeneity (Euler) gives
``<A*, G_s> = f(A*) / 2 = lambda*``, whence ``UB <= lambda* + c_s = f(A*)``.

Lower bound on g*
-----------------
For ``a >= 0`` with ``t = <s, a> > 0`` write ``a = t b`` with ``<s, b> = 1``; since
``h`` is homogeneous of degree 1/2,
``g(a) = t - (1/2) log t - log h(b) >= 1/2 + (1/2) log 2 - log H*``, where
``H* = max h(b) s.t. <s, b> <= 1, b >= 0`` is (MMC) restricted to diagonal
``A`` (minimum over ``t`` at ``t = 1/2``; ``t = 0`` gives ``g = +inf`` or an
unbounded problem, see below). Equality holds at ``a* = b* / 2``, so

    g* = 1/2 + (1/2) log 2 - log H*   and   g* >= 1/2 + (1/2) log 2 - log UB_diag(s).

``UB_diag`` is steps 1-4 with ``A`` diagonal: the dual condition becomes
elementwise, ``lambda s_k >= (G_s)_kk``, so ``lambda(s) = max_k (G_s)_kk / s_k``,
the largest squared column norm of ``B_s`` with ``W = diag(s^{-1/2})``. A
feature with ``s_k = 0`` that separates some dissimilar pair makes (XING)
unbounded below; we raise.

Rounding. The bounds hold in exact arithmetic; they are evaluated with
backward-stable SVDs, whose relative error (about ``d eps cond(Sigma)^{1/2}``)
is far below the default tolerance 1e-6. When ``Sigma`` is singular, dissimilar
differences whose component outside ``range(Sigma)`` is below
``1e-8 max_p ||u_p||`` are taken to lie in it (rounding); larger ones raise.

Conditioning. Both programs are solved in whitened coordinates ``u_p -> W^T u_p``
(the similar constraint becomes ``trace(B) <= 1`` or ``sum(b) <= 1``), with the
sum over ``D`` replaced by a mean; the metric is mapped back by
``A = W B W^T``. Any certificate is computed from the mapped-back metric in the
original coordinates, never from the solver's status.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from lmnn_sdp.problem import _check_inputs, _check_labels

_SPAN_TOL = 1e-8  # relative size of a dissimilar difference outside range(Sigma)
_PSD_TOL = 1e-8  # relative asymmetry / negative eigenvalue tolerated in a candidate
_LOG_HALF = 0.5 + 0.5 * np.log(2.0)  # min_t t - log(t) / 2


@dataclass(frozen=True, repr=False)
class MMCCertificate:
    """A candidate metric with rigorous bounds on the optimum of (MMC) or (XING).

    Attributes
    ----------
    metric : ndarray of shape (d, d)
        The metric evaluated: the PSD part of the candidate, scaled to
        ``sum_S D_A = 1`` for the full problem (the feasible metric with the
        same distances up to one factor), as given for the diagonal one.
    objective : float
        ``f(metric)`` (full, to be maximised) or ``g(metric)`` (diagonal, to be
        minimised), recomputed in numpy; a feasible primal value.
    lower_bound, upper_bound : float
        Rigorous bracket of the optimum ``P*`` or ``g*``; one side is
        ``objective``, the other comes from the dual bound of the module docstring.
    gap : float
        ``(upper - lower) / upper`` for the full problem; ``upper - lower`` for the
        diagonal one, which equals ``log(UB / H)`` of its equivalent maximisation,
        so both are relative gaps of a maximisation.
    certified : bool
        ``gap <= tol``, decided from these bounds only.
    diagonal : bool
        Which problem: (XING) if True, (MMC) otherwise.
    tol : float
        Tolerance on ``gap``.
    min_eigenvalue : float
        Smallest eigenvalue of the candidate before its PSD part was taken.
    """

    metric: np.ndarray
    objective: float
    lower_bound: float
    upper_bound: float
    gap: float
    certified: bool
    diagonal: bool
    tol: float
    min_eigenvalue: float

    @property
    def A(self) -> np.ndarray:
        """Alias of ``metric`` (Xing et al.'s name)."""
        return self.metric

    @property
    def bound(self) -> float:
        """The rigorous dual bound: upper for (MMC), lower for (XING)."""
        return self.lower_bound if self.diagonal else self.upper_bound

    def _fields(self) -> str:
        kind = "diagonal" if self.diagonal else "full"
        return (f"{kind}, objective={self.objective:.10g}, bound={self.bound:.10g}, "
                f"gap={self.gap:.2e}, certified={self.certified}")

    def __repr__(self) -> str:
        return f"MMCCertificate({self._fields()})"


@dataclass(frozen=True, repr=False)
class MMCResult(MMCCertificate):
    """Solution of :func:`solve_mmc`: its certificate plus solver facts.

    Attributes
    ----------
    status : str
        The solver's status string, reported and never trusted.
    solver : str
        The cvxpy solver used.
    setup_time, solve_time, certify_time : float
        Wall-clock seconds to build the program, to compile and solve it, and
        to certify the answer.
    """

    status: str = ""
    solver: str = ""
    setup_time: float = 0.0
    solve_time: float = 0.0
    certify_time: float = 0.0

    def __repr__(self) -> str:
        seconds = self.setup_time + self.solve_time + self.certify_time
        return (f"MMCResult({self._fields()}, status={self.status!r}, "
                f"solver={self.solver!r}, time={seconds:.2f}s)")


def solve_mmc(X, y=None, similar=None, dissimilar=None, diagonal: bool = False,
              solver: str = "CLARABEL", tol: float = 1e-6,
              solver_options: dict | None = None) -> MMCResult:
    """Solve MMC exactly in cvxpy and certify the answer.

    Full metric: (MMC) of the module docstring (JMLR 2009, sec. 2.3.1).
    Diagonal: (XING), Xing et al. (2002), eq. 6. Pairs come from ``y`` (all
    pairs ``i < j``; similar when the labels agree) or are given explicitly.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,), optional
        Labels; give either ``y`` or both ``similar`` and ``dissimilar``.
    similar, dissimilar : array-like of int, shape (P, 2), optional
        Index pairs into ``X``.
    diagonal : bool
        Solve (XING) over diagonal metrics instead of (MMC).
    solver : str
        A cvxpy solver that handles the cones (CLARABEL, SCS).
    tol : float
        Gap below which the answer counts as certified.
    solver_options : dict, optional
        Passed to ``cvxpy.Problem.solve``.

    Returns
    -------
    MMCResult
        ``metric`` of shape (d, d), objective, bounds, gap, ``certified``.

    Raises
    ------
    ValueError
        Bad inputs or an unbounded problem (see the module docstring).
    RuntimeError
        The solver failed without returning a point.
    """
    tol = _check_tol(tol)
    start = time.perf_counter()
    similar_diff, dissimilar_diff = _differences(X, y, similar, dissimilar)
    W = _whitening(similar_diff, dissimilar_diff, diagonal)
    program, variable = (_diagonal_program if diagonal else _full_program)(dissimilar_diff @ W)
    built = time.perf_counter()
    status = _run(program, solver, solver_options or {})
    solved = time.perf_counter()
    B = np.diag(variable.value) if diagonal else variable.value
    metric = W @ B @ W.T
    certificate = _certify(similar_diff, dissimilar_diff, W, metric, diagonal, tol)
    return MMCResult(**vars(certificate), status=status, solver=solver,
                     setup_time=built - start, solve_time=solved - built,
                     certify_time=time.perf_counter() - solved)


def certify_mmc(X, metric, y=None, similar=None, dissimilar=None,
                diagonal: bool = False, tol: float = 1e-6) -> MMCCertificate:
    """Rigorous bounds on the MMC optimum from any candidate metric.

    The bound of the module docstring is built from the candidate's own
    distances; it is tight when the candidate is optimal.

    Parameters
    ----------
    X : array-like of shape (n, d)
    metric : array-like of shape (d, d)
        Symmetric PSD candidate (asymmetry and negative eigenvalues up to 1e-8
        of its largest eigenvalue are rounding); diagonal when ``diagonal``.
    y, similar, dissimilar, diagonal, tol
        As in :func:`solve_mmc`.

    Returns
    -------
    MMCCertificate
    """
    tol = _check_tol(tol)
    similar_diff, dissimilar_diff = _differences(X, y, similar, dissimilar)
    metric = _check_metric(metric, similar_diff.shape[1], diagonal)
    W = _whitening(similar_diff, dissimilar_diff, diagonal)
    return _certify(similar_diff, dissimilar_diff, W, metric, diagonal, tol)


# -- objective evaluators ------------------------------------------------------
def label_pairs(y) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``i < j`` split by label: ``(similar, dissimilar)``, each (P, 2)."""
    y = np.asarray(y)
    i, j = np.triu_indices(len(y), k=1)
    same = y[i] == y[j]
    return np.column_stack([i[same], j[same]]), np.column_stack([i[~same], j[~same]])


def pair_distances(X, pairs, metric) -> np.ndarray:
    """``D_A(x_i, x_j) = (x_i - x_j)^T A (x_i - x_j)`` for pairs (P, 2); shape (P,)."""
    X = _check_inputs(X)
    U = _pair_differences(X, pairs, "pairs")
    return _distances(U, np.asarray(metric, dtype=float))


def mmc_objective(X, dissimilar, metric) -> float:
    """``f(A) = sum_{(i,j) in D} sqrt(D_A(x_i, x_j))``, the objective of (MMC).

    ``metric`` of shape (d, d) must be PSD (distances are not clipped)."""
    return float(np.sum(np.sqrt(pair_distances(X, dissimilar, metric))))


def xing_objective(X, similar, dissimilar, weights) -> float:
    """``g(a) = sum_S D_a - log(sum_D sqrt(D_a))`` of (XING), ``a`` of shape (d,), ``a >= 0``."""
    A = np.diag(np.asarray(weights, dtype=float))
    with np.errstate(divide="ignore"):
        return float(np.sum(pair_distances(X, similar, A))
                     - np.log(mmc_objective(X, dissimilar, A)))


# -- certificate ---------------------------------------------------------------
def _certify(similar_diff, dissimilar_diff, W, metric, diagonal, tol) -> MMCCertificate:
    """Bounds of the module docstring at ``metric`` (d, d), already checked."""
    metric, min_eig = _psd_part(metric)
    if diagonal:
        a = np.diag(metric)
        roots = np.sqrt(_distances(dissimilar_diff, metric))
        with np.errstate(divide="ignore"):
            upper = float(np.sum(_distances(similar_diff, metric)) - np.log(np.sum(roots)))
        lower = _LOG_HALF - np.log(_tangent_bound(dissimilar_diff @ W, roots, diagonal))
        gap = upper - lower
        metric = np.diag(a)
    else:
        constraint = np.sum(_distances(similar_diff, metric))
        metric = metric / constraint if constraint > 0 else metric
        roots = np.sqrt(_distances(dissimilar_diff, metric))
        lower = float(np.sum(roots))
        upper = _tangent_bound(dissimilar_diff @ W, roots, diagonal)
        gap = (upper - lower) / upper
    return MMCCertificate(metric=metric, objective=upper if diagonal else lower,
                          lower_bound=lower, upper_bound=upper, gap=gap,
                          certified=bool(gap <= tol), diagonal=diagonal, tol=tol,
                          min_eigenvalue=min_eig)


def _tangent_bound(Uw: np.ndarray, roots: np.ndarray, diagonal: bool) -> float:
    """``UB(s) = sqrt(2 lambda(s) sum_p s_p)`` (steps 1-4 of the module docstring).

    ``Uw`` (P, r) holds the whitened dissimilar differences ``W^T u_p``, ``roots``
    (P,) the tangent points ``s_p``; zeros are lifted to a small positive value
    (any ``s > 0`` gives a valid bound)."""
    top = roots.max()
    s = np.maximum(roots, np.sqrt(np.finfo(float).eps) * top) if top > 0 else np.ones_like(roots)
    B = Uw / np.sqrt(2.0 * s)[:, None]
    lam = np.max(np.sum(B**2, axis=0)) if diagonal else np.linalg.norm(B, 2) ** 2
    return float(np.sqrt(2.0 * lam * np.sum(s)))


def _whitening(similar_diff, dissimilar_diff, diagonal: bool) -> np.ndarray:
    """``W`` (d, r) with ``W^T Sigma W = I_r`` on ``range(Sigma)`` (diagonal: of ``diag(Sigma)``).

    Raises when a dissimilar difference leaves that range: the problem is unbounded."""
    if diagonal:
        scatter = np.sum(similar_diff**2, axis=0)
        keep = scatter > 0
        W = np.eye(len(scatter))[:, keep] / np.sqrt(scatter[keep])
        outside = np.abs(dissimilar_diff[:, ~keep]).max(initial=0.0)
    else:
        _, sigma, Qt = np.linalg.svd(similar_diff, full_matrices=False)
        keep = sigma > sigma[0] * max(similar_diff.shape) * np.finfo(float).eps
        W = Qt[keep].T / sigma[keep]
        residual = dissimilar_diff - (dissimilar_diff @ Qt[keep].T) @ Qt[keep]
        outside = np.abs(residual).max()
    if outside > _SPAN_TOL * np.abs(dissimilar_diff).max() or not keep.any():
        raise ValueError(
            "the MMC problem is unbounded: some dissimilar pair differs in a direction "
            "along which no similar pair differs, so that distance can grow without "
            "limit. Add similar pairs spanning that direction, or drop the feature."
        )
    return W


def _psd_part(metric: np.ndarray) -> tuple[np.ndarray, float]:
    """Projection of a symmetric (d, d) matrix on the PSD cone, and its smallest eigenvalue."""
    metric = (metric + metric.T) / 2
    eigval, eigvec = np.linalg.eigh(metric)
    return (eigvec * np.maximum(eigval, 0.0)) @ eigvec.T, float(eigval[0])


def _distances(U: np.ndarray, metric: np.ndarray) -> np.ndarray:
    return np.einsum("pd,de,pe->p", U, metric, U)


# -- cvxpy programs ------------------------------------------------------------
def _full_program(Uw: np.ndarray) -> tuple[cp.Problem, cp.Variable]:
    """(MMC) in whitened coordinates: max mean_p sqrt(u_p^T B u_p), trace(B) <= 1, B PSD."""
    n_pairs, r = Uw.shape
    B = cp.Variable((r, r), PSD=True)
    outer = (Uw[:, :, None] * Uw[:, None, :]).reshape(n_pairs, r * r)
    distances = outer @ cp.vec(B, order="F")
    objective = cp.Maximize(cp.sum(cp.sqrt(distances)) / n_pairs)
    return cp.Problem(objective, [cp.trace(B) <= 1]), B


def _diagonal_program(Uw: np.ndarray) -> tuple[cp.Problem, cp.Variable]:
    """(XING) in whitened coordinates: min sum(b) - log(mean_p sqrt(<u_p^2, b>)), b >= 0.

    The mean differs from Xing's sum by the constant ``log P``."""
    n_pairs, r = Uw.shape
    b = cp.Variable(r, nonneg=True)
    mean_root = cp.sum(cp.sqrt(Uw**2 @ b)) / n_pairs
    return cp.Problem(cp.Minimize(cp.sum(b) - cp.log(mean_root))), b


def _run(program: cp.Problem, solver: str, options: dict) -> str:
    """Solve and return the status; raise RuntimeError when no point comes back."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            program.solve(solver=solver, **options)
    except cp.error.SolverError as err:
        raise RuntimeError(
            f"solver {solver} failed on this MMC instance ({err}); try another solver, "
            "e.g. solver='SCS', and check the certificate of its answer."
        ) from err
    if program.variables()[0].value is None:
        raise RuntimeError(f"solver {solver} returned no point (status {program.status!r}).")
    return str(program.status)


# -- validation ----------------------------------------------------------------
def _differences(X, y, similar, dissimilar) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``(v_q)`` (S, d) and ``(u_p)`` (P, d) from labels or explicit pairs."""
    X = _check_inputs(X)
    if y is not None:
        if similar is not None or dissimilar is not None:
            raise ValueError("give either y or explicit similar/dissimilar pairs, not both.")
        similar, dissimilar = label_pairs(_check_labels(y, len(X)))
        if len(similar) == 0:
            raise ValueError("y gives no similar pairs: every label occurs once. MMC needs "
                             "at least one pair of points with the same label.")
        if len(dissimilar) == 0:
            raise ValueError("y gives no dissimilar pairs: all points share one label. "
                             "MMC needs at least two classes.")
    elif similar is None or dissimilar is None:
        raise ValueError("give labels y, or both similar and dissimilar pairs (P, 2).")
    return (_pair_differences(X, similar, "similar"),
            _pair_differences(X, dissimilar, "dissimilar"))


def _pair_differences(X: np.ndarray, pairs, name: str) -> np.ndarray:
    """``x_i - x_j`` for each row of a checked (P, 2) index array; shape (P, d)."""
    p = np.asarray(pairs)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"{name} must have shape (P, 2) with one index pair per row, "
                         f"got shape {p.shape}.")
    if len(p) == 0:
        raise ValueError(f"no {name} pairs: MMC needs at least one.")
    if not np.issubdtype(p.dtype, np.integer):
        raise TypeError(f"{name} must hold integer indices, got dtype={p.dtype}.")
    n = len(X)
    if p.min() < 0 or p.max() >= n:
        raise ValueError(f"{name} indices must lie in [0, {n - 1}], got values in "
                         f"[{p.min()}, {p.max()}].")
    same = np.flatnonzero(p[:, 0] == p[:, 1])
    if len(same):
        raise ValueError(f"{name} pair {same[0]} joins point {p[same[0], 0]} to itself.")
    return X[p[:, 0]] - X[p[:, 1]]


def _check_metric(metric, d: int, diagonal: bool) -> np.ndarray:
    M = np.asarray(metric, dtype=float)
    if M.shape != (d, d):
        raise ValueError(f"metric must have shape ({d}, {d}), got {M.shape}.")
    if not np.all(np.isfinite(M)):
        raise ValueError("metric contains NaN or infinity.")
    scale = max(np.abs(M).max(), np.finfo(float).tiny)
    if np.abs(M - M.T).max() > _PSD_TOL * scale:
        raise ValueError("metric is not symmetric; pass (M + M.T) / 2 if that is meant.")
    if diagonal and np.any(M[~np.eye(d, dtype=bool)] != 0):
        raise ValueError("diagonal=True needs a diagonal metric; pass np.diag(weights).")
    if np.linalg.eigvalsh((M + M.T) / 2)[0] < -_PSD_TOL * scale:
        raise ValueError("metric is not positive semidefinite; a Mahalanobis metric needs "
                         "non-negative eigenvalues.")
    return M


def _check_tol(tol) -> float:
    if not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and tol > 0):
        raise ValueError(f"tol must be a positive number, got {tol!r}.")
    return float(tol)
