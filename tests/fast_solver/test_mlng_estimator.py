"""The MLNG estimator: check_estimator, learning, warnings, progress, callback, validation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import check_estimator

from fast_solver import MLNG
from fast_solver.mlng.objective import mlng_objective


# scikit-learn's whole suite stays quick for LMNN (test_estimators.py::test_passes_sklearn_estimator_checks)
@pytest.mark.slow
def test_passes_sklearn_estimator_checks():
    results = check_estimator(MLNG(max_iter=2), on_fail=None)  # API only: two epochs, the fewest that can stall
    failed = [r["check_name"] for r in results if r["status"] == "failed"]
    assert failed == []
    assert sum(r["status"] == "passed" for r in results) >= 45


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def test_fit_learns_a_metric_that_helps_knn(wine):
    X, y = wine
    model = MLNG(C=0.01, batch_size=4, random_state=0).fit(X[::2], y[::2])
    def knn(Z):
        return KNeighborsClassifier(3).fit(Z[::2], y[::2]).score(Z[1::2], y[1::2])
    assert knn(model.transform(X)) > knn(X)
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_, atol=1e-10)
    codes = np.unique(y[::2], return_inverse=True)[1]
    value, _ = mlng_objective(X[::2], codes, model.metric_, 3, 0.01)
    assert model.objective_ == pytest.approx(value, rel=1e-10)
    assert model.converged_ and 1 < model.n_iter_ < 100
    assert model.classes_.tolist() == [0, 1, 2]


def test_loss_matrix_follows_classes_order(wine):
    X, y = wine
    named = np.array(["c", "a", "b"])[y]
    loss = np.array([[0, 1, 5], [1, 0, 1], [5, 1, 0]], float)
    def fit(labels, loss_matrix):
        return MLNG(C=0.01, loss_matrix=loss_matrix, max_iter=1, random_state=0).fit(X, labels)
    with pytest.warns(ConvergenceWarning):
        relabelled = fit(named, loss)  # classes 0, 1, 2 are a, b, c's "c", "a", "b"
        permuted = loss[np.ix_([2, 0, 1], [2, 0, 1])]
        same = fit(y, permuted)
        default = fit(y, None)
    assert relabelled.classes_.tolist() == ["a", "b", "c"]
    np.testing.assert_allclose(relabelled.metric_, same.metric_, rtol=1e-8, atol=1e-12)
    assert not np.allclose(same.metric_, default.metric_)


def test_budget_exhausted_warns():
    X, y = load_iris(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match="did not converge.*max_iter=1 epochs"):
        model = MLNG(max_iter=1).fit(X, y)
    assert not model.converged_ and model.n_iter_ == 1


def test_verbose_prints_one_row_per_epoch_and_callback_sees_each(capsys):
    X, y = load_iris(return_X_y=True)
    seen = []
    model = MLNG(C=0.01, batch_size=10, verbose=1, callback=seen.append, random_state=0).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert "Objective" in out[1] and "Mean loss" in out[1]
    rows = [line.split() for line in out[3:]]
    assert [int(r[1]) for r in rows] == [e.epoch for e in seen] == list(range(1, model.n_iter_ + 1))
    assert [float(r[2]) for r in rows] == pytest.approx([e.objective for e in seen], rel=1e-8)


def test_identity_init_changes_the_first_step():
    X, y = load_iris(return_X_y=True)
    def fit(init):
        return MLNG(batch_size=150, max_iter=1, init=init, random_state=0).fit(X, y)
    with pytest.warns(ConvergenceWarning):
        zeros, eye, given = (fit(init).metric_ for init in ("zeros", "identity", np.eye(4)))
    np.testing.assert_array_equal(eye, given)
    assert not np.allclose(zeros, eye)


@pytest.mark.parametrize("params, match", [
    ({"k": 0}, "k"), ({"C": 0.0}, "C"), ({"init": "pca"}, "init"),
    ({"batch_size": 0}, "batch_size"), ({"max_iter": 0}, "max_iter"), ({"tol": -1.0}, "tol"),
    ({"callback": 3}, "callback"),
])
def test_bad_parameters_raise(params, match):
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match=match):
        MLNG(**params).fit(X, y)


def test_bad_data_raises_clear_errors():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="single class"):
        MLNG().fit(X, np.zeros(150))
    with pytest.raises(ValueError, match=r"k=3 is invalid.*k <= 1 "):
        MLNG(k=3).fit(X[:52], y[:52])  # class 1 has 2 members
    with pytest.raises(ValueError, match=r"init must have shape \(4, 4\)"):
        MLNG(init=np.eye(3)).fit(X, y)
    with pytest.raises(ValueError, match="init is not positive semidefinite"):
        MLNG(init=-np.eye(4)).fit(X, y)
    with pytest.raises(ValueError, match=r"loss_matrix must have shape \(3, 3\)"):
        MLNG(loss_matrix=np.ones((2, 2))).fit(X, y)
    with pytest.raises(TypeError, match="X must be real numbers, got datetime64"):
        MLNG().fit((X * 1000).astype("datetime64[s]"), y)
    with pytest.raises(TypeError, match=r"X must be real numbers, got complex128"):
        MLNG().fit(X + 1j, y)
