"""metric-learn's Mahalanobis interface of a learned linear map, shared by every linear learner.

An estimator fitted with ``components_ = L`` of shape (n_components, n_features) learns
the Mahalanobis matrix ``M = L^T L`` and the distance
``D_M(x, x') = sqrt((x - x')^T M (x - x')) = |L x - L x'|`` (Weinberger & Saul, JMLR 2009,
eq. 3, without the square). ``MahalanobisMixin`` gives it the methods of metric-learn's
``MahalanobisMixin`` (metric-learn 0.7.0) with the same conventions: ``pair_score`` is
``-pair_distance`` (higher is more similar) and ``get_metric`` returns a plain function of
two 1-D points for scikit-learn's ``metric=`` arguments. numpy and scikit-learn only: the
exact estimators of ``lmnn_sdp`` and the fast ones of ``fast_solver`` share it.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from lmnn_sdp.core.checks import check_real_dtype


class MahalanobisMixin:
    """metric-learn's view of a learned linear map ``L = components_``.

    A fitted estimator with ``components_`` of shape (n_components, n_features) and
    ``n_features_in_`` gets ``transform``, the Mahalanobis matrix ``M = L^T L``, the
    distances ``D_M`` and scores ``-D_M`` of pairs, and ``get_metric``, the distance as a
    function of two points.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.base import BaseEstimator
    >>> from lmnn_sdp.core.mahalanobis import MahalanobisMixin
    >>> class Scale(MahalanobisMixin, BaseEstimator):
    ...     def fit(self, X, y=None):
    ...         self.n_features_in_ = np.shape(X)[1]
    ...         self.components_ = np.diag([2.0, 1.0])
    ...         return self
    >>> scale = Scale().fit([[0.0, 0.0]])
    >>> scale.pair_distance([[[0.0, 0.0], [1.0, 0.0]]])
    array([2.])
    >>> scale.pair_score([[[0.0, 0.0], [0.0, 1.0]]])
    array([-1.])
    """

    def transform(self, X):
        """Map inputs into the learned space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real inputs with the features seen in ``fit``.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            ``X @ components_.T``, whose Euclidean distances are the learned
            Mahalanobis distances.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        ValueError
            If ``X`` has another number of features than in ``fit``, or NaN or infinity.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import RCA
        >>> X, y = load_iris(return_X_y=True)
        >>> RCA().fit(X, y).transform(X[:5]).shape
        (5, 4)
        """
        return fitted_inputs(self, X) @ self.components_.T

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """Return the learned Mahalanobis matrix ``M = L^T L``.

        Returns
        -------
        M : ndarray of shape (n_features, n_features)
            ``components_.T @ components_``, symmetric positive semidefinite; a new
            array, which the estimator does not hold.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import RCA
        >>> X, y = load_iris(return_X_y=True)
        >>> M = RCA().fit(X, y).get_mahalanobis_matrix()
        >>> M.shape
        (4, 4)
        >>> bool(np.allclose(M, M.T))
        True
        """
        check_is_fitted(self, "components_")
        return self.components_.T @ self.components_

    def pair_distance(self, pairs) -> np.ndarray:
        """Return the learned distance of each pair of points.

        The distance is ``sqrt((x - x')^T M (x - x'))`` with ``M`` the learned
        Mahalanobis matrix, that is the Euclidean distance after ``transform``.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)
            The pairs ``(x, x')``; stack two arrays of points with
            ``np.stack([X1, X2], axis=1)``.

        Returns
        -------
        distances : ndarray of shape (n_pairs,)
            The distance of each pair.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        ValueError
            If ``pairs`` is not of shape (n_pairs, 2, n_features), or holds NaN or
            infinity.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import RCA
        >>> X, y = load_iris(return_X_y=True)
        >>> rca = RCA().fit(X, y)
        >>> d = rca.pair_distance(np.stack([X[:3], X[3:6]], axis=1))
        >>> d.shape
        (3,)
        >>> Z = rca.transform(X)
        >>> bool(np.allclose(d, np.linalg.norm(Z[:3] - Z[3:6], axis=1)))
        True
        """
        check_is_fitted(self, "components_")
        reject_complex(pairs, "pairs")
        pairs = check_array(pairs, allow_nd=True, ensure_2d=False)
        check_real_dtype(pairs.dtype, "pairs")
        d = self.n_features_in_
        if pairs.ndim != 3 or pairs.shape[1:] != (2, d):
            raise ValueError(f"pairs must have shape (n_pairs, 2, {d}): two points of {d} features "
                             f"each, got {pairs.shape}; stack them with np.stack([X1, X2], axis=1).")
        differences = (pairs[:, 0] - pairs[:, 1]) @ self.components_.T
        return np.sqrt(np.einsum("pr,pr->p", differences, differences))

    def pair_score(self, pairs) -> np.ndarray:
        """Return the similarity score of each pair of points: the opposite of its distance.

        metric-learn's sign convention: a higher score means more similar, so
        ``pair_score(pairs) == -pair_distance(pairs)``.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 2, n_features)
            The pairs ``(x, x')``; stack two arrays of points with
            ``np.stack([X1, X2], axis=1)``.

        Returns
        -------
        scores : ndarray of shape (n_pairs,)
            ``-sqrt((x - x')^T M (x - x'))`` for each pair, at most 0.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        ValueError
            If ``pairs`` is not of shape (n_pairs, 2, n_features), or holds NaN or
            infinity.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import RCA
        >>> X, y = load_iris(return_X_y=True)
        >>> rca = RCA().fit(X, y)
        >>> pairs = np.stack([X[:3], X[3:6]], axis=1)
        >>> bool(np.array_equal(rca.pair_score(pairs), -rca.pair_distance(pairs)))
        True
        """
        return -self.pair_distance(pairs)

    def get_metric(self):
        """Return the learned distance as a function of two points.

        The function ``metric(u, v, squared=False)`` takes two 1-D points of
        ``n_features`` each and returns ``sqrt((u - v)^T M (u - v))`` (its square when
        ``squared``). It holds a copy of ``components_``, so refitting the estimator
        does not change it, and it can be passed as ``metric=`` to scikit-learn's
        ``KNeighborsClassifier``, ``NearestNeighbors`` or ``DBSCAN``.

        Returns
        -------
        metric : callable
            ``metric(u, v, squared=False) -> float`` with ``u`` and ``v`` array-like of
            shape (n_features,); raises ValueError for points of another shape and
            ``NonRealInputError`` for complex or non-numeric points.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from sklearn.neighbors import KNeighborsClassifier
        >>> from fast_solver import RCA
        >>> X, y = load_iris(return_X_y=True)
        >>> rca = RCA().fit(X, y)
        >>> metric = rca.get_metric()
        >>> bool(np.isclose(metric(X[0], X[1]), rca.pair_distance([[X[0], X[1]]])[0]))
        True
        >>> knn = KNeighborsClassifier(n_neighbors=3, metric=metric).fit(X[::3], y[::3])
        >>> knn.predict(X[:2])
        array([0, 0])
        """
        check_is_fitted(self, "components_")
        L_T = np.atleast_2d(np.array(self.components_, dtype=float)).T  # a 1-D map is one row
        d = L_T.shape[0]

        def metric(u, v, squared: bool = False) -> float:
            difference = as_point(u, d, "u") - as_point(v, d, "v")
            mapped = difference @ L_T
            value = float(np.dot(mapped, mapped))
            return value if squared else float(np.sqrt(value))

        return metric


def as_point(u, d: int, name: str) -> np.ndarray:
    """``u`` as a float vector of ``d`` entries (a row or column of one point is
    flattened), else an error naming ``name`` and the shape expected."""
    u = np.asarray(u)
    check_real_dtype(u.dtype, name)
    u = u.reshape(-1) if u.ndim != 1 and u.size == d else u
    if u.shape != (d,):
        raise ValueError(f"{name} must be one point of {d} features, shape ({d},), got shape {u.shape}.")
    return u.astype(float, copy=False)


def fitted_inputs(estimator, X) -> np.ndarray:
    """``X`` (n_samples, n_features) checked for a fitted ``estimator``: scikit-learn's
    validation against the features seen in ``fit``, complex input and dates refused."""
    check_is_fitted(estimator)
    reject_complex(X)
    X = validate_data(estimator, X, reset=False)
    check_real_dtype(X.dtype, "X")  # dates pass scikit-learn's numeric check
    return X


def reject_complex(X, name: str = "X") -> None:
    """Complex ``X`` (array, sparse matrix, nested lists) raises before scikit-learn's
    validation, so the error names ``name`` and the fix; the message keeps scikit-learn's
    "Complex data not supported"."""
    dtype = getattr(X, "dtype", None)
    if not isinstance(dtype, np.dtype):  # lists, data frames, other array-likes
        dtype = np.asarray(X).dtype
    if dtype.kind == "c":
        check_real_dtype(dtype, name)
