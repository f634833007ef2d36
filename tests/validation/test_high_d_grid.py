"""``validation.benchmarks.high_d_grid``: the command on small generated data (its rows, its
skips and its growth exponents), and the rules it applies, on rows written here."""

from __future__ import annotations

import pytest

from validation import records
from validation.benchmarks import high_d_grid as grid

# PyLMNN 1.6.4 passes options to L-BFGS-B that scipy deprecates; not this project's to fix
pytestmark = pytest.mark.filterwarnings("ignore:scipy.optimize. The .disp. and .iprint.:DeprecationWarning")


def run(tmp_path, monkeypatch, *options, fits: bool = True) -> tuple[list[dict], list[dict]]:
    """The command on synthetic data with ``options``, recorded as ``demo`` in ``tmp_path``:
    its rows and its growth rows, as read back from the CSV files; ``fits``: whether any cell
    is measured (else every one is kept by ``--resume``)."""
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    compiled = []  # ``compile_solver`` spawns a process and solves (seconds): counted, not run
    monkeypatch.setattr(grid, "compile_solver", lambda: compiled.append(True))
    assert grid.main(["--data", "synthetic", "--record", "demo", *options]) == 0
    assert len(compiled) == (fits and ("fast" in options or "--solvers" not in options))  # once when we fit
    return (records.read_record(tmp_path / "demo.csv")[1], records.read_record(tmp_path / "demo-growth.csv")[1])


def number(text: str) -> float | None:
    return float(text) if text else None


@pytest.mark.slow
def test_the_command_times_our_certified_solves_and_their_growth(tmp_path, monkeypatch):
    rows, growth = run(tmp_path, monkeypatch, "--n", "300", "--d", "5", "10", "--solvers", "fast",
                       "--tols", "1e-2", "1e-4", "--budget", "300")
    assert [(row["n"], row["d"], row["solver"], row["target"]) for row in rows] == [
        ("300", d, solver, target) for d in ("5", "10")
        for solver, target in (("Euclidean", "no metric learned"), ("fast_solver", "certified 1e-2"),
                               ("fast_solver", "certified 1e-4"))]
    ours = [row for row in rows if row["solver"] == "fast_solver"]
    for row in ours:
        tol = float(row["target"].split()[1])
        assert row["status"] == "certified"
        assert 0 <= number(row["gap"]) <= tol
        assert number(row["lower"]) <= number(row["objective"])
        assert number(row["seconds"]) > 0 and number(row["peak_gib"]) > 0
        assert 0 <= number(row["error"]) <= 1 and int(row["n_iter"]) > 0
        assert row["vs_pylmnn"] == row["vs_metric_learn"] == ""
    assert all(0 <= number(row["error"]) <= 1 for row in rows if row["solver"] == "Euclidean")

    # one exponent in d per target (two sizes: no least-squares row), from the recorded seconds
    assert [(row["target"], row["axis"], row["fixed"], row["kind"]) for row in growth] == [
        ("certified 1e-2", "d", "n=300", "measured"), ("certified 1e-4", "d", "n=300", "measured")]
    for row in growth:
        seconds = {r["d"]: number(r["seconds"]) for r in ours if r["target"] == row["target"]}
        assert number(row["exponent"]) == grid.growth_exponent(5, seconds["5"], 10, seconds["10"])
    assert "`eq. 14 of PEER` rows" in (tmp_path / "demo.md").read_text()


@pytest.mark.slow
def test_a_fit_past_its_budget_is_recorded_and_the_fits_it_rules_out_are_skipped(tmp_path, monkeypatch):
    # 0.3 s is less than a fresh process needs to start and import the solver, so the first fit
    # is killed; the others are skipped without being tried
    rows, growth = run(tmp_path, monkeypatch, "--n", "300", "600", "--d", "5", "--solvers", "fast",
                       "--tols", "1e-2", "1e-4", "--budget", "0.3")
    ours = {(row["n"], row["target"]): row for row in rows if row["solver"] == "fast_solver"}
    killed = ours["300", "certified 1e-2"]
    assert killed["status"] == "not finished within budget" and number(killed["seconds"]) >= 0.3
    assert killed["detail"].startswith("killed") and killed["gap"] == ""
    tighter = ours["300", "certified 1e-4"]
    assert tighter["status"] == "skipped"
    assert tighter["detail"].startswith("the solve to certified 1e-2 ended not finished within budget")
    for target in ("certified 1e-2", "certified 1e-4"):
        assert ours["600", target]["status"] == "skipped"
    assert ours["600", "certified 1e-2"]["detail"].startswith(
        "at n=300, d=5 it was not finished within the budget of 0.3 s (cost of trying: ")
    assert growth == []  # nothing finished


