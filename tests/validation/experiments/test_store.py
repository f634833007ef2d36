"""The SQLite results store: rows in and out, what counts as finished, the gate cache."""

from __future__ import annotations

import math

import pytest

from validation.experiments.store import ResultStore


def row(split=0, method="lmnn", status="ok", **extra):
    return {"dataset": "iris", "split": split, "method": method, "params": '{"k": 3}',
            "code_version": "abc", "status": status, **extra}


def key(split=0, method="lmnn"):
    return ("iris", split, method, '{"k": 3}', "abc")


def test_a_row_comes_back_with_its_numbers_json_and_nan(tmp_path):
    with ResultStore(tmp_path / "sub" / "results.sqlite") as store:
        store.record(row(test_error=0.25, train_loo_error=float("nan"), fit_seconds=1.5,
                         stats={"certified_gap": 3e-7, "passes": [1, 2]}, versions={"numpy": "2"}))
        [back] = store.rows()
    assert back["test_error"] == 0.25 and math.isnan(back["train_loo_error"])
    assert back["stats"] == {"certified_gap": 3e-7, "passes": [1, 2]}
    assert back["versions"] == {"numpy": "2"} and back["status"] == "ok"
    assert back["finished_at"]  # stamped on insert


def test_only_ok_rows_count_as_finished_and_failed_ones_keep_their_error(tmp_path):
    store = ResultStore(tmp_path / "r.sqlite")
    store.record(row(0, status="ok", test_error=0.1))
    store.record(row(1, status="failed", error="Traceback ...\nValueError: boom"))
    store.record(row(2, status="skipped", error="PyLMNN is not installed"))
    assert store.finished([key(0), key(1), key(2), key(3)]) == {key(0)}
    failed = store.rows([key(1)])[0]
    assert failed["status"] == "failed" and failed["error"].endswith("ValueError: boom")
    store.close()


def test_reopening_resumes_and_a_rerun_replaces_the_row(tmp_path):
    path = tmp_path / "r.sqlite"
    with ResultStore(path) as store:
        store.record(row(0, status="failed", error="killed"))
    with ResultStore(path) as store:
        assert store.finished([key(0)]) == set()
        store.record(row(0, status="ok", test_error=0.2))
        assert store.finished([key(0)]) == {key(0)}
        assert [r["status"] for r in store.rows()] == ["ok"]  # one row per task


