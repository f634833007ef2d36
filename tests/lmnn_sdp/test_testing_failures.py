"""lmnn_sdp.testing as a solver author meets it: a failing test's pytest output is short and
holds the numbers (gap, worst triplets or pairs, the whole table), not our source."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADER = '''import numpy as np
from lmnn_sdp.testing import assert_lmnn_optimal, assert_mmc_optimal, check_lmnn_solver, corpus_cases

'''
AUTHOR_TESTS = {
    "lmnn": '''def test_my_lmnn_metric():
    case = next(c for c in corpus_cases() if c.id == "iris-n60-k2-mu0.5")
    d = case.X.shape[1]
    assert_lmnn_optimal(case.X, case.y, np.eye(d), targets=case.targets, mu=case.mu)
''',
    "lmnn-refused": '''def test_my_lmnn_metric():
    case = next(c for c in corpus_cases() if c.id == "iris-n60-k2-mu0.5")
    assert_lmnn_optimal(case.X, case.y, -np.eye(4), targets=case.targets, mu=case.mu)
''',
    "mmc": '''def test_my_mmc_metric():
    case = corpus_cases("mmc")[0]
    assert_mmc_optimal(case.X, np.eye(case.X.shape[1]), y=case.y)
''',
    "solver-check": '''def test_my_solver():
    check_lmnn_solver(lambda X, y, k, mu: np.eye(X.shape[1])).assert_passed()
''',
}
OUR_SOURCE = ("def assert_lmnn_optimal", "def assert_mmc_optimal", "def checked_metric", "def assert_passed",
              "__tracebackhide__", "Parameters")


def run_author_test(tmp_path: Path, name: str) -> list[str]:
    """The output lines of ``python -m pytest -q -p no:cacheprovider FILE`` on the author's test."""
    path = tmp_path / f"test_{name.replace('-', '_')}.py"
    path.write_text(HEADER + AUTHOR_TESTS[name])
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
                         cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 1, run.stdout + run.stderr  # one test failed, nothing else went wrong
    return (run.stdout + run.stderr).splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("name, numbers", [
    ("lmnn", ["relative gap 0.4399 > rtol 1e-06", "certified lower bound on the optimum = 44.2327983",
              "triplets (i, j, l) have a positive hinge", "(46, 53, 38): 2.32"]),
    ("lmnn-refused", ["AssertionError: metric refused: M is not positive semidefinite"]),
    ("mmc", ["relative gap 0.5226 > rtol 1e-06", "certified upper bound on max f = 781.17184",
             "dissimilar pairs (i, j) furthest below their optimum", "(14, 100): 0.1257"]),
])
def test_a_failed_assertion_shows_the_numbers_in_at_most_40_lines(tmp_path, name, numbers):
    lines = run_author_test(tmp_path, name)
    output = "\n".join(lines)
    assert len(lines) <= 40, output
    assert all(number in output for number in numbers), output
    assert not any(source in output for source in OUR_SOURCE), output
    assert "1 failed" in lines[-1]


@pytest.mark.slow
def test_assert_passed_shows_every_row_of_the_table(tmp_path):
    from lmnn_sdp.testing import corpus_cases

    output = "\n".join(run_author_test(tmp_path, "solver-check"))
    ids = [case.id for case in corpus_cases()]
    assert f"SolverCheck: 0 of {len(ids)} cases within tolerance" in output
    assert all(f"E       {case}" in output for case in ids), output  # pytest truncates none
    assert not any(source in output for source in OUR_SOURCE), output


def test_assert_passed_lists_every_row_and_returns_none_when_all_pass():
    from lmnn_sdp.testing import SolverCheck

    row = {"case": "a", "objective": 2.0, "optimum": 1.0, "lower": 1.0, "gap": 0.0, "tolerance": 1e-6,
           "passed": True, "seconds": 0.1, "error": ""}
    rows = [{**row, "case": f"passed-{i}"} for i in range(50)]
    rows.insert(25, {**row, "case": "failed", "gap": 0.5, "passed": False})
    rows.append({**row, "case": "refused", "gap": np.nan, "passed": False, "error": "metric refused: not PSD"})
    with pytest.raises(AssertionError) as info:
        SolverCheck(tuple(rows)).assert_passed()
    lines = str(info.value).splitlines()
    assert lines[0] == "SolverCheck: 50 of 52 cases within tolerance" and len(lines) == 2 + 52
    assert [line.split()[0] for line in lines[2:]] == [r["case"] for r in rows]
    assert lines[27].split()[-1] == "False" and lines[-1].endswith("False  metric refused: not PSD")
    assert SolverCheck(tuple(rows[:25])).assert_passed() is None
