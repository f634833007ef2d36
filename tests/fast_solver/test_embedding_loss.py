"""eq. 14 of an embedding against a brute-force sum over every triplet: value, eq. 14 and
the gradient in ``Z`` (by finite differences too), at both hinges."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from fast_solver.lmnn.smoothed import WorkingSet
from fast_solver.low_rank.embedding_loss import EmbeddingLoss, embedding_loss, search_working_set
from lmnn_sdp.core.problem import LMNNProblem


def smoothed(h: np.ndarray, width: float) -> np.ndarray:
    """The Huber-smoothed hinge ``s_w(h)`` (``w = 0``: ``[h]_+``), elementwise."""
    positive = np.maximum(h, 0.0)
    return positive if width == 0 else np.where(h >= width, h - width / 2, positive**2 / (2 * width))


def brute_force(Z, targets, y, mu, width):
    """``F_width`` and eq. 14 at ``Z`` (n, r) by a loop over every target pair ``(i, j)``, each
    with every differently labelled ``l`` at once: every triplet ``(i, j, l)``."""
    value = hinge = pull = 0.0
    for i in range(len(Z)):
        others = Z[y != y[i]]
        for j in targets[i]:
            d_ij = np.sum((Z[i] - Z[j]) ** 2)
            pull += d_ij
            h = 1.0 + d_ij - np.sum((Z[i] - others) ** 2, axis=1)
            value += np.sum(smoothed(h, width))
            hinge += np.sum(np.maximum(h, 0.0))
    return (1 - mu) * pull + mu * value, (1 - mu) * pull + mu * hinge


def margins(Z, targets, y):
    """Every triplet's ``1 + D_ij - D_il``."""
    return np.array([1.0 + np.sum((Z[i] - Z[j]) ** 2) - np.sum((Z[i] - Z[l]) ** 2)
                     for i in range(len(Z)) for j in targets[i] for l in np.flatnonzero(y != y[i])])


@pytest.fixture(scope="module")
def setting():
    X, y = make_blobs(24, 3, centers=3, cluster_std=2.0, random_state=1)
    problem = LMNNProblem(X, y, k=2, mu=0.7)
    Z = problem.X_centered @ np.random.default_rng(0).normal(size=(2, 3)).T * 0.5
    return problem, Z


@pytest.mark.parametrize("width", [0.0, 0.3, 1.0])
def test_value_and_objective_equal_brute_force(setting, width):
    problem, Z = setting
    ev = embedding_loss(Z, problem.targets, problem.label_codes, problem.mu, width)
    value, eq14 = brute_force(Z, problem.targets, problem.y, problem.mu, width)
    assert ev.value == pytest.approx(value, rel=1e-12)
    assert ev.objective == pytest.approx(eq14, rel=1e-12)
    assert ev.n_active == np.sum(margins(Z, problem.targets, problem.y) > 0) > 0
    M = np.linalg.lstsq(problem.X_centered, Z, rcond=None)[0]
    assert ev.objective == pytest.approx(problem.objective(M @ M.T), rel=1e-10)


@pytest.mark.parametrize("width", [0.0, 0.3, 1.0])
def test_gradient_equals_finite_differences(setting, width):
    problem, Z = setting
    h = margins(Z, problem.targets, problem.y)
    assert np.min(np.abs(h)) > 1e-3 and np.min(np.abs(h - width)) > 1e-3  # away from the kinks
    ev = embedding_loss(Z, problem.targets, problem.label_codes, problem.mu, width)
    step = 1e-6
    numeric = np.zeros_like(Z)
    for index in np.ndindex(*Z.shape):
        E = np.zeros_like(Z)
        E[index] = step
        numeric[index] = (brute_force(Z + E, problem.targets, problem.y, problem.mu, width)[0]
                          - brute_force(Z - E, problem.targets, problem.y, problem.mu, width)[0]) / (2 * step)
    np.testing.assert_allclose(ev.gradient, numeric, rtol=1e-6, atol=1e-6 * np.abs(numeric).max())


def test_the_search_keeps_every_triplet_within_the_band(setting):
    problem, Z = setting
    band = 0.5
    ws = search_working_set(Z + 100.0, problem.targets, problem.label_codes, band)  # a shift changes nothing
    kept = set(zip(ws.owner.tolist(), ws.impostors.tolist()))
    for i in range(len(Z)):
        d_ij = np.max(np.sum((Z[i] - Z[problem.targets[i]]) ** 2, axis=1))
        for l in np.flatnonzero(problem.y != problem.y[i]):
            assert ((i, l) in kept) == (np.sum((Z[i] - Z[l]) ** 2) < d_ij + 1 + band)


def test_a_working_set_without_impostors_gives_the_pull_term_alone(setting):
    problem, Z = setting
    none = np.empty(0, np.intp)
    empty = WorkingSet.from_pairs(none, none, len(Z))
    ev = EmbeddingLoss(problem.targets, problem.mu, empty).evaluate(Z, 0.0)
    pull = sum(np.sum((Z[i] - Z[problem.targets[i]]) ** 2) for i in range(len(Z)))
    assert len(empty) == 0 and ev.n_active == 0
    assert ev.value == ev.objective == pytest.approx((1 - problem.mu) * pull, rel=1e-12)
