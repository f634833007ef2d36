"""The command line: the main job cross-checks, ``exact`` certifies, the others are reachable."""

from __future__ import annotations

from validation.__main__ import main
from validation.exact import certify_bundled, format_table


def test_main_job_is_the_crosscheck(capsys):
    assert main(["--suite", "builtin", "--instances", "rank-deficient", "class-of-k+1"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 passed (tolerance 1e-06 relative)" in out
    assert "48.37139799" in out  # the certified optimum of the rank-deficient instance


def test_crosscheck_fails_a_fast_solver_that_does_not_prove_its_gap(monkeypatch):
    import fast_solver
    from validation import crosscheck
    from validation.instances import builtin_instances

    monkeypatch.setitem(crosscheck.FAST_SOLVERS, "lmnn", lambda problem, tol: fast_solver.solve(problem, max_iter=3))
    instance = [i for i in builtin_instances() if i.name.startswith("iris-n60")]
    row = crosscheck.crosscheck(instance, progress=False)[0]
    assert not row["converged"] and not row["passed"]


def test_medium_instances_are_skipped_with_the_fetch_command_when_data_is_absent(monkeypatch, tmp_path):
    from validation import datasets
    from validation.instances import medium_instances

    monkeypatch.setenv("LMNN_SDP_DATA", str(tmp_path))
    monkeypatch.setattr(datasets, "SYSTEM_ROOT", tmp_path)
    found, skipped = medium_instances()
    assert found == [] and len(skipped) == 4
    assert all("python -m validation data fetch" in message for message in skipped)


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
