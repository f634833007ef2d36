"""Whitened coordinates: exact maps between metrics, isotropic pull, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_wine

from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.whitening import whiten


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return LMNNProblem(X[::2], y[::2], k=3, mu=0.5)


def test_whitened_pull_is_the_identity_and_distances_are_kept(wine):
    w = whiten(wine)
    np.testing.assert_allclose(w.pull, np.eye(w.rank), atol=1e-9)
    M_w = np.random.default_rng(0).normal(size=(w.rank, w.rank))
    M_w = M_w @ M_w.T
    M = w.lift(M_w)
    np.testing.assert_allclose(w.whitened(M), M_w, rtol=1e-8, atol=1e-8 * np.abs(M_w).max())
    i, j = wine.targets[:, 0], np.arange(wine.n_samples)
    diff_w, diff = w.inputs[i] - w.inputs[j], wine.X_centered[i] - wine.X_centered[j]
    np.testing.assert_allclose(np.einsum("nr,rs,ns->n", diff_w, M_w, diff_w),
                               np.einsum("nd,de,ne->n", diff, M, diff), rtol=1e-9)


def test_rank_deficient_inputs_keep_the_data_range():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(30, 3))
    X = np.column_stack([base, base[:, 0] + base[:, 1], np.zeros(30)])
    w = whiten(LMNNProblem(X, np.arange(30) % 2, k=2))
    assert w.rank == 3 and w.basis.shape == (5, 3)
    np.testing.assert_allclose(w.inverse @ w.basis, np.eye(3), atol=1e-10)


def test_inputs_that_all_coincide_with_their_targets_are_refused():
    points = np.random.default_rng(2).normal(size=(8, 2))
    X = np.repeat(points, 2, axis=0)  # twins 2m and 2m + 1, each the other's target
    y = np.repeat(np.arange(8) % 2, 2)
    twin = (np.arange(16) ^ 1)[:, None]
    with pytest.raises(ValueError, match="pull term"):
        whiten(LMNNProblem(X, y, targets=twin))


@pytest.mark.parametrize(("data", "singular", "killable"), [("40 features", True, True), ("20 features", False, False),
                                                          ("iris > 3", True, False)])
def test_every_impostor_is_killable_only_when_each_pair_has_a_null_component(data, singular, killable):
    """30 random points in three classes: their target differences span at most 27 of the 29
    directions of the data range with 40 features, so every pair of different labels has a
    component on the pull's null space; with 20 features the pull is regular. Iris
    thresholded at 3 is singular too, but points of different labels coincide."""
    from sklearn.datasets import load_iris

    from lmnn_sdp.core.whitening import whiten_clusters

    if data == "iris > 3":
        X, y = load_iris(return_X_y=True)
        X = (X > 3).astype(float)
    else:
        X, y = np.random.default_rng(0).normal(size=(30, int(data.split()[0]))), np.arange(30) % 3
    problem = LMNNProblem(X, y, k=3)
    w = whiten_clusters(problem)
    assert bool(w.singular) is singular
    assert w.every_impostor_killable(problem.label_codes) is killable