@pytest.mark.slow
def test_the_peers_get_our_bound_our_time_to_their_value_and_same_run_ratios(tmp_path, monkeypatch):
    pytest.importorskip("metric_learn")
    if grid.missing_peers(["pylmnn"]):
        pytest.skip("PyLMNN is not installed (the peers extra)")
    # metric-learn ends within 1e-2 of the optimum here: its value is reached by the solve to 1e-4
    rows, growth = run(tmp_path, monkeypatch, "--n", "300", "--d", "5", "--tols", "1e-2", "1e-4", "--budget", "300")
    by_target = {(row["solver"].split()[0], row["target"].split(" of ")[-1].split()[0]): row for row in rows}
    certified = [row for row in rows if row["target"].startswith("certified")]
    assert [row["status"] for row in certified] == ["certified", "certified"]
    lower = max(number(row["lower"]) for row in certified)
    for peer in ("PyLMNN", "metric-learn"):
        fit = by_target[peer, "own"]
        assert fit["status"] == "finished" and number(fit["lower"]) == lower
        objective, lower = number(fit["objective"]), number(fit["lower"])
        assert number(fit["gap"]) == pytest.approx((objective - lower) / objective, rel=1e-12)
        assert number(fit["gap"]) > 0
        reached = by_target["fast_solver", peer]
        assert reached["target"] == f"eq. 14 of {fit['solver']}"
        assert reached["status"] == "reached" and number(reached["objective"]) <= objective
        column = grid.RATIO_COLUMNS[peer.lower()]
        assert number(reached[column]) == pytest.approx(number(fit["seconds"]) / number(reached["seconds"]))
        for ours in certified:
            assert number(ours[column]) == pytest.approx(number(fit["seconds"]) / number(ours["seconds"]))
    assert by_target["fast_solver", "PyLMNN"]["vs_metric_learn"] == ""
    assert growth == []  # one size on each axis


@pytest.mark.slow
def test_a_peer_killed_or_failed_is_recorded_and_the_grid_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(grid, "missing_peers", lambda solvers: [])  # the peer never runs here
    monkeypatch.setattr(grid, "peer_label", lambda solver: "metric-learn 0.7.0")
    measure = grid.attempt

    def attempt(function, *args, budget, progress=None):  # the peer's fits end without a metric
        if function is not grid.fit_peer:
            return measure(function, *args, budget=budget, progress=progress)
        if "-d5." in args[0]:
            return {"status": grid.OVER_BUDGET, "seconds": budget, "peak_gib": 0.5, "detail": "killed", "stages": []}
        return {"status": grid.FAILED, "detail": "MemoryError: "}
    monkeypatch.setattr(grid, "attempt", attempt)
    rows, _ = run(tmp_path, monkeypatch, "--n", "300", "--d", "5", "10", "--solvers", "fast", "metric-learn",
                  "--tols", "1e-2", "--budget", "300")
    peers = [row for row in rows if row["solver"].startswith("metric-learn")]
    assert [(row["d"], row["status"], row["gap"]) for row in peers] == [
        ("5", "not finished within budget", ""), ("10", "failed", "")]
    reached = [row for row in rows if row["target"].startswith("eq. 14 of")]
    assert [(row["status"], row["detail"]) for row in reached] == [
        ("skipped", f"{peers[0]['solver']} has no metric (not finished within budget)"),
        ("skipped", f"{peers[0]['solver']} has no metric (failed)")]
    assert all(row["vs_metric_learn"] == "" for row in rows)


def test_growth_exponent_of_a_power_law_is_its_power():
    def seconds(d):
        return 0.37 * d ** 2

    assert grid.growth_exponent(164, seconds(164), 300, seconds(300)) == pytest.approx(2, abs=1e-12)
    assert grid.fitted_exponent([32, 64, 164, 300, 784], [seconds(d) for d in (32, 64, 164, 300, 784)]) == \
        pytest.approx(2, abs=1e-12)
    with pytest.raises(ValueError, match="distinct positive sizes"):
        grid.growth_exponent(164, 1.0, 164, 2.0)
    with pytest.raises(ValueError, match="distinct positive sizes"):
        grid.fitted_exponent([64], [1.0])


