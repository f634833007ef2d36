"""The cold-start benchmark's reading of its rows: the issue's two targets."""

from __future__ import annotations

from validation.benchmarks.cold_start import targets


def row(part, run, cache, process_s, fit_s):
    return {"part": part, "run": run, "cache": cache, "process_s": process_s, "fit_s": fit_s}


def test_the_iris_target_is_the_median_ratio_of_cold_to_warm_processes():
    rows = [row("iris", "p1", "empty", 3.0, 2.0), row("iris", "p2", "filled", 1.0, 0.2),
            row("iris", "p3", "empty", 5.0, 4.0), row("iris", "p4", "filled", 2.0, 0.2),
            row("iris", "p5", "empty", 1.5, 0.5), row("iris", "p6", "filled", 1.0, 0.2)]
    (line,) = targets(rows)
    assert "3.00, 2.50, 1.50 (median 2.50)" in line and "not reached" in line


def test_the_letters_target_compares_the_first_fits():
    rows = [row("letters", "fast_solver.LMNN", "empty", 5.0, 3.0), row("letters", "PyLMNN 1.6.4", "first", 10.0, 9.3),
            row("letters", "fast_solver.LMNN", "filled", 4.0, 2.0), row("letters", "PyLMNN 1.6.4", "second", 10.0, 9.0)]
    (line,) = targets(rows)
    assert "= 3.10" in line and line.endswith("reached.") and "not" not in line


def test_no_target_is_claimed_without_its_rows():
    assert targets([row("iris", "p1", "empty", 3.0, 2.0)]) == []
