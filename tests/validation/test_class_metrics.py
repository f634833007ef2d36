"""``validation.benchmarks.class_metrics``: the command on small generated data, run twice: the
second run resumes both solves from their checkpoints."""

from __future__ import annotations

import pytest

from validation import records
from validation.benchmarks import class_metrics

pytestmark = pytest.mark.slow  # the solves run in fresh processes


def test_the_command_certifies_both_solves_and_a_second_run_resumes_them(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    monkeypatch.setattr(class_metrics, "compile_solver", lambda: None)  # a spawned solve: seconds
    command = ["--data", "synthetic", "--n", "150", "--d", "5", "--tol", "1e-5",
               "--checkpoints", str(tmp_path / "checkpoints"), "--record", "demo"]
    runs = []
    for _ in range(2):
        assert class_metrics.main(command) == 0
        runs.append(records.read_record(tmp_path / "demo.csv")[1])
    first, second = runs
    assert [row["solve"] for row in first] == ["LMNN (start)", "class metrics", "both"]
    start, classes, both = first
    assert (start["classes"], classes["classes"]) == ("1", "3")
    for row in first:
        assert row["status"] == "certified"
        assert float(row["gap"]) <= 1e-5
        assert float(row["lower"]) <= float(row["upper"])
        assert 0.0 <= float(row["error"]) < 0.5
    assert float(classes["upper"]) <= float(start["upper"])  # eq. 16 at its optimum, against eq. 14's
    assert float(both["seconds"]) == float(start["seconds"]) + float(classes["seconds"])
    assert [row["resumed"] for row in first] == ["False", "False", "False"]
    assert [row["resumed"] for row in second] == ["True", "True", "True"]
    for row, again in zip(first, second):  # the same solves, read back from their checkpoints
        assert (again["upper"], again["lower"], again["newton"]) == (row["upper"], row["lower"], row["newton"])
    assert sorted(path.name.rsplit("-", 1)[1] for path in (tmp_path / "checkpoints").iterdir()) == ["classes.ckpt", "start.ckpt"]
