"""MLNG killed with SIGKILL and resumed from its checkpoint ends as an uninterrupted fit, bit for bit."""

import time
from dataclasses import astuple

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.preprocessing import scale

from fast_solver import MLNG, fit_mlng, minimize_nca
from fast_solver.checkpoint import CheckpointError

X, y = load_wine(return_X_y=True)
X, y = scale(X)[::2], y[::2]  # 89 points
OPTIONS = {"k": 3, "C": 1.0, "batch_size": 4, "max_epochs": 30, "tol": 0.0, "random_state": 0}  # 19 epochs
PAUSE = 0.05  # seconds the child spends in each epoch's callback, so it runs >= 19 x PAUSE
RUNNING = 19 * PAUSE  # what the kill points are drawn over, however loaded the machine


def pause(*args):
    """The killed fits' callback (a callback does not change the fit)."""
    time.sleep(PAUSE)


def fit(path, **options):
    """The checkpointed fit the child process runs (module level, so it pickles)."""
    return fit_mlng(X, y, **{**OPTIONS, **options}, checkpoint=path, checkpoint_interval=0)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted fit, the same fit saving a checkpoint after every epoch, and the
    checkpoint it left at its end."""
    path = tmp_path_factory.mktemp("reference") / "mlng.ckpt"
    return fit_mlng(X, y, **OPTIONS), fit(path), path


def assert_same_fit(result, expected):
    assert np.array_equal(result.metric, expected.metric) and np.array_equal(result.components, expected.components)
    assert (result.objective, result.mean_loss, result.n_epochs, result.n_steps, result.status) == (
        expected.objective, expected.mean_loss, expected.n_epochs, expected.n_steps, expected.status)
    assert [astuple(e)[:-1] for e in result.history] == [astuple(e)[:-1] for e in expected.history]  # not seconds


def resumed(path):
    """The fit resumed in this process, and the first epoch it ran (1 when it started afresh)."""
    seen = []
    result = fit_mlng(X, y, **OPTIONS, checkpoint=path, checkpoint_interval=0, callback=lambda e: seen.append(e.epoch))
    return result, seen[0] if seen else None


def test_saving_checkpoints_does_not_change_the_fit(reference):
    expected, with_checkpoints, _ = reference
    assert_same_fit(with_checkpoints, expected)
    assert expected.n_epochs == 19 and expected.converged


@pytest.mark.slow
@pytest.mark.parametrize("kills", [1, 1, 1, 2], ids=["once-a", "once-b", "once-c", "twice"])
def test_a_fit_killed_at_random_points_resumes_bit_for_bit(tmp_path, kill_during, reference, kills, request):
    expected = reference[0]
    rng = np.random.default_rng(request.node.callspec.indices["kills"])
    path = tmp_path / "mlng.ckpt"
    for after in rng.uniform(0.0, 0.5 * RUNNING / kills, size=kills):
        assert kill_during(fit, path, checkpoint=path, after=after, callback=pause)
    result, first = resumed(path)
    assert 1 < first <= expected.n_epochs  # resumed from a saved epoch, not from W0
    assert_same_fit(result, expected)


def test_a_finished_fit_returns_its_result_at_once(tmp_path, reference):
    expected, _, finished = reference
    path = tmp_path / "mlng.ckpt"
    path.write_bytes(finished.read_bytes())
    written = path.stat().st_mtime_ns
    result, first = resumed(path)
    assert first is None and path.stat().st_mtime_ns == written  # read, not rewritten
    assert_same_fit(result, expected)


@pytest.mark.parametrize("damage", ["truncated", "edited"])
def test_a_damaged_checkpoint_is_refused(tmp_path, damage):
    path = tmp_path / "mlng.ckpt"
    fit(path, max_epochs=2)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncated" else data[:-30] + bytes([data[-30] ^ 1]) + data[-29:])
    with pytest.raises(CheckpointError, match="damaged"):
        fit(path, max_epochs=2)


@pytest.mark.parametrize("other", [{"tol": 1e-6}, {"max_epochs": 3}, {"k": 2}, {"C": 0.5}, {"batch_size": 5},
                                   {"random_state": 1}, {"W0": np.eye(13)}, {"loss_matrix": 2 - 2 * np.eye(3)}])
def test_a_checkpoint_of_other_options_is_refused(tmp_path, other):
    path = tmp_path / "mlng.ckpt"
    fit(path, max_epochs=2)
    with pytest.raises(CheckpointError, match="other inputs or options"):
        fit(path, **{"max_epochs": 2, **other})


def test_a_checkpoint_of_other_data_or_another_fit_is_refused(tmp_path):
    path = tmp_path / "mlng.ckpt"
    fit(path, max_epochs=2)
    with pytest.raises(CheckpointError, match="other inputs or options"):
        fit_mlng(X[1:], y[1:], **{**OPTIONS, "max_epochs": 2}, checkpoint=path)
    nca = tmp_path / "nca.ckpt"
    minimize_nca(X, y, np.eye(2, 13), max_iter=1, checkpoint=nca)
    with pytest.raises(CheckpointError, match="'nca' fit, not of this 'mlng'"):
        fit(nca)


def test_a_random_state_is_needed_and_a_generator_resumes_from_its_starting_state(tmp_path):
    with pytest.raises(ValueError, match="checkpoint needs a fixed random_state"):
        fit(tmp_path / "a", random_state=None)
    with pytest.raises(ValueError, match="checkpoint needs a fixed random_state"):
        MLNG(checkpoint=tmp_path / "b").fit(X, y)
    first = fit(tmp_path / "c", max_epochs=2, random_state=np.random.RandomState(0))
    again = fit(tmp_path / "c", max_epochs=2, random_state=np.random.RandomState(0))
    assert np.array_equal(first.metric, again.metric)
    assert np.array_equal(first.metric, fit(None, max_epochs=2).metric)  # RandomState(0) draws as the seed 0


@pytest.mark.slow
def test_the_estimator_killed_and_refitted_ends_as_an_uninterrupted_fit(tmp_path, kill_during):
    path = tmp_path / "mlng.ckpt"
    params = {"k": 3, "C": 1.0, "batch_size": 4, "max_iter": 30, "tol": 0.0, "random_state": 0}
    expected = MLNG(**params).fit(X, y)
    assert kill_during(MLNG(**params, checkpoint=path, checkpoint_interval=0, callback=pause).fit, X, y,
                       checkpoint=path, after=0.3 * RUNNING)
    seen = []
    mlng = MLNG(**params, checkpoint=str(path), checkpoint_interval=0, callback=lambda e: seen.append(e.epoch))
    mlng.fit(X, y)
    assert 1 < seen[0] and seen[-1] == mlng.n_iter_ == expected.n_iter_
    assert np.array_equal(mlng.metric_, expected.metric_) and mlng.objective_ == expected.objective_


@pytest.mark.parametrize("params", [{"checkpoint": 3}, {"checkpoint_interval": -1.0}])
def test_the_estimator_validates_its_checkpoint_parameters(params):
    with pytest.raises(ValueError, match="checkpoint"):
        MLNG(random_state=0, **params).fit(X, y)
