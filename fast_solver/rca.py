"""Relevant Component Analysis (RCA; Bar-Hillel, Hertz, Shental & Weinshall, ICML 2003).

RCA learns a linear map from *chunklets*, groups of points known to share a class:
with chunklet ``j`` holding ``n_j`` points of mean ``m_j`` and ``p = sum_j n_j``, the
within-chunklet covariance is

    C = (1/p) sum_j sum_{i in j} (x_i - m_j)(x_i - m_j)^T,

and RCA whitens by it: ``x -> C^{-1/2} x``, the Mahalanobis metric ``M = C^{-1}``
(Bar-Hillel et al., steps 2 and 3). With full labels every class is one chunklet
(``chunklets = label codes``), the setting of the paper's Table 1 comparison.

A rank-deficient ``C`` (a feature constant within every chunklet, collinear
features, fewer chunklet points than dimensions) has no inverse; RCA's step 1
reduces the dimension first. Here the directions whose within-chunklet variance is
at most ``rtol`` times the largest are left out of the map (``C``'s pseudo-inverse,
as metric-learn does) and a warning says how many. numpy only.
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from fast_solver._base import LinearMetricTransformer, reject_complex
from lmnn_sdp.core.checks import check_inputs, check_tol

RANK_RTOL = 1e-10  # within-chunklet variances at most this of the largest count as zero


def rca_components(X, chunklets, rtol: float = RANK_RTOL) -> np.ndarray:
    """Return RCA's whitening map for the within-chunklet covariance.

    Steps 2 and 3 of Bar-Hillel et al. (ICML 2003): the within-chunklet covariance
    ``C`` (module docstring) and the map ``L`` with ``L^T L = C^+``, so that the
    metric is ``M = C^{-1}`` on the range of ``C``.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Real inputs.
    chunklets : array-like of int, shape (n,)
        Chunklet of each point, ``-1`` for a point in none; chunklets of one point
        contribute nothing.
    rtol : float, default=1e-10
        Eigenvalues of ``C`` at most ``rtol`` times the largest are taken as zero.

    Returns
    -------
    L : ndarray of shape (r, d)
        ``r`` = the numerical rank of ``C``; rows ``v / sqrt(lambda)`` for the
        eigenpairs of ``C`` by increasing ``lambda`` (decreasing eigenvalue of ``M``).

    Raises
    ------
    ValueError
        If ``chunklets`` is not one integer per row, no chunklet holds two points, or
        every chunklet holds identical points; or ``rtol`` is not in [0, 1).
    TypeError
        If ``rtol`` is not a real number (``True``, ``"1e-10"``).

    Warns
    -----
    UserWarning
        If ``C`` is rank-deficient; those directions leave the map.

    See Also
    --------
    RCA : The scikit-learn estimator, with one chunklet per class.

    Examples
    --------
    Chunklets need not cover every point; ``-1`` marks a point in none:

    >>> import numpy as np
    >>> from fast_solver import rca_components
    >>> X = np.random.default_rng(0).normal(size=(12, 3))
    >>> chunklets = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, -1, -1, -1])
    >>> L = rca_components(X, chunklets)
    >>> L.shape
    (3, 3)
    """
    X = check_inputs(X)
    if check_tol(rtol, "rtol") >= 1:
        raise ValueError(f"rtol must be below 1 (a share of the largest eigenvalue), got {rtol!r}; pass e.g. 1e-10.")
    C = within_chunklet_covariance(X, chunklets)
    eigenvalues, V = np.linalg.eigh(C)
    keep = eigenvalues > rtol * eigenvalues[-1]
    if not keep.all():
        warnings.warn(f"RCA: the within-chunklet covariance has rank {int(keep.sum())} of "
                      f"{len(C)}; the {int((~keep).sum())} direction(s) without within-chunklet "
                      "variance are left out of the map (pseudo-inverse).", UserWarning)
    return (V[:, keep] / np.sqrt(eigenvalues[keep])).T


def within_chunklet_covariance(X: np.ndarray, chunklets) -> np.ndarray:
    """``C`` of the module docstring, shape (d, d), for ``X`` (n, d) and ``chunklets`` (n,)."""
    chunklets = np.asarray(chunklets)
    if chunklets.shape != (len(X),) or not np.issubdtype(chunklets.dtype, np.integer):
        raise ValueError(f"chunklets must be integers of shape ({len(X)},) (one per row of X, "
                         f"-1 for none), got dtype {chunklets.dtype} and shape {chunklets.shape}.")
    members = chunklets >= 0
    ids, codes, sizes = np.unique(chunklets[members], return_inverse=True, return_counts=True)
    if not (sizes >= 2).any():
        raise ValueError("chunklets: no chunklet holds two points, so there is no within-chunklet "
                         "variation to whiten by; give at least one chunklet of two or more points.")
    points = X[members]
    means = np.zeros((len(ids), X.shape[1]))
    np.add.at(means, codes, points)
    centred = points - means[codes] / sizes[codes, None]
    C = centred.T @ centred / len(points)
    if not np.any(C):
        raise ValueError("chunklets: every chunklet holds identical points, so the within-chunklet "
                         "covariance is zero; RCA needs some variation inside a chunklet.")
    return (C + C.T) / 2


class RCA(LinearMetricTransformer, BaseEstimator):
    """Relevant Component Analysis with one chunklet per class.

    Implements Bar-Hillel, Hertz, Shental & Weinshall (ICML 2003). Every class is one chunklet; ``transform`` whitens by the within-class
    covariance (``rca_components``), so Euclidean distances after it are the
    Mahalanobis distances of ``M = C^{-1}``. Closed form: no iterations.

    Parameters
    ----------
    rtol : float, default=1e-10
        Within-class variances at most ``rtol`` times the largest are taken as zero;
        their directions leave the map with a warning.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        ``C^{-1/2}`` on the range of ``C``; ``n_components`` is its numerical rank.
    metric_ : ndarray of shape (n_features, n_features)
        ``components_.T @ components_``, the pseudo-inverse of ``C``.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    rca_components : The map for any chunklets.

    Examples
    --------
    After ``transform`` the within-class covariance is the identity:

    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import RCA
    >>> X, y = load_iris(return_X_y=True)
    >>> rca = RCA().fit(X, y)
    >>> Z = rca.transform(X)
    >>> within = sum(np.cov(Z[y == c].T, bias=True) * np.sum(y == c) for c in range(3)) / len(y)
    >>> bool(np.allclose(within, np.eye(4)))
    True
    """

    _parameter_constraints: dict = {"rtol": [Interval(Real, 0, 1, closed="left")]}

    def __init__(self, rtol=RANK_RTOL):
        self.rtol = rtol

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the whitening by the within-class covariance.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real training inputs.
        y : array-like of shape (n_samples,)
            Class labels; each class is one chunklet.

        Returns
        -------
        self : RCA
            The fitted estimator.

        Raises
        ------
        ValueError
            If no class holds two points, or every class holds identical points.

        Warns
        -----
        UserWarning
            If the within-class covariance is rank-deficient.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import RCA
        >>> X, y = load_iris(return_X_y=True)
        >>> RCA().fit(X, y).metric_.shape
        (4, 4)
        """
        reject_complex(X)
        X, y = validate_data(self, X, y, ensure_min_samples=2)
        check_classification_targets(y)
        codes = np.unique(y, return_inverse=True)[1].astype(np.intp)
        self.components_ = rca_components(X, codes, self.rtol)
        self.metric_ = self.components_.T @ self.components_
        return self
