r"""MMC: Mahalanobis Metric for Clustering (Xing, Ng, Jordan & Russell, NIPS 2002).

The exact convex problems of Weinberger & Saul (JMLR 2009, sec. 2.3.1) and of
Xing et al. (diagonal metric), solved in cvxpy and returned with rigorous bounds.

Notation. ``S`` holds the similar pairs, ``D`` the dissimilar ones;
``u_p = x_i - x_j`` for ``p = (i, j)`` in ``D``, ``v_q`` likewise for ``q`` in
``S``; ``D_A(p) = u_p^T A u_p``; ``Sigma = sum_q v_q v_q^T`` (the similar
scatter), so ``sum_S D_A = <A, Sigma>``.

Full metric (JMLR 2009, sec. 2.3.1)::

    P* = max  f(A) = sum_{p in D} sqrt(D_A(p))   s.t.  <A, Sigma> <= 1,  A PSD.   (MMC)

Diagonal metric (Xing et al. 2002, sec. 2.1), ``A = diag(a)``, ``w_p = u_p * u_p``
(elementwise), ``sigma = diag(Sigma) = sum_q v_q * v_q``::

    g* = min  g(a) = <sigma, a> - log h(a),   h(a) = sum_{p in D} sqrt(<w_p, a>),   a >= 0.   (XING)

Upper bound on P*
-----------------
1. Tangents of the square root. For ``s_p > 0`` and ``t >= 0``,
   ``sqrt(t) <= t / (2 s_p) + s_p / 2`` (AM-GM; equality at ``t = s_p^2``). Summed::

       f(A) <= <A, G_s> + c_s,   G_s = sum_p u_p u_p^T / (2 s_p),   c_s = sum_p s_p / 2.

2. Lagrange dual of the linear SDP ``max <A, G_s> s.t. <A, Sigma> <= 1, A PSD``.
   With multiplier ``lambda >= 0`` on the similar constraint and ``Z`` PSD on
   ``A`` PSD, the Lagrangian ``<A, G_s - lambda Sigma + Z> + lambda`` is bounded
   in ``A`` only if ``Z = lambda Sigma - G_s``: the dual is
   ``min lambda s.t. lambda Sigma - G_s PSD``. Weak duality, directly: for a
   feasible ``A``, ``<A, G_s> = lambda <A, Sigma> - <A, lambda Sigma - G_s> <= lambda``
   (the inner product of two PSD matrices is non-negative).
3. The smallest such multiplier. Let ``W`` (d, r) satisfy ``W^T Sigma W = I_r``
   with ``range(W) = range(Sigma)`` (``W = Q_r diag(1 / sigma_r)`` from the SVD
   of the stacked ``v_q``). If some ``u_p`` leaves ``range(Sigma)`` the problem
   is unbounded (``A = t z z^T`` with ``Sigma z = 0``, ``u_p^T z != 0`` is
   feasible for every ``t``) and we raise. Otherwise ``G_s`` lives on
   ``range(Sigma)`` and, by congruence with ``W``, ``lambda Sigma - G_s`` is PSD
   iff ``lambda I_r - W^T G_s W`` is. So the multiplier is the largest
   generalised eigenvalue of ``(G_s, Sigma)``::

       lambda(s) = lambda_max(W^T G_s W) = ||B_s||_2^2,   B_s = diag(1 / sqrt(2 s)) U W  (P, r).

4. Tangent scale. ``s -> tau s`` turns the bound ``c_s + lambda(s)`` into
   ``tau c_s + lambda(s) / tau``, smallest at ``tau^2 = lambda(s) / c_s``::

       P* <= UB(s) = 2 sqrt(c_s lambda(s)) = sqrt(2 lambda(s) sum_p s_p).        (UB)

Every ``s > 0`` gives a valid bound. It is exact at ``s_p = sqrt(D_{A*}(p))``:
the KKT conditions of (MMC) give ``lambda* Sigma - G_s = Z*`` PSD, so
``lambda(s) <= lambda*``, and homogeneity (Euler) gives
``<A*, G_s> = f(A*) / 2 = lambda*``, whence ``c_s + lambda(s) <= f(A*)``. We try
two choices of ``s`` and keep the smaller bound: the candidate's own
``sqrt(D_A(p))``, with pairs that the candidate nearly collapses lifted to a
floor chosen on a grid, and, after a solve, the solver's multipliers: in the
hypograph form ``max sum_p t_p s.t. t_p^2 <= D_A(p)``, stationarity in
``t_p`` gives the multiplier ``nu_p = 1 / (2 t_p)``, so ``s_p = 1 / (2 nu_p)``.
The duals are not trusted, only used as tangent points, and they track the
optimum to the solver's duality gap, while tangents from a primal point are
only first-order accurate.

Lower bound on g*
-----------------
For ``a >= 0`` with ``t = <sigma, a> > 0`` write ``a = t b``, ``<sigma, b> = 1``;
``h`` is homogeneous of degree 1/2, so
``g(a) = t - log(t) / 2 - log h(b) >= 1/2 + log(2) / 2 - log H*`` with
``H* = max h(b) s.t. <sigma, b> <= 1, b >= 0``, which is (MMC) over diagonal
``A`` (``t - log(t)/2`` is smallest at ``t = 1/2``; ``t = 0`` gives
``g = +inf``). Equality holds at ``a* = b* / 2``, so (XING) is solved exactly
through that SOCP, and

    g* = 1/2 + log(2) / 2 - log H* >= 1/2 + log(2) / 2 - log UB_diag(s).

``UB_diag`` is steps 1-4 over diagonal ``A``: the dual condition is
elementwise, ``lambda sigma_k >= (G_s)_kk``, so ``lambda(s) = max_k (G_s)_kk / sigma_k``,
the largest squared column norm of ``B_s`` with ``W = diag(sigma^{-1/2})``. A
feature with ``sigma_k = 0`` that separates a dissimilar pair makes (XING)
unbounded below; we raise. The gap reported for (XING) is ``g(a) - lower``,
which bounds ``log(UB / h)`` of the equivalent maximisation: a relative gap,
like ``(UB - f) / UB`` for (MMC).

Rounding. Both bounds are sums of non-negative terms and one SVD, widened by
the relative allowance ``16 eps (P + |S| + d^2)`` plus, for (MMC), the
measured defect ``||W^T Sigma W - I||_2`` of the computed whitening; this
covers their floating-point rounding to first order (it is about 1e-10 on wine).
When ``Sigma`` is singular, a dissimilar difference whose component outside
``range(Sigma)`` is below ``1e-8 max_p ||u_p||_inf`` is taken to lie in it.

Conditioning (measured with cvxpy 1.9.3, Clarabel 0.11.1, SCS). On raw
scales, or with X only divided by ``sqrt(sum_S ||v_q||^2)``, Clarabel stopped
with ``InsufficientProgress`` on iris and reported ``optimal`` at 303.2 on raw
wine, whose certified optimum is 492.74; SCS reported ``optimal`` at values
above the certified upper bound. Both programs are therefore solved in
whitened coordinates (``W^T u_p``; the similar constraint becomes
``trace(B) <= 1`` or ``sum(b) <= 1``), with the differences scaled so that a
typical distance is 1 and the objective divided by ``sqrt(P)``; the metric is
mapped back by ``A = W B W^T``. Xing's program written with ``-log`` (an
exponential cone) reached gaps of only 7e-8 to 6e-7 on iris and wine (status
``optimal_inaccurate`` on two of three); its SOCP equivalent above reaches
5e-9. Certificates are computed from the mapped-back metric in the original
coordinates, never from a solver status.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from numbers import Real

import cvxpy as cp
import numpy as np

from lmnn_sdp.bounds import relative_gap
from lmnn_sdp.lmnn import check_solver
from lmnn_sdp.problem import check_inputs, check_labels

_EPS = np.finfo(float).eps
_SPAN_TOL = 1e-8  # relative size of a dissimilar difference outside range(Sigma)
_PSD_TOL = 1e-8  # relative asymmetry / negative eigenvalue taken as rounding in a candidate
_LOG_HALF = 0.5 + 0.5 * np.log(2.0)  # min over t > 0 of t - log(t) / 2
TANGENT_FLOORS = np.r_[0.0, np.logspace(-12, 0, 49)]  # tangent floors, relative to the largest root


@dataclass(frozen=True, repr=False)
class MMCCertificate:
    """A candidate metric with rigorous bounds on the optimum of (MMC) or (XING).

    Attributes
    ----------
    metric : ndarray of shape (d, d)
        The metric evaluated. Full problem: the candidate scaled to
        ``sum_S D_A = 1`` (the feasible metric with the same distances up to
        one factor). Diagonal problem: the candidate as given.
    objective : float
        ``f(metric)`` (full, maximised) or ``g(metric)`` (diagonal, minimised),
        recomputed in numpy: a feasible primal value.
    lower_bound, upper_bound : float
        Rigorous bracket of ``P*`` or ``g*`` (module docstring).
    gap : float
        ``(upper - lower) / upper`` (full) or ``upper - lower`` (diagonal); both
        are relative gaps of a maximisation (module docstring).
    certified : bool
        ``gap <= tol``, decided from these bounds only.
    diagonal : bool
        True for (XING), False for (MMC).
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
        """The dual bound: upper for (MMC), lower for (XING)."""
        return self.lower_bound if self.diagonal else self.upper_bound

    def _summary(self) -> str:
        verdict = "certified" if self.certified else "NOT certified"
        kind = "diagonal" if self.diagonal else "full"
        return (f"{verdict}, {kind}: objective={self.objective:.10g}, "
                f"bound={self.bound:.10g}, gap={self.gap:.3g}, tol={self.tol:g}")

    def __repr__(self) -> str:
        return f"MMCCertificate({self._summary()})"


