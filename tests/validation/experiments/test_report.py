"""The report: mean ± std over splits, Table 1 beside it, unfinished tasks listed."""

from __future__ import annotations

import math

import pytest

from validation.experiments.paper import TABLE_1, paper_error
from validation.experiments.report import mean_std, summarise, write_tables
from validation.records import provenance, read_record

PROVENANCE = provenance("lmnn-sdp experiments --report R")


PARAMS = '{"data": {"max_rows": null}, "method": {}}'


def row(dataset, method, split, test, loo=0.05, status="ok", stats=None, error=None, version="v1",
        finished_at="2026-11-26T00:00:00+00:00"):
    return {"dataset": dataset, "method": method, "split": split, "params": PARAMS,
            "code_version": version, "test_error": test, "train_loo_error": loo, "fit_seconds": 2.0,
            "status": status, "stats": stats or {}, "error": error, "finished_at": finished_at}


def test_mean_and_sample_std():
    assert mean_std([1.0, 2.0, 6.0]) == pytest.approx((3.0, math.sqrt(7.0)))
    mean, std = mean_std([4.0])
    assert mean == 4.0 and math.isnan(std)
    assert all(math.isnan(v) for v in mean_std([]))
    assert mean_std([1.0, float("nan"), 3.0]) == pytest.approx((2.0, math.sqrt(2.0)))


def test_summary_in_percent_beside_table_1():
    rows = [row("letters", "lmnn", 0, 0.04, stats={"certified_gap": 2e-7, "active_triplets": 100}),
            row("letters", "lmnn", 1, 0.02, stats={"certified_gap": 5e-7, "active_triplets": 300}),
            row("letters", "lmnn", 2, float("nan"), status="failed", error="Traceback\nMemoryError"),
            row("iris", "svm", 0, 0.10, loo=float("nan"))]
    lmnn, svm = summarise(rows)
    assert lmnn["splits"] == 2 and lmnn["not_finished"] == 1
    assert lmnn["test_error_mean"] == pytest.approx(3.0)
    assert lmnn["test_error_std"] == pytest.approx(math.sqrt(2.0))
    assert lmnn["paper_test_error"] == 3.60 and lmnn["certified_gap_max"] == 5e-7
    assert lmnn["active_triplets_mean"] == 200 and lmnn["not_converged"] == 0
    assert svm["paper_test_error"] == 3.45 and math.isnan(svm["train_loo_error_mean"])
    assert svm["active_triplets_mean"] is None


def test_fits_that_stopped_short_are_counted_beside_the_gap(tmp_path):
    # a fit that hit its iteration limit keeps its row; the report says so beside the gap
    rows = [row("letters", "multimetric", 0, 0.03, stats={"certified_gap": 9e-7, "converged": True}),
            row("letters", "multimetric", 1, 0.02, stats={"certified_gap": 4e-6, "converged": False})]
    [line] = summarise(rows)
    assert line["not_converged"] == 1 and line["certified_gap_max"] == 4e-6
    md, _ = write_tables(rows, tmp_path)
    assert "| 4e-06 (1 not converged) |" in md.read_text()


def test_markdown_and_csv(tmp_path):
    rows = [row("iris", "lmnn", 0, 0.10), row("iris", "lmnn", 1, 0.30),
            row("iris", "mmc", 0, float("nan"), status="refused",
                error="refused: mmc needs fast solvers whose cross-check ... failed")]
    md, csv_path = write_tables(rows, tmp_path / "report", command="lmnn-sdp experiments --report R")
    text = md.read_text()
    assert "| lmnn | 2 | 20.00 ± 14.14 | 4.37 | 5.00 ± 0.00 | 2 | - | - |" in text
    assert "| mmc | 0 (1 not finished) | - | 3.55 |" in text
    assert "| iris/0/mmc | refused | refused: mmc needs fast solvers" in text
    line, lines = read_record(csv_path)
    assert line == PROVENANCE and f"{PROVENANCE}\n" in text
    assert [line["method"] for line in lines] == ["lmnn", "mmc"]
    assert float(lines[0]["test_error_std"]) == pytest.approx(14.142135623730951)
    assert lines[1]["test_error_mean"] == "" and lines[1]["not_finished"] == "1"


def test_table_1_transcription_spot_checks():
    # letters row of Table 1 (sec. 4) and the README's references 3.60 / energy 2.67
    assert paper_error("letters", "lmnn") == 3.60 and paper_error("letters", "energy") == 2.67
    assert paper_error("letters", "energy-matlab") == 2.67  # Table 1's energy row, another rule
    assert paper_error("mnist", "multimetric") == 1.18 and paper_error("wine", "euclidean") == 25.00
    assert paper_error(None, "lmnn") is None and paper_error("iris", "pylmnn") is None
    assert all(0 < v < 50 for column in TABLE_1.values() for v in column.values())


def test_an_export_keeps_every_task_row_and_tables_each_methods_fullest_code_version(tmp_path):
    from validation.experiments.report import export_datasets, newest, read_tasks, tasks_path
    rows = [row("letters", "lmnn", 0, 0.04, version="old", finished_at="2026-11-01T00:00:00+00:00"),
            row("letters", "lmnn", 1, 0.02, version="old", finished_at="2026-11-01T00:00:00+00:00"),
            row("letters", "lmnn", 0, 0.03, version="new", loo=float("nan")),  # fewer: the old one is tabled
            row("letters", "svm", 0, 0.05, version="a", finished_at="2026-11-01T00:00:00+00:00"),
            row("letters", "svm", 0, 0.06, version="b")]  # a tie: the newer one is tabled
    assert [(r["method"], r["code_version"], r["split"]) for r in newest(rows)] == [
        ("lmnn", "old", 0), ("lmnn", "old", 1), ("svm", "b", 0)]
    export_datasets(rows, tmp_path, "table1", command="python -m test")
    back = read_tasks(tasks_path(tmp_path, "table1", "letters"))
    assert len(back) == 5 and back[0]["code_version"] == "new" and back[0]["train_loo_error"] is None  # NaN: null
    assert {(r["code_version"], r["split"], r["test_error"]) for r in back} == {
        (r["code_version"], r["split"], r["test_error"]) for r in rows}
    table = read_record(tmp_path / "table1-letters.csv")[1]
    assert [(r["method"], r["splits"], r["code_version"]) for r in table] == [("lmnn", "2", "old"), ("svm", "1", "b")]
    assert read_tasks(tmp_path / "absent.jsonl") == []
