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
from dataclasses import dataclass

import numpy as np

from lmnn_sdp.core import rounding
from lmnn_sdp.core.checks import (
    check_clusters,
    check_inputs,
    check_k,
    check_labels,
    check_metric,
    check_mu,
    check_targets,
    check_triplets,
    readonly,
)
from lmnn_sdp.core.distances import quadratic_forms
from lmnn_sdp.core.pair_search import impostor_pairs, largest_sizes, nearest_same_class, rounding_sizes


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
        self.X = readonly(check_inputs(X))
        self.n_samples, self.n_features = self.X.shape
        self.y = readonly(check_labels(y, self.n_samples))
        self.classes, codes = np.unique(self.y, return_inverse=True)
        self.label_codes = readonly(codes.astype(np.intp))
        if len(self.classes) < 2:
            raise ValueError(
                f"y has a single class ({self.classes[0].tolist()!r}); LMNN needs at least two "
                "classes, since impostors are points of another class."
            )
        self.mu = check_mu(mu)
        # Every distance is computed on centred inputs: D_M is translation
        # invariant and centring keeps the Gram-matrix trick accurate.
        self._Xc = readonly(self.X - self.X.mean(axis=0))
        if targets is None:
            self.k = check_k(3 if k is None else k, self.label_codes, self.classes)
            self.targets = readonly(nearest_same_class(self.X, self.label_codes, self.k))
        else:
            self.targets = readonly(check_targets(targets, self.label_codes, k))
            self.k = self.targets.shape[1]
        self._derived = {}  # what the inputs and targets define, computed once (``pull_matrix``, core.space)
        self._set_clusters(clusters)

    def _set_clusters(self, clusters) -> None:
        self._clusters = None if clusters is None else check_clusters(clusters, self.n_samples)
        self._owner = (readonly(np.zeros(self.n_samples, np.intp)) if clusters is None
                       else self._clusters)
        self._pulls = weakref.WeakKeyDictionary()  # pull matrices per space (core.space)

    def computed_once(self, key, compute):
        """``compute()``, computed at the first call with this ``key`` and kept with the problem.

        A ``key`` of ``str`` or a function is kept for the problem and its ``with_clusters``
        copies, so ``compute`` must depend on the inputs and targets alone (``pull_matrix``,
        ``core.space.data_range``); any other ``key`` (a ``core.space.ReducedSpace``) is kept while
        the key lives and for these clusters only (``core.space.pull_matrices``). Neither is
        pickled."""
        kept = self._derived if isinstance(key, str) or callable(key) else self._pulls
        if key not in kept:
            kept[key] = compute()
        return kept[key]

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
        sizes = rounding_sizes(metrics, Xo)
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
        largest = largest_sizes(sigma, tau, owner)
        e_max = rounding.distance_rounding(sigma.max(axis=0), largest[0], tau.max(axis=0), largest[1], rho)
        reach = 1.0 + (target_d + hinge_err).max(axis=1) + e_max
        push = push_err = 0.0
        n_terms = 0
        for i, l, D_il in impostor_pairs(self.label_codes, metrics, owner, Xo, reach, sizes):
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
        def compute():
            V = self._Xc[np.repeat(np.arange(self.n_samples), self.k)] - self._Xc[self.targets.ravel()]
            return readonly(V.T @ V)
        return self.computed_once("pull", compute)

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
            self._derived["rows"] = readonly(labels.reshape(-1).astype(np.intp))
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
        for i, l, D_il in impostor_pairs(self.label_codes, metrics, owner, self._Xc, reach,
                                              rounding_sizes(metrics, self._Xc)):
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
        """``M`` as a float array of shape (n_features, n_features) with finite entries:
        ``lmnn_sdp.core.checks.check_metric`` for this problem's ``n_features``."""
        return check_metric(M, self.n_features)

    def _target_distances(self, metrics: np.ndarray, owner: np.ndarray, Xo: np.ndarray) -> np.ndarray:
        V = (Xo[:, None, :] - Xo[self.targets]).reshape(-1, self.n_features)
        return quadratic_forms(V, metrics, owner[self.targets].ravel()).reshape(self.targets.shape)