@dataclass(frozen=True, repr=False)
class MMCResult(MMCCertificate):
    """Solution of :func:`solve_mmc`: its certificate plus how it was found.

    Attributes
    ----------
    status : str
        The solver's status, reported and never trusted.
    solver : str
        The cvxpy solver used.
    setup_time, solve_time, certify_time : float
        Wall-clock seconds to check inputs and build the program, to compile
        and solve it, and to certify the answer.
    """

    status: str = ""
    solver: str = ""
    setup_time: float = 0.0
    solve_time: float = 0.0
    certify_time: float = 0.0

    def __repr__(self) -> str:
        return (f"MMCResult({self._summary()}, status={self.status!r}, solver={self.solver!r}, "
                f"setup={self.setup_time:.2f}s, solve={self.solve_time:.2f}s, "
                f"certify={self.certify_time:.2f}s)")


def solve_mmc(X, y=None, similar=None, dissimilar=None, diagonal: bool = False,
              solver: str = "CLARABEL", tol: float = 1e-6,
              solver_options: dict | None = None) -> MMCResult:
    """Solve MMC exactly in cvxpy and certify the answer.

    Full metric: (MMC) of the module docstring (JMLR 2009, sec. 2.3.1). Diagonal:
    (XING) (Xing et al. 2002), solved through its SOCP equivalent. Pairs come
    from ``y`` (all pairs ``i < j``; similar when the labels agree) or are given.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Inputs; finite real numbers.
    y : array-like of shape (n,), optional
        Labels; give either ``y`` or both ``similar`` and ``dissimilar``.
    similar, dissimilar : array-like of int, shape (P, 2), optional
        Index pairs into ``X``.
    diagonal : bool
        Solve (XING) over diagonal metrics instead of (MMC).
    solver : {"CLARABEL", "SCS"}
    tol : float
        Gap up to which the answer counts as certified.
    solver_options : dict, optional
        Passed to ``cvxpy.Problem.solve``.

    Returns
    -------
    MMCResult
        ``metric`` (d, d), objective, bounds, gap, ``certified``, status, timings.

    Raises
    ------
    ValueError
        Bad inputs, or an unbounded problem (module docstring).
    RuntimeError
        The solver failed without returning a point.
    """
    start = time.perf_counter()
    tol, solver = _check_tol(tol), check_solver(solver)
    similar_diff, dissimilar_diff = _differences(X, y, similar, dissimilar)
    W, defect = _whitening(similar_diff, dissimilar_diff, diagonal)
    program, B, hypograph = _program(dissimilar_diff @ W, diagonal)
    built = time.perf_counter()
    status = _run(program, solver, solver_options or {})
    solved = time.perf_counter()
    # (XING) is minimised at a* = b* / 2; (MMC) is rescaled to feasibility in _certify.
    inner = np.diag(B.value / 2) if diagonal else B.value
    duals = hypograph.dual_value
    usable = duals is not None and np.all(np.isfinite(duals) & (duals > 0))
    tangents = [1.0 / duals] if usable else []
    certificate = _certify(similar_diff, dissimilar_diff, W, defect, W @ inner @ W.T,
                           diagonal, tol, tangents)
    return MMCResult(**vars(certificate), status=status, solver=solver,
                     setup_time=built - start, solve_time=solved - built,
                     certify_time=time.perf_counter() - solved)


