"""The command line: the main job certifies, the data subcommand is reachable."""

from __future__ import annotations

from validation.__main__ import main
from validation.exact import certify_bundled, format_table


def test_main_job_certifies_iris(capsys):
    assert main(["--data", "iris"]) == 0
    out = capsys.readouterr().out
    assert "all 2 solves certified" in out
    assert "226.7394142" in out  # the certified optimum of iris at k=3, mu=0.5


def test_main_job_fails_loudly_when_not_certified(capsys, monkeypatch):
    import validation.__main__ as cli

    rows = certify_bundled(["iris"], ["cutting-plane"])
    rows[0]["certified"] = False
    monkeypatch.setattr(cli, "certify_bundled", lambda *args, **kwargs: rows)
    assert main(["--data", "iris"]) == 1
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
