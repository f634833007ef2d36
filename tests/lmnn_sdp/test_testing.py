"""lmnn_sdp.testing: the assertion, the corpus as cases and the solver check."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fast_solver
import lmnn_sdp.lmnn
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.testing import CorpusCase, SolverCheck, assert_lmnn_optimal, check_lmnn_solver, corpus_cases, corpus_dir

ROOT = Path(__file__).resolve().parents[2]
CASES = corpus_cases()
MM_CASES = corpus_cases("multi-metric-lmnn")
ALL = CASES + MM_CASES
SMALL = ["zebra-n80-k3-mu0.5", "blobs-n60-d2-c3-k2-mu0.5", "no-impostors-n24-k3-mu0.5",
         "mm-circles-n18-k2-mu0.5-c3"]  # each solves exactly in under 0.2 s
FAST = ["blobs-n60-d2-c3-k1-mu0.2", "blobs-n50-d2-c2-k3-mu0.8", "zebra-n80-k1-mu0.2", "zebra-n80-k3-mu0.5",
        "class-of-k+1-n24-k3-mu0.5", "ten-classes-digits-n150-k1-mu0.5"]


def by_id(name: str) -> CorpusCase:
    return next(case for case in ALL if case.id == name)


def kwargs(case: CorpusCase) -> dict:
    return {"k": case.k, "mu": case.mu, "targets": case.targets, "clusters": case.clusters}


def identity(case: CorpusCase) -> np.ndarray:
    eye = np.eye(case.X.shape[1])
    return eye if case.clusters is None else np.stack([eye] * (case.clusters.max() + 1))


def above(case: CorpusCase, excess: float = 1e-4) -> np.ndarray:
    """The certified metric scaled by the c > 1 where eps(c M*) = (1 + excess) eps(M*) (eps is
    convex along the ray and least at c = 1, so it grows with c), by bisection on
    eps(c M*) = c (1 - mu) sum D(i, j) + mu sum [1 + c (D(i, j) - D(i, l))]_+ over every triplet."""
    problem = LMNNProblem(case.X, case.y, mu=case.mu, targets=case.targets, clusters=case.clusters)
    pull = (1 - problem.mu) * problem.target_distances(case.metric).sum()
    slopes = problem.triplet_margins(case.metric, problem.all_triplets()) - 1.0  # D(i, j) - D(i, l)
    eps = lambda c: c * pull + problem.mu * np.maximum(1.0 + c * slopes, 0.0).sum()  # noqa: E731
    lo, hi = 1.0, 2.0
    for _ in range(60):
        c = (lo + hi) / 2
        lo, hi = (c, hi) if eps(c) < (1 + excess) * eps(1.0) else (lo, c)
    return hi * case.metric


def stated_gap(message: str) -> float:
    return float(re.search(r"relative gap ([0-9.e+-]+) > rtol", message).group(1))


def test_the_corpus_as_cases():
    assert (len(CASES), len(MM_CASES)) == (33, 4)
    assert len({case.id for case in ALL}) == 37
    iris = by_id("iris-n150-k3-mu0.5")
    assert (iris.X.shape, iris.k, iris.mu, iris.targets.shape) == ((150, 4), 3, 0.5, (150, 3))
    assert iris.optimum == pytest.approx(226.7394142, rel=1e-9)
    for case in ALL:
        assert str(case) == case.id
        assert case.lower <= case.optimum <= case.lower * (1 + 1e-6)
        assert case.tolerance == 1e-6
    assert all(case.clusters is not None and case.metric.ndim == 3 for case in MM_CASES)
    assert (corpus_dir() / "manifest.json").is_file()
    assert corpus_cases(tolerance=0.0)[0].tolerance == pytest.approx(CASES[0].certificate.relative_gap)
    with pytest.raises(ValueError, match="kind must be one of"):
        corpus_cases("nca")


@pytest.mark.parametrize("case", ALL, ids=str)
def test_the_certified_optimum_passes(case):
    certificate = assert_lmnn_optimal(case.X, case.y, case.metric, **kwargs(case))
    assert certificate.certified and certificate.relative_gap <= 1e-6


@pytest.mark.parametrize("case", ALL, ids=str)
def test_the_identity_and_a_metric_above_the_optimum_fail(case):
    with pytest.raises(AssertionError, match="far from optimal") as info:
        assert_lmnn_optimal(case.X, case.y, identity(case), excess=False, **kwargs(case))
    assert stated_gap(str(info.value)) > 1e-3
    assert "objective eps(M) = " in str(info.value) and "lower bound on the optimum = " in str(info.value)
    if case.optimum == 0:  # every multiple of a zero optimum's metric is optimal too
        assert_lmnn_optimal(case.X, case.y, above(case), excess=False, **kwargs(case))
        return
    with pytest.raises(AssertionError, match="relative gap") as info:
        assert_lmnn_optimal(case.X, case.y, above(case), excess=False, **kwargs(case))
    assert stated_gap(str(info.value)) >= 1e-4 / (1 + 1e-4) * (1 - 1e-6)


@pytest.fixture
def optimum_solved_once(monkeypatch):
    """``solve_lmnn``, as ``excess_over_optimum`` calls it, solving each problem once: the failing
    metrics of a test share the exact solve of their case's certified optimum."""
    solve, solved = lmnn_sdp.lmnn.solve_lmnn, {}

    def once(problem, *args, **kwargs):
        key = pickle.dumps((problem.X, problem.y, problem.targets, problem.mu, problem.clusters, args, kwargs))
        if key not in solved:
            solved[key] = solve(problem, *args, **kwargs)
        return solved[key]

    monkeypatch.setattr(lmnn_sdp.lmnn, "solve_lmnn", once)