def certify_mmc(X, metric, y=None, similar=None, dissimilar=None,
                diagonal: bool = False, tol: float = 1e-6) -> MMCCertificate:
    """Rigorous bounds on the MMC optimum from any candidate metric.

    The dual bound (UB) uses the candidate's own distances as tangent points,
    so it is tight when the candidate is optimal and loose when it is not.

    Parameters
    ----------
    X : array-like of shape (n, d)
    metric : array-like of shape (d, d)
        Symmetric PSD candidate; asymmetry and negative eigenvalues up to 1e-8
        of its largest entry are rounding (its PSD part is evaluated). Diagonal
        when ``diagonal``.
    y, similar, dissimilar, diagonal, tol
        As in :func:`solve_mmc`.

    Returns
    -------
    MMCCertificate
    """
    tol = _check_tol(tol)
    similar_diff, dissimilar_diff = _differences(X, y, similar, dissimilar)
    metric = _check_metric(metric, similar_diff.shape[1], diagonal)
    W, defect = _whitening(similar_diff, dissimilar_diff, diagonal)
    return _certify(similar_diff, dissimilar_diff, W, defect, metric, diagonal, tol)


# -- objective evaluators ------------------------------------------------------
def label_pairs(y) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``i < j`` split by label: ``(similar, dissimilar)``, each (P, 2)."""
    y = np.asarray(y)
    i, j = np.triu_indices(len(y), k=1)
    same = y[i] == y[j]
    return np.column_stack([i[same], j[same]]), np.column_stack([i[~same], j[~same]])


def pair_distances(X, pairs, metric) -> np.ndarray:
    """``D_A(x_i, x_j) = (x_i - x_j)^T A (x_i - x_j)`` for pairs (P, 2); shape (P,)."""
    X = check_inputs(X)
    metric = np.asarray(metric, dtype=float)
    d = X.shape[1]
    if metric.shape != (d, d):
        raise ValueError(f"metric must have shape ({d}, {d}), got {metric.shape}.")
    return _distances(_pair_differences(X, pairs, "pairs"), metric)


def mmc_objective(X, dissimilar, metric) -> float:
    """``f(A) = sum_{(i, j) in D} sqrt(D_A(x_i, x_j))``, the objective of (MMC).

    ``metric`` (d, d) must be PSD: distances are not clipped."""
    return float(np.sum(np.sqrt(pair_distances(X, dissimilar, metric))))


def xing_objective(X, similar, dissimilar, weights) -> float:
    """``g(a) = sum_S D_a - log(sum_D sqrt(D_a))`` of (XING) for ``weights`` a (d,) >= 0."""
    a = np.asarray(weights, dtype=float)
    if a.ndim != 1 or not np.all(a >= 0):
        raise ValueError("weights must be a 1-D array of non-negative numbers (diag of A).")
    A = np.diag(a)
    with np.errstate(divide="ignore"):
        return float(np.sum(pair_distances(X, similar, A)) - np.log(mmc_objective(X, dissimilar, A)))


# -- certificate ---------------------------------------------------------------
def _certify(similar_diff, dissimilar_diff, W, defect, metric, diagonal, tol,
             tangents=()) -> MMCCertificate:
    """Bounds of the module docstring at a checked ``metric`` (d, d).

    ``tangents``: further tangent points (P,) > 0 for (UB), e.g. from solver duals."""
    metric, min_eig = _psd_part(metric)
    slack = 16 * _EPS * (len(dissimilar_diff) + len(similar_diff) + metric.size) + defect
    Uw = dissimilar_diff @ W
    similar_sum = float(np.sum(_distances(similar_diff, metric)))
    if not diagonal and similar_sum > 0:
        metric = metric / similar_sum
    # metric is PSD, so negative distances are rounding; 0 only lowers f and raises g.
    roots = np.sqrt(np.maximum(_distances(dissimilar_diff, metric), 0.0))
    upper_max = (1 + slack) * min([_floored_bound(Uw, roots, diagonal)]
                                  + [_bound_at(Uw, s, diagonal) for s in tangents])
    if diagonal:
        with np.errstate(divide="ignore"):
            objective = similar_sum - np.log(np.sum(roots))
        upper = objective + slack * (similar_sum + 1)
        lower = _LOG_HALF - np.log(upper_max)
        gap = max(upper - lower, 0.0)
    else:
        objective = float(np.sum(roots))
        lower, upper = (1 - slack) * objective, upper_max
        gap = relative_gap(upper, lower)
    return MMCCertificate(metric=metric, objective=float(objective), lower_bound=float(lower),
                          upper_bound=float(upper), gap=float(gap), certified=bool(gap <= tol),
                          diagonal=diagonal, tol=tol, min_eigenvalue=min_eig)


def _floored_bound(Uw: np.ndarray, roots: np.ndarray, diagonal: bool) -> float:
    """Smallest (UB) over tangent points ``max(roots, floor * max(roots))``, floors on a grid.

    Pairs the candidate nearly collapses (tiny, inaccurate roots) would inflate
    ``lambda(s)``; lifting them costs little in ``sum_p s_p``."""
    top = roots.max()
    if top == 0:
        return _bound_at(Uw, np.ones_like(roots), diagonal)
    return min(_bound_at(Uw, np.maximum(roots, floor * top), diagonal)
               for floor in TANGENT_FLOORS if floor > 0 or roots.min() > 0)


def _bound_at(Uw: np.ndarray, s: np.ndarray, diagonal: bool) -> float:
    """(UB) ``sqrt(2 lambda(s) sum_p s_p)`` for ``Uw`` (P, r) and ``s`` (P,) > 0.

    ``lambda(s)`` is the largest eigenvalue (full) or diagonal entry (diagonal)
    of ``B_s^T B_s = sum_p w_p w_p^T / (2 s_p)``, ``w_p`` the rows of ``Uw``."""
    gram = (Uw / (2.0 * s)[:, None]).T @ Uw
    lam = np.max(np.diag(gram)) if diagonal else np.linalg.eigvalsh(gram)[-1]
    return float(np.sqrt(2.0 * lam * np.sum(s)))


def _whitening(similar_diff, dissimilar_diff, diagonal: bool) -> tuple[np.ndarray, float]:
    """``W`` (d, r) with ``W^T Sigma W = I_r`` on ``range(Sigma)`` (diagonal: ``diag(Sigma)``),
    and the defect ``||W^T Sigma W - I||_2`` of the computed one (0 for diagonal).

    Raises when a dissimilar difference leaves that range: the problem is unbounded."""
    if diagonal:
        scatter = np.sum(similar_diff**2, axis=0)
        keep = scatter > 0
        W = np.eye(len(scatter))[:, keep] / np.sqrt(scatter[keep])
        outside = np.abs(dissimilar_diff[:, ~keep]).max(initial=0.0)
        defect = 0.0
    else:
        _, sv, Qt = np.linalg.svd(similar_diff, full_matrices=False)
        keep = sv > sv[0] * max(similar_diff.shape) * _EPS
        W = Qt[keep].T / sv[keep]
        outside = np.abs(dissimilar_diff - dissimilar_diff @ Qt[keep].T @ Qt[keep]).max()
        white = similar_diff @ W
        defect = float(np.linalg.norm(white.T @ white - np.eye(W.shape[1]), 2))
    if not keep.any() or outside > _SPAN_TOL * np.abs(dissimilar_diff).max():
        raise ValueError(
            "the MMC problem is unbounded: some dissimilar pair differs along a direction "
            "in which no similar pair differs, so its distance can grow without limit. "
            "Add similar pairs that span that direction, or remove it from X."
        )
    return W, defect


def _psd_part(metric: np.ndarray) -> tuple[np.ndarray, float]:
    """Projection of a symmetric (d, d) matrix on the PSD cone, and its smallest eigenvalue."""
    eigval, eigvec = np.linalg.eigh((metric + metric.T) / 2)
    if eigval[0] >= 0:
        return (metric + metric.T) / 2, float(eigval[0])
    return (eigvec * np.maximum(eigval, 0.0)) @ eigvec.T, float(eigval[0])


def _distances(U: np.ndarray, metric: np.ndarray) -> np.ndarray:
    return np.einsum("pd,de,pe->p", U, metric, U)


# -- cvxpy program -------------------------------------------------------------
def _program(Uw: np.ndarray, diagonal: bool):
    """(MMC), or (MMC) over diagonal metrics, in whitened coordinates; hypograph form.

    ``max sum_p t_p`` s.t. ``t_p^2 <= u_p^T B u_p`` (one vectorised constraint),
    ``trace(B) <= 1``, ``B`` PSD (r, r); or ``t_p^2 <= <u_p * u_p, b>``,
    ``sum(b) <= 1``, ``b >= 0`` (r,). ``Uw`` (P, r) holds the whitened
    differences, scaled so that a typical distance under ``B = I / r`` is 1; the
    objective is divided by ``sqrt(P)``, which balances the P cone multipliers
    against the one on the trace. Neither scaling moves the maximiser.

    Returns ``(problem, B, hypograph)``; the hypograph's duals give tangent points."""
    n_pairs, r = Uw.shape
    scaled = Uw * (np.sqrt(r) / np.mean(np.linalg.norm(Uw, axis=1)))
    if diagonal:
        B = cp.Variable(r, nonneg=True)
        distances, budget = scaled**2 @ B, cp.sum(B) <= 1
    else:
        B = cp.Variable((r, r), PSD=True)
        outer = (scaled[:, :, None] * scaled[:, None, :]).reshape(n_pairs, r * r)
        distances, budget = outer @ cp.vec(B, order="F"), cp.trace(B) <= 1
    t = cp.Variable(n_pairs)
    hypograph = cp.square(t) <= distances
    problem = cp.Problem(cp.Maximize(cp.sum(t) / np.sqrt(n_pairs)), [hypograph, budget])
    return problem, B, hypograph


