"""The core dependencies' lower bounds in pyproject.toml are the versions CI tests: the
constraints file .ci/lowest-versions.txt (used by .ci/lowest) pins exactly these packages at
exactly these bounds. Parsed with regular expressions, so it runs on Python 3.10 (no tomllib).
CI runs the README's two test commands (the quick loop and the tests marked slow), whose
workers share the cores."""

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def core_lower_bounds() -> dict[str, str]:
    """``{name: lower bound}`` of ``[project] dependencies``; each must be ``name>=X``."""
    text = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.MULTILINE | re.DOTALL)
    assert block, "pyproject.toml has no [project] dependencies list"
    bounds = {}
    for requirement in re.findall(r'"([^"]*)"', block.group(1)):
        match = re.fullmatch(rf"\s*({NAME})\s*>=\s*([0-9][0-9A-Za-z.]*)\s*", requirement)
        assert match, f"core dependency {requirement!r} is not of the form name>=X"
        bounds[_normalized(match.group(1))] = match.group(2)
    return bounds


def pinned_versions() -> tuple[list[str], dict[str, str]]:
    """The comment lines and ``{name: version}`` of .ci/lowest-versions.txt; each pin ``name==X``."""
    comments, pins = [], {}
    for line in (ROOT / ".ci" / "lowest-versions.txt").read_text().splitlines():
        if line.startswith("#"):
            comments.append(line)
        elif line.strip():
            match = re.fullmatch(rf"({NAME})==([0-9][0-9A-Za-z.]*)", line.strip())
            assert match, f"constraint {line!r} is not of the form name==X"
            assert _normalized(match.group(1)) not in pins, f"{match.group(1)} pinned twice"
            pins[_normalized(match.group(1))] = match.group(2)
    return comments, pins


def test_every_core_dependency_has_a_lower_bound():
    bounds = core_lower_bounds()
    assert {"numpy", "scipy", "scikit-learn", "cvxpy", "clarabel", "scs", "numba",
            "threadpoolctl", "tqdm", "joblib"} <= set(bounds)


def test_constraints_pin_exactly_the_core_dependencies_at_their_lower_bounds():
    comments, pins = pinned_versions()
    assert comments and "pyproject" in comments[0], "the file starts with a comment naming pyproject.toml"
    assert pins == core_lower_bounds()


def test_the_lowest_job_uses_the_constraints_and_ci_runs_it():
    lowest = (ROOT / ".ci" / "lowest").read_text()
    assert "-c .ci/lowest-versions.txt" in lowest and "set -euo pipefail" in lowest
    assert "bash .ci/lowest" in (ROOT / ".ci" / "run").read_text()


def test_the_lowest_job_runs_the_quick_loop_by_its_marker():
    lowest = (ROOT / ".ci" / "lowest").read_text()
    assert '-m pytest -q -n auto -m "not slow"' in lowest and "--ignore" not in lowest


def test_the_slow_marker_is_registered_and_named_by_the_readmes_commands():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^markers = \[\n\s+"slow: starts Python processes .*? or sleeps;', text, re.M)
    assert "--strict-markers" in text  # a misspelt marker is an error, not a test that runs in both loops


@pytest.mark.parametrize("which, expected", [
    ("tests", 'pip install -e ".[test]" && python -m pytest -q -n auto -m "not slow"'),
    ("slow", 'pip install -e ".[test]" && python -m pytest -q -n auto -m slow'),
    ("main", "pip install -e . && python -m validation")])
def test_ci_reads_the_readmes_two_commands_from_the_readme(which, expected):
    done = subprocess.run(["bash", str(ROOT / ".ci" / "readme-command"), which], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == expected
    assert f"{expected}   " in (ROOT / "README.md").read_text()  # the line as written, its comment apart
    run, front_door = ((ROOT / ".ci" / name).read_text() for name in ("run", "front-door"))
    assert "$(bash .ci/readme-command tests)" in run and 'bash -c "$test_command"' in run
    assert "$(bash .ci/readme-command slow)" in run and 'bash -c "$slow_command"' in run
    assert "$(bash .ci/readme-command main)" in front_door and front_door.count('bash -c "$main_command"') == 2
    assert "bash .ci/front-door" in run


def test_each_worker_of_pytest_n_loads_blas_and_numba_with_its_share_of_the_cores(request):
    if not getattr(request.config, "workerinput", None):
        pytest.skip("runs in a worker of pytest -n (pytest-xdist), as CI runs the tests")
    import numba
    from threadpoolctl import threadpool_info

    threads = os.environ.get("NUMBA_NUM_THREADS")
    assert threads is not None, "tests/conftest.py gave the workers no thread count"
    assert numba.config.NUMBA_NUM_THREADS == int(threads)
    blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and set(blas) == {int(os.environ["OPENBLAS_NUM_THREADS"])}
