"""scikit-learn classifier by energy (eq. 15) over any fitted metric learner."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from fast_solver._base import fitted_inputs, reject_complex
from fast_solver.lmnn.energy import TEST_TARGETS, EnergyModel
from fast_solver.lmnn.estimator import LMNN
from lmnn_sdp.core.problem import LMNNProblem


class EnergyClassifier(ClassifierMixin, BaseEstimator):
    """Energy-based classification over a learned metric.

    Implements the energy rule, eq. 15 of Weinberger & Saul (JMLR 2009, sec. 3.5).
    Fits a metric learner, then labels a test point by the hypothetical label that
    adds the least LMNN loss (eq. 14) when the point joins the training set: its
    pull to its ``k`` Euclidean-nearest points of that label, the impostors inside
    its perimeters, and the training perimeters it invades. Every impostor counts.

    Parameters
    ----------
    learner : estimator or None, default=None
        The metric learner, cloned and fitted in ``fit``; None means
        ``fast_solver.LMNN()``. After fit it must expose ``metric_`` (d, d), or for
        several metrics (eq. 16) ``metrics_`` (C, d, d), ``clusters_`` (n,) and a
        method ``test_clusters(X)`` returning the clusters of test points (m,) or
        None (then the clusters must be the classes). The targets and ``mu`` come
        from ``learner.result_.certificate.problem`` when it has one (as LMNN
        does), else from its ``k`` and ``mu`` with Euclidean targets.
    test_targets : {"euclidean", "metric"}, default="euclidean"
        How a test point's ``k`` targets of each label are found: by Euclidean
        distance (eq. 15) or by the learned distances (the authors' MATLAB code).
    test_margin : float >= 0, default=1.0
        The margin of the test point's own perimeter (second term of eq. 15; the
        authors' MATLAB code uses 0).

    Attributes
    ----------
    learner_ : estimator
        The fitted clone of ``learner``.
    energy_model_ : EnergyModel
        The training side of eq. 15 (data, targets, ``mu``, metrics, clusters).
    classes_ : ndarray of shape (n_classes,)
        The class labels, in the order of the columns of ``energy``.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    energies : The energies of eq. 15 as a function of arrays.
    LMNN : The default learner.
    MultiMetricLMNN : A learner with one metric per class (eq. 16).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import EnergyClassifier, LMNN
    >>> X, y = load_iris(return_X_y=True)
    >>> X, y = X[::5], y[::5]  # 10 points of each class
    >>> clf = EnergyClassifier(LMNN(k=3)).fit(X, y)
    >>> clf.predict(X[[0, 10, 20]])
    array([0, 1, 2])
    >>> clf.learner_.converged_
    True
    >>> clf.score(X, y) > 0.9
    True
    """

    _parameter_constraints: dict = {"learner": [HasMethods(["fit"]), None],
                                    "test_targets": [StrOptions(set(TEST_TARGETS))],
                                    "test_margin": [Interval(Real, 0, None, closed="left")]}

    def __init__(self, learner=None, *, test_targets="euclidean", test_margin=1.0):
        self.learner = learner
        self.test_targets = test_targets
        self.test_margin = test_margin

    @_fit_context(prefer_skip_nested_validation=False)  # the learner validates its own
    def fit(self, X, y):
        """Fit the learner and keep the training side of eq. 15.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real training inputs.
        y : array-like of shape (n_samples,)
            Class labels, at least two classes.

        Returns
        -------
        self : EnergyClassifier
            The fitted classifier.

        Raises
        ------
        ValueError
            If ``y`` has one class.
        TypeError
            If the fitted learner has neither ``result_.certificate.problem`` nor the
            parameters ``k`` and ``mu``.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import EnergyClassifier
        >>> X, y = load_iris(return_X_y=True)
        >>> clf = EnergyClassifier().fit(X[::5], y[::5])
        >>> clf.classes_
        array([0, 1, 2])
        """
        reject_complex(X)
        X, y = validate_data(self, X, y, ensure_min_samples=2)
        check_classification_targets(y)
        if len(np.unique(y)) < 2:
            raise ValueError("EnergyClassifier needs at least two classes, got 1 class; "
                             "impostors are points of another class.")
        learner = LMNN() if self.learner is None else clone(self.learner)
        self.learner_ = learner.fit(X, y)
        self.energy_model_ = _training_side(self.learner_, X, y, test_targets=self.test_targets,
                                            test_margin=self.test_margin)
        self.classes_ = self.energy_model_.problem.classes
        return self

    def energy(self, X) -> np.ndarray:
        """Return the energy ``E(t, c)`` of eq. 15 of each point under each label.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.

        Returns
        -------
        E : ndarray of shape (n_samples, n_classes)
            The LMNN loss each point adds to the training set under each label of
            ``classes_``; lower is better.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import EnergyClassifier
        >>> X, y = load_iris(return_X_y=True)
        >>> E = EnergyClassifier().fit(X[::5], y[::5]).energy(X[[0, 50]])
        >>> E.shape
        (2, 3)
        >>> E.argmin(axis=1)
        array([0, 1])
        """
        X = fitted_inputs(self, X)
        clusters = self.learner_.test_clusters(X) if hasattr(self.learner_, "metrics_") else None
        return self.energy_model_.energies(X, test_clusters=clusters)

    def decision_function(self, X) -> np.ndarray:
        """Return scores with scikit-learn's convention: larger means more likely.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_classes) or (n_samples,)
            ``-energy(X)``; with two classes ``E(t, 0) - E(t, 1)``, shape
            (n_samples,), positive for ``classes_[1]``.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import EnergyClassifier
        >>> X, y = load_iris(return_X_y=True)
        >>> clf = EnergyClassifier().fit(X[50::5], y[50::5])  # classes 1 and 2
        >>> scores = clf.decision_function(X[[50, 100]])
        >>> scores.shape
        (2,)
        >>> clf.classes_[(scores > 0).astype(int)]
        array([1, 2])
        """
        E = self.energy(X)
        return E[:, 0] - E[:, 1] if len(self.classes_) == 2 else -E

    def predict(self, X) -> np.ndarray:
        """Return the label of least energy (eq. 15).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The label of least ``energy`` of each point; ties go to the first of
            ``classes_``.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import EnergyClassifier
        >>> X, y = load_iris(return_X_y=True)
        >>> EnergyClassifier().fit(X[::5], y[::5]).predict(X[[0, 50, 100]])
        array([0, 1, 2])
        """
        E = self.energy(X)
        return self.classes_[np.argmin(E, axis=1)]


def _training_side(learner, X: np.ndarray, y: np.ndarray, **rule) -> EnergyModel:
    """The learner's problem (data, targets, mu) and metric(s) as an ``EnergyModel``;
    ``rule``: ``test_targets``, ``test_margin``."""
    problem = getattr(getattr(getattr(learner, "result_", None), "certificate", None), "problem", None)
    if problem is None:
        if not (hasattr(learner, "k") and hasattr(learner, "mu")):
            raise TypeError(f"{type(learner).__name__} has neither result_.certificate.problem "
                            "nor the parameters k and mu; energy classification needs its targets "
                            "and mu.")
        problem = LMNNProblem(X, y, k=learner.k, mu=learner.mu)
    if hasattr(learner, "metrics_"):
        return EnergyModel.from_problem(problem, learner.metrics_, learner.clusters_, **rule)
    return EnergyModel.from_problem(problem, learner.metric_, **rule)