def test_rows_follow_the_order_of_the_keys_asked_and_delete_removes_one(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        for split in range(3):
            store.record(row(split, test_error=split / 10))
        assert [r["split"] for r in store.rows([key(2), key(0), key(9)])] == [2, 0]
        assert store.delete(key(1)) == 1 and store.delete(key(1)) == 0
        assert store.finished([key(0), key(1), key(2)]) == {key(0), key(2)}


def test_other_parameters_or_code_are_other_tasks(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        store.record(row(0))
        assert store.finished([("iris", 0, "lmnn", '{"k": 4}', "abc")]) == set()
        assert store.finished([("iris", 0, "lmnn", '{"k": 3}', "new")]) == set()


@pytest.mark.parametrize("bad, message", [
    ({**row(), "status": "done"}, "status must be one of"),
    ({**row(), "colour": "red"}, "unknown \\['colour'\\]"),
    ({k: v for k, v in row().items() if k != "split"}, "needs every key column"),
])
def test_bad_rows_raise(tmp_path, bad, message):
    with ResultStore(tmp_path / "r.sqlite") as store, pytest.raises(ValueError, match=message):
        store.record(bad)


def test_gate_cache_is_keyed_by_solver_and_environment(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        assert store.gate("lmnn", "env-1") is None
        store.record_gate("lmnn", "env-1", False, "1 of 2 pass", [{"instance": "a", "passed": False}], 3.0)
        cached = store.gate("lmnn", "env-1")
        assert cached["passed"] is False and cached["rows"] == [{"instance": "a", "passed": False}]
        assert store.gate("lmnn", "env-2") is None and store.gate("mmc", "env-1") is None


def test_the_store_is_a_write_ahead_log_and_a_store_of_before_claims_gains_its_run_column(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the results table as stores before claims had it
        db.execute("CREATE TABLE results (dataset TEXT NOT NULL, split INTEGER NOT NULL, method TEXT NOT NULL, "
                   "params TEXT NOT NULL, code_version TEXT NOT NULL, test_error REAL, train_loo_error REAL, "
                   "fit_seconds REAL, eval_seconds REAL, total_seconds REAL, stats TEXT, versions TEXT, "
                   "status TEXT NOT NULL, error TEXT, worker TEXT, finished_at TEXT, "
                   "PRIMARY KEY (dataset, split, method, params, code_version))")
    with ResultStore(path) as store:
        assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        store.record(row(0), run="run-1")
        assert store.rows()[0]["run"] == "run-1"


def test_a_conversion_to_the_write_ahead_log_refused_as_locked_is_tried_again(tmp_path, monkeypatch):
    """SQLite refuses ``journal_mode = WAL`` as "database is locked" at once, without its busy
    timeout, while another process converts the same new file (two runs starting on one
    store); the store tries again. Here the first three attempts are refused."""
    import sqlite3

    from validation.experiments import store as module

    refusals, connect, silent = [3], sqlite3.connect, [False]

    class Refusing:  # a connection whose first conversions are refused
        def __init__(self, *args, **kwargs):
            self.db = connect(*args, **kwargs)

        def execute(self, statement, *args):
            if statement == "PRAGMA journal_mode = WAL" and silent[0]:  # as where WAL cannot be
                return self.db.execute("PRAGMA journal_mode")
            if statement == "PRAGMA journal_mode = WAL" and refusals[0]:
                refusals[0] -= 1
                raise sqlite3.OperationalError("database is locked")
            return self.db.execute(statement, *args)

        def __getattr__(self, name):
            return getattr(self.db, name)

        def __setattr__(self, name, value):
            if name == "db":
                object.__setattr__(self, name, value)
            else:
                setattr(self.db, name, value)

    monkeypatch.setattr(module.sqlite3, "connect", Refusing)
    with ResultStore(tmp_path / "results.sqlite") as store:
        assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        store.record(row(0))
        assert len(store.rows()) == 1
    assert refusals == [0]
    monkeypatch.setattr(module, "BUSY_SECONDS", 0.05)
    refusals[0] = 10**6  # never converted: the store says so after BUSY_SECONDS
    with pytest.raises(sqlite3.OperationalError, match="database is locked"):
        ResultStore(tmp_path / "other.sqlite")
    silent[0] = True  # the mode stays as it was without an error: named, with the fix
    with pytest.raises(sqlite3.OperationalError, match="could not be put in WAL mode.*local folder"):
        ResultStore(tmp_path / "third.sqlite")


def test_a_task_claimed_by_a_live_run_is_left_to_it_until_it_records_the_row(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as first, ResultStore(tmp_path / "r.sqlite") as second:
        a, b = first.start_run(), second.start_run()
        assert first.claim([key(0), key(1)], a).mine == {key(0), key(1)}
        claimed = second.claim([key(0), key(1), key(2)], b)
        assert claimed.mine == {key(2)} and claimed.held == {key(0): a, key(1): a}
        first.record(row(0, test_error=0.1), a)  # the row and the release: one transaction
        claimed = second.claim([key(0), key(1)], b)
        assert claimed.done == {key(0)} and claimed.held == {key(1): a} and not claimed.mine
        assert second.rows([key(0)])[0]["run"] == a
        first.end_run(a)  # ended (or interrupted) without key 1: free
        assert second.claim([key(1)], b).mine == {key(1)}
        assert first.claims() == {key(1): b, key(2): b}
        second.end_run(b)
        assert first.claims() == {}


def test_the_claims_of_a_run_without_heartbeat_expire_and_a_heartbeat_keeps_them(tmp_path):
    from validation.experiments.store import CLAIM_EXPIRY

    with ResultStore(tmp_path / "r.sqlite") as first, ResultStore(tmp_path / "r.sqlite") as second:
        a, b = first.start_run(), second.start_run()
        first.claim([key(0)], a)
        first._db.execute("UPDATE runs SET heartbeat = heartbeat - ? WHERE run = ?", (CLAIM_EXPIRY / 2, a))
        assert second.claim([key(0)], b).held == {key(0): a}  # late, not dead
        first.heartbeat(a)
        first._db.execute("UPDATE runs SET heartbeat = heartbeat - ? WHERE run = ?", (CLAIM_EXPIRY + 1, a))
        assert second.claim([key(0)], b).mine == {key(0)}  # a killed client: taken over
        assert first.claims() == {key(0): b}


@pytest.mark.slow
def test_the_claims_of_a_run_whose_process_is_gone_from_this_machine_are_free_at_once(tmp_path):
    import subprocess
    import sys

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with ResultStore(tmp_path / "r.sqlite") as first, ResultStore(tmp_path / "r.sqlite") as second:
        a, b = first.start_run(), second.start_run()
        first.claim([key(0), key(1)], a)
        assert second.claim([key(0)], b).held == {key(0): a}  # its process lives: held
        first._db.execute("UPDATE runs SET pid = ? WHERE run = ?", (int(ended.stdout), a))
        first._db.commit()
        assert second.claim([key(0)], b).mine == {key(0)}  # a killed client on this host: taken over
        assert first.claims() == {key(0): b}


def test_a_gate_is_claimed_by_one_run_and_cached_for_all(tmp_path):
    from validation.experiments.store import gate_key

    with ResultStore(tmp_path / "r.sqlite") as first, ResultStore(tmp_path / "r.sqlite") as second:
        a, b = first.start_run(), second.start_run()
        assert first.claim_gate("lmnn", "env", a) == a
        assert second.claim_gate("lmnn", "env", b) == a
        first.record_gate("lmnn", "env", True, "2 of 2 pass", [], 1.0, a)
        assert second.claim_gate("lmnn", "env", b) is None and second.gate("lmnn", "env")["passed"]
        assert gate_key("lmnn", "env") not in first.claims()


def test_figure_data_come_back_without_pickle_and_by_their_key(tmp_path):
    import numpy as np

    data = {"X": np.arange(6.0).reshape(3, 2), "labels": np.array(["a", "b"]), "gap": np.float64(3e-7),
            "stages": [{"elapsed": 0.5, "lower": float("nan")}], "n": 3}
    with ResultStore(tmp_path / "r.sqlite") as store:
        store.record_figure("ellipses", "key-1", data)
        back = store.figure("ellipses", "key-1")
        assert store.figure("ellipses", "key-2") is None and store.figure("convergence", "key-1") is None
    assert np.array_equal(back["X"], data["X"]) and back["labels"].tolist() == ["a", "b"]
    assert back["gap"] == 3e-7 and back["n"] == 3 and math.isnan(back["stages"][0]["lower"])


def test_restore_inserts_the_ok_rows_the_store_lacks_as_they_were(tmp_path):
    with ResultStore(tmp_path / "a.sqlite") as store:
        store.record(row(0, test_error=0.25, train_loo_error=float("nan"), stats={"gap": 1e-7}), run="r1")
        store.record(row(1, status="failed", error="boom"))
        saved = store.rows()
    with ResultStore(tmp_path / "b.sqlite") as store:
        store.record(row(2, test_error=0.5))
        assert store.restore([*saved, {**saved[0], "split": 2, "test_error": 0.9}]) == 1  # split 2 kept
        assert store.restore(saved) == 0
        back = {r["split"]: r for r in store.rows()}
    assert sorted(back) == [0, 2] and back[2]["test_error"] == 0.5  # failed rows are not restored
    assert back[0]["run"] == "r1" and back[0]["finished_at"] == saved[0]["finished_at"]
    assert back[0]["stats"] == {"gap": 1e-7} and math.isnan(back[0]["train_loo_error"])