def _run(program: cp.Problem, solver: str, options: dict) -> str:
    """Solve; return the status string. RuntimeError when no point comes back."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            program.solve(solver=solver, **options)
    except cp.error.SolverError as err:
        raise RuntimeError(f"solver {solver} failed on this MMC instance ({err}); try the "
                           "other solver and check the certificate of its answer.") from err
    if any(v.value is None for v in program.variables()):
        raise RuntimeError(f"solver {solver} returned no point (status {program.status!r}).")
    return str(program.status)


# -- validation ----------------------------------------------------------------
def _differences(X, y, similar, dissimilar) -> tuple[np.ndarray, np.ndarray]:
    """Checked differences ``v_q`` (S, d) and ``u_p`` (P, d), from labels or explicit pairs."""
    X = check_inputs(X)
    if y is not None:
        if similar is not None or dissimilar is not None:
            raise ValueError("give either y or explicit similar/dissimilar pairs, not both.")
        similar, dissimilar = label_pairs(check_labels(y, len(X)))
        if len(similar) == 0:
            raise ValueError("y gives no similar pairs: every label occurs once. MMC needs "
                             "at least one pair of points with the same label.")
        if len(dissimilar) == 0:
            raise ValueError("y gives no dissimilar pairs: all points share one label. "
                             "MMC needs at least two classes.")
    elif similar is None or dissimilar is None:
        raise ValueError("give labels y, or both similar and dissimilar index pairs (P, 2).")
    similar_diff = _pair_differences(X, similar, "similar")
    dissimilar_diff = _pair_differences(X, dissimilar, "dissimilar")
    if not np.any(dissimilar_diff):
        raise ValueError("every dissimilar pair joins two identical points: the MMC "
                         "objective is 0 for every metric.")
    return similar_diff, dissimilar_diff


def _pair_differences(X: np.ndarray, pairs, name: str) -> np.ndarray:
    """``x_i - x_j`` for each row of an index array (P, 2), checked; shape (P, d)."""
    p = np.asarray(pairs)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"{name} must have shape (P, 2), one index pair per row; "
                         f"got shape {p.shape}.")
    if len(p) == 0:
        raise ValueError(f"no {name} pairs: MMC needs at least one.")
    if not np.issubdtype(p.dtype, np.integer):
        raise TypeError(f"{name} must hold integer indices, got dtype={p.dtype}.")
    n = len(X)
    if p.min() < 0 or p.max() >= n:
        raise ValueError(f"{name} indices must lie in [0, {n - 1}] (X has {n} rows); got "
                         f"values in [{p.min()}, {p.max()}].")
    loops = np.flatnonzero(p[:, 0] == p[:, 1])
    if len(loops):
        raise ValueError(f"{name} pair {loops[0]} joins point {p[loops[0], 0]} to itself.")
    return X[p[:, 0]] - X[p[:, 1]]


def _check_metric(metric, d: int, diagonal: bool) -> np.ndarray:
    """A candidate (d, d): finite, symmetric and PSD up to rounding, diagonal if asked."""
    M = np.asarray(metric, dtype=float)
    if M.shape != (d, d):
        raise ValueError(f"metric must have shape ({d}, {d}), got {M.shape}.")
    if not np.all(np.isfinite(M)):
        raise ValueError("metric contains NaN or infinity.")
    size = max(np.abs(M).max(), np.finfo(float).tiny)
    if np.abs(M - M.T).max() > _PSD_TOL * size:
        raise ValueError("metric is not symmetric; pass (M + M.T) / 2 if that is meant.")
    if diagonal and np.any(M[~np.eye(d, dtype=bool)]):
        raise ValueError("diagonal=True needs a diagonal metric; pass np.diag(weights).")
    smallest = np.linalg.eigvalsh((M + M.T) / 2)[0]
    if smallest < -_PSD_TOL * size:
        raise ValueError(f"metric is not positive semidefinite (smallest eigenvalue "
                         f"{smallest:.3g}); only PSD matrices are Mahalanobis metrics.")
    return M


def _check_tol(tol) -> float:
    if isinstance(tol, bool) or not isinstance(tol, Real) or not 0 < tol < np.inf:
        raise ValueError(f"tol must be a positive finite number, got {tol!r}.")
    return float(tol)
