"""The input checks of the library: every array or number a user passes is checked here
once, with an error that names the argument and the fix; nothing is clipped or coerced.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np


def readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def check_inputs(X) -> np.ndarray:
    """``X`` as a finite float array (n, d) (a copy), or an error naming the fix.

    Booleans and integers are numbers (0/1 for booleans, as in scikit-learn);
    complex, string, object and date entries raise a TypeError (``check_real_dtype``)."""
    try:
        X = np.asarray(X)
    except ValueError as err:  # a ragged nested sequence
        raise TypeError(f"X must be an array of real numbers: {err}") from None
    check_real_dtype(X.dtype, "X")
    X = X.astype(float)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D of shape (n_samples, n_features), got {X.ndim}-D; "
                         "reshape a single feature with X.reshape(-1, 1).")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be non-empty, got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinity; remove or impute those entries first.")
    return X


class NonRealInputError(TypeError, ValueError):
    """Numbers that must be real are complex, text, objects or dates.

    A TypeError, and also a ValueError as scikit-learn expects of complex input
    to an estimator (its ``check_complex_data``)."""


def check_real_dtype(dtype: np.dtype, name: str) -> None:
    """A ``NonRealInputError`` naming ``name`` and the fix unless ``dtype`` is that of
    booleans, integers or floats.

    Nothing non-real is cast silently: numpy's float cast would drop an imaginary
    part, parse strings and turn dates into day counts."""
    kind = dtype.kind
    if kind in "biuf":
        return
    strings = f"parse it with np.asarray({name}, dtype=float), encoding categories as numbers"
    fixes = {
        "c": f"pass {name}.real if the imaginary part is zero. Complex data not supported",
        "O": f"convert it with np.asarray({name}, dtype=float) if its entries are numbers",
        "U": strings,
        "S": strings,
        "M": f"convert dates to numbers first, e.g. ({name} - t0) / np.timedelta64(1, 's')",
        "m": f"convert durations to numbers first, e.g. {name} / np.timedelta64(1, 's')",
    }
    fix = fixes.get(kind, "pass a plain array of numbers")
    raise NonRealInputError(f"{name} must be real numbers, got {dtype}; {fix}.")


def check_labels(y, n: int) -> np.ndarray:
    """``y`` as an array (n,) of labels, or an error naming the fix."""
    y = np.array(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D of shape (n_samples,), got shape {y.shape}.")
    if len(y) != n:
        raise ValueError(f"X has {n} rows but y has {len(y)} labels; they must match.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity; every point needs a label.")
    return y


def check_tol(tol, name: str = "tol") -> float:
    """``tol`` as a float: a real number, finite and >= 0, or an error naming ``name``.

    The one rule of every tolerance of the library (``tol`` of the solvers and estimators,
    ``rtol`` and ``tolerance`` of ``lmnn_sdp.testing``, a certificate's ``atol``) and of
    the bands (``band``, the constraint generation's ``add_band`` and ``drop_band``). 0 is
    allowed: only an exact answer meets it.

    Parameters
    ----------
    tol : real number
        The value given; a Python or numpy integer or float (``np.float32(1e-6)``).
    name : str, default="tol"
        The option's name, for the error.

    Returns
    -------
    float
        ``tol`` as a Python float.

    Raises
    ------
    TypeError
        ``tol`` is not a real number: a bool (``True`` is not 1 here), a string (``"1e-6"``),
        None or an array.
    ValueError
        ``tol`` is negative, NaN or infinite.

    Examples
    --------
    >>> from lmnn_sdp.core.checks import check_tol
    >>> check_tol(1e-6), check_tol(0)
    (1e-06, 0.0)
    >>> check_tol(True)
    Traceback (most recent call last):
    ...
    TypeError: tol must be a real number >= 0 (a float such as 1e-6), got True of type bool.
    >>> check_tol(-1.0, "rtol")
    Traceback (most recent call last):
    ...
    ValueError: rtol must be a finite number >= 0, got -1.0; pass a float such as 1e-6 (0 accepts only an exact answer).
    """
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, Real):
        raise TypeError(f"{name} must be a real number >= 0 (a float such as 1e-6), got {tol!r} "
                        f"of type {type(tol).__name__}.")
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {tol!r}; pass a float such as 1e-6 "
                         "(0 accepts only an exact answer).")
    return float(tol)


def check_max_iter(max_iter, name: str = "max_iter") -> int:
    """``max_iter`` as an int: an integer >= 1, or an error naming ``name``.

    The one rule of every iteration budget of the library (``max_iter``; also
    ``max_epochs``, ``max_passes`` and ``max_rounds``, by their own names; and MLNG's count
    ``batch_size``), scikit-learn NCA's: a budget of 0 iterations would return the start unsolved.

    Parameters
    ----------
    max_iter : integer
        The value given; a Python or numpy integer.
    name : str, default="max_iter"
        The option's name, for the error.

    Returns
    -------
    int
        ``max_iter`` as a Python int.

    Raises
    ------
    TypeError
        ``max_iter`` is not an integer: a bool, a float (``1.5``, or ``100.0``), a string or None.
    ValueError
        ``max_iter`` is below 1.

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp.core.checks import check_max_iter
    >>> check_max_iter(np.int64(50))
    50
    >>> check_max_iter(0)
    Traceback (most recent call last):
    ...
    ValueError: max_iter must be an integer >= 1, got 0; pass a budget of at least 1, e.g. 100.
    >>> check_max_iter(2.0, "max_passes")
    Traceback (most recent call last):
    ...
    TypeError: max_passes must be an integer >= 1, got 2.0 of type float; pass e.g. 2, not 2.0.
    """
    if isinstance(max_iter, (bool, np.bool_)) or not isinstance(max_iter, Integral):
        example = f"{int(max_iter)}, not {max_iter!r}" if isinstance(max_iter, float) and max_iter.is_integer() \
            else "100"
        raise TypeError(f"{name} must be an integer >= 1, got {max_iter!r} of type {type(max_iter).__name__}; "
                        f"pass e.g. {example}.")
    if max_iter < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {max_iter!r}; pass a budget of at least 1, "
                         "e.g. 100.")
    return int(max_iter)


def check_mu(mu) -> float:
    if isinstance(mu, bool) or not isinstance(mu, Real):
        raise TypeError(f"mu must be a real number in [0, 1], got {mu!r}.")
    if not 0.0 <= float(mu) <= 1.0:
        raise ValueError(f"mu must lie in [0, 1] (weight of the push term), got {mu}.")
    return float(mu)


def check_k(k, codes: np.ndarray, classes: np.ndarray) -> int:
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise TypeError(f"k must be a positive integer, got {k!r}.")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}.")
    counts = np.bincount(codes)
    smallest = int(np.argmin(counts))
    if counts[smallest] <= k:
        raise ValueError(
            f"class {classes[smallest].tolist()!r} has {counts[smallest]} members, so it cannot "
            f"give each point k={k} target neighbours of its own class; use "
            f"k <= {counts[smallest] - 1} (the largest valid k for this data)."
        )
    return int(k)


def check_targets(targets, codes: np.ndarray, k) -> np.ndarray:
    t = np.asarray(targets)
    n = len(codes)
    if t.ndim != 2 or t.shape[0] != n or t.shape[1] == 0:
        raise ValueError(f"targets must have shape (n_samples, k) = ({n}, k>=1), got {t.shape}.")
    check_index_dtype(t, "targets")
    if k is not None and k != t.shape[1]:
        raise ValueError(f"k={k} disagrees with targets of shape {t.shape}; omit k or make them agree.")
    if t.min() < 0 or t.max() >= n:
        raise ValueError(f"targets must be indices in [0, {n - 1}], got values in [{t.min()}, {t.max()}].")
    t = t.astype(np.intp)
    own = np.flatnonzero((t == np.arange(n)[:, None]).any(axis=1))
    if len(own):
        raise ValueError(f"point {own[0]} is its own target neighbour; targets must be other points.")
    other = np.flatnonzero((codes[t] != codes[:, None]).any(axis=1))
    if len(other):
        raise ValueError(f"point {other[0]} has a target neighbour of another class; "
                         "targets must share the label of their point.")
    repeated = np.flatnonzero((np.diff(np.sort(t, axis=1), axis=1) == 0).any(axis=1))
    if len(repeated):
        raise ValueError(f"point {repeated[0]} lists the same target neighbour twice.")
    return t


def check_triplets(triplets, n: int) -> np.ndarray:
    """``triplets`` as ints (T, 3) indexing ``n`` points, or an error naming the fix."""
    t = np.asarray(triplets)
    if t.ndim != 2 or t.shape[1] != 3:
        raise ValueError(f"triplets must have shape (T, 3) with columns (i, j, l), got {t.shape}.")
    check_index_dtype(t, "triplets")
    if len(t) and (t.min() < 0 or t.max() >= n):
        raise ValueError(f"triplet indices must lie in [0, {n - 1}].")
    return t.astype(np.intp)


def triplet_keys(triplets: np.ndarray, n: int) -> np.ndarray:
    """One int64 per row ``(i, j, l)`` of ``triplets`` (T, 3) over ``n`` points, equal only for
    equal rows: ``(i n + j) n + l``."""
    t = triplets.astype(np.int64)
    return (t[:, 0] * n + t[:, 1]) * n + t[:, 2]


def check_index_dtype(t: np.ndarray, name: str) -> None:
    """A TypeError naming ``name`` unless ``t`` holds integers (or is an empty float array)."""
    if t.dtype.kind in "iu" or (t.size == 0 and t.dtype.kind == "f"):
        return
    fix = (f"convert whole numbers with np.asarray({name}, dtype=int)" if t.dtype.kind == "f"
           else "pass point indices 0..n-1")
    raise TypeError(f"{name} must hold integer indices, got dtype={t.dtype}; {fix}.")


def check_clusters(clusters, n: int) -> np.ndarray:
    """``clusters`` as a read-only intp array (n,) of ``0..C-1``, every cluster used (eq. 16),
    or an error naming the fix."""
    c = np.asarray(clusters)
    if c.ndim != 1 or len(c) != n:
        raise ValueError(f"clusters must have shape (n_samples,) = ({n},), got {c.shape}; "
                         "give one cluster index per point.")
    if c.dtype.kind not in "iu":
        raise TypeError(f"clusters must hold integer cluster indices, got dtype={c.dtype}; "
                        "convert labels with np.unique(clusters, return_inverse=True)[1].")
    if c.min() < 0:
        raise ValueError(f"clusters must be indices 0..C-1, got the value {c.min()}.")
    empty = np.flatnonzero(np.bincount(c) == 0)
    if len(empty):
        raise ValueError(f"cluster {empty[0]} has no members, so its metric would be "
                         "meaningless; number the clusters 0..C-1 with every index used, "
                         "e.g. np.unique(clusters, return_inverse=True)[1].")
    return readonly(c.astype(np.intp))


def check_metric(M, d: int) -> np.ndarray:
    """``M`` as a float array of shape (d, d) with finite entries.

    Symmetry and PSD-ness are not checked here (``lmnn_sdp.certify`` checks them).

    Parameters
    ----------
    M : array-like of shape (d, d)
        A candidate metric.
    d : int
        The number of features of the problem.

    Returns
    -------
    ndarray of shape (d, d)
        ``M`` as floats (no copy when it already is).

    Raises
    ------
    ValueError
        ``M`` of the wrong shape, or with NaN or infinity.
    TypeError
        Complex, string, object or date entries (``check_real_dtype``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> problem.check_metric(np.eye(3))
    Traceback (most recent call last):
    ...
    ValueError: M must have shape (4, 4) for this problem, got (3, 3).
    """
    M = np.asarray(M)
    check_real_dtype(M.dtype, "M")
    M = M.astype(float, copy=False)
    if M.shape != (d, d):
        raise ValueError(f"M must have shape ({d}, {d}) for this problem, got {M.shape}.")
    if not np.all(np.isfinite(M)):
        raise ValueError("M contains NaN or infinity.")
    return M
