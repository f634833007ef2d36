"""The seven linear learners against metric-learn's Mahalanobis conventions.

What is checked follows metric-learn 0.7.0's ``test_mahalanobis_mixin.py``,
``test_base_metric.py`` and ``test_sklearn_compat.py``: ``get_mahalanobis_matrix`` is
symmetric PSD and ``components_.T @ components_``; ``pair_distance`` is the Euclidean
distance after ``transform`` and ``pair_score`` its opposite; ``get_metric()`` is a pseudo
metric equal to ``pair_distance``, independent of the learner and usable by scikit-learn's
neighbours; pairs and points of the wrong shape raise. The comparisons with metric-learn's
own methods are skipped when metric-learn (the ``peers`` extra) is absent.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.cluster import DBSCAN
from sklearn.datasets import make_blobs
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

from fast_solver import LMCA, LMNN, MLNG, NCA, RCA, MultiPassLMNN
from lmnn_sdp import MMC

LEARNERS = [LMNN(), MultiPassLMNN(max_passes=2), NCA(random_state=0), LMCA(n_components=2),
            MLNG(random_state=0, max_iter=5), RCA(), MMC()]
IDS = [type(learner).__name__ for learner in LEARNERS]


def data():
    return make_blobs(n_samples=45, n_features=3, centers=3, cluster_std=2.0, random_state=0)


@pytest.fixture(scope="module", params=LEARNERS, ids=IDS)
def fitted(request):
    X, y = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short budgets: only the conventions matter here
        model = clone(request.param).fit(X, y)
    return model, X, y


def random_pairs(X, n_pairs=30, seed=0):
    rng = np.random.default_rng(seed)
    return X[rng.integers(len(X), size=(n_pairs, 2))]  # (n_pairs, 2, n_features)


def test_the_seven_learners_have_the_interface():
    methods = ("get_mahalanobis_matrix", "pair_distance", "pair_score", "get_metric", "transform")
    assert len(LEARNERS) == 7
    assert all(callable(getattr(learner, name, None)) for learner in LEARNERS for name in methods)


def test_mahalanobis_matrix_is_symmetric_psd_and_lt_l(fitted):
    model, X, _ = fitted
    L = model.components_
    assert L.ndim == 2 and L.shape[1] == X.shape[1] and 1 <= L.shape[0] <= X.shape[1]
    M = model.get_mahalanobis_matrix()
    assert M.shape == (3, 3)
    np.testing.assert_allclose(M, L.T @ L, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(M, M.T)
    assert np.linalg.eigvalsh(M).min() >= -1e-12 * np.abs(M).max()
    M[:] = 0  # a copy: the learner is unchanged
    assert np.abs(model.get_mahalanobis_matrix()).max() > 0


def test_transform_is_the_linear_map(fitted):
    model, X, _ = fitted
    Z = model.transform(X)
    assert Z.shape == (45, model.components_.shape[0]) and np.all(np.isfinite(Z))
    np.testing.assert_allclose(Z, X @ model.components_.T, rtol=1e-14, atol=1e-14 * np.abs(Z).max())
    np.testing.assert_allclose(model.transform(2.5 * X[:5] + X[5:10]), 2.5 * Z[:5] + Z[5:10],
                               rtol=1e-10, atol=1e-12 * np.abs(Z).max())


def test_pair_distance_is_the_distance_after_transform_and_pair_score_its_opposite(fitted):
    model, X, _ = fitted
    pairs = random_pairs(X)
    d = model.pair_distance(pairs)
    assert d.shape == (30,) and np.all(np.isfinite(d)) and np.all(d >= 0)
    Z0, Z1 = model.transform(pairs[:, 0]), model.transform(pairs[:, 1])
    np.testing.assert_allclose(d, np.linalg.norm(Z0 - Z1, axis=1), rtol=1e-10, atol=1e-12 * d.max())
    M = model.get_mahalanobis_matrix()
    explicit = [np.sqrt(max((a - b) @ M @ (a - b), 0.0)) for a, b in pairs]
    np.testing.assert_allclose(d, explicit, rtol=1e-8, atol=1e-10 * d.max())
    np.testing.assert_array_equal(model.pair_score(pairs), -d)
    np.testing.assert_array_equal(model.pair_distance(pairs[:, ::-1]), d)  # symmetric
    np.testing.assert_array_equal(model.pair_distance(np.stack([X, X], axis=1)), np.zeros(45))
    np.testing.assert_array_equal(model.pair_distance(pairs.tolist()), d)  # nested lists


@pytest.mark.parametrize("shape", [(30, 2), (30, 3, 3), (30, 2, 4), (2, 3), (3,)])
def test_pairs_of_the_wrong_shape_raise(fitted, shape):
    model, _, _ = fitted
    with pytest.raises(ValueError):
        model.pair_distance(np.ones(shape))
    with pytest.raises(ValueError):
        model.pair_score(np.ones(shape))


def test_pairs_with_nan_raise(fitted):
    model, X, _ = fitted
    pairs = random_pairs(X)
    pairs[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.pair_distance(pairs)


def test_get_metric_is_pair_distance_and_a_pseudo_metric(fitted):
    model, X, _ = fitted
    metric = model.get_metric()
    pairs = random_pairs(X)
    d = np.array([metric(u, v) for u, v in pairs])
    np.testing.assert_allclose(d, model.pair_distance(pairs), rtol=1e-12, atol=1e-12 * d.max())
    np.testing.assert_allclose([metric(u, v, squared=True) for u, v in pairs], d ** 2, rtol=1e-10,
                               atol=1e-12 * d.max() ** 2)
    assert isinstance(d[0], float) and metric(list(X[0]), tuple(X[1])) == metric(X[0], X[1])
    rng = np.random.default_rng(1)
    for a, b, c in X[rng.integers(45, size=(50, 3))]:
        assert metric(a, a) == 0.0
        assert metric(a, b) == metric(b, a) >= 0.0
        assert metric(a, c) <= metric(a, b) + metric(b, c) + 1e-12 * (metric(a, b) + metric(b, c))
    assert metric(X[0][None, :], X[1][:, None]) == metric(X[0], X[1])  # one point as a row or a column


def test_get_metric_of_a_one_feature_map_takes_scalars(fitted):
    model, _, _ = fitted
    one_feature = clone(model)
    one_feature.components_ = np.array([3.1])  # metric-learn's scalar case: one row, one feature
    metric = one_feature.get_metric()
    for u, v in [(5, 6.7), ([5], [6.7]), ([[5]], [[6.7]])]:
        assert metric(u, v) == pytest.approx(3.1 * 1.7, rel=1e-14)
        assert metric(u, v, squared=True) == pytest.approx((3.1 * 1.7) ** 2, rel=1e-14)


def test_get_metric_is_independent_from_the_learner(fitted):
    model, X, y = fitted
    metric = model.get_metric()
    before = metric(X[0], X[1])
    other = clone(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other.fit(X[::-1] * 3.0, y[::-1])
    saved = model.components_.copy()
    model.components_ *= 2.0
    try:
        assert metric(X[0], X[1]) == before
    finally:
        model.components_[:] = saved
    assert model.get_metric()(X[0], X[1]) == before


@pytest.mark.parametrize("u, v", [
    (np.ones(4), np.ones(3)), (np.ones(3), np.ones(2)), (np.ones((2, 3)), np.ones(3)), (np.ones(3), np.ones((3, 3))),
])
def test_get_metric_refuses_points_of_another_shape(fitted, u, v):
    model, _, _ = fitted
    with pytest.raises(ValueError, match="one point of 3 features"):
        model.get_metric()(u, v)


def test_get_metric_refuses_complex_points(fitted):
    model, _, _ = fitted
    with pytest.raises(ValueError, match="Complex data not supported"):
        model.get_metric()(np.ones(3) * 1j, np.ones(3))


def test_get_metric_works_in_scikit_learns_neighbours(fitted):
    model, X, y = fitted
    knn = KNeighborsClassifier(n_neighbors=3, metric=model.get_metric(), algorithm="brute").fit(X[::2], y[::2])
    reference = KNeighborsClassifier(n_neighbors=3, algorithm="brute").fit(model.transform(X[::2]), y[::2])
    distances, neighbours = knn.kneighbors(X[1::2])
    expected_distances, expected = reference.kneighbors(model.transform(X[1::2]))
    np.testing.assert_allclose(distances, expected_distances, rtol=1e-10, atol=1e-10 * expected_distances.max())
    assert (neighbours == expected).mean() >= 0.95  # ties may order differently
    assert knn.score(X[1::2], y[1::2]) == pytest.approx(reference.score(model.transform(X[1::2]), y[1::2]))
    ball_tree = KNeighborsClassifier(n_neighbors=3, metric=model.get_metric(), algorithm="ball_tree")
    np.testing.assert_array_equal(ball_tree.fit(X[::2], y[::2]).predict(X[1::2]), knn.predict(X[1::2]))
    labels = DBSCAN(eps=np.median(distances[:, 0]) * 2, min_samples=3, metric=model.get_metric()).fit_predict(X)
    expected_labels = DBSCAN(eps=np.median(distances[:, 0]) * 2, min_samples=3).fit_predict(model.transform(X))
    np.testing.assert_array_equal(labels, expected_labels)


def test_fit_returns_self_clone_and_pipeline(fitted):
    model, X, y = fitted
    fresh = clone(model)
    assert not hasattr(fresh, "components_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert fresh.fit(X, y) is fresh
        pipeline = make_pipeline(clone(model), KNeighborsClassifier(n_neighbors=3)).fit(X, y)
    assert pipeline.score(X, y) >= 0.8
    np.testing.assert_allclose(fresh.get_mahalanobis_matrix(), model.get_mahalanobis_matrix(), rtol=1e-8,
                               atol=1e-10 * np.abs(model.get_mahalanobis_matrix()).max())


def test_unfitted_learners_raise_not_fitted():
    from sklearn.exceptions import NotFittedError

    for learner in LEARNERS:
        for call in (learner.get_mahalanobis_matrix, learner.get_metric,
                     lambda: learner.pair_distance(np.ones((2, 2, 3))), lambda: learner.pair_score(np.ones((2, 2, 3)))):
            with pytest.raises(NotFittedError):
                call()


def test_metric_learns_own_methods_agree_on_our_components(fitted):
    base_metric = pytest.importorskip("metric_learn.base_metric", reason="metric-learn (peers extra) is absent")
    model, X, _ = fitted
    theirs = base_metric.MahalanobisMixin.get_metric(model)  # metric-learn's code on our components_
    ours = model.get_metric()
    for u, v in random_pairs(X):
        assert ours(u, v) == pytest.approx(theirs(u, v), rel=1e-12, abs=1e-14)
        assert ours(u, v, squared=True) == pytest.approx(theirs(u, v, squared=True), rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(model.get_mahalanobis_matrix(), base_metric.MahalanobisMixin.get_mahalanobis_matrix(model),
                               rtol=1e-14, atol=0)
