"""The command line: the main job cross-checks, ``exact`` certifies, the others are reachable."""

from __future__ import annotations

from validation.__main__ import main
from validation.exact import certify_bundled, format_table


def test_main_job_is_the_crosscheck(capsys):
    assert main(["--instances", "rank-deficient", "class-of-k+1"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 passed (tolerance 0.0001 relative)" in out
    assert "48.37139799" in out  # the certified optimum of the rank-deficient instance


def test_unknown_command_is_named(capsys):
    assert main(["crosschek"]) == 2
    assert "unknown command 'crosschek'" in capsys.readouterr().err


def test_exact_certifies_iris(capsys):
    assert main(["exact", "--data", "iris"]) == 0
    out = capsys.readouterr().out
    assert "all 2 solves certified" in out
    assert "226.7394142" in out  # the certified optimum of iris at k=3, mu=0.5


def test_exact_fails_loudly_when_not_certified(capsys, monkeypatch):
    import validation.__main__ as cli

    rows = certify_bundled(["iris"], ["cutting-plane"])
    rows[0]["certified"] = False
    monkeypatch.setattr(cli, "certify_bundled", lambda *args, **kwargs: rows)
    assert main(["exact", "--data", "iris"]) == 1
    assert "not certified to relative gap 1e-06: iris (cutting-plane)" in capsys.readouterr().out


def test_rows_carry_bounds_that_bracket():
    rows = certify_bundled(["iris"], ["aggregated"])
    assert rows[0]["lower_bound"] <= rows[0]["objective"]
    assert rows[0]["gap"] <= 1e-6 and rows[0]["certified"]
    assert "226.7394142" in format_table(rows)


def test_data_subcommand_is_forwarded(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("LMNN_SDP_DATA", str(tmp_path))
    assert main(["data", "list"]) in (0, 1)
    assert "mlbench" in capsys.readouterr().out
