"""Alg. 1 (fast_solver.mlng.sgd): the update with eta(t) = 1/t and the PSD projection, the
stopping rule, determinism, and the result's objective."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_wine

from fast_solver.mlng.objective import mlng_objective, surrogate_losses
from fast_solver.mlng.sgd import fit_mlng
from lmnn_sdp.core.psd import project_psd


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X[::3], y[::3]


def test_full_batch_steps_are_projected_sgd_with_rate_one_over_t(wine):
    # with one batch of all n points, step t is
    # W_{t+1} = P_S[(1 - 1/t) W_t - (1/t) (C/2) sum_i dL_i/dW (W_t)]
    X, y = wine
    n, C, k = len(X), 0.05, 3
    W0 = np.eye(X.shape[1])
    expected, negative = W0, []
    for t in (1, 2, 3):
        _, gradient = surrogate_losses(X, y, expected, k)
        step = (1 - 1 / t) * expected - (1 / t) * C / 2 * gradient
        negative.append(np.linalg.eigvalsh(step)[0] < -1e-8)
        expected = project_psd(step)
        result = fit_mlng(X, y, k=k, C=C, W0=W0, max_epochs=t, batch_size=n, tol=0.0)
        assert result.n_steps == t
        np.testing.assert_allclose(result.metric, expected, rtol=1e-9,
                                   atol=1e-9 * np.abs(expected).max())
    assert any(negative)  # the projection had something to do
    assert np.linalg.eigvalsh(result.metric)[0] >= -1e-10


def test_result_reports_the_objective_at_its_metric(wine):
    X, y = wine
    result = fit_mlng(X, y, k=3, C=0.05, max_epochs=4, tol=0.0, random_state=0)
    value, _ = mlng_objective(X, y, result.metric, 3, 0.05)
    assert result.objective == pytest.approx(value, rel=1e-10)
    losses, _ = surrogate_losses(X, y, result.metric, 3)
    assert result.mean_loss == pytest.approx(losses.mean(), rel=1e-10)
    np.testing.assert_allclose(result.components.T @ result.components, result.metric, atol=1e-10)
    assert result.n_epochs == 4 and result.n_steps == 4 * len(X) and not result.converged


def test_sgd_lowers_the_objective_and_stops_when_it_stalls(wine):
    X, y = wine
    epochs = []
    result = fit_mlng(X, y, k=3, C=0.05, batch_size=4, max_epochs=60, tol=1e-2, random_state=0,
                      callback=epochs.append)
    assert result.converged and result.status == "converged" and len(epochs) < 60
    averages = [e.objective for e in epochs]
    assert averages[-2] - averages[-1] <= 1e-2 * averages[-2]
    assert all(a - b > 1e-2 * a for a, b in zip(averages[:-2], averages[1:-1]))
    start, _ = mlng_objective(X, y, np.zeros((X.shape[1],) * 2), 3, 0.05)  # C n
    assert result.objective < 0.5 * start
    assert [e.epoch for e in epochs] == list(range(1, len(epochs) + 1))


def test_random_state_fixes_the_visiting_order(wine):
    X, y = wine
    run = lambda seed: fit_mlng(X, y, C=0.05, batch_size=5, max_epochs=2, tol=0.0,  # noqa: E731
                                random_state=seed).metric
    np.testing.assert_array_equal(run(3), run(3))
    assert not np.allclose(run(3), run(4))


def test_duplicate_points_and_a_constant_feature(wine):
    X, y = wine
    X = np.hstack([np.vstack([X, X[:10]]), np.ones((len(X) + 10, 1))])
    y = np.concatenate([y, y[:10]])
    result = fit_mlng(X, y, C=0.05, batch_size=8, max_epochs=3, tol=0.0, random_state=0)
    assert np.all(np.isfinite(result.metric)) and np.isfinite(result.objective)
    assert np.linalg.eigvalsh(result.metric)[0] >= -1e-10


@pytest.mark.parametrize("kwargs, match", [
    ({"C": 0.0}, "C must be a finite number > 0"),
    ({"C": "1"}, "C must be a finite number > 0"),
    ({"max_epochs": 0}, "max_epochs must be an integer >= 1"),
    ({"batch_size": 0}, "batch_size must be an integer >= 1"),
    ({"tol": -1.0}, "tol must be a finite number >= 0"),
    ({"W0": -np.eye(13)}, "W0 is not positive semidefinite"),
    ({"k": 50}, "k=50 is invalid"),
])
def test_bad_arguments_raise(wine, kwargs, match):
    X, y = wine
    with pytest.raises(ValueError, match=match):
        fit_mlng(X, y, **kwargs)
