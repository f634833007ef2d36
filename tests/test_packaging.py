"""The core dependencies' lower bounds in pyproject.toml are the versions CI tests: the
constraints file .ci/lowest-versions.txt (used by .ci/lowest) pins exactly these packages at
exactly these bounds. Parsed with regular expressions, so it runs on Python 3.10 (no tomllib)."""

import re
from pathlib import Path

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


def test_the_tests_the_lowest_job_leaves_out_exist():
    ignored = re.findall(r"--ignore=(\S+)", (ROOT / ".ci" / "lowest").read_text())
    assert ignored and all((ROOT / path).is_file() for path in ignored), ignored
