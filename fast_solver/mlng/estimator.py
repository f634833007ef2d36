"""scikit-learn estimator for MLNG, a thin shell over ``fast_solver.mlng.sgd.fit_mlng``."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from fast_solver._base import CHECKPOINT_PARAMETERS, LinearMetricTransformer, ProgressTable, reject_complex
from fast_solver.mlng.sgd import MLNGEpoch, fit_mlng
from lmnn_sdp.core.checks import check_max_iter, check_real_dtype, check_tol
from lmnn_sdp.core.psd import check_psd


class MLNG(LinearMetricTransformer, BaseEstimator):
    """Metric learning by neighbourhood gerrymandering (MLNG).

    Implements Trivedi, McAllester & Shakhnarovich (NIPS 2014). Minimises eq. 10, ``||W||_F^2 + C sum_i L_i(W)``, where ``L_i`` (eq. 5-6) is the
    structured hinge between the best ``k``-set of other points plus its classification loss
    (Alg. 3) and the best set voting for ``y_i`` alone (Alg. 2), by projected stochastic
    gradient descent with the learning rate ``1/t`` (Alg. 1, ``fast_solver.mlng.sgd``).
    ``transform`` maps ``x`` to ``L x`` with ``L^T L = W``.

    Parameters
    ----------
    k : int, default=3
        Neighbours per vote.
    C : float > 0, default=0.1
        Weight of the summed surrogate loss in eq. 10; the paper tunes it on a 75/25 split
        of the training data (docs/design/mlng.md, "The default C").
    loss_matrix : ndarray of shape (n_classes, n_classes) or None, default=None
        ``Lambda(r, r')``, the loss of voting ``r'`` for a point of class ``r``, classes in
        the order of ``classes_``; None is the 0-1 loss (the paper's choice).
    init : {"zeros", "identity"} or ndarray of shape (n_features, n_features), default="zeros"
        Starting PSD metric: zero as in Alg. 1, the Euclidean metric, or a given matrix. It
        decides the neighbour sets of the first step, which then replaces it.
    batch_size : int, default=1
        Points per SGD step (the paper's Alg. 1 samples one).
    max_iter : int >= 1, default=100
        Budget of epochs (passes over the data).
    tol : float >= 0, default=1e-3
        Stop when the epoch average of eq. 10 falls by less than this fraction (sec. 6).
    verbose : int, default=0
        If positive, print one row per epoch (objective, mean loss, ``||W||_F``, steps,
        seconds).
    callback : callable or None, default=None
        Called after every epoch with a ``fast_solver.mlng.sgd.MLNGEpoch``.
    random_state : int, RandomState instance or None, default=None
        Seeds the order in which SGD visits the points.
    checkpoint : str, path-like or None, default=None
        A file where ``fit`` saves its state at the end of an epoch at most every
        ``checkpoint_interval`` seconds and when it ends (``fit_mlng``): a ``fit`` of the same
        data and parameters with the same path resumes from it and ends with the ``metric_``,
        ``objective_`` and ``n_iter_`` of an uninterrupted fit, bit for bit; one that has ended
        returns after one evaluation of eq. 10. Needs a fixed ``random_state``. A damaged or
        foreign file is refused (``fast_solver.checkpoint.CheckpointError``).
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves after every epoch.

    Attributes
    ----------
    components_ : ndarray of shape (n_features, n_features)
        ``L`` with ``L^T L = metric_``, rows by decreasing eigenvalue.
    metric_ : ndarray of shape (n_features, n_features)
        The learned PSD matrix ``W``.
    objective_ : float
        Eq. 10 at ``metric_``.
    n_iter_ : int
        Epochs run.
    converged_ : bool
        Whether the stopping rule fired before ``max_iter`` epochs.
    result_ : MLNGResult
        Everything ``fit_mlng`` returned.
    classes_ : ndarray of shape (n_classes,)
        The order of the rows and columns of ``loss_matrix``.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    fit_mlng : The function behind ``fit``.
    LMNN : A convex, certified alternative.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import MLNG
    >>> X, y = load_iris(return_X_y=True)
    >>> X, y = X[::5], y[::5]  # 10 points of each class
    >>> mlng = MLNG(k=3, C=0.1, random_state=0).fit(X, y)
    >>> mlng.converged_, mlng.metric_.shape
    (True, (4, 4))
    >>> mlng.transform(X).shape
    (30, 4)
    """

    _parameter_constraints: dict = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "C": [Interval(Real, 0, None, closed="neither")],
        "loss_matrix": ["array-like", None],
        "init": [StrOptions({"zeros", "identity"}), np.ndarray],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "verbose": ["verbose"],
        "callback": [callable, None],
        "random_state": ["random_state"],
        **CHECKPOINT_PARAMETERS,
    }

    def __init__(self, k=3, C=0.1, loss_matrix=None, init="zeros", batch_size=1, max_iter=100,
                 tol=1e-3, verbose=0, callback=None, random_state=None, checkpoint=None,
                 checkpoint_interval=60.0):
        self.k = k
        self.C = C
        self.loss_matrix = loss_matrix
        self.init = init
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.callback = callback
        self.random_state = random_state
        self.checkpoint = checkpoint
        self.checkpoint_interval = checkpoint_interval

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the metric ``W`` minimising eq. 10 by projected SGD (Alg. 1).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real training inputs.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : MLNG
            The fitted estimator.

        Raises
        ------
        TypeError
            If ``tol`` is not a real number or ``max_iter`` not an integer, ``True`` included
            (scikit-learn's ``Interval`` admits booleans; ``lmnn_sdp.core.checks``).
        ValueError
            If ``init`` or ``loss_matrix`` has the wrong shape, ``init`` is not PSD, or
            ``checkpoint`` is given with ``random_state=None``.
        fast_solver.checkpoint.CheckpointError
            If ``checkpoint`` is damaged or was written by another fit.

        Warns
        -----
        ConvergenceWarning
            If the stopping rule has not fired after ``max_iter`` epochs.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import MLNG
        >>> X, y = load_iris(return_X_y=True)
        >>> mlng = MLNG(init="identity", batch_size=10, random_state=0).fit(X[::5], y[::5])
        >>> mlng.classes_, mlng.components_.shape
        (array([0, 1, 2]), (4, 4))
        """
        check_tol(self.tol)  # the library's rules, which refuse True as scikit-learn's Interval does not
        check_max_iter(self.max_iter)
        reject_complex(X)
        X, y = validate_data(self, X, y, ensure_min_samples=2)
        check_real_dtype(X.dtype, "X")  # dates pass scikit-learn's numeric check
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        result = fit_mlng(X, codes, k=self.k, C=self.C, loss_matrix=self.loss_matrix,
                          W0=self._initial_metric(X.shape[1]), max_epochs=self.max_iter,
                          batch_size=self.batch_size, tol=self.tol,
                          random_state=self.random_state, callback=self._epoch_callback(),
                          checkpoint=self.checkpoint, checkpoint_interval=self.checkpoint_interval)
        self.metric_, self.components_ = result.metric, result.components
        self.objective_, self.n_iter_ = result.objective, result.n_epochs
        self.converged_, self.result_ = result.converged, result
        if not result.converged:
            warnings.warn(f"[MLNG] SGD did not converge: the epoch average of eq. 10 still fell "
                          f"by more than tol={self.tol:g} after max_iter={self.max_iter} epochs; "
                          "raise max_iter.", ConvergenceWarning)
        return self

    def _initial_metric(self, d: int) -> np.ndarray:
        if isinstance(self.init, np.ndarray):
            check_real_dtype(self.init.dtype, "init")
            if self.init.shape != (d, d):
                raise ValueError(f"init must have shape ({d}, {d}) to match X, got "
                                 f"{self.init.shape}.")
            return check_psd(self.init.astype(float), "init")[0]
        return np.eye(d) if self.init == "identity" else np.zeros((d, d))

    def _epoch_callback(self):
        """The user's callback, preceded by a printed row per epoch when ``verbose``."""
        table = _epoch_table() if self.verbose else None
        if table is None:
            return self.callback

        def both(epoch: MLNGEpoch) -> None:
            table(epoch)
            if self.callback is not None:
                self.callback(epoch)
        return both


def _epoch_table():
    """The ``verbose`` callback of ``MLNG``: one row per epoch."""
    table = ProgressTable("MLNG", [("Epoch", 6, "d"), ("Objective", 16, ".9e"), ("Mean loss", 12, ".5e"),
                                   ("||W||_F", 12, ".5e"), ("Steps", 9, "d"), ("Time(s)", 9, ".2f")])
    return lambda e: table.row(e.epoch, e.objective, e.mean_loss, e.norm, e.n_steps, e.elapsed)
