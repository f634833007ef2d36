"""The LMNN problem, defined once (Weinberger & Saul, JMLR 2009, eq. 14).

``LMNNProblem`` holds the data, the target neighbours and ``mu``, and owns the
objective

    eps(M) = (1-mu) * sum_{i, j~>i} D_M(x_i, x_j)
           +    mu  * sum_{i, j~>i, l: y_l != y_i} [1 + D_M(x_i, x_j) - D_M(x_i, x_l)]_+

with the linear hinge and unit margin. Every solver in the library, exact or
fast, solves this object. This module uses numpy only (no cvxpy) and every
computation over triplets is blockwise, so it runs on tens of thousands of
points without an ``n x n x k`` array.

A triplet is a row ``(i, j, l)`` of an integer array of shape ``(T, 3)``:
``j`` is a target neighbour of ``i`` and ``l`` has another label.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from lmnn_sdp.core import rounding
from lmnn_sdp.core.hits import below, float32_tiles
from lmnn_sdp.core.principal import float32_above, gram_factors, metric_coordinates

BLOCK_BYTES = 8 * 2**20  # memory budget of one block of pairwise distances, which stays in the
# last-level cache for the passes after its matrix product (design note, "Block sizes")
PANEL_BYTES = 2 * 2**20  # inputs of the columns of one block: the panel its matrix product
# reads for every block of rows stays in cache, however many points there are (same note)


@dataclass(frozen=True)
class ObjectiveValue:
    """eq. 14 as computed and a bound on its floating-point error (``LMNNProblem.evaluate``)."""

    value: float
    rounding: float


class LMNNProblem:
    """Labelled data, target neighbours and ``mu`` of one LMNN instance (eq. 14).

    Holds one instance of the LMNN objective of Weinberger & Saul (JMLR 2009,
    eq. 14), with the linear hinge and unit margin (module docstring), or with
    ``clusters`` of multi-metric LMNN (sec. 5.2, eq. 16). Every solver of the
    library, exact or fast, solves this object. The inputs are copied and every
    array attribute is read-only; what they define (the data range and its
    coordinates, the pull matrices: ``lmnn_sdp.core.space``) is computed once per
    problem.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs; finite real numbers (booleans and integers are cast to float).
    y : array-like of shape (n_samples,)
        Labels (any hashable values); at least two classes.
    k : int, optional
        Number of target neighbours per point; 3 when neither ``k`` nor
        ``targets`` is given. Every class needs at least ``k + 1`` members.
        May be omitted when ``targets`` is given.
    mu : float, default=0.5
        Weight of the push (hinge) term, in [0, 1]; the pull term has weight
        ``1 - mu``.
    targets : array-like of int of shape (n_samples, k), optional
        Explicit target neighbours: distinct points of the same class, none the
        point itself. Default: the ``k`` nearest points of the same class by
        Euclidean distance, ties broken by the smaller index.
    clusters : array-like of int of shape (n_samples,), optional
        Cluster of each point for multi-metric LMNN (eq. 16), values ``0..C-1`` with
        every cluster used: the metric ``M_c`` of cluster ``c`` measures distances to
        its points. None (the default) is LMNN, one metric for all points.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
        The inputs as floats.
    y : ndarray of shape (n_samples,)
        The labels as given.
    classes : ndarray of shape (n_classes,)
        The distinct labels, sorted.
    label_codes : ndarray of int of shape (n_samples,)
        Index of each point's label in ``classes``.
    n_samples : int
        Number of points ``n``.
    n_features : int
        Number of features ``d``.
    mu : float
        Weight of the push term.
    k : int
        Number of target neighbours per point.
    targets : ndarray of int of shape (n_samples, k)
        ``targets[i]`` are the target neighbours ``j ~> i`` of point ``i``.
    X_centered : ndarray of shape (n_samples, n_features)
        The inputs minus their mean.
    n_triplets : int
        Number of triplets ``(i, j, l)`` of eq. 14.
    clusters : ndarray of int of shape (n_samples,), or None
        The clusters as validated; None for LMNN.
    owner : ndarray of int of shape (n_samples,)
        The cluster of each point: ``clusters``, or zeros for LMNN.
    n_clusters : int
        Number of metrics ``C``: 1 for LMNN.

    Raises
    ------
    ValueError
        ``X`` not 2-D, empty or not finite; ``y`` of the wrong shape or with NaN; a
        single class; ``mu`` outside [0, 1]; ``k < 1`` or a class with at most ``k``
        members; ``targets`` of the wrong shape, out of range, repeated, the point
        itself or of another class, or disagreeing with ``k``; ``clusters`` of the
        wrong shape, negative or with an unused index.
    TypeError
        Non-real ``X`` (complex, strings, objects, dates), a non-integer ``k``, a
        non-real ``mu``, non-integer ``targets`` or non-integer ``clusters``.

    See Also
    --------
    lmnn_sdp.solve_lmnn : Solve the problem exactly and certify the answer.
    lmnn_sdp.solve_mm_lmnn : Solve its multi-metric version (sec. 5.2).
    lmnn_sdp.certify : Certify a candidate metric for the problem.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2, mu=0.5)
    >>> problem
    LMNNProblem(n=30, d=4, k=2, mu=0.5, classes=3, triplets=1200)
    >>> problem.targets.shape
    (30, 2)
    >>> round(problem.objective(np.eye(4)), 3)
    12.755

    One metric per class (eq. 16):

    >>> per_class = problem.with_clusters(problem.label_codes)
    >>> per_class
    LMNNProblem(n=30, d=4, k=2, mu=0.5, classes=3, triplets=1200, clusters=3)
    >>> round(per_class.objective(np.stack([np.eye(4)] * 3)), 3)
    12.755
    """

    def __init__(self, X, y, k: int | None = None, mu: float = 0.5, targets=None, clusters=None):
        self.X = _readonly(check_inputs(X))
        self.n_samples, self.n_features = self.X.shape
        self.y = _readonly(check_labels(y, self.n_samples))
        self.classes, codes = np.unique(self.y, return_inverse=True)
        self.label_codes = _readonly(codes.astype(np.intp))
        if len(self.classes) < 2:
            raise ValueError(
                f"y has a single class ({self.classes[0].tolist()!r}); LMNN needs at least two "
                "classes, since impostors are points of another class."
            )
        self.mu = _check_mu(mu)
        # Every distance is computed on centred inputs: D_M is translation
        # invariant and centring keeps the Gram-matrix trick accurate.
        self._Xc = _readonly(self.X - self.X.mean(axis=0))
        if targets is None:
            self.k = _check_k(3 if k is None else k, self.label_codes, self.classes)
            self.targets = _readonly(nearest_same_class(self.X, self.label_codes, self.k))
        else:
            self.targets = _readonly(_check_targets(targets, self.label_codes, k))
            self.k = self.targets.shape[1]
        self._derived = {}  # what the inputs and targets define, computed once (``pull_matrix``, core.space)
        self._set_clusters(clusters)

    def _set_clusters(self, clusters) -> None:
        self._clusters = None if clusters is None else check_clusters(clusters, self.n_samples)
        self._owner = (_readonly(np.zeros(self.n_samples, np.intp)) if clusters is None
                       else self._clusters)
        self._pulls = weakref.WeakKeyDictionary()  # pull matrices per space (core.space)

    def __getstate__(self) -> dict:  # a pickle holds what defines the problem, not what it computed
        return {**self.__dict__, "_derived": {}, "_pulls": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._pulls = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        clusters = "" if self._clusters is None else f", clusters={self.n_clusters}"
        return (
            f"LMNNProblem(n={self.n_samples}, d={self.n_features}, k={self.k}, "
            f"mu={self.mu}, classes={len(self.classes)}, triplets={self.n_triplets}{clusters})"
        )

    @property
    def clusters(self) -> np.ndarray | None:
        """The cluster of each point for multi-metric LMNN (eq. 16), or None for LMNN.

        Returns
        -------
        ndarray of int of shape (n_samples,), or None
            Values ``0..C-1``, every cluster used; read-only.
        """
        return self._clusters

    @property
    def owner(self) -> np.ndarray:
        """The cluster of each point, whose metric measures distances to it (eq. 16).

        Returns
        -------
        ndarray of int of shape (n_samples,)
            ``clusters``, or zeros for LMNN (the case of one cluster); read-only.
        """
        return self._owner

    @property
    def n_clusters(self) -> int:
        """Number of metrics ``C`` of the problem: 1 for LMNN."""
        return 1 if self._clusters is None else int(self._clusters.max()) + 1

    def with_clusters(self, clusters) -> LMNNProblem:
        """The same problem with other clusters: the same arrays and targets.

        What the inputs and targets define (the data range and its coordinates,
        ``lmnn_sdp.core.space``) is shared with this problem; what the clusters define
        (the pull matrices per cluster) is computed anew.

        Parameters
        ----------
        clusters : array-like of int of shape (n_samples,), or None
            Cluster of each point (eq. 16), values ``0..C-1``, every cluster used;
            None for LMNN.

        Returns
        -------
        LMNNProblem
            A new problem; this one is unchanged.

        Raises
        ------
        ValueError
            ``clusters`` of the wrong shape, negative or with an unused index.
        TypeError
            Non-integer ``clusters``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> two = problem.with_clusters(np.arange(30) % 2)
        >>> two.n_clusters, two.targets is problem.targets
        (2, True)
        >>> two.with_clusters(None).clusters is None
        True
        """
        other = object.__new__(LMNNProblem)
        other.__dict__.update(self.__dict__)  # the same arrays and memo of what they define
        other._set_clusters(clusters)
        return other

    @property
    def X_centered(self) -> np.ndarray:
        """Inputs minus their mean, shape (n_samples, n_features).

        Every distance of the problem is computed on these: ``D_M`` is translation
        invariant and centring keeps the Gram-matrix evaluation accurate.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            Read-only.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> bool(np.allclose(problem.X_centered.mean(axis=0), 0.0))
        True
        """
        return self._Xc

    @property
    def n_triplets(self) -> int:
        """Number of triplets ``(i, j, l)`` in eq. 14.

        ``j`` runs over the ``k`` target neighbours of ``i`` and ``l`` over the points of
        another label, so the count is ``k * sum_i |{l: y_l != y_i}|``.

        Returns
        -------
        int
            ``k * sum_i |{l: y_l != y_i}|``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> problem.n_triplets  # 2 targets x 30 points x 20 points of other classes
        1200
        """
        counts = np.bincount(self.label_codes)
        return int(self.k * np.sum(self.n_samples - counts[self.label_codes]))

    # -- the objective ------------------------------------------------------
    # ``M`` is one metric (d, d), or with ``clusters`` (n,) one metric per cluster
    # (C, d, d) measuring distances *to* the points of that cluster (eq. 16):
    # ``D^(x_i, x_j) = (x_i - x_j)^T M_{c(j)} (x_i - x_j)``. LMNN is the case of one
    # cluster; every method below serves both.
    def objective(self, M, clusters=None) -> float:
        """The objective ``eps(M)`` of eq. 14, or of sec. 5.2 with ``clusters``.

        ``(1-mu) sum D(x_i, x_j) + mu sum [1 + D(x_i, x_j) - D(x_i, x_l)]_+`` over the
        target pairs and triplets, computed blockwise; the value of ``evaluate``.

        Parameters
        ----------
        M : array-like of shape (n_features, n_features), or (n_clusters, n_features, n_features)
            One metric, or with ``clusters`` one metric per cluster; the distance to
            ``x_j`` uses the metric of ``j``'s cluster (eq. 16). Not checked for PSD.
        clusters : array-like of int of shape (n_samples,), optional
            Other clusters than the problem's (as ``with_clusters``); by default the
            problem's own.

        Returns
        -------
        float
            ``eps(M)`` as computed in floating point.

        Raises
        ------
        ValueError
            ``M`` of the wrong shape or not finite; bad ``clusters``.
        TypeError
            Non-real ``M`` or non-integer ``clusters``.

        See Also
        --------
        evaluate : The same value with a bound on its rounding.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> round(problem.objective(np.eye(4)), 3)
        12.755
        >>> problem.objective(np.zeros((4, 4)))  # every margin is 1: mu * n_triplets
        600.0
        """
        return self.evaluate(M, clusters).value

    def evaluate(self, M, clusters=None, origin=None) -> ObjectiveValue:
        """The objective of eq. 14 (or of sec. 5.2) at ``M``, with a bound on its rounding.

        With clusters the target term uses ``M_{c(j)}`` and the impostor term ``M_{c(l)}``:
        ``(1-mu) sum D^(x_i, x_j) + mu sum [1 + D^(x_i, x_j) - D^(x_i, x_l)]_+``. Distances
        are computed on the inputs less ``origin``; another origin than the mean
        (``independent_origin``) gives a numerically independent evaluation.

        Parameters
        ----------
        M : array-like of shape (n_features, n_features), or (n_clusters, n_features, n_features)
            One metric, or with ``clusters`` one metric per cluster (eq. 16).
        clusters : array-like of int of shape (n_samples,), optional
            Other clusters than the problem's (as ``with_clusters``); by default the
            problem's own.
        origin : array-like of shape (n_features,), optional
            Subtracted from the inputs before distances are computed; the mean by default.

        Returns
        -------
        ObjectiveValue
            ``value`` (float) and ``rounding`` (float): ``|value - eps(M+)| <= rounding``
            for a PSD ``M+`` within rounding of ``M`` (``lmnn_sdp.core.rounding``).

        Raises
        ------
        ValueError
            ``M`` of the wrong shape or not finite; bad ``clusters``.
        TypeError
            Non-real ``M`` or non-integer ``clusters``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> result = problem.evaluate(np.eye(4))
        >>> round(result.value, 3)
        12.755
        >>> bool(0 < result.rounding < 1e-9)
        True
        >>> other = problem.evaluate(np.eye(4), origin=problem.independent_origin())
        >>> bool(abs(other.value - result.value) <= result.rounding + other.rounding)
        True
        """
        metrics, owner = self.metrics(M, clusters)
        Xo = self._Xc if origin is None else self.X - np.asarray(origin, dtype=float)
        sizes = _rounding_sizes(metrics, Xo)
        _, _, rho, sigma, tau = sizes
        target_d = self._target_distances(metrics, owner, Xo)
        c, rows = owner[self.targets], np.arange(self.n_samples)[:, None]
        target_err = rounding.distance_rounding(sigma[c, rows], sigma[c, self.targets], tau[c, rows],
                                                tau[c, self.targets], rho)
        coincide = np.all(Xo[:, None, :] == Xo[self.targets], axis=2)  # D = 0 exactly
        target_err = np.where(coincide, 0.0, target_err)
        hinge_err = target_err + 4 * rounding.EPS * (1.0 + np.abs(target_d))  # E_ij, (n, k)
        # a triplet (i, j, l) counts, or carries error, only if 1 + D_ij - D_il > -(E_ij + e_il):
        # D_il below the reach of i, with e_il bounded by the largest point sizes
        largest = _largest_sizes(sigma, tau, owner)
        e_max = rounding.distance_rounding(sigma.max(axis=0), largest[0], tau.max(axis=0), largest[1], rho)
        reach = 1.0 + (target_d + hinge_err).max(axis=1) + e_max
        push = push_err = 0.0
        n_terms = 0
        for i, l, D_il in self._impostor_pairs(metrics, owner, Xo, reach, sizes):
            c = owner[l]
            impostor_err = rounding.distance_rounding(sigma[c, i], sigma[c, l], tau[c, i], tau[c, l], rho)
            h = 1.0 + target_d[i] - D_il[:, None]  # (m, k)
            err = hinge_err[i] + impostor_err[:, None]
            positive = np.maximum(h, 0.0)
            push += float(np.sum(positive))
            push_err += float(np.sum(err[h > -err]))
            n_terms += np.count_nonzero(positive) + 1  # adding the zeros is exact; one partial sum
        pull = float(np.sum(target_d))
        pull_err = float(np.sum(target_err)) + rounding.summation(target_d.size, float(np.sum(np.abs(target_d))))
        push_err += rounding.summation(n_terms, push)
        value = (1.0 - self.mu) * pull + self.mu * push
        error = (1.0 - self.mu) * pull_err + self.mu * push_err + 4 * rounding.EPS * abs(value)
        return ObjectiveValue(value, 1.01 * error)

    def pull_vanishes(self) -> bool:
        """Whether every point coincides exactly with each of its target neighbours.

        Then the pull term of eq. 14 is 0 at every metric. Decided on the inputs as
        given, without rounding.

        Returns
        -------
        bool
            True when ``x_i == x_j`` for every target pair ``j ~> i``.

        Examples
        --------
        >>> from lmnn_sdp import LMNNProblem
        >>> X = [[0.0, 0.0], [0.0, 0.0], [1.0, 2.0], [1.0, 2.0]]
        >>> LMNNProblem(X, [0, 0, 1, 1], k=1).pull_vanishes()
        True
        >>> LMNNProblem([[0.0], [1.0], [5.0], [5.0]], [0, 0, 1, 1], k=1).pull_vanishes()
        False
        """
        return all(np.array_equal(self.X[column], self.X) for column in self.targets.T)  # one rank at a time

    def independent_origin(self) -> np.ndarray:
        """The coordinatewise median of the inputs, the origin of an independent evaluation.

        Distances computed on the inputs less this origin round differently from those
        at the mean (``evaluate``'s default), so the two evaluations check each other.

        Returns
        -------
        ndarray of shape (n_features,)
            The median of every column of ``X``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> problem.independent_origin().shape
        (4,)
        """
        return np.median(self.X, axis=0)

    def pull_matrix(self) -> np.ndarray:
        """The pull matrix ``P = sum_{i, j~>i} C_ij``, with ``C_ab = (x_a-x_b)(x_a-x_b)^T``.

        The pull term of eq. 14 is ``(1-mu) <P, M>``. Computed once and cached.

        Returns
        -------
        ndarray of shape (n_features, n_features)
            Symmetric PSD; read-only.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> P = problem.pull_matrix()
        >>> P.shape
        (4, 4)
        >>> bool(np.isclose(np.trace(P), problem.target_distances(np.eye(4)).sum()))
        True
        """
        if "pull" not in self._derived:
            V = self._Xc[np.repeat(np.arange(self.n_samples), self.k)] - self._Xc[self.targets.ravel()]
            self._derived["pull"] = _readonly(V.T @ V)
        return self._derived["pull"]

    def row_labels(self) -> np.ndarray:
        """Labels (n,) equal exactly for the points whose rows of ``X`` are equal (``-0.0``
        equal to ``0.0``), computed once per problem.

        Examples
        --------
        >>> import numpy as np
        >>> from lmnn_sdp import LMNNProblem
        >>> problem = LMNNProblem(np.array([[0.0], [1.0], [-0.0], [1.0]]), [0, 0, 1, 1], k=1)
        >>> problem.row_labels().tolist()
        [0, 1, 0, 1]
        """
        if "rows" not in self._derived:
            labels = np.unique(self.X + 0.0, axis=0, return_inverse=True)[1]
            self._derived["rows"] = _readonly(labels.reshape(-1).astype(np.intp))
        return self._derived["rows"]

    def target_distances(self, M, clusters=None) -> np.ndarray:
        """The distances ``D_M(x_i, x_j)`` of every point to its target neighbours.

        With ``clusters``, ``D^(x_i, x_j)`` of eq. 16, measured by ``M_{c(j)}``.

        Parameters
        ----------
        M : array-like of shape (n_features, n_features), or (n_clusters, n_features, n_features)
            One metric, or with ``clusters`` one metric per cluster.
        clusters : array-like of int of shape (n_samples,), optional
            Other clusters than the problem's (as ``with_clusters``); by default the
            problem's own.

        Returns
        -------
        ndarray of shape (n_samples, k)
            Entry ``[i, r]`` is the distance from ``x_i`` to ``x_{targets[i, r]}``.

        Raises
        ------
        ValueError
            ``M`` of the wrong shape or not finite; bad ``clusters``.
        TypeError
            Non-real ``M`` or non-integer ``clusters``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> problem.target_distances(np.eye(4)).shape
        (30, 2)
        """
        return self._target_distances(*self.metrics(M, clusters), self._Xc)

    def triplet_margins(self, M, triplets, clusters=None) -> np.ndarray:
        """The margins ``1 + D(x_i, x_j) - D(x_i, x_l)`` of given triplets (eq. 14).

        A triplet's hinge in eq. 14 is its margin's positive part. Computed from
        difference vectors (no Gram-matrix cancellation), in blocks.

        Parameters
        ----------
        M : array-like of shape (n_features, n_features), or (n_clusters, n_features, n_features)
            One metric, or with ``clusters`` one metric per cluster: ``D(x_i, x_j)`` is
            measured by ``M_{c(j)}`` and ``D(x_i, x_l)`` by ``M_{c(l)}`` (eq. 16).
        triplets : array-like of int of shape (n_triplets, 3)
            Rows ``(i, j, l)``; only the indices are checked, not that they form triplets
            of the problem.
        clusters : array-like of int of shape (n_samples,), optional
            Other clusters than the problem's (as ``with_clusters``); by default the
            problem's own.

        Returns
        -------
        ndarray of shape (n_triplets,)
            The margin of every row of ``triplets``; positive when the triplet is violated.

        Raises
        ------
        ValueError
            ``M`` of the wrong shape or not finite; ``triplets`` not of shape (T, 3) or
            out of range; bad ``clusters``.
        TypeError
            Non-real ``M``; non-integer ``triplets`` or ``clusters``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> margins = problem.triplet_margins(np.eye(4), problem.all_triplets())
        >>> margins.shape
        (1200,)
        >>> problem.triplet_margins(np.zeros((4, 4)), [[0, 8, 10]])
        array([1.])
        """
        metrics, owner = self.metrics(M, clusters)
        t = check_triplets(triplets, self.n_samples)
        Xc = self._Xc
        out = np.empty(len(t))
        for start in range(0, len(t), 65536):
            s = t[start:start + 65536]
            a = Xc[s[:, 0]] - Xc[s[:, 1]]
            b = Xc[s[:, 0]] - Xc[s[:, 2]]
            if len(metrics) == 1:
                margin = 1.0 + np.einsum("td,td->t", (a - b) @ metrics[0], a + b)
            else:
                margin = (1.0 + quadratic_forms(a, metrics, owner[s[:, 1]])
                          - quadratic_forms(b, metrics, owner[s[:, 2]]))
            out[start:start + 65536] = margin
        return out

    def active_triplets(self, M, band: float = 0.0, clusters=None) -> np.ndarray:
        """All triplets whose margin ``1 + D(x_i, x_j) - D(x_i, x_l)`` exceeds ``-band``.

        ``band = 0`` gives the violated (active) triplets of eq. 14, whose hinge is
        positive; a positive band adds the triplets within ``band`` below the margin.
        This is the one exact triplet search of the reference side; it runs blockwise
        over all points, never forming every triplet.

        Parameters
        ----------
        M : array-like of shape (n_features, n_features), or (n_clusters, n_features, n_features)
            One metric, or with ``clusters`` one metric per cluster (eq. 16).
        band : float, default=0.0
            Finite and at least 0.
        clusters : array-like of int of shape (n_samples,), optional
            Other clusters than the problem's (as ``with_clusters``); by default the
            problem's own.

        Returns
        -------
        ndarray of int of shape (n_found, 3)
            Rows ``(i, j, l)``, ordered by ``i``.

        Raises
        ------
        ValueError
            ``band`` negative or not finite; ``M`` of the wrong shape or not finite; bad
            ``clusters``.
        TypeError
            Non-real ``M`` or non-integer ``clusters``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> found = problem.active_triplets(np.eye(4), band=0.5)
        >>> found.shape[1]
        3
        >>> bool(np.all(problem.triplet_margins(np.eye(4), found) > -0.5 - 1e-9))
        True
        >>> len(problem.active_triplets(np.zeros((4, 4)))) == problem.n_triplets
        True
        """
        band = float(band)
        if not np.isfinite(band) or band < 0:
            raise ValueError(f"band must be a finite number >= 0, got {band}.")
        metrics, owner = self.metrics(M, clusters)
        found = [np.empty((0, 3), dtype=np.intp)]
        target_d = self._target_distances(metrics, owner, self._Xc)
        reach = 1.0 + band + target_d.max(axis=1)
        for i, l, D_il in self._impostor_pairs(metrics, owner, self._Xc, reach,
                                               _rounding_sizes(metrics, self._Xc)):
            m, r = np.nonzero(1.0 + target_d[i] - D_il[:, None] > -band)
            found.append(np.column_stack([i[m], r, l[m]]))
        i, r, l = np.concatenate(found).T
        order = np.lexsort((l, r, i))
        return np.column_stack([i, self.targets[i, r], l])[order].astype(np.intp)

    def all_triplets(self, max_triplets: int = 5_000_000) -> np.ndarray:
        """Every triplet ``(i, j, l)`` of eq. 14: ``j ~> i`` a target neighbour, ``y_l != y_i``.

        Parameters
        ----------
        max_triplets : int, default=5_000_000
            The largest number of triplets to form.

        Returns
        -------
        ndarray of int of shape (n_triplets, 3)
            Ordered by ``i``, then the rank of ``j`` among the targets of ``i``, then ``l``.

        Raises
        ------
        ValueError
            The problem has more than ``max_triplets`` triplets.

        See Also
        --------
        active_triplets : The triplets near or above the margin only.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> problem.all_triplets().shape
        (1200, 3)
        >>> problem.all_triplets()[0]
        array([ 0,  8, 10])
        """
        if self.n_triplets > max_triplets:
            raise ValueError(
                f"the problem has {self.n_triplets} triplets, more than "
                f"max_triplets={max_triplets}; raise max_triplets or use "
                "active_triplets / constraint generation instead."
            )
        codes = self.label_codes
        rows = []
        for i in range(self.n_samples):
            others = np.flatnonzero(codes != codes[i])
            for j in self.targets[i]:
                rows.append(np.column_stack([np.full(len(others), i), np.full(len(others), j), others]))
        return np.concatenate(rows).astype(np.intp)

    def metrics(self, M, clusters=None) -> tuple[np.ndarray, np.ndarray]:
        """The metric(s) ``M`` checked and stacked, with the cluster of each point.

        For LMNN, ``M`` is one metric (or a stack of one) and every point is in cluster 0;
        with clusters, ``M`` holds one metric per cluster (eq. 16).

        Parameters
        ----------
        M : array-like of shape (n_features, n_features), or (n_clusters, n_features, n_features)
            One metric, or with ``clusters`` one metric per cluster. Not checked for PSD.
        clusters : array-like of int of shape (n_samples,), optional
            Other clusters than the problem's (as ``with_clusters``); by default the
            problem's own.

        Returns
        -------
        metrics : ndarray of shape (n_clusters, n_features, n_features)
            Float copies; ``n_clusters`` is 1 without ``clusters``.
        owner : ndarray of int of shape (n_samples,)
            The cluster of each point.

        Raises
        ------
        ValueError
            ``M`` of the wrong shape or not finite; bad ``clusters``.
        TypeError
            Non-real ``M`` or non-integer ``clusters``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.datasets import load_iris
        >>> from lmnn_sdp import LMNNProblem
        >>> X, y = load_iris(return_X_y=True)
        >>> problem = LMNNProblem(X[::5], y[::5], k=2)
        >>> metrics, owner = problem.metrics(np.eye(4))
        >>> metrics.shape, owner.shape
        ((1, 4, 4), (30,))
        >>> metrics, owner = problem.metrics(np.stack([np.eye(4)] * 3), problem.label_codes)
        >>> metrics.shape
        (3, 4, 4)
        """
        problem = self if clusters is None else self.with_clusters(clusters)
        M = np.asarray(M)
        if problem.clusters is None and not (M.ndim == 3 and len(M) == 1):
            return self.check_metric(M)[None], problem.owner
        C = problem.n_clusters
        if M.ndim != 3 or len(M) != C:
            raise ValueError(f"metrics must have shape (n_clusters, d, d) = ({C}, {self.n_features}, "
                             f"{self.n_features}), got {M.shape}: one metric per cluster (eq. 16).")
        return np.stack([self.check_metric(m) for m in M]), problem.owner

    # -- internals ------------------------------------------------------------
    def check_metric(self, M) -> np.ndarray:
        """``M`` as a float array of shape (n_features, n_features) with finite entries.

        Symmetry and PSD-ness are not checked here (``lmnn_sdp.certify`` checks them).

        Parameters
        ----------
        M : array-like of shape (n_features, n_features)
            A candidate metric.

        Returns
        -------
        ndarray of shape (n_features, n_features)
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
        d = self.n_features
        if M.shape != (d, d):
            raise ValueError(f"M must have shape ({d}, {d}) for this problem, got {M.shape}.")
        if not np.all(np.isfinite(M)):
            raise ValueError("M contains NaN or infinity.")
        return M

    def _target_distances(self, metrics: np.ndarray, owner: np.ndarray, Xo: np.ndarray) -> np.ndarray:
        V = (Xo[:, None, :] - Xo[self.targets]).reshape(-1, self.n_features)
        return quadratic_forms(V, metrics, owner[self.targets].ravel()).reshape(self.targets.shape)

    def _impostor_pairs(self, metrics: np.ndarray, owner: np.ndarray, Xo: np.ndarray, reach: np.ndarray,
                        sizes: tuple) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Yield ``(i, l, D_il)``, together every pair with ``y_l != y_i`` and computed
        ``D(x_i, x_l) < reach[i]``, each once; ``D`` measured by ``M_{c(l)}`` (eq. 16) on
        ``Xo`` (n, d), the inputs less an origin, ``reach`` (n,); ``sizes`` are
        ``_rounding_sizes(metrics, Xo)``.

        One metric at a time (its coordinates alone in memory), one class of rows against its
        points of the other classes, in tiles of as many columns as ``PANEL_BYTES`` of factors
        and as many rows as ``BLOCK_BYTES`` of distances allow. First a lower bound: float32 distances between the principal
        coordinates of each metric (``lmnn_sdp.core.principal.metric_coordinates``), which err
        by at most ``(h + 4) 2^-24 * 2 (|w_a|^2 + |w_b|^2)`` (Higham sec. 3.1), against
        ``reach`` raised by that with a factor 2 of margin and by the allowances of the bound
        (with the largest point sizes of the other side). Only the pairs below are measured,
        by the Gram identity ``x_i^T M x_i + x_l^T M x_l - 2 x_i^T M x_l`` in float64, one inner
        product a pair; the rounding bound of ``lmnn_sdp.core.rounding`` holds for any order of
        summation. With one metric ``D`` is symmetric: a class meets only the classes after
        it, and each product serves both ``(i, l)`` and ``(l, i)``."""
        symmetric = len(metrics) == 1
        s, _, rho, sigma, tau = sizes
        for c, M in enumerate(metrics):  # one metric's coordinates in memory at a time
            sq, cross = np.einsum("nd,nd->n", Xo @ M, Xo), -2.0 * M  # x^T M_c x; the columns are c's
            coords = metric_coordinates(M, s[c], Xo, sigma[c])
            rows_aug, cols_aug = gram_factors(coords.W, coords.norms)
            unit = 4.0 * (coords.W.shape[1] + 4) * 2.0**-24

            def threshold(points, others, c=c, coords=coords, unit=unit):
                """float32 thresholds of ``points`` against any of ``others`` in metric ``c``."""
                size = sigma[c, points] + sigma[c, others].max()
                e = rho * size**2 + (tau[c, points] + tau[c, others].max()) ** 2
                room = np.sqrt(np.maximum((1 + 1e-10) * (reach[points] + coords.kappa * size**2 + e), 0.0))
                bound = (room + coords.error[points] + coords.error[others].max()) ** 2 * coords.scale
                bound += unit * (coords.norms[points] + coords.norms[others].max()) + 1e-40
                return float32_above(bound * (1 + 1e-12))

            for a in range(self.label_codes.max() + 1):
                members = np.flatnonzero(self.label_codes == a)
                cols = np.flatnonzero((self.label_codes > a if symmetric else self.label_codes != a) & (owner == c))
                if len(members) == 0 or len(cols) == 0:
                    continue
                forward = threshold(members, cols)[:, None]
                for start, first, v, flags in float32_tiles(rows_aug[members], cols_aug[cols], BLOCK_BYTES,
                                                            PANEL_BYTES):
                    rows, tile = members[start:start + len(v)], cols[first:first + v.shape[1]]
                    if first == 0:  # a new block of rows
                        left = Xo[rows] @ cross
                        back = threshold(cols, rows)[None, :] if symmetric else None
                    b, m = below(v, forward[start:start + len(v)], flags)
                    D = _gram_distances(sq[rows[b]] + sq[tile[m]], left, b, Xo, tile[m])
                    keep = D < reach[rows[b]]
                    yield rows[b[keep]], tile[m[keep]], D[keep]
                    if symmetric:
                        b, m = below(v, back[:, first:first + len(tile)], flags)
                        D = _gram_distances(sq[rows[b]] + sq[tile[m]], left, b, Xo, tile[m])
                        keep = D < reach[tile[m]]
                        yield tile[m[keep]], rows[b[keep]], D[keep]


def _gram_distances(squares: np.ndarray, left: np.ndarray, b: np.ndarray, Xo: np.ndarray,
                    m: np.ndarray) -> np.ndarray:
    """``squares + left[b_p] . Xo[m_p]`` for each pair ``p``: the Gram identity's distances of
    ``_impostor_pairs``, ``left`` (B, d) the rows' ``-2 x^T M``. In chunks whose gathered rows
    fit in ``BLOCK_BYTES``: a tile's candidates may be most of its pairs (several metrics early
    in a solve), and all their rows at once would take ``2 d`` times the tile's memory."""
    chunk = max(1, BLOCK_BYTES // (8 * max(Xo.shape[1], 1)))
    out = np.empty(len(squares))
    for start in range(0, len(squares), chunk):
        part = slice(start, start + chunk)
        out[part] = squares[part] + np.einsum("pd,pd->p", left[b[part]], Xo[m[part]])
    return out


def _rounding_sizes(metrics: np.ndarray, Xo: np.ndarray) -> tuple:
    """``(s, t, rho, sigma, tau)`` of ``lmnn_sdp.core.rounding`` for ``metrics`` (C, d, d) and the
    inputs less an origin ``Xo`` (n, d): ``s``, ``t`` (C, d), ``sigma``, ``tau`` (C, n)."""
    s, t, rho = rounding.metric_scales(metrics)
    return s, t, rho, rounding.point_sizes(Xo, s), rounding.point_sizes(Xo, t)


def _largest_sizes(sigma: np.ndarray, tau: np.ndarray, owner: np.ndarray) -> tuple[float, float]:
    """The largest ``sigma`` and ``tau`` of a point ``l`` in its own cluster's metric: with any
    row's largest size they bound ``e_il`` (``distance_rounding`` grows with each size)."""
    every = np.arange(sigma.shape[1])
    return float(sigma[owner, every].max()), float(tau[owner, every].max())


def nearest_same_class(X: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` nearest same-class points of each point, shape (n, k).

    Euclidean distance, ties broken by the smaller index. Candidates come from
    the Gram-matrix distances with a small slack; their order is then decided on
    exact sums of squared differences."""
    n = len(X)
    targets = np.empty((n, k), dtype=np.intp)
    Xc = X - X.mean(axis=0)
    sq = np.einsum("nd,nd->n", Xc, Xc)
    for c in np.unique(codes):
        members = np.flatnonzero(codes == c)
        block = max(1, BLOCK_BYTES // (8 * len(members)))
        for start in range(0, len(members), block):
            rows = members[start:start + block]
            D = sq[rows, None] + sq[None, members] - 2.0 * (Xc[rows] @ Xc[members].T)
            D[np.arange(len(rows)), np.arange(start, start + len(rows))] = np.inf
            kth = np.partition(D, k - 1, axis=1)[:, k - 1]
            slack = 1e-9 * (sq[rows] + sq[members].max()) + 1e-300
            r, m = np.nonzero(D <= (kth + slack)[:, None])
            m = members[m]
            keep = m != rows[r]
            r, m = r[keep], m[keep]
            exact = np.sum((X[rows[r]] - X[m]) ** 2, axis=1)
            order = np.lexsort((m, exact, r))
            r, m = r[order], m[order]
            rank = np.arange(len(r)) - np.searchsorted(r, r)
            take = rank < k
            targets[rows[r[take]], rank[take]] = m[take]
    return targets



def quadratic_forms(V: np.ndarray, metrics: np.ndarray, which: np.ndarray) -> np.ndarray:
    """``v_p^T M_{which[p]} v_p`` for the rows of ``V`` (P, d); shape (P,)."""
    if len(metrics) == 1:
        return np.einsum("pd,pd->p", V @ metrics[0], V)
    out = np.empty(len(V))
    for c, M in enumerate(metrics):
        mask = which == c
        out[mask] = np.einsum("pd,pd->p", V[mask] @ M, V[mask])
    return out


def distance_matrix(X, metrics, clusters) -> np.ndarray:
    """All cluster-dependent distances ``D^(x_a, x_b)`` of eq. 16, shape (n, n).

    Not symmetric: column ``b`` uses ``M_{clusters[b]}``. ``X`` (n, d), ``metrics``
    (C, d, d), ``clusters`` (n,). Exact differences, O(n^2 d) memory: for small data."""
    X = check_inputs(X)
    out = np.empty((len(X), len(X)))
    for c, M in enumerate(np.asarray(metrics, dtype=float)):
        cols = np.flatnonzero(np.asarray(clusters) == c)
        V = X[:, None, :] - X[None, cols, :]
        out[:, cols] = np.einsum("abd,de,abe->ab", V, M, V)
    return out


def leave_one_out_error(X, y, metrics, clusters) -> float:
    """Leave-one-out 1-NN error with the distance of eq. 16 (the measure of Fig. 7).

    Each point takes the label of the other point ``j`` nearest to it under
    ``M_{c(j)}``; ties go to the smaller index. Returns the fraction misclassified."""
    D = distance_matrix(X, metrics, clusters)
    np.fill_diagonal(D, np.inf)
    y = np.asarray(y)
    return float(np.mean(y[np.argmin(D, axis=1)] != y))

# -- validation ---------------------------------------------------------------
def _readonly(a: np.ndarray) -> np.ndarray:
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


def _check_mu(mu) -> float:
    if isinstance(mu, bool) or not isinstance(mu, Real):
        raise TypeError(f"mu must be a real number in [0, 1], got {mu!r}.")
    if not 0.0 <= float(mu) <= 1.0:
        raise ValueError(f"mu must lie in [0, 1] (weight of the push term), got {mu}.")
    return float(mu)


def _check_k(k, codes: np.ndarray, classes: np.ndarray) -> int:
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


def _check_targets(targets, codes: np.ndarray, k) -> np.ndarray:
    t = np.asarray(targets)
    n = len(codes)
    if t.ndim != 2 or t.shape[0] != n or t.shape[1] == 0:
        raise ValueError(f"targets must have shape (n_samples, k) = ({n}, k>=1), got {t.shape}.")
    _check_index_dtype(t, "targets")
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
    _check_index_dtype(t, "triplets")
    if len(t) and (t.min() < 0 or t.max() >= n):
        raise ValueError(f"triplet indices must lie in [0, {n - 1}].")
    return t.astype(np.intp)


def triplet_keys(triplets: np.ndarray, n: int) -> np.ndarray:
    """One int64 per row ``(i, j, l)`` of ``triplets`` (T, 3) over ``n`` points, equal only for
    equal rows: ``(i n + j) n + l``."""
    t = triplets.astype(np.int64)
    return (t[:, 0] * n + t[:, 1]) * n + t[:, 2]


def _check_index_dtype(t: np.ndarray, name: str) -> None:
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
    return _readonly(c.astype(np.intp))