def row(n, d, seconds, status="certified", solver="fast_solver", target="certified 1e-4") -> dict:
    return grid._row(n=n, d=d, solver=solver, target=target, status=status, seconds=seconds)


def test_growth_rows_along_d_and_n_with_least_squares_and_a_lower_bound():
    # seconds = n d^2 / 1e4 at n=100 and 200 over d = 10, 20, 40; the fit at (200, 40) killed at 400 s
    rows = [row(n, d, n * d ** 2 / 1e4) for n in (100, 200) for d in (10, 20, 40)]
    rows[-1] = row(200, 40, 400.0, status="not finished within budget")
    found = {(r["axis"], r["fixed"], r["from_size"], r["to_size"], r["kind"]): r["exponent"]
             for r in grid.growth_rows(rows)}
    assert set(found) == {
        ("d", "n=100", 10, 20, "measured"), ("d", "n=100", 20, 40, "measured"),
        ("d", "n=100", 10, 40, "least squares over 3 finished sizes"),
        ("d", "n=200", 10, 20, "measured"), ("d", "n=200", 20, 40, "at least (not finished within budget at d=40)"),
        ("n", "d=10", 100, 200, "measured"), ("n", "d=20", 100, 200, "measured"),
        ("n", "d=40", 100, 200, "at least (not finished within budget at n=200)")}
    for key, exponent in found.items():
        if key[-1] == "measured" or key[-1].startswith("least"):
            assert exponent == pytest.approx(2 if key[0] == "d" else 1, abs=1e-12)
    assert found["n", "d=40", 100, 200, "at least (not finished within budget at n=200)"] == \
        pytest.approx(grid.growth_exponent(100, 16.0, 200, 400.0))


def test_a_quadratic_peer_is_skipped_from_its_measured_time_at_the_smaller_n():
    label = "metric-learn 0.7.0"
    growth = grid.GROWTH_IN_N["metric-learn"]
    rows = [row(10_000, 164, 100.0, status="finished", solver=label, target="own stop")]
    reason = grid.size_skip_reason(rows, label, "own stop", 60_000, 164, 1800.0, growth)
    assert reason.startswith("predicted 3600 s > budget 1800 s: measured 100.0 s at n=10000, d=164, "
                             "times (n / 10000)^2, as each objective evaluation")
    rows[0]["seconds"] = 40.0  # 1,440 s predicted: tried
    assert grid.size_skip_reason(rows, label, "own stop", 60_000, 164, 1800.0, growth) is None
    assert grid.size_skip_reason(rows, label, "own stop", 60_000, 300, 1800.0, growth) is None  # other d


def test_time_to_a_peer_value_is_the_first_upper_bound_of_the_tightest_solve_that_reaches_it():
    stages = {"certified 1e-2": [[1.0, 120.0, 0.1, 0.1, 5], [2.0, 101.0, 0.01, 0.03, 4]],
              "certified 1e-4": [[1.1, 120.0, 0.1, 0.1, 5], [2.2, 101.0, 0.01, 0.03, 4], [3.0, 100.0, 1e-4, 0.009, 3]]}
    uppers = {"certified 1e-2": [[0.5, 130.0], [0.8, 109.0], [1.0, 108.0], [2.0, 101.0]],
              "certified 1e-4": [[0.6, 130.0], [0.9, 109.5], [1.1, 108.0], [2.2, 101.0], [3.0, 100.0]]}
    rows = [{**row(300, 5, s[-1][0], target=t), "stages": s, "uppers": uppers[t]} for t, s in stages.items()]
    reached = grid.time_to_value("PyLMNN 1.6.4", {"objective": 110.0, "status": "finished"}, rows)
    assert (reached["status"], reached["seconds"], reached["objective"]) == ("reached", 0.9, 109.5)
    assert reached["detail"] == ("the solve to certified 1e-4 holds a metric with eq. 14 109.5 <= 110 0.9 s "
                                 "into the fit")
    missed = grid.time_to_value("PyLMNN 1.6.4", {"objective": 99.0, "status": "finished"}, rows)
    assert missed["status"] == "not reached" and missed["seconds"] is None
    killed = grid.time_to_value("PyLMNN 1.6.4", {"objective": None, "status": "not finished within budget"}, rows)
    assert killed["status"] == "skipped" and killed["detail"] == "PyLMNN 1.6.4 has no metric (not finished within budget)"
    del rows[1]["uppers"]  # the tightest solve was killed: only its stage ends are known
    reached = grid.time_to_value("PyLMNN 1.6.4", {"objective": 110.0, "status": "finished"}, rows)
    assert (reached["seconds"], reached["objective"]) == (2.2, 101.0)


