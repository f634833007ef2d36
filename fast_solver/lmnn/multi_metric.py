"""Multi-metric LMNN (sec. 5.2, eq. 16): one metric per class or per k-means cluster.

The metric of a cluster measures distances *to* its points:
``D^(x, x_b) = (x - x_b)^T M_{c(b)} (x - x_b)``. Training is ``fast_solver.solve`` with
``clusters`` (started from the global LMNN optimum, with the same certified stop);
classification is k-NN under ``D^`` (``cluster_neighbors``). No single linear map
describes the model, so the estimator is a classifier, not a transformer.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.cluster import KMeans
from sklearn.utils._param_validation import Interval, StrOptions

from fast_solver._base import CHECKPOINT_PARAMETERS, fitted_inputs
from fast_solver.checkpoint import as_checkpoint
from fast_solver.lmnn.estimator import labelled_problem, seeded, stage_table, warn_unless_converged
from fast_solver.lmnn.impostors import SEARCH_METHODS
from fast_solver.lmnn.solver import solve
from fast_solver.lmnn.state import solve_fingerprint
from lmnn_sdp.core.checks import check_max_iter, check_tol
from lmnn_sdp.core.pair_search import BLOCK_BYTES
from lmnn_sdp.core.psd import psd_factor


def cluster_neighbors(X, metrics, clusters, X_test, n_neighbors: int) -> np.ndarray:
    """Return the nearest training points under the distances of several metrics.

    The k-NN search of multi-metric LMNN (Weinberger & Saul, JMLR 2009, sec. 5.2):
    the distance to training point ``b`` is ``D^(x, x_b) = (x - x_b)^T M_{c(b)} (x - x_b)``
    (eq. 16), measured with the metric of ``b``'s cluster. Computed in blocks of
    test points (``BLOCK_BYTES`` per block of distances).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Training inputs.
    metrics : ndarray of shape (C, d, d)
        One PSD metric per cluster.
    clusters : ndarray of int, shape (n,)
        Cluster ``0..C-1`` of each training point.
    X_test : ndarray of shape (m, d)
        Test inputs.
    n_neighbors : int
        Neighbours to return, in ``[1, n]``.

    Returns
    -------
    indices : ndarray of int, shape (m, n_neighbors)
        Training indices, nearest first.

    Raises
    ------
    ValueError
        If ``n_neighbors`` is outside ``[1, n]``.

    Examples
    --------
    Two clusters on a line; the second one's metric shrinks distances to its points:

    >>> import numpy as np
    >>> from fast_solver import cluster_neighbors
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> clusters = np.array([0, 0, 1, 1])
    >>> cluster_neighbors(X, np.stack([np.eye(1), np.eye(1)]), clusters, np.array([[5.2]]), 2)
    array([[1, 2]])
    >>> cluster_neighbors(X, np.stack([np.eye(1), 0.01 * np.eye(1)]), clusters, np.array([[5.2]]), 2)
    array([[2, 3]])
    """
    n = len(X)
    if not 1 <= n_neighbors <= n:
        raise ValueError(f"n_neighbors must lie in [1, {n}] (the training points), got {n_neighbors}.")
    factors = [psd_factor(M) for M in metrics]
    members = [np.flatnonzero(clusters == c) for c in range(len(metrics))]
    Z = [X[m] @ L.T for m, L in zip(members, factors)]
    out = np.empty((len(X_test), n_neighbors), dtype=np.intp)
    block = max(1, BLOCK_BYTES // (8 * n))
    for start in range(0, len(X_test), block):
        rows = X_test[start:start + block]
        D = np.empty((len(rows), n))
        for m, L, Zc in zip(members, factors, Z):
            Zt = rows @ L.T
            D[:, m] = np.einsum("tr,tr->t", Zt, Zt)[:, None] + np.einsum("nr,nr->n", Zc, Zc) - 2.0 * Zt @ Zc.T
        nearest = np.argpartition(D, n_neighbors - 1, axis=1)[:, :n_neighbors]
        order = np.argsort(np.take_along_axis(D, nearest, axis=1), axis=1, kind="stable")
        out[start:start + len(rows)] = np.take_along_axis(nearest, order, axis=1)
    return out


class MultiMetricLMNN(ClassifierMixin, BaseEstimator):
    """Multi-metric LMNN with a certified stop and its k-NN rule.

    Implements sec. 5.2 of Weinberger & Saul (JMLR 2009). Learns one metric per
    cluster by minimising eq. 16's objective with the
    certified solver of ``fast_solver.lmnn.solver``, started from the global LMNN
    optimum, and classifies by majority vote of the ``n_neighbors`` nearest
    training points under ``D^(x, x_b) = (x - x_b)^T M_{c(b)} (x - x_b)``. With one
    metric per cluster there is no single Mahalanobis matrix or linear map: unlike the
    linear learners it has no ``transform``, ``get_mahalanobis_matrix``,
    ``pair_distance``, ``pair_score`` or ``get_metric``.

    Parameters
    ----------
    k : int, default=3
        Target neighbours per point.
    mu : float in [0, 1], default=0.5
        Weight of the push term.
    clusters : "classes" or int, default="classes"
        One metric per class (the paper's choice), or this many k-means clusters
        (``sklearn.cluster.KMeans`` seeded by ``random_state``).
    n_neighbors : int, default=3
        Neighbours voting in ``predict`` (ties go to the first class).
    max_iter : int >= 1, default=1000
        iterations of each solve (global LMNN, then multi-metric).
    tol : float >= 0, default=1e-6
        Certified relative gap at which each solve stops.
    search : {"auto", "blockwise", "balltree"}, default="auto"
        Impostor-search path (``fast_solver.lmnn.impostors``).
    verbose : int, default=0
        Print one row per continuation stage of the multi-metric solve.
    random_state : int, RandomState instance or None, default=None
        Seeds k-means.
    checkpoint : str, path-like or None, default=None
        File that keeps the state of both solves (``solve``'s ``checkpoint``): a fit killed at any point and run again
        with the same path resumes from the state saved last and ends bit-for-bit as an
        uninterrupted fit; run again after the end, it returns at once. With ``clusters``
        an int, ``random_state`` must be an int.
    checkpoint_interval : float >= 0, default=60
        Seconds between saves; 0 saves at every restart point.

    Attributes
    ----------
    metrics_ : ndarray of shape (n_clusters, n_features, n_features)
        The learned PSD metric of each cluster.
    clusters_ : ndarray of int, shape (n_samples,)
        Cluster of each training point.
    kmeans_ : KMeans or None
        The clustering, when ``clusters`` is an int.
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    objective_, lower_bound_ : float
        Eq. 16's objective at ``metrics_`` and a rigorous lower bound on its optimum.
    converged_ : bool
        Whether the certified gap reached ``tol``.
    n_iter_ : int
        iterations of the multi-metric solve.
    global_result_, result_ : FastLMNNResult
        The global LMNN solve (the start) and the multi-metric solve.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    LMNN : One metric for all points.
    cluster_neighbors : The k-NN search under eq. 16's distances.
    EnergyClassifier : Classification by energy, which also accepts this learner.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fast_solver import MultiMetricLMNN
    >>> X, y = load_iris(return_X_y=True)
    >>> X, y = X[::5], y[::5]  # 10 points of each class
    >>> mm = MultiMetricLMNN(k=3).fit(X, y)
    >>> mm.converged_, mm.metrics_.shape
    (True, (3, 4, 4))
    >>> bool(mm.objective_ <= mm.global_result_.upper)
    True
    >>> mm.predict(X[[0, 10, 20]])
    array([0, 1, 2])
    """

    _parameter_constraints: dict = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "mu": [Interval(Real, 0, 1, closed="both")],
        "clusters": [StrOptions({"classes"}), Interval(Integral, 1, None, closed="left")],
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "search": [StrOptions(set(SEARCH_METHODS))],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        **CHECKPOINT_PARAMETERS,
    }

    def __init__(self, k=3, mu=0.5, clusters="classes", n_neighbors=3, max_iter=1000, tol=1e-6,
                 search="auto", verbose=0, random_state=None, checkpoint=None, checkpoint_interval=60.0):
        self.k = k
        self.mu = mu
        self.clusters = clusters
        self.n_neighbors = n_neighbors
        self.max_iter = max_iter
        self.tol = tol
        self.search = search
        self.verbose = verbose
        self.random_state = random_state
        self.checkpoint = checkpoint
        self.checkpoint_interval = checkpoint_interval

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn one metric per cluster, starting from the global LMNN optimum.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Real training inputs.
        y : array-like of shape (n_samples,)
            Class labels, at least two classes, each with at least ``k + 1`` points.

        Returns
        -------
        self : MultiMetricLMNN
            The fitted estimator.

        Raises
        ------
        TypeError
            If ``tol`` is not a real number or ``max_iter`` not an integer, ``True`` included
            (scikit-learn's ``Interval`` admits booleans; ``lmnn_sdp.core.checks``).
        ValueError
            If ``y`` has one class, a class has ``k`` points or fewer, k-means
            finds fewer distinct clusters than ``clusters``, or ``checkpoint`` is given with
            ``clusters`` an int and a ``random_state`` that is not an int.
        CheckpointError
            If the ``checkpoint`` file is damaged or of another fit (a ValueError).

        Warns
        -----
        ConvergenceWarning
            If the multi-metric solve ends before its certified gap reaches ``tol``.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import MultiMetricLMNN
        >>> X, y = load_iris(return_X_y=True)
        >>> mm = MultiMetricLMNN(clusters=2, random_state=0).fit(X[::5], y[::5])
        >>> mm.metrics_.shape, mm.clusters_.shape
        ((2, 4, 4), (30,))
        """
        check_tol(self.tol)  # the library's rules, which refuse True as scikit-learn's Interval does not
        check_max_iter(self.max_iter)
        problem = labelled_problem(self, X, y)
        if self.clusters != "classes":
            seeded(self, f"clusters={self.clusters} (k-means)")
        self.classes_ = problem.classes
        self.clusters_, self.kmeans_ = self._clusters(problem)
        options = dict(max_iter=self.max_iter, tol=self.tol, search=self.search)
        checkpoint = as_checkpoint(self.checkpoint, kind="lmnn", interval=self.checkpoint_interval,
                                   fingerprint=lambda: solve_fingerprint(problem.with_clusters(self.clusters_),
                                                                         **options))
        self.global_result_ = solve(problem, **options, checkpoint=checkpoint.section("global"))
        result = solve(problem, self.global_result_.metric, clusters=self.clusters_, **options,
                       callback=stage_table("MultiMetricLMNN") if self.verbose else None,
                       checkpoint=checkpoint.section("multi"))
        self.metrics_ = result.metric
        self.objective_, self.lower_bound_ = result.upper, result.lower
        self.n_iter_, self.converged_, self.result_ = result.n_iter, result.converged, result
        self._training = (problem.X, problem.label_codes)
        warn_unless_converged(self, result)
        return self

    def predict(self, X):
        """Return the majority vote of the nearest training points under eq. 16's distances.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The most frequent label among the ``n_neighbors`` nearest training points
            (``cluster_neighbors``); ties go to the first of ``classes_``.

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import MultiMetricLMNN
        >>> X, y = load_iris(return_X_y=True)
        >>> MultiMetricLMNN().fit(X[::5], y[::5]).predict(X[[0, 50, 100]])
        array([0, 1, 2])
        """
        X = fitted_inputs(self, X)
        X_train, codes = self._training
        votes = codes[cluster_neighbors(X_train, self.metrics_, self.clusters_, X, self.n_neighbors)]
        counts = np.zeros((len(X), len(self.classes_)), dtype=np.intp)
        np.add.at(counts, (np.arange(len(X))[:, None], votes), 1)
        return self.classes_[np.argmax(counts, axis=1)]

    def test_clusters(self, X) -> np.ndarray | None:
        """Return the cluster of each test point, for energy classification.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.

        Returns
        -------
        clusters : ndarray of int, shape (n_samples,) or None
            The k-means cluster of each row of ``X``, or None when the clusters are the
            classes (a test point then belongs to the cluster of its hypothetical label,
            as in ``EnergyClassifier``).

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from fast_solver import MultiMetricLMNN
        >>> X, y = load_iris(return_X_y=True)
        >>> mm = MultiMetricLMNN(clusters=2, random_state=0).fit(X[::5], y[::5])
        >>> mm.test_clusters(X[:2]).shape
        (2,)
        """
        X = fitted_inputs(self, X)
        return None if self.kmeans_ is None else self.kmeans_.predict(X).astype(np.intp)

    def _clusters(self, problem):
        if self.clusters == "classes":
            return problem.label_codes, None
        if self.clusters > problem.n_samples:
            raise ValueError(f"clusters={self.clusters} exceeds the {problem.n_samples} training "
                             "points; use fewer clusters.")
        kmeans = KMeans(self.clusters, n_init=10, random_state=self.random_state).fit(problem.X)
        found = len(np.unique(kmeans.labels_))
        if found < self.clusters:
            raise ValueError(f"k-means found only {found} distinct clusters of the {self.clusters} "
                             f"asked (repeated points?); use clusters <= {found}.")
        return kmeans.labels_.astype(np.intp), kmeans
