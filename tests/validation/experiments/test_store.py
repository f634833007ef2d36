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
