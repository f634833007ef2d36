"""``validation.benchmarks.subset_costs`` on wine: measured rows, the prediction they give, a
fit killed at its budget."""

from __future__ import annotations

import pytest

from validation import records
from validation.benchmarks import subset_costs


def run(tmp_path, monkeypatch, *options) -> list[dict]:
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    assert subset_costs.main(["--dataset", "wine", "--record", "demo", *options]) == 0
    return records.read_record(tmp_path / "demo.csv")[1]


@pytest.mark.slow
def test_two_finished_sizes_predict_the_whole_training_part(tmp_path, monkeypatch):
    rows = run(tmp_path, monkeypatch, "--rows", "80", "40", "--methods", "nca")
    assert [(row["method"], row["rows"], row["status"]) for row in rows] == [
        ("nca", "40", "finished"), ("nca", "80", "finished"), ("nca", "124", "predicted")]  # wine: 178 x 0.7
    a, b, predicted = rows
    p = subset_costs.growth_exponent(40, float(a["seconds"]), 80, float(b["seconds"]))
    assert float(predicted["seconds_exponent"]) == pytest.approx(p)
    assert float(predicted["seconds"]) == pytest.approx(float(b["seconds"]) * (124 / 80) ** p)
    assert all(float(row["seconds"]) > 0 for row in rows)


@pytest.mark.slow
def test_the_whole_training_part_is_fitted_when_asked_and_not_predicted(tmp_path, monkeypatch):
    rows = run(tmp_path, monkeypatch, "--rows", "62", "124", "--methods", "nca")
    assert [(row["rows"], row["status"]) for row in rows] == [("62", "finished"), ("124", "finished")]


@pytest.mark.slow
def test_a_fit_past_its_budget_is_recorded_and_ends_the_method(tmp_path, monkeypatch):
    # 0.3 s is less than a fresh process needs to start and load the data
    rows = run(tmp_path, monkeypatch, "--rows", "40", "80", "--methods", "nca", "mmc", "--budget", "0.3")
    assert [(row["method"], row["rows"], row["status"]) for row in rows] == [
        ("nca", "40", "not finished within budget"), ("mmc", "40", "not finished within budget")]
    assert all(float(row["seconds"]) >= 0.3 and row["detail"].startswith("killed") for row in rows)


@pytest.mark.parametrize("options, message", [
    (["--rows", "10"], "--rows must be at least 20"),
    (["--methods", "lmnn"], "--methods must be among"),
    (["--budget", "0"], "--budget must be a positive number"),
    (["--rows", "62", "125"], "--rows 125 exceeds the 124 rows of wine's training part"),
])
def test_bad_arguments_are_refused(options, message, capsys, monkeypatch):
    # wine's training part is counted in this process, not in a fresh one (the slow tests above start those)
    monkeypatch.setattr(subset_costs, "in_fresh_process", lambda function, *args, **options: function(*args))
    with pytest.raises(SystemExit):
        subset_costs.main(["--dataset", "wine", "--no-record", *options])
    assert message in capsys.readouterr().err
