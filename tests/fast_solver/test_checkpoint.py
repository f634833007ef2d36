import numpy as np
import pytest

from fast_solver.checkpoint import Checkpoint, CheckpointError, fingerprint

STATE = {"L": np.arange(6.0).reshape(2, 3), "stage": 3, "gamma": 0.1 * 0.3, "inf": np.inf,
         "rng": ("MT19937", np.arange(4, dtype=np.uint32), 2, 0, 0.0), "stages": [{"gap": 1e-3}, {"gap": None}],
         "flag": True, "scalar": np.float64(1) / 3}


def _checkpoint(tmp_path, **kw):
    return Checkpoint(tmp_path / "fit.ckpt", kind=kw.pop("kind", "lmnn"),
                      fingerprint=kw.pop("fingerprint", fingerprint(np.ones(3), k=3)), **kw)


def test_a_saved_state_loads_bit_for_bit(tmp_path):
    ckpt = _checkpoint(tmp_path)
    ckpt.save(STATE)
    state = _checkpoint(tmp_path).load()
    assert state["L"].dtype == np.float64 and np.array_equal(state["L"], STATE["L"])
    assert state["gamma"] == 0.1 * 0.3 and state["scalar"] == 1 / 3 and state["inf"] == np.inf
    assert isinstance(state["rng"], tuple) and np.array_equal(state["rng"][1], STATE["rng"][1])
    assert state["rng"][1].dtype == np.uint32
    assert state["stages"] == [{"gap": 1e-3}, {"gap": None}] and state["flag"] is True and state["stage"] == 3


def test_a_random_state_resumes_its_stream(tmp_path):
    rng = np.random.RandomState(7)
    rng.rand(5)
    _checkpoint(tmp_path).save({"rng": rng.get_state(), "gen": np.random.default_rng(3).bit_generator.state})
    state = _checkpoint(tmp_path).load()
    resumed = np.random.RandomState()
    resumed.set_state(state["rng"])
    assert np.array_equal(resumed.rand(4), rng.rand(4))
    gen = np.random.default_rng()
    gen.bit_generator.state = state["gen"]
    assert np.array_equal(gen.random(3), np.random.default_rng(3).random(3))


def test_no_file_loads_as_none_and_an_inert_checkpoint_does_nothing(tmp_path):
    assert _checkpoint(tmp_path).load() is None
    inert = Checkpoint(None, kind="lmnn", fingerprint="x", interval=0)
    inert.save(STATE)
    assert inert.load() is None and not inert.due() and not inert.enabled and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "header", "empty", "format"])
def test_a_damaged_file_is_refused(tmp_path, damage):
    ckpt = _checkpoint(tmp_path)
    ckpt.save(STATE)
    data = ckpt.path.read_bytes()
    damaged = {"truncate": data[: len(data) // 2], "flip": data[:-20] + bytes([data[-20] ^ 1]) + data[-19:],
               "header": b"not a checkpoint\n" + data, "empty": b"",
               "format": data.replace(b"checkpoint 1 ", b"checkpoint 9 ", 1)}[damage]
    ckpt.path.write_bytes(damaged)
    match = {"format": "newer", "header": "not a checkpoint", "empty": "not a checkpoint"}.get(damage, "damaged")
    with pytest.raises(CheckpointError, match=match):
        ckpt.load()


def test_a_foreign_checkpoint_is_refused(tmp_path):
    _checkpoint(tmp_path).save(STATE)
    with pytest.raises(CheckpointError, match="'lmnn' fit, not of this 'nca'"):
        _checkpoint(tmp_path, kind="nca").load()
    with pytest.raises(CheckpointError, match="other inputs or options"):
        _checkpoint(tmp_path, fingerprint=fingerprint(np.ones(3), k=4)).load()


def test_the_fingerprint_sees_data_dtype_shape_and_options():
    X = np.ones((3, 2))
    seen = {fingerprint(X, k=3), fingerprint(X.astype(np.float32), k=3), fingerprint(X.reshape(2, 3), k=3),
            fingerprint(X + 1e-12 * np.eye(3, 2), k=3), fingerprint(X, k=3, mu=0.5),
            fingerprint(X, k=np.int64(4)), fingerprint(X, M0=np.eye(2))}
    assert len(seen) == 7
    assert fingerprint(X, k=np.int64(3)) == fingerprint(X, k=3)
    with pytest.raises(TypeError, match="option of type object"):
        fingerprint(X, k=object())


def test_due_follows_the_interval(tmp_path):
    assert _checkpoint(tmp_path, interval=0).due()
    slow = _checkpoint(tmp_path, interval=3600)
    assert not slow.due()
    with pytest.raises(ValueError, match="interval"):
        _checkpoint(tmp_path, interval=-1)


def test_a_state_that_cannot_be_stored_is_refused_by_type(tmp_path):
    with pytest.raises(TypeError, match="cannot store a set"):
        _checkpoint(tmp_path).save({"x": {1, 2}})
    with pytest.raises(TypeError, match="keys must be strings"):
        _checkpoint(tmp_path).save({"x": {1: 2}})


def test_a_write_leaves_no_temporary_file(tmp_path):
    ckpt = _checkpoint(tmp_path)
    for stage in range(3):
        ckpt.save({"stage": stage})
    assert [p.name for p in tmp_path.iterdir()] == ["fit.ckpt"]
    assert ckpt.load() == {"stage": 2}


def _sleep_and_save(path, seconds):
    import time

    ckpt = Checkpoint(path, kind="demo", fingerprint="f", interval=0)
    for stage in range(1000):
        ckpt.save({"stage": stage, "payload": np.full(10_000, float(stage))})
        time.sleep(seconds)


@pytest.mark.slow
def test_a_process_killed_while_saving_leaves_a_whole_checkpoint(tmp_path, kill_during):
    path = tmp_path / "demo.ckpt"
    for after in (0.0, 0.003, 0.05):
        assert kill_during(_sleep_and_save, path, 0.0, checkpoint=path, after=after)
        state = Checkpoint(path, kind="demo", fingerprint="f").load()
        assert np.all(state["payload"] == state["stage"])


def test_a_checkpoint_of_another_release_is_refused(tmp_path, monkeypatch):
    import fast_solver.checkpoint as module

    _checkpoint(tmp_path).save(STATE)
    monkeypatch.setattr(module, "writer", lambda: "lmnn-sdp 9.9")
    with pytest.raises(CheckpointError, match="not by this release"):
        _checkpoint(tmp_path).load()
