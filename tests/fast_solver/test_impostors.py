"""The fast solver's exact impostor-pair search (both paths) against the one exact triplet
search of the library, ``LMNNProblem.active_triplets``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_blobs

from fast_solver.lmnn import compiled
from fast_solver.lmnn.impostors import (
    BALLTREE_MAX_RANK,
    choose_search_method,
    cluster_impostor_pairs,
    impostor_pairs,
    impostor_radius,
)
from lmnn_sdp import LMNNProblem
from lmnn_sdp.core.principal import principal_coordinates
from lmnn_sdp.core.psd import psd_factor


def active_triplets(problem: LMNNProblem, M, band: float, method: str) -> np.ndarray:
    """The triplets within ``band`` of the margin that the pair search finds, (T, 3) in the
    order of ``LMNNProblem.active_triplets`` (i, target rank, l)."""
    Z = problem.X_centered @ psd_factor(M, rtol=1e-12).T
    target_d = compiled.target_distances(Z[None], problem.targets, np.zeros(problem.n_samples, np.intp))
    i, l, dist = impostor_pairs(Z, problem.label_codes, impostor_radius(target_d, band), method)
    p, rank = np.nonzero(1.0 + target_d[i] - dist[:, None] > -band)
    order = np.lexsort((l[p], rank, i[p]))
    p, rank = p[order], rank[order]
    return np.column_stack([i[p], problem.targets[i[p], rank], l[p]]).astype(np.intp)


def _random_metric(d, rank, seed):
    A = np.random.default_rng(seed).standard_normal((d, rank))
    return A @ A.T / d


@pytest.fixture(scope="module")
def iris_problem():
    X, y = load_iris(return_X_y=True)
    return LMNNProblem((X - X.mean(0)) / X.std(0), y, k=3, mu=0.5)


@pytest.mark.parametrize("method", ["blockwise", "balltree"])
@pytest.mark.parametrize("rank", [4, 2])
@pytest.mark.parametrize("band", [0.0, 0.7])
def test_search_equals_brute_force_triplets(iris_problem, method, rank, band):
    M = _random_metric(4, rank, seed=rank)
    expected = iris_problem.active_triplets(M, band)
    found = active_triplets(iris_problem, M, band, method)
    assert len(expected) > 100
    np.testing.assert_array_equal(found, expected)


@pytest.mark.parametrize("method", ["blockwise", "balltree"])
def test_search_equals_brute_force_on_blobs_with_many_classes(method):
    X, y = make_blobs(300, 6, centers=7, cluster_std=3.0, random_state=0)
    problem = LMNNProblem(X, y, k=2, mu=0.5)
    M = _random_metric(6, 6, seed=3)
    np.testing.assert_array_equal(active_triplets(problem, M, 0.0, method), problem.active_triplets(M))


@pytest.mark.parametrize("method", ["blockwise", "balltree"])
def test_no_impostors_gives_empty_set(method):
    X = np.vstack([np.random.default_rng(0).normal(size=(20, 2)) * 0.01, 100 + np.zeros((20, 2))])
    X[20:] += np.random.default_rng(1).normal(size=(20, 2)) * 0.01
    y = np.repeat([0, 1], 20)
    problem = LMNNProblem(X, y, k=3)
    found = active_triplets(problem, np.eye(2), 0.0, method)
    assert found.shape == (0, 3)
    assert len(problem.active_triplets(np.eye(2))) == 0


@pytest.mark.parametrize("method", ["blockwise", "balltree"])
def test_duplicate_points_across_classes_are_impostors(method):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 3))
    X = np.vstack([X, X[:5]])  # points 30..34 duplicate 0..4 with the other label
    y = np.array([0] * 15 + [1] * 15 + [1] * 5)
    y[:5] = 0
    problem = LMNNProblem(X, y, k=2)
    found = active_triplets(problem, np.eye(3), 0.0, method)
    np.testing.assert_array_equal(found, problem.active_triplets(np.eye(3)))
    pairs = {(i, l) for i, _, l in found}
    assert all((i, 30 + i) in pairs for i in range(5))


def test_pairs_respect_per_point_radius_and_searched_mask(iris_problem):
    Z = iris_problem.X_centered
    radius = np.random.default_rng(0).uniform(0.5, 3.0, len(Z))
    searched = np.arange(len(Z)) % 3 == 0
    i, l, dist = impostor_pairs(Z, iris_problem.label_codes, radius, "blockwise", searched)
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    other = iris_problem.label_codes[:, None] != iris_problem.label_codes[None]
    expected = np.argwhere((D < radius[:, None]) & other & searched[:, None])
    np.testing.assert_array_equal(np.column_stack([i, l]), expected)
    np.testing.assert_allclose(dist, D[i, l], rtol=1e-12)


@pytest.mark.parametrize("budget,panel", [(64, 2**22), (2**26, 2**22),  # blocks of one row, one a class
                                          (4 * 7 * 3, 4 * 5 * 7)])  # tiles of 3 rows and 7 columns
def test_pairs_respect_searched_and_candidate_masks_in_both_directions(monkeypatch, budget, panel):
    import fast_solver.lmnn.impostors as impostors_module

    monkeypatch.setattr(impostors_module, "_BLOCK_BYTES", budget)
    monkeypatch.setattr(impostors_module, "_PANEL_BYTES", panel)
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(90, 3))
    codes = rng.integers(0, 4, 90)
    radius = rng.uniform(1.0, 6.0, 90)
    searched, columns = rng.random(90) < 0.7, rng.random(90) < 0.6
    i, l, dist = impostor_pairs(Z, codes, radius, "blockwise", searched, columns)
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    expected = np.argwhere((D < radius[:, None]) & (codes[:, None] != codes) & searched[:, None] & columns)
    assert len(expected) > 200
    np.testing.assert_array_equal(np.column_stack([i, l]), expected)
    np.testing.assert_allclose(dist, D[i, l], rtol=1e-12)


@pytest.mark.parametrize("method", ["blockwise", "balltree"])
def test_clusters_searched_on_threads_equal_brute_force_with_chunks_inside(monkeypatch, method):
    """One cluster per thread, each with several classes and its exact distances in many chunks:
    the work a task hands the pool from inside it runs in turn there (a pool of two threads
    waiting on itself would never end; the search runs on a watched thread), and the pairs
    are those of brute force in each candidate's cluster (eq. 16)."""
    import threading

    import fast_solver.lmnn.impostors as impostors_module

    monkeypatch.setattr(impostors_module, "SEARCH_THREADS", 2)
    monkeypatch.setattr(impostors_module, "_PAIR_CHUNK", 4)
    monkeypatch.setattr(impostors_module, "_MIN_CHUNK", 2)
    rng = np.random.default_rng(5)
    C, n = 3, 120
    Z = rng.normal(size=(C, n, 3))
    codes, clusters = rng.integers(0, 4, n), rng.integers(0, C, n)
    radius = rng.uniform(1.0, 6.0, n)
    found = []
    worker = threading.Thread(target=lambda: found.append(cluster_impostor_pairs(Z, clusters, codes, radius, method)),
                              daemon=True)
    worker.start()
    worker.join(60)
    assert found, "the search did not end within 60 s"
    i, l = found[0]
    own = Z[clusters]  # own[l, i] = z_i in the coordinates of l's cluster
    D = ((own - own[np.arange(n), np.arange(n)][:, None]) ** 2).sum(-1).T  # D[i, l]
    expected = np.argwhere((D < radius[:, None]) & (codes[:, None] != codes))
    assert len(expected) > 300
    np.testing.assert_array_equal(np.column_stack([i, l]), expected)