@pytest.mark.parametrize("name", SMALL)
def test_the_failure_reports_the_excess_over_the_certified_optimum(name, optimum_solved_once):
    case = by_id(name)
    with pytest.raises(AssertionError) as info:
        assert_lmnn_optimal(case.X, case.y, above(case), **kwargs(case))
    message = str(info.value)
    assert stated_gap(message) == pytest.approx(1e-4 / (1 + 1e-4), rel=1e-2)
    assert "excess over the optimum: at least" in message
    with pytest.raises(AssertionError) as info:
        assert_lmnn_optimal(case.X, case.y, identity(case), **kwargs(case))
    message = str(info.value)
    problem = LMNNProblem(case.X, case.y, mu=case.mu, targets=case.targets, clusters=case.clusters)
    eps = problem.objective(identity(case))
    assert stated_gap(message) == pytest.approx((eps - case.optimum) / eps, rel=1e-3, abs=1e-6)
    assert "proved by the certified optimum's dual bound" in message or stated_gap(message) > 0.99


def test_the_failure_names_the_triplets_with_the_largest_hinge():
    case = by_id("iris-n60-k2-mu0.5")
    with pytest.raises(AssertionError) as info:
        assert_lmnn_optimal(case.X, case.y, np.eye(4), k=case.k, mu=case.mu)
    lines = str(info.value).splitlines()
    assert lines[0] == "metric is far from optimal for LMNN (eq. 14): relative gap 0.4399 > rtol 1e-06"
    assert lines[1].startswith("  objective eps(M) = 78.975")
    assert "44.232798" in lines[2]
    problem = LMNNProblem(case.X, case.y, k=case.k, mu=case.mu)
    positive = len(problem.active_triplets(np.eye(4)))  # 238-240: iris has hinges of exactly 0 in decimal
    assert 238 <= positive <= 240
    assert lines[-1].startswith(f"  {positive} triplets (i, j, l) have a positive hinge (87.5% of eps(M)); largest "
                                "1 + D(i, j) - D(i, l): (46, 53, 38): 2.32")


@pytest.mark.parametrize("metric, problem_named", [
    (-np.eye(4), "not positive semidefinite"),
    (np.triu(np.ones((4, 4))), "not symmetric"),
    (np.eye(3), r"must have shape \(4, 4\)"),
    (np.full((4, 4), np.nan), "NaN or infinity"),
])
def test_a_bad_metric_is_refused_by_name(metric, problem_named):
    case = by_id("iris-n60-k2-mu0.5")
    with pytest.raises(AssertionError, match=f"^metric refused: .*{problem_named}"):
        assert_lmnn_optimal(case.X, case.y, metric, k=case.k, mu=case.mu)


def test_bad_arguments_are_value_errors():
    case = by_id("iris-n60-k2-mu0.5")
    with pytest.raises(ValueError, match="rtol"):
        assert_lmnn_optimal(case.X, case.y, case.metric, k=case.k, mu=case.mu, rtol=-1)
    with pytest.raises(ValueError, match="mu"):
        assert_lmnn_optimal(case.X, case.y, case.metric, k=case.k, mu=2.0)


def fast_fit(X, y, k, mu, clusters=None):
    return fast_solver.solve(LMNNProblem(X, y, k=k, mu=mu), clusters=clusters, tol=1e-7).metric


def test_the_fast_solver_passes_the_solver_check():
    check = check_lmnn_solver(fast_fit, cases=[by_id(name) for name in FAST])
    assert isinstance(check, SolverCheck)
    check.assert_passed()
    assert [row["case"] for row in check.rows] == FAST
    assert all(0 <= gap <= 1e-6 for gap in check.gaps.values())
    assert "SolverCheck: 6 of 6 cases within tolerance" in repr(check)


def test_the_solver_check_takes_an_estimator_and_multi_metric_solvers():
    case = by_id("zebra-n80-k3-mu0.5")
    check = check_lmnn_solver(fast_solver.LMNN(k=3, mu=0.5, tol=1e-7), cases=[case])
    assert check.passed and check.gaps[case.id] <= 1e-6
    mm = by_id("mm-circles-n18-k2-mu0.5-c3")
    check = check_lmnn_solver(fast_fit, kind="multi-metric-lmnn", cases=[mm])
    assert check.passed and check.gaps[mm.id] <= 1e-6


