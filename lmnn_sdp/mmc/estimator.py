"""scikit-learn transformer for MMC (Xing et al. 2002), a thin shell over ``solve_mmc``."""

from __future__ import annotations

from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from lmnn_sdp.core.psd import psd_factor
from lmnn_sdp.mmc.solve import SOLVERS, solve_mmc


class MMC(TransformerMixin, BaseEstimator):
    """Mahalanobis Metric for Clustering (Xing et al. 2002; JMLR 2009, sec. 2.3.1), solved exactly.

    Pairs come from the labels: every same-label pair is similar, every other
    pair dissimilar. The full problem maximises ``sum_D sqrt(D_A)`` subject to
    ``sum_S D_A <= 1``, ``A`` PSD; the diagonal one is Xing et al.'s
    ``min sum_S D_A - log(sum_D sqrt(D_A))`` over ``A = diag(a) >= 0``. Both are
    solved in cvxpy, refined and certified (``lmnn_sdp.mmc``). ``transform`` maps
    ``x`` to ``L x`` with ``L^T L = A``.

    Parameters
    ----------
    diagonal : bool, default=False
        Xing et al.'s diagonal problem instead of the full metric.
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
    tol : float, default=1e-6
        Certified gap that counts as optimal (``certificate_.certified``).

    Attributes
    ----------
    metric_ : ndarray of shape (n_features, n_features)
        The learned PSD matrix ``A``.
    components_ : ndarray of shape (n_features, n_features)
        ``L`` with ``L^T L = metric_``, rows ordered by decreasing eigenvalue.
    objective_ : float
        ``f(metric_)`` (full) or ``g(metric_)`` (diagonal).
    certificate_ : lmnn_sdp.mmc.certificate.MMCCertificate
        The bounds, gap and evidence; ``certificate_.verify()`` re-derives them.
    result_ : lmnn_sdp.mmc.solve.MMCResult
        The solve: certificate, solver status, attempts and timings.
    n_features_in_ : int
    """

    _parameter_constraints = {
        "diagonal": ["boolean"],
        "solver": [StrOptions(set(SOLVERS))],
        "tol": [float],
    }

    def __init__(self, diagonal: bool = False, solver: str = "CLARABEL", tol: float = 1e-6):
        self.diagonal = diagonal
        self.solver = solver
        self.tol = tol

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn ``A`` from ``X`` (n, d) and labels ``y`` (n,) with at least two classes."""
        X, y = validate_data(self, X, y, ensure_min_samples=2)
        check_classification_targets(y)
        self.result_ = solve_mmc(X, y, diagonal=self.diagonal, solver=self.solver, tol=self.tol)
        self.certificate_ = self.result_.certificate
        self.metric_ = self.certificate_.metric
        self.components_ = psd_factor(self.metric_)
        self.objective_ = self.certificate_.objective
        return self

    def transform(self, X):
        """``L x`` for every row of ``X`` (n, d); shape (n, d)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return X @ self.components_.T
