r"""MMC's data and objectives (Xing et al. 2002; JMLR 2009, sec. 2.3.1), numpy only.

Notation of every module of ``lmnn_sdp.mmc``. ``S`` holds the similar pairs, ``D`` the
dissimilar ones; ``u_p = x_i - x_j`` for ``p = (i, j)`` in ``D``, ``v_q`` likewise for
``q`` in ``S``; ``D_A(p) = u_p^T A u_p``; ``Sigma = sum_q v_q v_q^T`` (the similar
scatter), so ``sum_S D_A = <A, Sigma>``. The pairs are index arrays, or implicit: all
label pairs of ``y``, never formed (``mmc_problem(..., implicit=True)``) and summed over
blockwise by ``lmnn_sdp.mmc.pairs``.

Full metric (JMLR 2009, sec. 2.3.1)::

    P* = max  f(A) = sum_{p in D} sqrt(D_A(p))   s.t.  <A, Sigma> <= 1,  A PSD.   (MMC)

Diagonal metric (Xing et al. 2002, sec. 2.1), ``A = diag(a)``, ``sigma = diag(Sigma)``::

    g* = min  g(a) = <sigma, a> - log h(a),   h(a) = sum_{p in D} sqrt(D_a(p)),   a >= 0.   (XING)

(XING) is (MMC) over diagonal metrics in disguise. For ``a = t b`` with
``<sigma, b> = 1``, ``h`` is homogeneous of degree 1/2, so
``g(a) = t - log(t) / 2 - log h(b)``, smallest at ``t = 1/2``::

    g(b / 2) = 1/2 + log(2) / 2 - log h(b)   and   g* = 1/2 + log(2) / 2 - log H*,   (XING-MMC)

``H*`` the optimum of (MMC) over diagonal ``A`` (``t = 0`` gives ``g = +inf``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from lmnn_sdp.core.checks import check_inputs, check_labels, check_real_dtype
from lmnn_sdp.core.psd import check_psd, project_psd

LOG_HALF = 0.5 + 0.5 * np.log(2.0)  # min over t > 0 of t - log(t) / 2, (XING-MMC)


@dataclass(frozen=True, eq=False)
class MMCProblem:
    """(MMC), or (XING) when ``diagonal``, on index pairs of ``X``; build with ``mmc_problem``.

    Attributes
    ----------
    X : ndarray of shape (n, d)
    similar : ndarray of int64, shape (S, 2), or None
    dissimilar : ndarray of int64, shape (P, 2), or None
        None when the pairs are implicit: all label pairs, never formed (``implicit``).
    diagonal : bool
    y : ndarray of int64, shape (n,), or None
        Label codes ``0..C-1`` when the pairs are all label pairs (``label_pairs``).
    """

    X: np.ndarray
    similar: np.ndarray | None
    dissimilar: np.ndarray | None
    diagonal: bool
    y: np.ndarray | None = None

    @property
    def kind(self) -> str:
        """``"mmc"`` or ``"mmc-diagonal"``, the problem's name in the certified corpus."""
        return "mmc-diagonal" if self.diagonal else "mmc"

    @property
    def implicit(self) -> bool:
        """The pairs are all label pairs of ``y``, summed over without forming them
        (``lmnn_sdp.mmc.pairs``)."""
        return self.similar is None

    @property
    def n_classes(self) -> int | None:
        return None if self.y is None else int(self.y.max()) + 1

    @property
    def n_similar(self) -> int:
        if not self.implicit:
            return len(self.similar)
        counts = np.bincount(self.y).astype(np.int64)
        return int(np.sum(counts * (counts - 1) // 2))

    @property
    def n_dissimilar(self) -> int:
        if not self.implicit:
            return len(self.dissimilar)
        n = np.int64(len(self.X))
        return int(n * (n - 1) // 2) - self.n_similar

    @cached_property
    def similar_differences(self) -> np.ndarray:
        """``v_q`` (S, d)."""
        pairs = self._pairs("similar")
        return self.X[pairs[:, 0]] - self.X[pairs[:, 1]]

    @cached_property
    def dissimilar_differences(self) -> np.ndarray:
        """``u_p`` (P, d)."""
        pairs = self._pairs("dissimilar")
        return self.X[pairs[:, 0]] - self.X[pairs[:, 1]]

    def _pairs(self, name: str) -> np.ndarray:
        if self.implicit:
            raise ValueError(f"the {name} pairs of this problem are implicit (all label pairs, "
                             "never formed); sum over them with lmnn_sdp.mmc.pairs.")
        return getattr(self, name)


def mmc_problem(X, y=None, similar=None, dissimilar=None, diagonal: bool = False,
                implicit: bool = False) -> MMCProblem:
    """Checked (MMC) or (XING) from labels (all pairs ``i < j``, similar when the labels
    agree) or from explicit index pairs (P, 2).

    ``implicit`` (labels only) keeps the label pairs implicit: no (P, 2) or (P, d) array
    is formed, and every sum over pairs runs blockwise (``lmnn_sdp.mmc.compiled``); letters
    (16,000 rows) has 1.2e8 dissimilar pairs.

    Raises
    ------
    ValueError, TypeError
        Bad inputs, each naming the argument and the fix.
    """
    X = check_inputs(X)
    if y is None:
        if implicit:
            raise ValueError("implicit=True needs labels y: only label pairs can stay implicit.")
        if similar is None or dissimilar is None:
            raise ValueError("give labels y, or both similar and dissimilar index pairs (P, 2).")
        problem = MMCProblem(X, _check_pairs(similar, len(X), "similar"),
                             _check_pairs(dissimilar, len(X), "dissimilar"), bool(diagonal))
    else:
        if similar is not None or dissimilar is not None:
            raise ValueError("give either y or explicit similar/dissimilar pairs, not both.")
        problem = _label_problem(X, y, bool(diagonal), bool(implicit))
    if problem.implicit:
        identical = bool(np.all(X == X[0]))  # with two classes or more, the same thing
    else:
        identical = not np.any(problem.dissimilar_differences)
    if identical:
        raise ValueError("every dissimilar pair joins two identical points: the MMC "
                         "objective is 0 for every metric.")
    return problem


def _label_problem(X: np.ndarray, y, diagonal: bool, implicit: bool) -> MMCProblem:
    """The problem on all label pairs of ``y``, implicit or formed."""
    codes = np.unique(check_labels(y, len(X)), return_inverse=True)[1].astype(np.int64)
    counts = np.bincount(codes)
    if counts.max() < 2:
        raise ValueError("y gives no similar pairs: every label occurs once. MMC needs "
                         "at least one pair of points with the same label.")
    if len(counts) < 2:
        raise ValueError("y gives no dissimilar pairs: all points share one label. "
                         "MMC needs at least two classes.")
    if implicit:
        return MMCProblem(X, None, None, diagonal, codes)
    similar, dissimilar = label_pairs(codes)
    return MMCProblem(X, similar.astype(np.int64), dissimilar.astype(np.int64), diagonal, codes)


# -- objective evaluators ------------------------------------------------------
def label_pairs(y) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``i < j`` of points, split by label into similar and dissimilar pairs.

    The pairs of MMC when they come from labels (Xing et al. 2002; Weinberger &
    Saul, JMLR 2009, sec. 2.3.1): ``S`` holds the pairs with equal labels, ``D`` the
    others. The labels are not checked.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Labels.

    Returns
    -------
    similar : ndarray of int of shape (n_similar, 2)
        The pairs ``(i, j)``, ``i < j``, with ``y[i] == y[j]``, in lexicographic order.
    dissimilar : ndarray of int of shape (n_dissimilar, 2)
        The other pairs ``(i, j)``, ``i < j``, in lexicographic order.

    See Also
    --------
    lmnn_sdp.solve_mmc : Solves MMC on these pairs when given labels.

    Examples
    --------
    >>> from lmnn_sdp import label_pairs
    >>> similar, dissimilar = label_pairs([0, 0, 1, 1, 1])
    >>> similar
    array([[0, 1],
           [2, 3],
           [2, 4],
           [3, 4]])
    >>> dissimilar.shape
    (6, 2)
    """
    y = np.asarray(y)
    i, j = np.triu_indices(len(y), k=1)
    same = y[i] == y[j]
    return np.column_stack([i[same], j[same]]), np.column_stack([i[~same], j[~same]])


def pair_distances(X, pairs, metric) -> np.ndarray:
    """Squared Mahalanobis distances ``D_A(x_i, x_j) = (x_i - x_j)^T A (x_i - x_j)`` of pairs.

    The distances of MMC (Xing et al. 2002; Weinberger & Saul, JMLR 2009, sec. 2.3.1),
    in plain floating point.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs; finite real numbers.
    pairs : array-like of int of shape (n_pairs, 2)
        Index pairs ``(i, j)`` into ``X``, at least one, no point paired with itself.
    metric : array-like of shape (n_features, n_features)
        The matrix ``A``; it is not checked for symmetry, PSD-ness or finiteness.

    Returns
    -------
    ndarray of shape (n_pairs,)
        ``D_A`` of every row of ``pairs``.

    Raises
    ------
    ValueError
        ``X`` not 2-D, empty or not finite; ``metric`` of the wrong shape; ``pairs`` not
        of shape (P, 2), empty, out of range or joining a point to itself.
    TypeError
        Non-real ``X``, or non-integer ``pairs``.

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp import pair_distances
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> pair_distances(X, [[0, 1], [0, 2]], np.eye(2))
    array([1., 4.])
    >>> pair_distances(X, [[0, 1], [0, 2]], np.diag([4.0, 1.0]))
    array([4., 4.])
    """
    X = check_inputs(X)
    metric = _real(metric, "metric")
    d = X.shape[1]
    if metric.shape != (d, d):
        raise ValueError(f"metric must have shape ({d}, {d}), got {metric.shape}.")
    if not np.all(np.isfinite(metric)):
        raise ValueError("metric contains NaN or infinity.")
    p = _check_pairs(pairs, len(X), "pairs")
    return distances(X[p[:, 0]] - X[p[:, 1]], metric)


def mmc_objective(X, dissimilar, metric) -> float:
    """The MMC objective ``f(A) = sum_{(i, j) in D} sqrt(D_A(x_i, x_j))``.

    The objective of (MMC), maximised subject to ``sum_S D_A <= 1`` and ``A`` PSD
    (Weinberger & Saul, JMLR 2009, sec. 2.3.1; Xing et al. 2002, sec. 2.1). The
    constraint is not checked here.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs; finite real numbers.
    dissimilar : array-like of int of shape (n_dissimilar, 2)
        Index pairs ``(i, j)`` into ``X``.
    metric : array-like of shape (n_features, n_features)
        The matrix ``A``; it must be PSD: distances are not clipped, so a negative one
        gives NaN.

    Returns
    -------
    float
        ``f(A)``; NaN when a distance is negative.

    Raises
    ------
    ValueError, TypeError
        Bad inputs, as for ``pair_distances``.

    See Also
    --------
    lmnn_sdp.solve_mmc : Maximise it exactly.
    lmnn_sdp.xing_objective : The objective of the diagonal problem.

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp import mmc_objective
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> mmc_objective(X, [[0, 1], [0, 2]], np.eye(2))  # sqrt(1) + sqrt(4)
    3.0
    """
    return float(np.sum(np.sqrt(pair_distances(X, dissimilar, metric))))


def xing_objective(X, similar, dissimilar, weights) -> float:
    """Xing et al.'s objective ``g(a) = sum_S D_a - log(sum_D sqrt(D_a))`` of a diagonal metric.

    The objective of (XING), minimised over ``a >= 0`` (Xing et al. 2002, sec. 2.1), with
    ``D_a`` the distance under ``A = diag(a)``. Its minimum is that of (MMC) over
    diagonal metrics in another form (module docstring, (XING-MMC)).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs; finite real numbers.
    similar : array-like of int of shape (n_similar, 2)
        Index pairs ``(i, j)`` of the set ``S``.
    dissimilar : array-like of int of shape (n_dissimilar, 2)
        Index pairs ``(i, j)`` of the set ``D``.
    weights : array-like of shape (n_features,)
        The diagonal ``a`` of the metric, non-negative.

    Returns
    -------
    float
        ``inf`` when every dissimilar distance is 0.

    Raises
    ------
    ValueError
        ``weights`` not 1-D, negative or NaN, or not of length ``n_features``; bad inputs
        as for ``pair_distances``.
    TypeError
        As for ``pair_distances``.

    See Also
    --------
    lmnn_sdp.solve_mmc : Minimise it exactly with ``diagonal=True``.
    lmnn_sdp.mmc_objective : The objective of the full problem.

    Examples
    --------
    >>> from lmnn_sdp import xing_objective
    >>> X = [[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]
    >>> round(xing_objective(X, [[0, 1]], [[0, 2], [1, 2]], [1.0, 1.0]), 4)  # 1 - log(2 + sqrt(5))
    -0.4436
    """
    a = np.asarray(weights, dtype=float)
    if a.ndim != 1 or not np.all(a >= 0):
        raise ValueError("weights must be a 1-D array of non-negative numbers (diag of A).")
    A = np.diag(a)
    with np.errstate(divide="ignore"):
        spread = np.log(mmc_objective(X, dissimilar, A))
    return float(np.sum(pair_distances(X, similar, A)) - spread)


def distances(U: np.ndarray, metric: np.ndarray) -> np.ndarray:
    """``u_p^T A u_p`` for the rows of ``U`` (P, d) and ``A`` (d, d); shape (P,)."""
    return np.einsum("pd,de,pe->p", U, metric, U)


def accurate_distances(U: np.ndarray, metric: np.ndarray) -> np.ndarray:
    """``u_p^T A u_p`` (P,) for ``U`` (P, d) and a symmetric ``A`` (d, d), as if computed in
    twice the working precision and rounded once.

    Dot2 of Ogita, Rump & Oishi (SIAM J. Sci. Comput. 26, 2005): every term
    ``A_de u_d u_e`` (``2 A_de`` off the diagonal) is split exactly into a float and its
    rounding error (Dekker's TwoProduct), and the terms are added with Knuth's TwoSum.
    The optimal metric nearly cancels on every similar pair, so ``u^T A u`` in plain
    floating point loses ``log10(|u|^T |A| |u| / u^T A u)`` digits; this keeps them."""
    total = np.zeros(len(U))
    errors = np.zeros(len(U))
    for d, e in zip(*np.triu_indices(metric.shape[0])):
        weight = metric[d, e] if d == e else 2.0 * metric[d, e]
        if weight == 0:
            continue
        product, product_error = _two_product(U[:, d], U[:, e])
        term, term_error = _two_product(product, weight)
        total, sum_error = _two_sum(total, term)
        errors += sum_error + term_error + product_error * weight
    return total + errors


def entry_rounding(U: np.ndarray, metric: np.ndarray) -> np.ndarray:
    """``3 eps |u_p|^T |A| |u_p|`` (P,): how far ``u_p^T A u_p`` can move when every entry
    of ``A`` (d, d) moves by three roundings (the PSD projection and the scaling that
    made ``A``, and its evaluation)."""
    return 3 * np.finfo(float).eps * distances(np.abs(U), np.abs(metric))


_SPLITTER = 2.0**27 + 1  # Dekker's splitting constant for float64


def _two_product(a: np.ndarray, b) -> tuple[np.ndarray, np.ndarray]:
    """``(p, e)`` with ``p = fl(a b)`` and ``p + e = a b`` exactly (Dekker 1971)."""
    p = a * b
    a_high, a_low = _split(a)
    b_high, b_low = _split(np.asarray(b, dtype=float))
    return p, ((a_high * b_high - p) + a_high * b_low + a_low * b_high) + a_low * b_low


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a = high + low`` exactly, each with at most 26 significant bits."""
    c = _SPLITTER * a
    high = c - (c - a)
    return high, a - high


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth)."""
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)


# -- validation ----------------------------------------------------------------
def check_metric(metric, d: int, diagonal: bool, name: str = "metric") -> np.ndarray:
    """A metric (d, d): finite, symmetric and PSD up to rounding (``core.psd.check_psd``),
    diagonal if asked. Returned as a float array, unchanged."""
    M = _real(metric, name)
    if M.shape != (d, d):
        raise ValueError(f"{name} must have shape ({d}, {d}), got {M.shape}.")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"{name} contains NaN or infinity.")
    if diagonal and np.any(M[~np.eye(d, dtype=bool)]):
        raise ValueError(f"diagonal=True needs a diagonal {name}; pass np.diag(weights).")
    check_psd(M, name)
    return M


def _real(metric, name: str) -> np.ndarray:
    """``metric`` as a float array; a ``NonRealInputError`` for complex, string or object
    entries (``core.checks.check_real_dtype``)."""
    metric = np.asarray(metric)
    check_real_dtype(metric.dtype, name)
    return metric.astype(float)


def psd_part(metric: np.ndarray) -> tuple[np.ndarray, float]:
    """Projection of a symmetric (d, d) matrix on the PSD cone, and its smallest eigenvalue."""
    symmetric = (metric + metric.T) / 2
    smallest = float(np.linalg.eigvalsh(symmetric)[0])
    return (symmetric if smallest >= 0 else project_psd(symmetric)), smallest


def _check_pairs(pairs, n: int, name: str) -> np.ndarray:
    """An index array (P, 2) into ``n`` points, checked; int64."""
    p = np.asarray(pairs)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"{name} must have shape (P, 2), one index pair per row; "
                         f"got shape {p.shape}.")
    if len(p) == 0:
        raise ValueError(f"no {name} pairs: MMC needs at least one.")
    if not np.issubdtype(p.dtype, np.integer):
        raise TypeError(f"{name} must hold integer indices, got dtype={p.dtype}.")
    if p.min() < 0 or p.max() >= n:
        raise ValueError(f"{name} indices must lie in [0, {n - 1}] (X has {n} rows); got "
                         f"values in [{p.min()}, {p.max()}].")
    loops = np.flatnonzero(p[:, 0] == p[:, 1])
    if len(loops):
        raise ValueError(f"{name} pair {loops[0]} joins point {p[loops[0], 0]} to itself.")
    return p.astype(np.int64)
