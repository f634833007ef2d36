"""The k-NN rule of the protocol: ties broken by shrinking k, leave-one-out by brute force."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from validation.experiments.knn import drop_self, knn_error, knn_predict, nearest_neighbours


def vote_by_hand(labels: list) -> object:
    """The paper's rule, one query at a time: majority of k; on a tie, k - 1, ..."""
    for size in range(len(labels), 0, -1):
        counts = Counter(labels[:size]).most_common()
        if len(counts) == 1 or counts[0][1] > counts[1][1]:
            return counts[0][0]
    raise AssertionError("unreachable: one neighbour always decides")


@pytest.mark.parametrize("labels, expected", [
    (["b", "a", "a"], "a"),  # plain majority, not the nearest
    (["a", "b", "c"], "a"),  # 1-1-1 -> 1-1 -> the nearest
    (["c", "b", "b", "c"], "b"),  # 2-2 -> k=3: c, b, b
])
def test_ties_shrink_k(labels, expected):
    y_train = np.array(labels)
    assert knn_predict(y_train, np.arange(len(labels))[None, :])[0] == expected
    assert vote_by_hand(labels) == expected


def test_a_four_way_tie_shrinks_until_decided():
    y_train = np.array([0, 1, 1, 0, 2])
    # neighbours 0, 1, 2, 3: 2-2 tie -> k=3: labels 0, 1, 1 -> 1
    assert knn_predict(y_train, [[0, 1, 2, 3]])[0] == 1
    # neighbours 0, 1, 3, 2: 2-2 -> k=3: 0, 1, 0 -> 0
    assert knn_predict(y_train, [[0, 1, 3, 2]])[0] == 0
    # neighbours 4, 0, 1: 1-1-1 -> k=2: 2, 0 tie -> k=1: 2
    assert knn_predict(y_train, [[4, 0, 1]])[0] == 2


def test_matches_the_rule_by_hand_on_random_votes():
    rng = np.random.default_rng(0)
    y_train = rng.choice(np.array(["x", "y", "z", "w"]), size=30)
    neighbours = rng.integers(0, 30, size=(500, 5))
    expected = [vote_by_hand(list(y_train[row])) for row in neighbours]
    assert knn_predict(y_train, neighbours).tolist() == expected


def test_leave_one_out_neighbours_and_error_match_brute_force():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(60, 3))
    y = rng.integers(0, 3, size=60)
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    expected = np.argsort(D, axis=1)[:, :3]
    loo = nearest_neighbours(Z, None, 3)
    np.testing.assert_array_equal(loo, expected)
    wrong = sum(vote_by_hand(list(y[expected[i]])) != y[i] for i in range(60))
    assert knn_error(y, loo, y) == pytest.approx(wrong / 60)


def test_test_neighbours_match_brute_force():
    rng = np.random.default_rng(2)
    Z, Q = rng.normal(size=(40, 2)), rng.normal(size=(7, 2))
    D = ((Q[:, None] - Z[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(nearest_neighbours(Z, Q, 3), np.argsort(D, axis=1)[:, :3])


def test_drop_self_removes_the_point_even_behind_its_duplicates():
    neighbours = np.array([[0, 4, 2], [3, 1, 0], [3, 4, 1]])  # row 2: point 2 absent
    np.testing.assert_array_equal(drop_self(neighbours), [[4, 2], [3, 0], [3, 4]])
    Z = np.array([[0.0], [0.0], [0.0], [5.0]])  # three duplicates
    assert all(i not in row for i, row in enumerate(nearest_neighbours(Z, None, 2)))


def test_one_class_predicts_it():
    assert knn_predict(np.array([7, 7, 7]), [[0, 1, 2], [2, 1, 0]]).tolist() == [7, 7]


@pytest.mark.parametrize("neighbours, message", [
    (np.array([0, 1, 2]), "shape \\(m, k\\)"),
    (np.array([[0.0, 1.0]]), "integer"),
    (np.array([[0, 5]]), "index the 3 training labels"),
])
def test_bad_neighbours_raise(neighbours, message):
    with pytest.raises(ValueError, match=message):
        knn_predict(np.array([0, 1, 0]), neighbours)


def test_k_too_large_raises_naming_k():
    with pytest.raises(ValueError, match="k must lie in \\[1, 2\\]"):
        nearest_neighbours(np.zeros((3, 2)), None, 3)
