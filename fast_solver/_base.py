"""What the fast solvers' scikit-learn estimators share: metric-learn's Mahalanobis view of a
linear map, the input checks of ``fit`` and ``transform``, and the progress table of ``verbose``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from lmnn_sdp.core.problem import check_real_dtype


class MahalanobisMixin:
    """metric-learn's view of a learned linear map ``L = components_``.

    A fitted estimator with ``components_`` of shape (n_components, n_features) gets
    the Mahalanobis matrix ``M = L^T L`` and the distances ``D_M`` of pairs (the
    distance of Weinberger & Saul, JMLR 2009, eq. 3).
    """

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """Return the learned Mahalanobis matrix ``M = L^T L``.

        Returns
        -------
        M : ndarray of shape (n_features, n_features)
            ``components_.T @ components_``, symmetric positive semidefinite.

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
        check_is_fitted(self)
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
        ValueError
            If ``pairs`` is not of shape (n_pairs, 2, n_features).

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
        check_is_fitted(self)
        reject_complex(pairs, "pairs")
        pairs = check_array(pairs, allow_nd=True)
        check_real_dtype(pairs.dtype, "pairs")
        d = self.n_features_in_
        if pairs.ndim != 3 or pairs.shape[1:] != (2, d):
            raise ValueError(f"pairs must have shape (n_pairs, 2, {d}): two points of {d} features "
                             f"each, got {pairs.shape}; stack them with np.stack([X1, X2], axis=1).")
        differences = (pairs[:, 0] - pairs[:, 1]) @ self.components_.T
        return np.sqrt(np.einsum("pr,pr->p", differences, differences))


class LinearMetricTransformer(MahalanobisMixin, TransformerMixin):
    """The transformer side of the estimators that learn one linear map ``L``.

    ``transform(X) = X @ components_.T``, with ``get_mahalanobis_matrix`` and
    ``pair_distance`` of ``MahalanobisMixin`` and scikit-learn's ``fit_transform``.
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
            If ``X`` has another number of features than in ``fit``.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import RCA
        >>> X, y = load_iris(return_X_y=True)
        >>> RCA().fit(X, y).transform(X[:5]).shape
        (5, 4)
        """
        return fitted_inputs(self, X) @ self.components_.T

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def labelled_inputs(estimator: BaseEstimator, X, y) -> tuple[np.ndarray, np.ndarray]:
    """``X`` (n_samples, n_features) and class labels ``y`` (n_samples,) of ``fit(X, y)``:
    scikit-learn's validation (sets ``n_features_in_``), complex input refused."""
    reject_complex(X)
    X, y = validate_data(estimator, X, y, ensure_min_samples=2)
    check_classification_targets(y)
    return X, y


def fitted_inputs(estimator: BaseEstimator, X) -> np.ndarray:
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


class ProgressTable:
    """The table a ``verbose`` fit prints to stdout, one row per stage, pass or epoch, as
    scikit-learn's NCA prints one per iteration.

    Parameters
    ----------
    name : str
        The estimator's name, the prefix of every line.
    columns : sequence of (title, width, format)
        One per column: its title, its width in characters, a format spec without the width
        (``"d"``, ``".2e"``, ``""``).

    Examples
    --------
    >>> table = ProgressTable("LMNN", [("Stage", 6, "d"), ("Gap", 9, ".2e")])
    [LMNN]
    [LMNN]  Stage       Gap
    [LMNN] ----------------
    >>> table.row(0, 0.5)
    [LMNN]      0  5.00e-01
    """

    def __init__(self, name: str, columns: Sequence[tuple[str, int, str]]):
        self.name, self.columns = name, tuple(columns)
        header = " ".join(f"{title:>{width}}" for title, width, _ in self.columns)
        print(f"[{name}]\n[{name}] {header}\n[{name}] {'-' * len(header)}", file=sys.stdout)

    def row(self, *values) -> None:
        """Print one row, ``values`` in the order of ``columns``."""
        cells = " ".join(f"{value:>{width}{spec}}" for value, (_, width, spec) in zip(values, self.columns))
        print(f"[{self.name}] {cells}", file=sys.stdout)