def test_the_solver_check_reports_failures():
    cases = [by_id(name) for name in FAST[:2]]
    check = check_lmnn_solver(lambda X, y, k, mu: -np.eye(X.shape[1]), cases=cases)
    assert not check.passed and len(check.failed) == 2
    assert "not positive semidefinite" in check.rows[0]["error"] and np.isnan(check.rows[0]["gap"])
    check = check_lmnn_solver(lambda X, y, k, mu: 2 * np.eye(X.shape[1]), cases=cases)
    problem = LMNNProblem(cases[0].X, cases[0].y, k=cases[0].k, mu=cases[0].mu)
    eps = problem.objective(2 * np.eye(2))
    assert check.rows[0]["gap"] == pytest.approx((eps - cases[0].lower) / eps, rel=1e-9)
    assert check.worst["gap"] == max(check.gaps.values())
    with pytest.raises(TypeError, match="fit must be"):
        check_lmnn_solver(42)


@pytest.mark.slow
def test_importing_the_testing_api_loads_neither_cvxpy_nor_pytest_nor_the_fast_solver():
    code = ("import sys, lmnn_sdp.testing; lmnn_sdp.testing.corpus_cases(); "
            "bad = {'cvxpy', 'pytest', 'fast_solver', 'validation'} & set(sys.modules); assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


OUTSIDE = '''
import numpy as np
from lmnn_sdp.testing import assert_lmnn_optimal, assert_mmc_optimal, check_lmnn_solver

def test_the_certified_metric_is_optimal(lmnn_case):
    assert_lmnn_optimal(lmnn_case.X, lmnn_case.y, lmnn_case.metric, k=lmnn_case.k, mu=lmnn_case.mu,
                        targets=lmnn_case.targets)

def test_the_identity_is_not(lmnn_case):
    try:
        assert_lmnn_optimal(lmnn_case.X, lmnn_case.y, np.eye(lmnn_case.X.shape[1]), k=lmnn_case.k,
                            mu=lmnn_case.mu, excess=False)
    except AssertionError as err:
        assert "relative gap" in str(err)
    else:
        raise AssertionError("the identity passed")

def test_multi_metric(mm_lmnn_case):
    c = mm_lmnn_case
    assert_lmnn_optimal(c.X, c.y, c.metric, k=c.k, mu=c.mu, clusters=c.clusters)

def test_mmc(mmc_case):
    assert_mmc_optimal(mmc_case.X, mmc_case.metric, y=mmc_case.y, diagonal=mmc_case.diagonal)
'''


def _plugin() -> list[str]:
    """No option when the installed project registers the plugin (its pytest11 entry point, as
    a library that installs lmnn-sdp gets it); ``-p`` otherwise (a checkout not installed)."""
    from importlib.metadata import entry_points

    registered = any(e.value == "lmnn_sdp.testing.plugin" for e in entry_points(group="pytest11"))
    return [] if registered else ["-p", "lmnn_sdp.testing.plugin"]


@pytest.mark.slow
def test_a_test_file_outside_the_package_runs_the_corpus_through_the_plugin(tmp_path):
    (tmp_path / "test_outside.py").write_text(OUTSIDE)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", *_plugin(), "-p", "no:randomly",
                          "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-o", "addopts=",
                          str(tmp_path / "test_outside.py"), "-k", "iris or wine or mm-"],
                         cwd=tmp_path, capture_output=True, text=True, env={**__import__("os").environ,
                                                                            "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "30 passed, 44 deselected" in run.stdout, run.stdout
    listed = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", *_plugin(),
                             "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-o", "addopts=",
                             str(tmp_path / "test_outside.py")], cwd=tmp_path, capture_output=True, text=True,
                            env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert "test_the_certified_metric_is_optimal[iris-n150-k3-mu0.5]" in listed.stdout
    assert "74 tests collected" in listed.stdout, listed.stdout


def test_the_plugin_is_a_pytest11_entry_point():
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["entry-points"]["pytest11"] == {"lmnn_sdp": "lmnn_sdp.testing.plugin"}
    assert "lmnn_sdp.testing" in pyproject["tool"]["setuptools"]["package-data"]


def test_a_zero_optimum_passes_a_metric_within_atol_whatever_its_gap():
    from lmnn_sdp.certificates.certificate import ATOL
    from lmnn_sdp.testing.solver_check import case_row

    case = by_id("wine-n178-k3-mu1.0")  # push only: every hinge cleared at a finite metric
    assert (case.optimum, case.lower) == (0.0, 0.0)
    problem = LMNNProblem(case.X, case.y, mu=case.mu, targets=case.targets)

    def shrunk(objective: float) -> np.ndarray:
        """The certified metric scaled down until eq. 14 reaches ``objective`` (it grows as c falls)."""
        lo, hi = 0.0, 1.0
        for _ in range(80):
            c = (lo + hi) / 2
            lo, hi = (lo, c) if problem.objective(c * case.metric) <= objective else (c, hi)
        return hi * case.metric

    near, above_atol = shrunk(0.5 * ATOL), shrunk(4 * ATOL)
    assert 0 < problem.objective(near) <= ATOL < problem.objective(above_atol)
    assert case_row(case, case.metric)["passed"] and case_row(case, near)["passed"]
    for metric in (above_atol, identity(case)):
        row = case_row(case, metric)
        assert row["gap"] == 1.0 and not row["passed"]
