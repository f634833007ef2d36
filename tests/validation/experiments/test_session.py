"""``lmnn-sdp experiments --quick`` end to end on a LocalCluster of 2 worker processes, and a
resumed run: one result row deleted (as a run killed before that task finished), the rerun
computes that task only and the table comes out the same."""

from __future__ import annotations

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


def test_quick_run_end_to_end_then_resume_after_losing_a_row(tmp_path, capsys):
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

    assert main([*argv, "--no-figures"]) == 0
    assert "1 ok, 0 failed, 0 skipped, 0 refused, 5 finished" in capsys.readouterr().out
    assert error_table(report) == first
    with ResultStore(tmp_path / "results.sqlite") as store:
        after = {(r["dataset"], r["method"]): r["finished_at"] for r in store.rows()}
    assert {key: after[key] for key in kept} == kept  # nothing else was recomputed
    assert ("wine", "lmnn") in after


def test_quick_runs_every_method_but_the_slow_ones_and_the_peers_unless_named():
    from validation.experiments.methods import METHODS
    from validation.experiments.protocol import QUICK_SKIPS
    from validation.experiments.session import default_methods

    assert default_methods() == list(METHODS)
    quick = default_methods(quick=True)
    assert set(quick) == set(METHODS) - set(QUICK_SKIPS) and "lmnn" in quick
    assert not {"multimetric", "pylmnn", "metric-learn", "mlpack", "sklearn-nca"} & set(quick)
