"""scikit-learn transformer for MMC (Xing et al. 2002), a thin shell over ``solve_mmc``."""

from __future__ import annotations

from numbers import Real

from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from lmnn_sdp.core.checks import check_tol
from lmnn_sdp.core.mahalanobis import MahalanobisMixin
from lmnn_sdp.core.psd import psd_factor
from lmnn_sdp.mmc.solve import SOLVERS, solve_mmc


class MMC(MahalanobisMixin, TransformerMixin, BaseEstimator):
    """Mahalanobis Metric for Clustering, solved exactly and certified.

    MMC of Xing et al. (2002), as stated by Weinberger & Saul (JMLR 2009, sec. 2.3.1).
    Pairs come from the labels: every same-label pair is similar (``S``), every other
    pair dissimilar (``D``). The full problem maximises ``sum_D sqrt(D_A)`` subject to
    ``sum_S D_A <= 1``, ``A`` PSD; the diagonal one is Xing et al.'s
    ``min sum_S D_A - log(sum_D sqrt(D_A))`` over ``A = diag(a)``, ``a >= 0``. Both are
    solved in cvxpy, refined and certified by ``lmnn_sdp.solve_mmc``; ``transform``
    maps ``x`` to ``L x`` with ``L^T L = A``, and metric-learn's Mahalanobis methods
    (``get_mahalanobis_matrix``, ``pair_distance``, ``pair_score``, ``get_metric``) come
    from ``lmnn_sdp.core.mahalanobis.MahalanobisMixin``, as on every linear learner.

    Parameters
    ----------
    diagonal : bool, default=False
        Xing et al.'s diagonal problem instead of the full metric.
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The first solver that ``solve_mmc`` tries.
    tol : float >= 0, default=1e-6
        Certified gap that counts as optimal (``certificate_.certified``); finite, >= 0.
        Relative for the full problem; with ``diagonal``, the absolute gap of Xing's ``g``
        (``lmnn_sdp.solve_mmc``).

    Attributes
    ----------
    metric_ : ndarray of shape (n_features, n_features)
        The learned PSD matrix ``A`` (``diag(a)`` when ``diagonal``).
    components_ : ndarray of shape (n_features, n_features)
        ``L`` with ``L^T L = metric_``, rows ordered by decreasing eigenvalue.
    objective_ : float
        ``f(metric_)`` (full) or ``g(metric_)`` (diagonal).
    certificate_ : MMCCertificate
        The bounds, gap and evidence; ``certificate_.verify()`` re-derives them.
    result_ : MMCResult
        The solve: certificate, solver status, attempts and timings.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str of shape (n_features,)
        Names of the features seen in ``fit``, when ``X`` has string column names.

    See Also
    --------
    lmnn_sdp.solve_mmc : The function behind ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import MMC, pair_distances
    >>> X, y = load_iris(return_X_y=True)
    >>> mmc = MMC().fit(X[::5], y[::5])
    >>> mmc.certificate_.certified
    True
    >>> mmc.transform(X[:3]).shape
    (3, 4)
    >>> d = mmc.pair_distance([[X[0], X[100]]])[0]
    >>> bool(np.isclose(d ** 2, pair_distances(X, [[0, 100]], mmc.metric_)[0]))
    True
    >>> bool(np.isclose(mmc.get_metric()(X[0], X[100]), d))
    True
    """

    _parameter_constraints = {
        "diagonal": ["boolean"],
        "solver": [StrOptions(set(SOLVERS))],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, diagonal: bool = False, solver: str = "CLARABEL", tol: float = 1e-6):
        self.diagonal = diagonal
        self.solver = solver
        self.tol = tol

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the metric ``A`` from labelled data and certify it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs; finite real numbers, at least two rows.
        y : array-like of shape (n_samples,)
            Class labels, at least two classes and one label shared by two points.

        Returns
        -------
        MMC
            The fitted estimator, ``self``.

        Raises
        ------
        TypeError
            If ``tol`` is not a real number, ``True`` included (scikit-learn's ``Interval``
            admits booleans; ``lmnn_sdp.core.checks``).
        ValueError
            Bad inputs: NaN or infinity, fewer than two samples, continuous labels, a
            single class or no repeated label, or an unbounded problem; invalid
            parameters (scikit-learn's ``InvalidParameterError``).
        RuntimeError
            Every solver failed without returning a point.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import MMC
        >>> X, y = load_iris(return_X_y=True)
        >>> mmc = MMC(diagonal=True).fit(X[::5], y[::5])
        >>> mmc.certificate_.certified, round(mmc.objective_, 3)
        (True, -4.099)
        >>> bool((mmc.metric_ == np.diag(mmc.metric_.diagonal())).all())
        True
        """
        check_tol(self.tol)  # the library's rule, which refuses True as scikit-learn's Interval does not
        X, y = validate_data(self, X, y, ensure_min_samples=2)
        check_classification_targets(y)
        self.result_ = solve_mmc(X, y, diagonal=self.diagonal, solver=self.solver, tol=self.tol)
        self.certificate_ = self.result_.certificate
        self.metric_ = self.certificate_.metric
        self.components_ = psd_factor(self.metric_)
        self.objective_ = self.certificate_.objective
        return self
