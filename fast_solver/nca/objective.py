"""Neighbourhood Components Analysis (Goldberger, Roweis, Hinton & Salakhutdinov, NIPS 2004),
memory-bounded.

Point ``i`` picks a neighbour ``j != i`` with the softmax probability (eq. 1)

    p_ij = exp(-|A x_i - A x_j|^2) / sum_{k != i} exp(-|A x_i - A x_k|^2),

is correctly classified with probability ``p_i = sum_{j in C_i} p_ij`` (eq. 2), and
NCA maximises ``f(A) = sum_i p_i`` (eq. 3) or ``g(A) = sum_i log p_i`` (eq. 6) over a
full or rectangular ``A`` (r, d). Both gradients (eq. 5 and 7) are one weighted sum

    grad = 2 A sum_ij V_ij x_ij x_ij^T,   x_ij = x_i - x_j,
    V_ij = p_ij (p_i - [j in C_i])  for f,   V_ij = p_ij - [j in C_i] p_ij / p_i  for g,

and with ``Z = X A^T`` (n, r) the sum is ``2 U^T X`` where
``U = diag(V 1 + V^T 1) Z - V Z - V^T Z`` (n, r), the Laplacian identity of
PyLMNN with ``A`` applied first. ``U`` is accumulated over blocks of rows: each
block holds its rows' distances to all ``n`` points (its rows of ``V``), sized by a
memory budget in MiB, so memory is O(n (r + d) + budget): never the n x n matrix,
never an n x n x d array. Points are sorted by class once, so each row's
same-class points are one slice of columns. For ``g`` the within-class softmax
``p_ij / p_i`` and ``log p_i`` are taken in the log domain, so they stay finite when
``p_i`` underflows.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from scipy.optimize import OptimizeResult
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.utils import check_random_state, gen_batches
from threadpoolctl import threadpool_limits

from fast_solver.checkpoint import as_checkpoint, fingerprint
from fast_solver.nca.lbfgsb import minimize_lbfgsb
from lmnn_sdp.core.checks import check_inputs, check_labels, check_max_iter, check_real_dtype, check_tol
from lmnn_sdp.core.machine import available_cores
from lmnn_sdp.status import CONVERGED, MAX_ITER, STALLED

OBJECTIVES = ("f", "g")
INITS = ("auto", "pca", "lda", "identity", "random")
WORKING_MEMORY = 64  # MiB for one block of rows
MAX_EXPONENT = 700.0  # exp(-700) = 1e-304 is the smallest softmax term computed
THREADS = available_cores()
BLOCK_ARRAYS = 2  # float arrays of a block's shape (b, n) alive at once: distances/weights, q_ij of g


def nca_objective(A, X, y, objective: str = "f",
                  working_memory: float = WORKING_MEMORY) -> tuple[float, np.ndarray]:
    """Return NCA's objective and its gradient at a linear map.

    Goldberger et al. (NIPS 2004): ``f(A) = sum_i p_i`` (eq. 3), the expected number
    of points that the stochastic neighbour rule classifies correctly, or
    ``g(A) = sum_i log p_i`` (eq. 6), with the gradient of eq. 5 or eq. 7, computed in
    blocks of rows within ``working_memory`` (module docstring).

    Parameters
    ----------
    A : array-like of shape (r, d)
        The linear map, full (r = d) or rectangular.
    X : array-like of shape (n, d)
        Real inputs.
    y : array-like of shape (n,)
        Labels, at least two classes; for ``g`` every class needs two points
        (``log p_i`` is ``-inf`` for a point alone in its class).
    objective : {"f", "g"}, default="f"
        Eq. 3 or eq. 6.
    working_memory : float, default=64
        MiB for one block of rows (at least one row a block).

    Returns
    -------
    value : float
        ``f(A)`` or ``g(A)``, the quantity NCA maximises.
    gradient : ndarray of shape (r, d)
        Its gradient in ``A``.

    Raises
    ------
    ValueError
        If ``y`` has one class, ``A`` does not have ``d`` columns or is not finite,
        or ``objective="g"`` meets a class of one point.

    See Also
    --------
    minimize_nca : Maximises this objective.

    Examples
    --------
    At ``A = 0`` every other point is equally likely, so ``p_i = 9/29`` for classes
    of 10 points, ``f = 30 * 9/29`` and ``g = 30 log(9/29)``:

    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import nca_objective
    >>> X, y = load_iris(return_X_y=True)
    >>> value, gradient = nca_objective(np.zeros((2, 4)), X[::5], y[::5])
    >>> round(value, 4), gradient.shape
    (9.3103, (2, 4))
    >>> round(nca_objective(np.zeros((2, 4)), X[::5], y[::5], objective="g")[0], 4)
    -35.1021
    """
    data = sort_by_class(X, y, objective)
    return value_and_gradient(check_map(A, data.X.shape[1]), data, objective, working_memory)


def minimize_nca(X, y, A0, objective: str = "f", max_iter: int = 50, tol: float = 1e-5,
                 callback=None, working_memory: float = WORKING_MEMORY, checkpoint=None,
                 checkpoint_interval: float = 60.0) -> OptimizeResult:
    """Maximise NCA's objective over a linear map by L-BFGS-B.

    Goldberger et al. (NIPS 2004): maximises ``f`` (eq. 3) or ``g`` (eq. 6) over
    ``A`` from ``A0`` with scipy's L-BFGS-B on ``-f`` or ``-g`` (the paper uses
    conjugate gradients, scikit-learn L-BFGS-B), each evaluation by
    ``nca_objective``'s blocks. The L-BFGS-B iterates are scipy's
    ``minimize(method="L-BFGS-B")``'s bit for bit; the loop is ``fast_solver.nca.lbfgsb``'s,
    which can save L-BFGS-B's whole state (iterate, gradient, correction pairs, line search,
    counters) at every iterate and resume from it.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Real inputs.
    y : array-like of shape (n,)
        Labels, as in ``nca_objective``.
    A0 : array-like of shape (r, d)
        Starting map.
    objective : {"f", "g"}, default="f"
        Eq. 3 or eq. 6.
    max_iter : int >= 1, default=50
        L-BFGS-B iterations.
    tol : float >= 0, default=1e-5
        L-BFGS-B's tolerance (scipy's ``minimize(tol=...)``).
    callback : callable, optional
        ``callback(A, value, n_iter)`` after each iteration with the current ``A`` (r, d),
        its ``f`` or ``g`` and the iterations so far (counted from 1, across resumes).
    working_memory : float, default=64
        MiB for one block of rows.
    checkpoint : str, path-like or None, default=None
        A file where the fit saves its state (``fast_solver.checkpoint``) at most every
        ``checkpoint_interval`` seconds, at the end of an iteration, and when it ends. A fit
        started again with the same inputs, options and path resumes from the state saved
        last and ends with the same ``components``, ``objective``, ``nit`` and ``nfev`` bit
        for bit as an uninterrupted fit on the same number of cores (the cores decide the
        blocks' summation order); a finished fit's file returns its result at once. A file
        that is damaged or was written for other inputs or options (``X``, ``y``, ``A0``,
        ``objective``, ``max_iter``, ``tol``, ``working_memory``) is refused.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every iteration.

    Returns
    -------
    result : scipy.optimize.OptimizeResult
        Scipy's result (``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``success``) in the
        library's terms: ``components``, the ``A`` found, shape (r, d); ``objective``, its
        ``f`` or ``g``; ``status`` from ``lmnn_sdp.status`` (a string, not scipy's code:
        "converged", "max_iter" when L-BFGS-B spent ``max_iter`` iterations, else
        "stalled"), ``converged`` and ``message`` ("converged: ..." or "not converged: ...",
        ending with L-BFGS-B's text in parentheses), as on every result of the library; and
        L-BFGS-B's own ``status`` code (0 converged, 1 an iteration or evaluation limit, 2
        otherwise) and text as ``lbfgsb_status`` and ``lbfgsb_message``.

    Raises
    ------
    ValueError
        As ``nca_objective``, for ``A0`` in place of ``A``; ``max_iter`` below 1, ``tol``
        negative or not finite.
    TypeError
        ``max_iter`` not an integer, ``tol`` not a real number (``True``, ``"0.5"``).
    fast_solver.checkpoint.CheckpointError
        If ``checkpoint`` is damaged or was written by another fit (a ``ValueError``).

    See Also
    --------
    NCA : The scikit-learn estimator over this function.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import minimize_nca
    >>> X, y = load_iris(return_X_y=True)
    >>> result = minimize_nca(X[::5], y[::5], np.eye(4))
    >>> result.components.shape
    (4, 4)
    >>> round(result.objective)  # f, of 30 points
    30
    """
    check_tol(tol)
    check_max_iter(max_iter)
    data = sort_by_class(X, y, objective)
    A0 = check_map(A0, data.X.shape[1], "A0")
    shape = A0.shape
    state = as_checkpoint(checkpoint, kind="nca", interval=checkpoint_interval, fingerprint=lambda: fingerprint(
        data.X, data.bounds, data.order, A0, objective=objective, max_iter=max_iter, tol=tol,
        working_memory=working_memory))

    def negated(a):
        value, gradient = value_and_gradient(a.reshape(shape), data, objective, working_memory)
        return -value, -gradient.ravel()

    def each_iteration(a, value, n_iter):
        if callback is not None:
            callback(a.reshape(shape), -value, n_iter)

    result = minimize_lbfgsb(negated, A0.ravel(), max_iter=max_iter, tol=tol, callback=each_iteration,
                             checkpoint=state)
    result.components = result.x.reshape(shape)
    result.objective = -float(result.fun)
    return _in_library_terms(result, max_iter)


def _in_library_terms(result: OptimizeResult, max_iter: int) -> OptimizeResult:
    """``result`` of ``minimize_lbfgsb`` with the library's ``status``, ``converged`` and
    ``message`` (``lmnn_sdp.status``), and L-BFGS-B's own code and text kept as
    ``lbfgsb_status`` and ``lbfgsb_message``.

    L-BFGS-B's code 1 is any of its limits, iterations or function evaluations; only the
    iterations are ``max_iter``'s, so "max_iter" is told by the count, and the evaluation
    limit (scipy's ``maxfun``, which ``max_iter`` does not raise) is "stalled"."""
    result.lbfgsb_status, result.lbfgsb_message = int(result.status), str(result.message)
    if result.success:
        result.status, how = CONVERGED, "converged: L-BFGS-B's test held"
    elif result.nit >= max_iter:
        result.status, how = MAX_ITER, f"not converged: max_iter={max_iter} L-BFGS-B iterations spent"
    else:
        result.status, how = STALLED, f"not converged: L-BFGS-B stopped after {result.nit} iterations"
    result.converged = result.status == CONVERGED
    result.message = f"{how} ({result.lbfgsb_message})"
    return result


@dataclass(frozen=True)
class ClassSorted:
    """Inputs sorted by class: ``X`` (n, d), class ``c`` owns rows ``bounds[c]:bounds[c + 1]``
    (``bounds`` (C + 1,)), ``order`` (n,) the original index of each sorted row."""

    X: np.ndarray
    bounds: np.ndarray
    order: np.ndarray


def sort_by_class(X, y, objective: str = "f") -> ClassSorted:
    """Checked ``X`` (n, d) and labels ``y`` (n,) sorted by class (stable), or a ValueError:
    fewer than two classes, or ``objective="g"`` with a class of one point."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be 'f' (eq. 3) or 'g' (eq. 6), got {objective!r}.")
    X = check_inputs(X)
    classes, codes, sizes = np.unique(check_labels(y, len(X)), return_inverse=True, return_counts=True)
    if len(classes) < 2:
        raise ValueError(f"NCA needs at least two classes, got {len(classes)}: with one class "
                         "every point is always correctly classified and the gradient is zero.")
    if objective == "g" and sizes.min() < 2:
        alone = classes[sizes < 2].tolist()
        raise ValueError(f"objective='g' needs two points in every class: classes {alone} have one, "
                         "so log p_i = -inf for any A; use objective='f' or drop those points.")
    order = np.argsort(codes, kind="stable")
    return ClassSorted(X[order], np.concatenate([[0], np.cumsum(sizes)]), order)


def check_map(A, d: int, name: str = "A") -> np.ndarray:
    """``A`` as a finite float array (r, d), or an error naming ``name`` and the fix."""
    A = np.asarray(A)
    check_real_dtype(A.dtype, name)
    if A.ndim != 2 or A.shape[1] != d or A.shape[0] == 0:
        raise ValueError(f"{name} must have shape (n_components, {d}) to match X's {d} features, "
                         f"got {A.shape}.")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} contains NaN or infinity; pass a finite linear map.")
    return A.astype(float)


def value_and_gradient(A: np.ndarray, data: ClassSorted, objective: str,
                       working_memory: float = WORKING_MEMORY) -> tuple[float, np.ndarray]:
    """``f(A)`` or ``g(A)`` and the gradient (r, d) on class-sorted ``data``, blockwise over
    rows: ``grad = 2 U^T X`` with ``U`` (n, r) of the module docstring.

    The blocks are shared among ``THREADS`` threads (BLAS single-threaded inside) when
    there are several, each thread with its share of ``working_memory``; the shares are
    summed in a fixed order."""
    X, n = data.X, len(data.X)
    Z = X @ A.T
    squared = np.einsum("ir,ir->i", Z, Z)[:, None]
    ones = np.ones((n, 1))
    # |z_i - z_j|^2 = [z_i, |z_i|^2, 1] . [-2 z_j, 1, |z_j|^2]: one product per block
    left = np.hstack([Z, squared, ones])
    right = np.ascontiguousarray(np.hstack([-2.0 * Z, ones, squared]).T)
    Z1 = np.hstack([Z, ones])
    rows = max(1, min(n, int(working_memory * 2**20 // (THREADS * BLOCK_ARRAYS * 8 * n))))
    blocks = list(gen_batches(n, rows))
    threads = min(THREADS, len(blocks))

    def share(t):
        return _blocks_share(blocks[t::threads], left, right, Z1, data.bounds, objective)

    if threads == 1:
        parts = [share(0)]
    else:
        with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
            parts = list(pool.map(share, range(threads)))
    value = sum(part[0] for part in parts)
    sums = sum(part[1] for part in parts)
    U = sums[:, -1:] * Z - sums[:, :-1]
    return value, 2.0 * U.T @ X


def _blocks_share(blocks: list[slice], left: np.ndarray, right: np.ndarray, Z1: np.ndarray,
                  bounds: np.ndarray, objective: str) -> tuple[float, np.ndarray]:
    """The share of ``blocks`` in the value and in ``[V Z + V^T Z, V 1 + V^T 1]`` (n, r + 1),
    with ``Z1 = [Z, 1]`` (n, r + 1) and the distance factors ``left`` (n, r + 2) and
    ``right`` (r + 2, n)."""
    value, sums = 0.0, np.zeros_like(Z1)
    buffer = np.empty((max(b.stop - b.start for b in blocks), Z1.shape[0]))
    for block in blocks:
        D = np.matmul(left[block], right, out=buffer[:block.stop - block.start])
        block_value, V = _block_weights(D, block, bounds, objective)
        value += block_value
        sums[block] += V @ Z1
        sums += V.T @ Z1[block]
    return value, sums


def _block_weights(D: np.ndarray, block: slice, bounds: np.ndarray,
                   objective: str) -> tuple[float, np.ndarray]:
    """The rows ``block`` of ``V`` (b, n), computed in place in their squared distances
    ``D`` (b, n), and their share of ``f`` or ``g``.

    ``p_ii = 0``; the softmax is shifted by each row's nearest point, and terms below
    ``exp(-MAX_EXPONENT)`` (1e-304, far below the rounding of sums that hold a 1) are
    taken at that value, which keeps numpy's exp off its slow subnormal path."""
    local = np.arange(block.stop - block.start)
    D[local, local + block.start] = np.inf
    runs = list(_class_runs(block, bounds))
    within = [_within_class_softmax(D[rows, cols]) for rows, cols in runs] if objective == "g" else None
    nearest = D.min(axis=1, keepdims=True)
    np.subtract(nearest, D, out=D)
    np.maximum(D, -MAX_EXPONENT, out=D)
    np.exp(D, out=D)  # exp(-d_ij) / exp(-min_k d_ik)
    total = D.sum(axis=1)
    if objective == "g":
        D /= total[:, None]  # p_ij (eq. 1)
        value = 0.0
        for (rows, cols), (log_same, Q) in zip(runs, within):
            # log p_i = log sum_{C_i} exp(-d_ij) - log sum_{k != i} exp(-d_ik)
            value += float(np.sum(log_same + nearest[rows, 0] - np.log(total[rows])))
            D[rows, cols] -= Q
        return value, D
    p = np.concatenate([D[rows, cols].sum(axis=1) for rows, cols in runs]) / total
    for rows, cols in runs:  # V_ij = p_ij (p_i - [j in C_i])
        scale = (p[rows] / total[rows])[:, None]
        D[rows, :cols.start] *= scale
        D[rows, cols.stop:] *= scale
        D[rows, cols] *= ((p[rows] - 1.0) / total[rows])[:, None]
    return float(p.sum()), D


def _class_runs(block: slice, bounds: np.ndarray):
    """``(rows, cols)`` per class met in ``block``: the block-local rows of class ``c`` and
    the columns ``bounds[c]:bounds[c + 1]`` of that class (points sorted by class)."""
    first = np.searchsorted(bounds, block.start, side="right") - 1
    for c in range(first, len(bounds) - 1):
        start, stop = max(bounds[c], block.start), min(bounds[c + 1], block.stop)
        if start >= stop:
            break
        yield slice(start - block.start, stop - block.start), slice(bounds[c], bounds[c + 1])


def _within_class_softmax(D_same: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``log sum_j exp(-d_ij)`` (m,) and ``q_ij = p_ij / p_i`` (m, s) over the same-class
    distances ``D_same`` (m, s) (the point itself at ``inf``), in the log domain (eq. 7)."""
    nearest = D_same.min(axis=1, keepdims=True)
    Q = nearest - D_same
    np.maximum(Q, -MAX_EXPONENT, out=Q)
    np.exp(Q, out=Q)
    total = Q.sum(axis=1, keepdims=True)
    Q /= total
    return (np.log(total) - nearest)[:, 0], Q


def initial_components(X: np.ndarray, y: np.ndarray, n_components: int, init,
                       random_state=None) -> np.ndarray:
    """Starting ``A`` (n_components, d): ``init`` as scikit-learn's NCA reads it.

    ``"auto"`` is ``"lda"`` when ``n_components <= min(d, n_classes - 1)``, else
    ``"pca"`` when ``n_components < min(d, n)``, else ``"identity"``; ``"pca"`` and
    ``"lda"`` take the leading principal / discriminant directions, ``"random"`` a
    standard normal matrix drawn with ``random_state``."""
    n, d = X.shape
    if init == "auto":
        if n_components <= min(d, len(np.unique(y)) - 1):
            init = "lda"
        else:
            init = "pca" if n_components < min(d, n) else "identity"
    if init == "identity":
        return np.eye(n_components, d)
    if init == "random":
        return check_random_state(random_state).standard_normal((n_components, d))
    if init == "pca":
        pca = PCA(n_components=n_components, random_state=check_random_state(random_state))
        return pca.fit(X).components_
    if init == "lda":
        return LinearDiscriminantAnalysis(n_components=n_components).fit(X, y).scalings_.T[:n_components]
    raise ValueError(f"init must be one of {INITS} or an array, got {init!r}.")
