"""Selecting mu and k by cross-validated k-NN error over certified optima."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning

from fast_solver import solve
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.psd import psd_factor
from validation import model_selection
from validation.experiments.knn import knn_error, nearest_neighbours
from validation.model_selection import select_mu_k


def two_features(n=60, seed=0):
    """Feature 0 separates the classes; feature 1 is large noise."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = np.column_stack([y + 0.1 * rng.normal(size=n), 10 * rng.normal(size=n)])
    return X, y


def fake_path(good_k, good_mu, certified=True):
    """A stand-in for ``certified_path``: the informative metric at (good_k, good_mu) only."""
    informative, noise = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])

    def path(problem, mus, **options):
        results = [SimpleNamespace(metric=informative if (problem.k, mu) == (good_k, good_mu)
                                   else noise, relative_gap=1e-7, certified=certified)
                   for mu in mus]
        return SimpleNamespace(results=results)
    return path


def test_selection_is_the_minimum_of_the_table(monkeypatch):
    monkeypatch.setattr(model_selection, "certified_path", fake_path(2, 0.7))
    X, y = two_features()
    selection = select_mu_k(X, y, [0.1, 0.7, 0.4], [1, 2], cv=3)
    assert (selection.k, selection.mu) == (2, 0.7)
    table = selection.table
    best = min(table, key=lambda row: row["cv_error"])
    assert (best["k"], best["mu"]) == (2, 0.7) and best["cv_error"] < 0.05
    assert all(row["cv_error"] > 0.2 for row in table if row is not best)
    assert selection.errors.shape == selection.gaps.shape == (2, 3, 3)
    assert len(table) == 6 and table[0] == {"k": 1, "mu": 0.1, "cv_error": pytest.approx(
        selection.errors[0, 0].mean()), "cv_std": pytest.approx(selection.errors[0, 0].std()),
        "max_gap": 1e-7}


def test_ties_go_to_the_first_k_then_mu(monkeypatch):
    monkeypatch.setattr(model_selection, "certified_path", fake_path(None, None))  # all equal
    X, y = two_features()
    selection = select_mu_k(X, y, [0.9, 0.2], [3, 1], cv=2)
    assert (selection.k, selection.mu) == (3, 0.9)


def test_unproved_gaps_warn(monkeypatch):
    monkeypatch.setattr(model_selection, "certified_path", fake_path(1, 0.5, certified=False))
    X, y = two_features()
    with pytest.warns(ConvergenceWarning, match="4 solves did not prove"):
        select_mu_k(X, y, [0.5], [1], cv=4)


def test_real_errors_are_k_nn_errors_of_certified_optima():
    X, y = load_iris(return_X_y=True)
    X, y = X[::2], y[::2]  # 75 rows
    selection = select_mu_k(X, y, [0.5, 0.2], [2], cv=2, tol=1e-5)
    assert np.all(selection.gaps <= 1e-5)
    train, test = model_selection._folds(y, 2, 0, 2, 3)[1]
    L = psd_factor(solve(LMNNProblem(X[train], y[train], k=2, mu=0.2), tol=1e-5).metric)
    expected = knn_error(y[train], nearest_neighbours(X[train] @ L.T, X[test] @ L.T, 3), y[test])
    # a cold solve, not warm-started: within 1e-5 of the same optimum, one vote may differ
    assert selection.errors[0, 1, 1] == pytest.approx(expected, abs=1 / len(test) + 1e-12)


@pytest.mark.parametrize("kwargs, message", [
    ({"mus": []}, "mus must be a non-empty"),
    ({"mus": [0.5, 1.2]}, r"mus must hold numbers in \[0, 1\]"),
    ({"ks": []}, "ks must be a non-empty"),
    ({"ks": [1, 0]}, "ks must hold integers >= 1"),
    ({"ks": [1.5]}, "ks must hold integers >= 1"),
    ({"ks": [2, 2]}, "repeated"),
    ({"ks": [20]}, r"k=20, but the smallest class of a training fold has 20 points; k must be at most 19"),
    ({"cv": 1}, r"cv must be an integer in \[2, 30\]"),
    ({"cv": 31}, r"cv must be an integer in \[2, 30\]"),
    ({"n_neighbors": 0}, "n_neighbors must be an integer in"),
])
def test_bad_input_is_named(kwargs, message):
    X, y = two_features()
    arguments = {"mus": [0.5], "ks": [1], "cv": 3, **kwargs}
    with pytest.raises(ValueError, match=message):
        select_mu_k(X, y, arguments.pop("mus"), arguments.pop("ks"), **arguments)
