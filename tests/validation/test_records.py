"""Records name their command, code version and machine."""

from __future__ import annotations

import argparse
import csv
import sys

import pytest

from validation import records


def test_provenance_names_the_command_the_commit_and_the_machine(monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(records.RESULTS.parents[1] / "validation" / "__main__.py"),
                                      "--suite", "builtin"])
    line = records.provenance()
    assert line.startswith("Written by `python -m validation --suite builtin` at commit ")
    assert records.code_version() in line and "cores, Python" in line
    assert records.provenance("lmnn-sdp corpus check").startswith("Written by `lmnn-sdp corpus check`")


ROWS = [{"data": "iris", "n": 150, "gap": 1.234567891234e-7, "seconds": 12.3456, "certified": True,
         "note": "a | b"},
        {"data": "wine", "n": 178, "gap": None, "seconds": 0.1, "certified": False, "note": ""}]


def write(tmp_path, rows=ROWS, **options):
    return records.write_record("demo", rows, title="A demo", notes="Protocol: none.",
                                command="python -m demo --fast", directory=tmp_path / "results",
                                **options)


def test_record_is_markdown_and_csv_with_the_provenance(tmp_path):
    md, csv_path = write(tmp_path, formats={"seconds": ".1f"})
    assert (md.name, csv_path.name) == ("demo.md", "demo.csv")
    line = records.provenance("python -m demo --fast")
    assert md.read_text() == (
        f"# A demo\n\n{line}\n\nProtocol: none.\n\n"
        "| data | n | gap | seconds | certified | note |\n|---|---|---|---|---|---|\n"
        "| iris | 150 | 1.235e-07 | 12.3 | True | a \\| b |\n"
        "| wine | 178 |  | 0.1 | False |  |\n")
    assert "`python -m demo --fast`" in line and records.code_version() in line and " cores" in line
    assert csv_path.read_text().splitlines()[0] == "# " + line
    assert sorted(p.name for p in md.parent.iterdir()) == ["demo.csv", "demo.md"]  # no temporaries


def test_a_record_names_the_version_it_was_given_not_the_checkouts(tmp_path):
    """A run that outlasts a commit names the code it measured."""
    md, csv_path = write(tmp_path, version="abc1234")
    line = records.read_record(csv_path)[0]
    assert " at commit abc1234 on " in line and line in md.read_text()
    assert line == records.provenance("python -m demo --fast", version="abc1234")


def test_csv_rows_round_trip_at_full_precision(tmp_path):
    _, csv_path = write(tmp_path)
    line, rows = records.read_record(csv_path)
    assert line == records.provenance("python -m demo --fast")
    assert [list(row) for row in rows] == [list(ROWS[0])] * 2
    assert float(rows[0]["gap"]) == ROWS[0]["gap"] and float(rows[0]["seconds"]) == 12.3456
    assert [row["n"] for row in rows] == ["150", "178"] and rows[1]["gap"] == ""
    assert rows[0]["note"] == "a | b" and rows[1]["certified"] == "False"
    with csv_path.open(newline="") as handle:  # a plain csv reader after the comment line
        next(handle)
        assert [row["data"] for row in csv.DictReader(handle)] == ["iris", "wine"]


def test_rows_with_different_keys_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"row 1 .* missing \['seconds'\], extra \['time'\]"):
        write(tmp_path, rows=[{"n": 1, "seconds": 2.0}, {"n": 2, "time": 3.0}])
    with pytest.raises(ValueError, match="not keys of the rows"):
        write(tmp_path, columns=["data", "size"])
    with pytest.raises(ValueError, match="no rows needs its columns"):
        write(tmp_path, rows=[])
    assert not (tmp_path / "results").exists()


def test_rewrite_is_atomic(tmp_path, monkeypatch):
    md, _ = write(tmp_path)
    before = md.read_text()

    def killed(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(records.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        write(tmp_path, rows=ROWS[:1])
    assert md.read_text() == before  # the old record whole, and no temporary left behind
    assert sorted(p.name for p in md.parent.iterdir()) == ["demo.csv", "demo.md"]


def test_recorder_cuts_rows_to_its_columns_and_without_a_name_writes_nothing(tmp_path):
    recorder = records.Recorder("cut", "Cut", columns=("data", "n"), command="c",
                                directory=tmp_path)
    recorder([{**row, "extra": [1, 2]} for row in ROWS])
    assert records.read_record(tmp_path / "cut.csv")[1] == [{"data": "iris", "n": "150"},
                                                            {"data": "wine", "n": "178"}]
    assert records.Recorder("", "Nothing", directory=tmp_path / "none")(ROWS) is None
    assert not (tmp_path / "none").exists()


def test_record_option():
    parser = argparse.ArgumentParser()
    records.add_record_option(parser, "letters-family")
    assert parser.parse_args([]).record == "letters-family"
    assert parser.parse_args(["--record", "other"]).record == "other"
    assert parser.parse_args(["--no-record"]).record == ""
    assert parser.parse_args(["--record", ""]).record == ""
    assert records.module_command("validation.benchmarks.letters_family", ["--passes", "2", "a b"]) == \
        "python -m validation.benchmarks.letters_family --passes 2 'a b'"


def test_benchmark_writes_its_record_as_rows_arrive(tmp_path, monkeypatch, capsys):
    from types import SimpleNamespace

    from validation.benchmarks import exact_methods

    monkeypatch.setattr(records, "RESULTS", tmp_path)
    instances = [SimpleNamespace(name=f"case-{i}", problem=lambda: None) for i in range(2)]
    monkeypatch.setattr(exact_methods, "builtin_instances", lambda: instances)
    written, dies = [], [True]

    def measure(problem, method, multi):
        if dies[0] and len(written) == 5:  # the run dies at its sixth solve
            raise MemoryError
        csv_path = tmp_path / "exact-methods.csv"
        written.append(records.read_record(csv_path)[1] if csv_path.exists() else [])
        return {"method": method, "seconds": 1.5, "certified": True, "upper": 2.0, "gap": 1e-9}

    monkeypatch.setattr(exact_methods, "measure", measure)
    with pytest.raises(MemoryError):
        exact_methods.main([])
    assert [len(rows) for rows in written] == [0, 1, 2, 3, 4]  # each row written before the next solve
    _, kept = records.read_record(tmp_path / "exact-methods.csv")
    assert [(row["instance"], row["kind"], row["method"]) for row in kept] == [
        ("case-0", "lmnn", "aggregated"), ("case-0", "lmnn", "cutting-plane"),
        ("case-0", "multi-metric", "aggregated"), ("case-0", "multi-metric", "cutting-plane"),
        ("case-1", "lmnn", "aggregated")]  # what it measured is kept
    assert "- lmnn: on the 2 of 2 instances both certify, aggregated 3.0 s" in \
        (tmp_path / "exact-methods.md").read_text()

    dies[0] = False
    exact_methods.main(["--no-record", "--record", "x"])  # the last one counts
    assert (tmp_path / "x.md").exists()
    assert "case-1 | multi-metric | cutting-plane" in capsys.readouterr().out
