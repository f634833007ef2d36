"""``lmnn-sdp experiments --quick`` end to end on a LocalCluster of 2 worker processes, and a
resumed run: one result row deleted (as a run killed before that task finished), the rerun
computes that task only, redraws the figures from the store's cache and exports the table, and
a run on a new store restores it from the export and computes nothing;
Ctrl-C on the command (a subprocess); two runs at once on one store."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import distributed
import pytest

from validation.cli import main
from validation.experiments.gate import QUICK_GATE_N, gate_environment
from validation.experiments.store import ResultStore
from validation.records import read_record

ERRORS = ("dataset", "method", "splits", "test_error_mean", "test_error_std",
          "train_loo_error_mean", "train_loo_error_std", "paper_test_error")


def error_table(report_dir) -> list[tuple]:
    line, rows = read_record(report_dir / "results.csv")
    assert line.startswith("Written by ") and " at commit " in line
    return [tuple(row[c] for c in ERRORS) for row in rows]


ROOT = Path(__file__).resolve().parents[3]
COUNTS = re.compile(r"(\d+) ok, (\d+) failed, (\d+) skipped, (\d+) refused, (\d+) finished, (\d+) by another run")


@pytest.mark.slow
def test_quick_run_end_to_end_then_resume_after_losing_a_row(tmp_path, capsys, monkeypatch):
    argv = ["experiments", "--quick", "--splits", "1", "--datasets", "iris", "wine",
            "--methods", "euclidean", "rca", "lmnn", "--results", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "6 ok, 0 failed, 0 skipped, 0 refused, 0 finished" in out
    assert "| lmnn | 1 |" in out and "## wine: scikit-learn wine, 178 x 13, raw" in out
    report = tmp_path / "report"
    for name in ("results.md", "table1-bars.png", "ellipses.png", "convergence.png"):
        assert (report / name).stat().st_size > 0, name
    first = error_table(report)
    assert [row[:3] for row in first] == [(d, m, "1") for d in ("iris", "wine")
                                          for m in ("euclidean", "rca", "lmnn")]

    with ResultStore(tmp_path / "results.sqlite") as store:
        rows = store.rows()
        lost = next(r for r in rows if r["dataset"] == "wine" and r["method"] == "lmnn")
        kept = {tuple(r[c] for c in ("dataset", "method")): r["finished_at"] for r in rows if r is not lost}
        assert store.delete(tuple(lost[c] for c in ("dataset", "split", "method", "params",
                                                    "code_version"))) == 1
        gates = store.gate("lmnn", gate_environment(QUICK_GATE_N))
        assert gates["passed"] and len(gates["rows"]) == 9  # --quick: instances of <= 60 points

    submitted = []
    submit = distributed.Client.submit
    monkeypatch.setattr(distributed.Client, "submit", lambda client, function, *args, **options: (
        submitted.append(function.__name__), submit(client, function, *args, **options))[1])
    drawn = (report / "ellipses.png").stat().st_mtime_ns
    assert main([*argv, "--export", str(tmp_path / "export")]) == 0
    out = capsys.readouterr().out
    assert "1 ok, 0 failed, 0 skipped, 0 refused, 5 finished, 0 by another run" in out
    assert "not made" not in out and (report / "ellipses.png").stat().st_mtime_ns > drawn
    assert submitted == ["run_task"]  # the figures came from the store's cache, not from fits
    assert error_table(report) == first
    exported = []
    for name in dict.fromkeys(row[0] for row in first):  # one record per data set
        line, rows = read_record(tmp_path / "export" / f"table1-quick-{name}.csv")
        assert line.startswith("Written by ") and {row["dataset"] for row in rows} == {name}
        exported += rows
    assert [tuple(r[c] for c in ERRORS) for r in exported] == first
    assert "| lmnn | 1 |" in (tmp_path / "export" / "table1-quick-iris.md").read_text()
    with ResultStore(tmp_path / "results.sqlite") as store:
        after = {(r["dataset"], r["method"]): r["finished_at"] for r in store.rows()}
    assert {key: after[key] for key in kept} == kept  # nothing else was recomputed

    for lost_store in tmp_path.glob("results.sqlite*"):  # the machine is lost; the export was committed
        lost_store.unlink()
    submitted.clear()
    assert main([*argv, "--export", str(tmp_path / "export"), "--no-figures"]) == 0
    assert "0 ok, 0 failed, 0 skipped, 0 refused, 6 finished" in capsys.readouterr().out
    assert submitted == [] and error_table(report) == first
    assert ("wine", "lmnn") in after


def test_quick_runs_every_method_but_the_slow_ones_and_the_peers_unless_named():
    from validation.experiments.methods import METHODS
    from validation.experiments.protocol import QUICK_SKIPS
    from validation.experiments.session import default_methods

    assert default_methods() == list(METHODS)
    quick = default_methods(quick=True)
    assert set(quick) == set(METHODS) - set(QUICK_SKIPS) and "lmnn" in quick
    assert not {"multimetric", "pylmnn", "metric-learn", "mlpack", "sklearn-nca"} & set(quick)


def cli(results: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "validation", "experiments", "--quick", "--splits", "1", "--datasets",
            "iris", "wine", "--methods", "euclidean", "rca", "lmnn", "--results", str(results),
            "--workers", "1", "--no-figures", "--no-progress", *extra]


def stored(path: Path) -> int:
    with ResultStore(path) as store:
        return len(store.rows())


@pytest.mark.slow
def test_ctrl_c_prints_one_line_exits_130_releases_the_claims_and_the_rerun_computes_the_rest(tmp_path):
    store = tmp_path / "results.sqlite"
    command = cli(tmp_path)
    # a terminal's Ctrl-C reaches the whole process group: the command's and its workers'
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    while process.poll() is None and not (store.exists() and stored(store)):
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert len(err.splitlines()) == 1, err
    [line] = err.splitlines()
    finished = int(re.match(r"interrupted: (\d+) of 6 tasks finished in ", line)[1])
    assert 1 <= finished < 6 and f"resume with: python -m validation {' '.join(command[3:])}" in line
    with ResultStore(store) as results:
        assert results.claims() == {} and not results._db.execute("SELECT * FROM runs").fetchall()
        assert len(results.finished(tuple(r[c] for c in ("dataset", "split", "method", "params", "code_version"))
                                    for r in results.rows())) == finished
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    ok, *_, done, _ = map(int, COUNTS.search(again.stdout).groups())
    assert (ok, done) == (6 - finished, finished)


@pytest.mark.slow
def test_two_runs_at_once_on_one_store_compute_each_task_once_and_write_the_same_table(tmp_path):
    runs = [subprocess.Popen(cli(tmp_path, "--report", str(tmp_path / name)), cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for name in ("a", "b")]
    outs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err[-2000:] for _, err in outs]
    counts = [tuple(map(int, COUNTS.search(out).groups())) for out, _ in outs]
    assert sum(c[0] for c in counts) == 6  # fitted once each: the ok counts are this run's fits
    assert all(c[0] + c[4] + c[5] == 6 and c[1:4] == (0, 0, 0) for c in counts)
    with ResultStore(tmp_path / "results.sqlite") as store:
        rows = store.rows()
        assert len(rows) == 6 and store.claims() == {}
        by_run = sorted(sum(row["run"] == run for row in rows) for run in {row["run"] for row in rows})
        assert by_run == sorted(c[0] for c in counts if c[0])
        assert store.gate("lmnn", gate_environment(QUICK_GATE_N))["passed"]
    assert error_table(tmp_path / "a") == error_table(tmp_path / "b")