def test_no_pair_at_the_radius_is_lost_to_single_precision_far_from_the_origin():
    rng = np.random.default_rng(5)
    Z = 300.0 + rng.normal(size=(60, 8))  # |z|^2 ~ 7e5: float32 Gram distances err by ~0.1
    codes = np.arange(60) % 3
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    D[codes[:, None] == codes] = np.inf
    radius = D.min(axis=1) * (1 + 1e-12)  # the nearest impostor just inside
    i, l, _ = impostor_pairs(Z, codes, radius, "blockwise")
    np.testing.assert_array_equal(np.column_stack([i, l]), np.argwhere(D < radius[:, None]))
    assert len(i) == 60


@pytest.mark.parametrize("method", ["blockwise", "balltree"])
@pytest.mark.parametrize("scale", [1e-30, 1e30])  # squared distances below / above float32's range
def test_no_pair_is_lost_at_scales_that_float32_does_not_hold(method, scale):
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(60, 12)) * scale
    codes = np.arange(60) % 3
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    D[codes[:, None] == codes] = np.inf
    radius = np.sort(D, axis=1)[:, 4] * (1 + 1e-12)  # the five nearest impostors just inside
    i, l, dist = impostor_pairs(Z, codes, radius, method)
    np.testing.assert_array_equal(np.column_stack([i, l]), np.argwhere(D < radius[:, None]))
    assert len(i) == 5 * len(Z)
    np.testing.assert_allclose(dist, D[i, l], rtol=1e-12)


def test_no_pair_at_the_radius_is_lost_to_the_left_out_tail(thin_tail_points):
    Z = thin_tail_points(7)
    codes = np.arange(len(Z)) % 4
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    D[codes[:, None] == codes] = np.inf
    radius = np.sort(D, axis=1)[:, 2] * (1 + 1e-12)  # the three nearest impostors just inside
    i, l, _ = impostor_pairs(Z, codes, radius, "blockwise")
    np.testing.assert_array_equal(np.column_stack([i, l]), np.argwhere(D < radius[:, None]))
    assert len(i) == 3 * len(Z)


@pytest.mark.parametrize("return_distance", [True, False])
@pytest.mark.parametrize("thin,outside,kept", [(0.05, 1e-3, 5),  # the tail, 7.6e-4 of the scatter, left out
                                               (1.0, 1e-9, 12)])  # closer than single precision resolves
def test_no_pair_beyond_the_radius_is_taken_without_measuring_it(thin_tail_points, return_distance, thin, outside,
                                                                 kept):
    Z = thin_tail_points(8, thin=thin)
    assert principal_coordinates(Z)[0].shape[1] == kept
    codes = np.arange(len(Z)) % 4
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    D[codes[:, None] == codes] = np.inf
    radius = np.sort(D, axis=1)[:, 2] * (1 - outside)  # the third nearest impostor just outside
    pairs = impostor_pairs(Z, codes, radius, "blockwise", return_distance=return_distance)
    np.testing.assert_array_equal(np.column_stack(pairs[:2]), np.argwhere(D < radius[:, None]))
    assert len(pairs[0]) > 1.9 * len(Z) and len(pairs) == 2 + return_distance


def test_radius_is_max_target_distance_plus_margin_and_band():
    target_d = np.array([[1.0, 4.0], [2.0, 0.5]])
    np.testing.assert_allclose(impostor_radius(target_d, 0.25), [5.25, 3.25])


def test_auto_rule_picks_balltree_only_in_low_rank():
    assert choose_search_method(BALLTREE_MAX_RANK) == "balltree"
    assert choose_search_method(BALLTREE_MAX_RANK + 1) == "blockwise"
    with pytest.raises(ValueError, match="method"):
        choose_search_method(3, "kdtree")