@pytest.mark.parametrize("tol, text", [(1e-2, "certified 1e-2"), (1e-6, "certified 1e-6"),
                                       (2.5e-3, "certified 2.5e-3"), (0.1, "certified 1e-1")])
def test_targets_name_the_tolerance(tol, text):
    assert grid.certified_target(tol) == text


@pytest.mark.parametrize("options, message", [
    (["--n", "70000"], "Fashion-MNIST has 60000 training images"),
    (["--d", "785"], "Fashion-MNIST has 60000 training images"),
    (["--tols", "0"], "--tols must lie in"),
    (["--budget", "-1"], "--budget must be a positive"),
    (["--n", "100", "--d", "164"], "PCA to d=164 needs at least"),
])
def test_bad_arguments_are_refused_by_name(options, message, capsys):
    with pytest.raises(SystemExit):
        grid.main([*options, "--no-record"])
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_resume_keeps_the_complete_cells_and_measures_the_others_whole(tmp_path, monkeypatch):
    """A run cut after its first cell (the second cell's rows half written) and run again with
    ``--resume``: the first cell's rows as recorded (not measured again: same seconds), the
    second measured whole, every row with the commit it was measured at."""
    options = ["--n", "300", "--d", "5", "10", "--solvers", "fast", "--tols", "1e-2", "1e-4", "--budget", "300"]
    first, _ = run(tmp_path, monkeypatch, *options)
    path = tmp_path / "demo.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-2]) + "\n")  # the last cell lost its last two rows
    again, growth = run(tmp_path, monkeypatch, *options, "--resume")
    assert [(row["d"], row["solver"], row["target"]) for row in again] == [
        (row["d"], row["solver"], row["target"]) for row in first]
    assert again[:3] == first[:3]
    assert [row["seconds"] for row in again[3:]] != [row["seconds"] for row in first[3:]]
    assert all(row["commit"] and row["commit"] == first[0]["commit"] for row in again)
    assert len(growth) == 2
    kept, _ = run(tmp_path, monkeypatch, *options, "--resume", fits=False)  # nothing left to measure
    assert kept == again


@pytest.mark.slow
def test_every_row_and_the_provenance_name_the_version_the_run_started_at(tmp_path, monkeypatch):
    """A commit during a run (here: the checkout's version changes after the first look) does not
    relabel what was measured: the rows and the record's provenance keep the first version."""
    versions = iter(["abc1234", *["def5678"] * 100])
    monkeypatch.setattr(grid, "code_version", lambda: next(versions))
    rows, _ = run(tmp_path, monkeypatch, "--n", "300", "--d", "5", "--solvers", "fast", "--tols", "1e-2",
                  "--budget", "300")
    assert {row["commit"] for row in rows} == {"abc1234"}
    for name in ("demo.md", "demo-growth.md"):
        assert "at commit abc1234 " in (tmp_path / name).read_text()


def test_resume_needs_a_record(capsys):
    with pytest.raises(SystemExit):
        grid.main(["--data", "synthetic", "--no-record", "--resume"])
    assert "--resume keeps the cells of the record it writes" in capsys.readouterr().err


def test_a_row_recorded_before_the_commit_column_gets_the_records_commit(tmp_path):
    path = tmp_path / "old.csv"
    path.write_text("# Written by `python -m x` at commit abc1234 on x86_64, 2 cores.\n"
                    "n,d,solver,target,status,seconds,n_iter,detail\n"
                    "300,5,Euclidean,no metric learned,finished,,,\n"
                    "300,5,fast_solver,certified 1e-2,certified,1.5,12,\"2 stages\"\n")
    rows = grid.read_rows(path)
    assert rows[1]["n"] == 300 and rows[1]["seconds"] == 1.5 and rows[1]["n_iter"] == 12
    assert rows[0]["seconds"] is None and {row["commit"] for row in rows} == {"abc1234"}
    assert grid.complete_cells(rows, ["fast"], [1e-2]) == {(300, 5): rows}
    assert grid.complete_cells(rows, ["fast"], [1e-2, 1e-4]) == {}
