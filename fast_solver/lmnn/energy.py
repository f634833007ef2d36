"""Energy-based classification (Weinberger & Saul, JMLR 2009, sec. 3.5, eq. 15).

A test point ``x_t`` is tried as an extra training point under every label ``c``;
its energy is the part of eq. 14 it adds, with the learned metric held fixed:

    E(t, c) = (1-mu) sum_{j in N_c(t)} D(t, j)
            + mu sum_{j in N_c(t)} sum_{l: y_l != c} [1 + D(t, j) - D(t, l)]_+
            + mu sum_{i: y_i != c} sum_{j ~> i} [1 + D(i, j) - D(i, t)]_+

``N_c(t)`` are the ``k`` training points of class ``c`` nearest to ``x_t`` by
Euclidean distance (ties to the smaller index), ``j ~> i`` the fixed training
targets. With several metrics (sec. 5.2, eq. 16) the distance to a point is
measured with the metric of that point's cluster. The prediction is the label of
least energy.

Two choices of sec. 3.5 are parameters: ``test_targets="metric"`` takes ``N_c(t)`` by
the learned distances instead ("or other a priori considerations"), and
``test_margin`` replaces the 1 in the second term (the test point's own perimeter).
The authors' MATLAB ``energyclassify`` uses ``"metric"`` and margin 0 there (it adds
the unit margin to the training radii but not to the test point's).

Every impostor counts (no sampling). The work runs on tiles of test points by
training points within ``BLOCK_BYTES``; the second term comes from per-test-point
histograms of the impostor distances against the sorted radii ``test_margin + D(t, j)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np
from threadpoolctl import threadpool_limits

from lmnn_sdp.core.checks import check_inputs
from lmnn_sdp.core.distances import quadratic_forms
from lmnn_sdp.core.loops import compiled, count_below, in_row_blocks
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import psd_factor

BLOCK_BYTES = 64 * 2**20  # memory of one block of tiles: larger than the 8 MiB of the searches, as
# the tiles' work pays for memory traffic (design note "Block sizes": letters 0.70 s at 64, 0.84 s at 8)
TILES = 4  # distance tiles (and temporaries) of one block alive at once
TEST_TARGETS = ("euclidean", "metric")  # how N_c(t) is chosen


def energies(X, y, targets, mu, metrics, X_test, *, clusters=None, test_clusters=None,
             test_targets="euclidean", test_margin=1.0) -> np.ndarray:
    """Return the energy of each test point under each label (eq. 15).

    Implements the energy-based classification of Weinberger & Saul (JMLR 2009,
    sec. 3.5, eq. 15) with a fixed learned metric, or one metric per cluster
    (sec. 5.2, eq. 16): the LMNN loss (eq. 14) that each test point adds when it
    joins the training set under that label (module docstring).

    Parameters
    ----------
    X : array-like of shape (n, d)
        The training inputs.
    y : array-like of shape (n,)
        The training labels.
    targets : array of int, shape (n, k)
        The training target neighbours; ``k`` is also the size of ``N_c(t)``.
    mu : float in [0, 1]
        Weight of the hinge terms; the pull term has ``1 - mu``.
    metrics : array of shape (d, d), or (C, d, d) with ``clusters``
        The learned metric, or one metric per cluster (eq. 16).
    X_test : array-like of shape (m, d)
        The test inputs.
    clusters : array of int, shape (n,), optional
        The cluster of each training point (metric ``M_{clusters[b]}`` measures
        distances to point ``b``).
    test_clusters : array of int, shape (m,), optional
        The cluster of each test point (for the third term). Without it the
        clusters must be the classes, and the test point's cluster is its
        hypothetical label.
    test_targets : {"euclidean", "metric"}, default="euclidean"
        ``N_c(t)`` by Euclidean distance (eq. 15) or by the learned distances.
    test_margin : float >= 0, default=1.0
        The margin of the test point's own perimeter (the second term).

    Returns
    -------
    E : ndarray of shape (m, n_classes)
        ``E(t, c)``, classes ordered as ``np.unique(y)``; the prediction of eq. 15 is
        the label of least energy.

    See Also
    --------
    EnergyClassifier : The scikit-learn classifier over a metric learner.

    Examples
    --------
    Two classes five units apart, one target each, the Euclidean metric:

    >>> import numpy as np
    >>> from fast_solver import energies
    >>> X = np.array([[0., 0], [0, 1], [0, 2], [5, 0], [5, 1], [5, 2]])
    >>> y = np.array([0, 0, 0, 1, 1, 1])
    >>> targets = np.array([[1], [0], [1], [4], [3], [4]])
    >>> energies(X, y, targets, 0.5, np.eye(2), np.array([[0, 1.5], [5, 1.5]]))
    array([[ 0.125, 52.375],
           [52.375,  0.125]])
    """
    model = EnergyModel.build(X, y, targets, mu, metrics, clusters=clusters,
                              test_targets=test_targets, test_margin=test_margin)
    return model.energies(X_test, test_clusters=test_clusters)


@dataclass(frozen=True)
class EnergyModel:
    """The training side of eq. 15, built once and applied to many test blocks.

    ``metrics`` (C, d, d) are symmetrised; ``clusters`` (n,) is all zeros for one
    metric; ``radii`` (n, k) are ``1 + D(i, j)`` of the training targets and
    ``self_products`` (C, n) are ``x_b^T M_g x_b`` on the centred inputs;
    ``test_targets`` and ``test_margin`` as in ``energies``."""

    problem: LMNNProblem
    metrics: np.ndarray
    clusters: np.ndarray
    radii: np.ndarray
    self_products: np.ndarray
    test_targets: str = "euclidean"
    test_margin: float = 1.0

    @classmethod
    def build(cls, X, y, targets, mu, metrics, clusters=None, **rule) -> EnergyModel:
        """Check the training side (as ``LMNNProblem`` does) and precompute it; ``rule``:
        ``test_targets``, ``test_margin``."""
        return cls.from_problem(LMNNProblem(X, y, mu=mu, targets=targets), metrics, clusters, **rule)

    @classmethod
    def from_problem(cls, problem: LMNNProblem, metrics, clusters=None, *,
                     test_targets="euclidean", test_margin=1.0) -> EnergyModel:
        """The training side of ``problem`` (its data, targets and mu) under ``metrics``."""
        if test_targets not in TEST_TARGETS:
            raise ValueError(f"test_targets must be one of {TEST_TARGETS}, got {test_targets!r}.")
        if (isinstance(test_margin, bool) or not isinstance(test_margin, Real)
                or not 0 <= test_margin < np.inf):
            raise ValueError(f"test_margin must be a finite number >= 0, got {test_margin!r}.")
        M = np.asarray(metrics)
        if clusters is None and M.ndim == 3:
            if len(M) != 1:
                raise ValueError(f"metrics has shape {M.shape}, one metric per cluster, but no "
                                 "clusters were given; pass clusters (n,) (eq. 16).")
            M = M[0]
        elif clusters is not None and M.ndim == 2:
            M = M[None]
        metrics, owner = problem.metrics(M, clusters)
        metrics = (metrics + metrics.transpose(0, 2, 1)) / 2.0
        Xc = problem.X_centered
        return cls(problem=problem, metrics=metrics, clusters=owner,
                   radii=1.0 + problem.target_distances(M, clusters),
                   self_products=np.einsum("nd,cde,ne->cn", Xc, metrics, Xc),
                   test_targets=test_targets, test_margin=float(test_margin))

    @property
    def class_clusters(self) -> bool:
        """Whether the clusters are the classes (sec. 5.2's choice)."""
        return len(self.metrics) > 1 and np.array_equal(self.clusters, self.problem.label_codes)

    def energies(self, X_test, test_clusters=None) -> np.ndarray:
        """E(t, c) of eq. 15 for the rows of ``X_test`` (m, d); shape (m, n_classes)."""
        T = self._check_test(X_test)
        metric_of = self._impostor_metrics(len(T), test_clusters)
        p = self.problem
        K = len(p.classes)  # per test row: K k (d + 5) for targets and radii, K (C + K) for term 3
        per_row = K * p.k * (p.n_features + 5) + K * (len(self.metrics) + K)
        if self.test_targets == "metric":  # candidates of every cluster and their differences
            per_row += K * p.k * len(self.metrics) * (p.n_features + 3)
        rows, cols = block_shape(len(T), p.n_samples, per_row)
        out = np.empty((len(T), len(p.classes)))
        with threadpool_limits(1, user_api="blas"):  # numba's threads, not BLAS's, use the cores
            for start in range(0, len(T), rows):
                block = slice(start, start + rows)
                out[block] = self._block_energies(T[block], metric_of[block], cols)
        return out

    def _block_energies(self, T: np.ndarray, metric_of: np.ndarray, cols: int) -> np.ndarray:
        """Eq. 15 for a block of test points ``T`` (b, d); ``metric_of`` (b, K) is the metric
        measuring ``D(i, t)`` under each label; training points in chunks of ``cols``."""
        p, b = self.problem, len(T)
        _, target_d = self._test_targets(T)  # (b, K, k)
        radii = self.test_margin + target_d
        order = np.argsort(radii.reshape(b, -1), axis=1)
        sorted_radii = np.ascontiguousarray(np.take_along_axis(radii.reshape(b, -1), order, 1))
        count, total = np.zeros_like(sorted_radii), np.zeros_like(sorted_radii)
        own = np.zeros_like(radii)
        invaded = np.zeros((len(self.metrics), b, len(p.classes)))
        Tc = T - p.X.mean(axis=0)
        products = np.einsum("bd,cde,be->cb", Tc, self.metrics, Tc)
        for start in range(0, p.n_samples, cols):
            chunk = slice(start, start + cols)
            D = self._distances(Tc, products, chunk)
            impostor_sums(D, p.label_codes[chunk], radii, sorted_radii, count, total, own)
            for g in np.unique(metric_of):
                users = np.flatnonzero((metric_of == g).any(axis=1))
                Dg = D if len(self.metrics) == 1 else self._distances(Tc[users], products[:, users],
                                                                    chunk, metric=g)
                sums = np.zeros((len(users), len(p.classes)))
                invasion_sums(Dg, self.radii[chunk], p.label_codes[chunk], sums)
                invaded[g, users] += sums
        inside = np.empty_like(sorted_radii)
        np.put_along_axis(inside, order, np.cumsum(count, 1) * sorted_radii - np.cumsum(total, 1), 1)
        impostors = (inside.reshape(radii.shape) - own).sum(axis=2)
        chosen = invaded[metric_of, np.arange(b)[:, None]]  # (b, K, K): [t, c] by metric_of[t, c]
        invasions = chosen.sum(axis=2) - np.diagonal(chosen, axis1=1, axis2=2)
        return (1.0 - p.mu) * target_d.sum(axis=2) + p.mu * (impostors + invasions)

    def _test_targets(self, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``N_c(t)``: indices (b, K, k) of the ``k`` training points of each class nearest to
        each row of ``T`` (b, d), ties to the smaller index, and their ``D(t, j)`` (b, K, k);
        Euclidean, or with ``"metric"`` by ``D(t, j)`` under ``M_{c(j)}``, searched cluster by
        cluster in the space ``L_g x``."""
        p = self.problem
        K = len(p.classes)
        if self.test_targets == "euclidean":
            near = nearest_per_class(T, p.X, p.label_codes, K, p.k)
            return near, self._target_distances(T, near)
        found = []
        for g in np.unique(self.clusters):
            members = np.flatnonzero(self.clusters == g)
            L = psd_factor(self.metrics[g])
            near = nearest_per_class(T @ L.T, p.X[members] @ L.T, p.label_codes[members], K, p.k)
            found.append(np.where(near >= 0, members[near], -1))  # -1: fewer than k in cluster g
        candidates = np.concatenate(found, axis=2)
        distances = self._target_distances(T, np.maximum(candidates, 0))
        distances[candidates < 0] = np.inf
        order = np.lexsort((candidates, distances))[..., :p.k]
        return (np.take_along_axis(candidates, order, axis=2),
                np.take_along_axis(distances, order, axis=2))

    def _target_distances(self, T: np.ndarray, near: np.ndarray) -> np.ndarray:
        """``D(t, j)`` (b, K, k) for ``j = near[t, c, r]`` with ``M_{c(j)}``, from differences."""
        V = (T[:, None, None, :] - self.problem.X[near]).reshape(-1, T.shape[1])
        return quadratic_forms(V, self.metrics, self.clusters[near].ravel()).reshape(near.shape)

    def _distances(self, Tc, products, chunk: slice, metric=None) -> np.ndarray:
        """``D(t, b)`` (rows of ``Tc``, training points ``chunk``) by the Gram identity on
        centred inputs; column ``b`` uses ``M_{c(b)}`` (eq. 16), or ``M_metric`` when given."""
        Xc = self.problem.X_centered[chunk]
        owner = self.clusters[chunk]
        groups = [metric] if metric is not None else np.unique(owner)
        D = None if len(groups) == 1 else np.empty((len(Tc), len(Xc)))
        for g in groups:
            cols = slice(None) if D is None else np.flatnonzero(owner == g)
            part = (Tc @ self.metrics[g]) @ Xc[cols].T
            part *= -2.0
            part += products[g, :, None]
            part += self.self_products[g, chunk][cols]
            if D is None:
                return part
            D[:, cols] = part
        return D

    def _check_test(self, X_test) -> np.ndarray:
        T = check_inputs(X_test)
        d = self.problem.n_features
        if T.shape[1] != d:
            raise ValueError(f"X_test has {T.shape[1]} features but the training data has {d}.")
        return T

    def _impostor_metrics(self, m: int, test_clusters) -> np.ndarray:
        """The metric index measuring ``D(i, t)`` for each test point and label, (m, K)."""
        K, C = len(self.problem.classes), len(self.metrics)
        if test_clusters is not None:
            return np.repeat(check_test_clusters(test_clusters, m, C)[:, None], K, axis=1)
        if C == 1:
            return np.zeros((m, K), np.intp)
        if not self.class_clusters:
            raise ValueError("the clusters are not the classes, so a test point's cluster is "
                             "not its label; pass test_clusters (m,), the cluster of each test "
                             "point (e.g. its nearest cluster centre).")
        return np.tile(np.arange(K), (m, 1))


def check_test_clusters(test_clusters, m: int, n_clusters: int) -> np.ndarray:
    """``test_clusters`` as intp (m,) in ``0..n_clusters-1``, or an error naming the fix."""
    c = np.asarray(test_clusters)
    if c.ndim != 1 or len(c) != m:
        raise ValueError(f"test_clusters must have shape (n_test,) = ({m},), got {c.shape}.")
    if c.dtype.kind not in "iu":
        raise TypeError(f"test_clusters must hold integer cluster indices, got dtype={c.dtype}.")
    if m and (c.min() < 0 or c.max() >= n_clusters):
        raise ValueError(f"test_clusters must be cluster indices in [0, {n_clusters - 1}], got "
                         f"values in [{c.min()}, {c.max()}].")
    return c.astype(np.intp)


def block_shape(m: int, n: int, per_row: int) -> tuple[int, int]:
    """(test rows, training columns) of one tile within ``BLOCK_BYTES``: ``TILES`` float
    tiles plus ``per_row`` floats per test row."""
    floats = BLOCK_BYTES // 8
    cols = max(1, min(n, (floats - per_row) // TILES))
    rows = max(1, min(m, floats // (TILES * cols + per_row)))
    return rows, cols


# -- compiled loops (blocks of test points on threads; each writes its own rows) ------
def nearest_per_class(T, X, codes, n_classes, k):
    """Indices (b, n_classes, k) of the ``k`` training points of each class nearest to each
    row of ``T`` (b, d), by exact squared Euclidean distance, ties to the smaller index."""
    b = T.shape[0]
    near = np.full((b, n_classes, k), -1, dtype=np.intp)
    best = np.full((b, n_classes, k), np.inf)
    in_row_blocks(_nearest_per_class, b, T, X, codes, near, best, work=b * X.shape[0] * T.shape[1])
    return near


@compiled()
def _nearest_per_class(start, stop, T, X, codes, near, best):  # pragma: no cover - compiled
    d = T.shape[1]
    k = near.shape[2]
    for t in range(start, stop):
        for l in range(X.shape[0]):
            s = 0.0
            for e in range(d):
                diff = T[t, e] - X[l, e]
                s += diff * diff
            c = codes[l]
            if s < best[t, c, k - 1]:
                r = k - 1
                while r > 0 and best[t, c, r - 1] > s:
                    best[t, c, r] = best[t, c, r - 1]
                    near[t, c, r] = near[t, c, r - 1]
                    r -= 1
                best[t, c, r] = s
                near[t, c, r] = l


def impostor_sums(D, codes, radii, sorted_radii, count, total, own):
    """Second term of eq. 15, accumulated over one chunk of training columns.

    ``D`` (b, s) distances to the chunk, ``codes`` (s,) their classes, ``radii`` (b, K, k)
    ``test_margin + D(t, j)``, ``sorted_radii`` (b, K k) the same sorted per row. A column with
    ``p`` radii at most ``D`` adds 1 to ``count[t, p]`` and ``D`` to ``total[t, p]`` (so
    a cumulative sum gives the hinge over all columns at each radius); ``own`` (b, K, k)
    collects the hinge of columns of the radius's own class, which are not impostors."""
    in_row_blocks(_impostor_sums, D.shape[0], D, codes, radii, sorted_radii, count, total, own,
                  work=D.size)


@compiled()
def _impostor_sums(start, stop, D, codes, radii, sorted_radii, count, total, own):  # pragma: no cover
    s = D.shape[1]
    k = radii.shape[2]
    top = sorted_radii.shape[1] - 1
    for t in range(start, stop):
        for l in range(s):
            dist = D[t, l]
            if dist >= sorted_radii[t, top]:
                continue
            p = count_below(sorted_radii[t], dist, True)
            count[t, p] += 1.0
            total[t, p] += dist
            c = codes[l]
            for r in range(k):
                hinge = radii[t, c, r] - dist
                if hinge > 0.0:
                    own[t, c, r] += hinge


def invasion_sums(D, radii, codes, out):
    """Third term of eq. 15 per class: ``out[t, codes[i]] += sum_r [radii[i, r] - D[t, i]]_+``
    for the training points ``i`` of one chunk; ``D`` (b, s), ``radii`` (s, k) ``1 + D(i, j)``."""
    in_row_blocks(_invasion_sums, D.shape[0], D, radii, codes, out, work=D.size * radii.shape[1])


@compiled()
def _invasion_sums(start, stop, D, radii, codes, out):  # pragma: no cover - compiled
    s = D.shape[1]
    k = radii.shape[1]
    for t in range(start, stop):
        for i in range(s):
            for r in range(k):
                hinge = radii[i, r] - D[t, i]
                if hinge > 0.0:
                    out[t, codes[i]] += hinge
