"""Solver regression: the fast solvers certify every LMNN, multi-metric LMNN and MMC (full
and diagonal) optimum of the corpus to 1e-6."""

from __future__ import annotations

import pytest

import fast_solver
from validation import corpus
from validation.instances import builtin_instances

ENTRIES = [entry for entry in corpus.load_manifest()["instances"]
           if entry["problem"] == "lmnn"]
MULTI_METRIC = [entry for entry in corpus.load_manifest()["instances"]
                if entry["problem"] == "multi-metric-lmnn"]
MMC = [entry for entry in corpus.load_manifest()["instances"]
       if entry["problem"] in ("mmc", "mmc-diagonal")]


def test_the_regression_runs_on_exactly_the_lmnn_entries():
    assert [entry["name"] for entry in ENTRIES] == [i.name for i in builtin_instances()]


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry["name"] for entry in ENTRIES])
def test_fast_solver_matches_stored_optimum(entry):
    stored = corpus.load_certificate(entry["name"]).verify()
    problem = stored.problem
    result = fast_solver.solve(problem)
    assert result.converged and result.relative_gap <= 1e-6
    assert result.upper == pytest.approx(problem.objective(result.metric), rel=1e-9)
    assert result.upper >= stored.lower * (1 - 1e-9)  # nothing beats a certified bound
    assert result.lower <= stored.upper * (1 + 1e-9)
    assert result.upper == pytest.approx(stored.upper, rel=1e-6)


@pytest.mark.parametrize("entry", MULTI_METRIC, ids=[entry["name"] for entry in MULTI_METRIC])
def test_fast_multi_metric_matches_stored_optimum(entry):
    stored = corpus.load_certificate(entry["name"]).verify()
    problem, clusters = stored.problem, stored.clusters
    result = fast_solver.solve(problem, clusters=clusters)
    assert result.converged and result.relative_gap <= 1e-6
    assert result.upper == pytest.approx(problem.objective(result.metric, clusters), rel=1e-9)
    assert result.upper >= stored.lower * (1 - 1e-9) and result.lower <= stored.upper * (1 + 1e-9)
    assert result.upper == pytest.approx(stored.upper, rel=1e-6)


def test_the_regression_runs_on_four_mmc_entries():
    assert sorted(entry["problem"] for entry in MMC) == ["mmc", "mmc", "mmc-diagonal", "mmc-diagonal"]


@pytest.mark.parametrize("entry", MMC, ids=[entry["name"] for entry in MMC])
def test_fast_mmc_matches_stored_optimum(entry):
    stored = corpus.load_certificate(entry["name"]).verify()
    problem = stored.problem
    result = fast_solver.solve_mmc_fast(problem.X, problem.y, diagonal=problem.diagonal)
    assert result.converged and result.relative_gap <= 1e-6
    assert result.upper >= stored.lower - 1e-9 * abs(stored.lower)  # nothing beats a bound
    assert result.lower <= stored.upper + 1e-9 * abs(stored.upper)
    assert result.objective == pytest.approx(stored.objective, rel=1e-6, abs=1e-6)
