"""The NCA estimator: check_estimator, agreement with scikit-learn's NCA, parameters,
warnings, progress, metric-learn's methods, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NeighborhoodComponentsAnalysis
from sklearn.utils.estimator_checks import check_estimator

from fast_solver import NCA, nca_objective


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a short budget
def test_passes_sklearn_estimator_checks():
    results = check_estimator(NCA(max_iter=20), on_fail=None)
    failed = [r["check_name"] for r in results if r["status"] == "failed"]
    assert failed == []
    assert sum(r["status"] == "passed" for r in results) >= 45


@pytest.mark.parametrize("n_components, init", [(None, "identity"), (2, "pca"), (2, "lda"), (3, "random")])
def test_fit_follows_scikit_learns_nca_from_the_same_start(n_components, init, iris):
    X, y = iris
    options = dict(n_components=n_components, init=init, max_iter=15, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = NCA(**options).fit(X, y)
    reference = NeighborhoodComponentsAnalysis(**options).fit(X, y)
    np.testing.assert_allclose(ours.components_, reference.components_, rtol=1e-6,
                               atol=1e-6 * np.abs(reference.components_).max())
    assert ours.n_iter_ == reference.n_iter_ - 1  # scikit-learn counts its first evaluation
    assert ours.objective_ == pytest.approx(nca_objective(ours.components_, X, y)[0], rel=1e-12)


def test_fit_raises_f_and_g_and_transform_maps_to_n_components(iris):
    X, y = iris
    for objective in ("f", "g"):
        start = np.eye(2, 4)
        model = NCA(n_components=2, init=start, objective=objective, max_iter=200).fit(X, y)
        assert model.objective_ > nca_objective(start, X, y, objective)[0]
        assert model.transform(X).shape == (150, 2)
        np.testing.assert_array_equal(model.get_feature_names_out(), ["nca0", "nca1"])
    assert NCA(objective="f").fit(X, y).objective_ > 140  # of 150 points


def test_metric_learn_methods(iris):
    X, y = iris
    model = NCA(n_components=2).fit(X, y)
    M = model.get_mahalanobis_matrix()
    np.testing.assert_allclose(M, model.components_.T @ model.components_)
    pairs = np.stack([X[:10], X[-10:]], axis=1)
    expected = [np.sqrt((a - b) @ M @ (a - b)) for a, b in pairs]
    np.testing.assert_allclose(model.pair_distance(pairs), expected, rtol=1e-10)


def test_budget_exhausted_warns_when_verbose_as_scikit_learn_and_counts_iterations(iris, capsys):
    X, y = iris
    with pytest.warns(ConvergenceWarning, match=r"\[NCA\] NCA did not converge after 2 iterations.*raise max_iter"):
        model = NCA(max_iter=2, verbose=1).fit(X, y)
    assert model.n_iter_ == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # verbose=0: silent, as scikit-learn's NCA
        assert NCA(max_iter=2).fit(X, y).n_iter_ == 2
        reference = NeighborhoodComponentsAnalysis(max_iter=2).fit(X, y)
    assert reference.n_iter_ == 3  # scikit-learn counts its first evaluation


def test_one_class_fits_the_starting_map_as_scikit_learn(iris):
    X, y = iris
    X1, y1 = X[y == 0], y[y == 0]
    for init in ("identity", "auto", "pca", "random"):
        options = dict(n_components=2, init=init, random_state=0, max_iter=30)
        ours, reference = NCA(**options).fit(X1, y1), NeighborhoodComponentsAnalysis(**options).fit(X1, y1)
        np.testing.assert_allclose(ours.components_, reference.components_, rtol=1e-12, atol=1e-12)
        assert ours.n_iter_ == 0 and ours.objective_ == 50.0
    model = NCA(init="identity", objective="g").fit(X1, y1)
    np.testing.assert_array_equal(model.transform(X1), X1)
    assert model.objective_ == 0.0
    with pytest.raises(ValueError, match="classes"):  # LDA needs two classes, in both
        NCA(init="lda").fit(X1, y1)


def test_random_state_is_the_fitted_generator(iris):
    X, y = iris
    generator = np.random.RandomState(5)
    assert NCA(max_iter=3, random_state=generator).fit(X, y).random_state_ is generator
    model = NCA(init="random", max_iter=3, random_state=3).fit(X, y)
    assert isinstance(model.random_state_, np.random.RandomState)
    reference = NeighborhoodComponentsAnalysis(init="random", max_iter=3, random_state=3).fit(X, y)
    assert type(model.random_state_) is type(reference.random_state_)


def test_verbose_table_and_callback(iris, capsys):
    X, y = iris
    calls = []
    model = NCA(n_components=2, verbose=1, callback=lambda A, it: calls.append((A.shape, it))).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert "Iteration" in out[1] and "Objective f" in out[1]
    rows = [line.split() for line in out[3:]]
    assert [int(r[1]) for r in rows] == list(range(1, model.n_iter_ + 1))
    assert float(rows[-1][2]) == pytest.approx(model.objective_, rel=1e-6)
    assert calls == [((8,), it) for it in range(1, model.n_iter_ + 1)]


def test_warm_start_continues_from_the_last_components(iris):
    X, y = iris
    first_values = []
    record = lambda A, it: first_values.append(nca_objective(A.reshape(2, 4), X, y)[0]) if it == 1 else None
    model = NCA(n_components=2, warm_start=True, max_iter=300, callback=record).fit(X, y)
    previous = model.objective_
    model.fit(X, y)
    # L-BFGS-B never goes down: the warm fit started where the last one ended, the cold one below
    assert first_values[0] < previous <= first_values[1]
    with pytest.raises(ValueError, match="warm_start: X has 3 features but the previous fit had 4"):
        model.fit(X[:, :3], y)


def test_random_init_is_seeded(iris):
    X, y = iris
    fit = lambda: NCA(init="random", random_state=3, max_iter=3).fit(X, y).components_
    np.testing.assert_array_equal(fit(), fit())


@pytest.mark.parametrize("params, match", [
    ({"n_components": 5}, "n_components=5 is larger than the 4 features of X"),
    ({"init": np.eye(3)}, r"init must have shape \(n_components, 4\)"),
    ({"init": np.eye(5, 4)}, "init has 5 rows, more than the 4 features"),
    ({"init": np.eye(2, 4), "n_components": 3}, "init has 2 rows but n_components=3"),
    ({"init": np.full((2, 4), np.nan)}, "init contains NaN"),
    ({"init": "kmeans"}, "init"),
    ({"objective": "h"}, "objective"),
    ({"working_memory": 0}, "working_memory"),
])
def test_bad_parameters_raise(params, match, iris):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        NCA(**params).fit(X, y)


def test_bad_data_raises_clear_errors(iris):
    X, y = iris
    with pytest.raises(ValueError, match="NaN"):
        NCA().fit(np.where(X > 2, np.nan, X), y)
    alone = y.copy()
    alone[0] = 7
    with pytest.raises(ValueError, match=r"objective='g' needs two points in every class: classes \[7\]"):
        NCA(objective="g").fit(X, alone)
    assert NCA(objective="f", max_iter=200).fit(X, alone).objective_ > 140  # the lone point counts 0


def test_duplicate_points_fit(iris):
    X, y = iris
    X2, y2 = np.vstack([X, X[:10]]), np.concatenate([y, y[:10]])
    model = NCA(n_components=2, max_iter=200).fit(X2, y2)
    assert np.all(np.isfinite(model.components_)) and model.objective_ > 140
