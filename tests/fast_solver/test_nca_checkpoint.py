"""NCA killed with SIGKILL and resumed from its checkpoint ends as an uninterrupted fit, bit for bit."""

import time

import numpy as np
import pytest
from sklearn.datasets import make_classification

from fast_solver import NCA, fit_mlng, minimize_nca
from fast_solver.checkpoint import CheckpointError

X, y = make_classification(n_samples=200, n_features=6, n_informative=4, n_redundant=0, n_classes=3, random_state=0)
A0 = np.random.RandomState(1).standard_normal((4, 6))
OPTIONS = {"max_iter": 40, "tol": 0.0}  # 40 iterations, each a restart point
PAUSE = 0.02  # seconds the child spends in each iteration's callback, so it runs >= 40 x PAUSE
RUNNING = OPTIONS["max_iter"] * PAUSE  # what the kill points are drawn over, however loaded the machine


def pause(*args):
    """The killed fits' callback (a callback does not change the fit)."""
    time.sleep(PAUSE)


def fit(path, **options):
    """The checkpointed fit the child process runs (module level, so it pickles)."""
    return minimize_nca(X, y, A0, **{**OPTIONS, **options}, checkpoint=path, checkpoint_interval=0)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted fit, and the same fit saving a checkpoint at every iteration."""
    return minimize_nca(X, y, A0, **OPTIONS), fit(tmp_path_factory.mktemp("reference") / "nca.ckpt")


def assert_same_fit(result, expected):
    assert np.array_equal(result.components, expected.components) and result.objective == expected.objective
    assert (result.nit, result.nfev, result.status, result.message) == (
        expected.nit, expected.nfev, expected.status, expected.message)


def resumed(path):
    """The fit resumed in this process, and the first iteration it ran (1 when it started afresh)."""
    seen = []
    result = minimize_nca(X, y, A0, **OPTIONS, checkpoint=path, checkpoint_interval=0,
                          callback=lambda A, value, n_iter: seen.append(n_iter))
    return result, seen[0] if seen else None


def test_saving_checkpoints_does_not_change_the_fit(reference):
    expected, with_checkpoints = reference
    assert_same_fit(with_checkpoints, expected)
    assert expected.nit == OPTIONS["max_iter"]


@pytest.mark.slow
@pytest.mark.parametrize("kills", [1, 1, 1, 2], ids=["once-a", "once-b", "once-c", "twice"])
def test_a_fit_killed_at_random_points_resumes_bit_for_bit(tmp_path, kill_during, reference, kills, request):
    expected = reference[0]
    rng = np.random.default_rng(request.node.callspec.indices["kills"])
    path = tmp_path / "nca.ckpt"
    for after in rng.uniform(0.0, 0.5 * RUNNING / kills, size=kills):
        assert kill_during(fit, path, checkpoint=path, after=after, callback=pause)
    result, first = resumed(path)
    assert 1 < first <= OPTIONS["max_iter"]  # resumed from a saved iterate, not from A0
    assert_same_fit(result, expected)


def test_a_finished_fit_returns_its_result_at_once(tmp_path, reference):
    fit(tmp_path / "nca.ckpt")
    written = (tmp_path / "nca.ckpt").stat().st_mtime_ns
    result, first = resumed(tmp_path / "nca.ckpt")
    assert first is None and (tmp_path / "nca.ckpt").stat().st_mtime_ns == written  # read, not rewritten
    assert_same_fit(result, reference[0])


@pytest.mark.parametrize("damage", ["truncated", "edited"])
def test_a_damaged_checkpoint_is_refused(tmp_path, damage):
    path = tmp_path / "nca.ckpt"
    fit(path, max_iter=3)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncated" else data[:-30] + bytes([data[-30] ^ 1]) + data[-29:])
    with pytest.raises(CheckpointError, match="damaged"):
        fit(path, max_iter=3)


@pytest.mark.parametrize("other", [{"tol": 1e-6}, {"max_iter": 41}, {"objective": "g"}, {"working_memory": 1.0}])
def test_a_checkpoint_of_other_options_is_refused(tmp_path, other):
    path = tmp_path / "nca.ckpt"
    fit(path, max_iter=3)
    with pytest.raises(CheckpointError, match="other inputs or options"):
        fit(path, **{"max_iter": 3, **other})


def test_a_checkpoint_of_other_data_or_another_fit_is_refused(tmp_path):
    path = tmp_path / "nca.ckpt"
    fit(path, max_iter=3)
    with pytest.raises(CheckpointError, match="other inputs or options"):
        minimize_nca(X, y, 2 * A0, max_iter=3, tol=0.0, checkpoint=path)
    with pytest.raises(CheckpointError, match="other inputs or options"):
        minimize_nca(X, np.roll(y, 1), A0, max_iter=3, tol=0.0, checkpoint=path)
    mlng = tmp_path / "mlng.ckpt"
    fit_mlng(X[:30], y[:30], max_epochs=1, random_state=0, checkpoint=mlng)
    with pytest.raises(CheckpointError, match="'mlng' fit, not of this 'nca'"):
        fit(mlng)


@pytest.mark.slow
def test_the_estimator_killed_and_refitted_ends_as_an_uninterrupted_fit(tmp_path, kill_during):
    path = tmp_path / "nca.ckpt"
    params = {"n_components": 3, "init": "random", "random_state": 0, "max_iter": 40, "tol": 0.0}
    expected = NCA(**params).fit(X, y)
    assert kill_during(NCA(**params, checkpoint=path, checkpoint_interval=0, callback=pause).fit, X, y,
                       checkpoint=path, after=0.3 * RUNNING)
    seen = []
    nca = NCA(**params, checkpoint=str(path), checkpoint_interval=0, callback=lambda A, n: seen.append(n)).fit(X, y)
    assert 1 < seen[0] and seen[-1] == nca.n_iter_ == expected.n_iter_
    assert np.array_equal(nca.components_, expected.components_) and nca.objective_ == expected.objective_


@pytest.mark.parametrize("params", [{"checkpoint": 3}, {"checkpoint_interval": -1.0}])
def test_the_estimator_validates_its_checkpoint_parameters(params):
    with pytest.raises(ValueError, match="checkpoint"):
        NCA(random_state=0, **params).fit(X, y)
