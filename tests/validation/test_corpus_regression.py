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
# the entries in the quick loop: real data, mu = 1 (no pull term), k = 1, twelve classes, each
# degenerate kind, two multi-metric ones, every MMC one (0.05 s each); the others run with the
# slow tests (wine-n178 at mu = 0.99, 1.5 s, the largest): the same test on these keeps the
# behaviour in the quick loop
QUICK = {"iris-n60-k2-mu0.5", "wine-n178-k3-mu1.0", "breast_cancer-pca6-n70-k1-mu0.8",
         "blobs-n120-d3-c12-k2-mu0.5", "zebra-n80-k1-mu0.2", "duplicates-n30-k2-mu0.5",
         "rank-deficient-n15-d5-k2-mu0.2", "class-of-k+1-n24-k3-mu0.5", "no-impostors-n24-k3-mu0.5",
         "mm-circles-n18-k2-mu0.5-c3", "mm-blobs-n60-d2-k2-mu0.2-c4",
         *(entry["name"] for entry in MMC)}


def cases(entries: list[dict]) -> list:
    """``entries`` as parameters named by their entries, those not in ``QUICK`` marked slow."""
    return [pytest.param(entry, id=entry["name"], marks=() if entry["name"] in QUICK else pytest.mark.slow)
            for entry in entries]


def test_the_regression_runs_on_exactly_the_lmnn_entries():
    assert [entry["name"] for entry in ENTRIES] == [i.name for i in builtin_instances()]


def test_the_quick_entries_are_corpus_entries_of_every_kind():
    problems = {entry["name"]: entry["problem"] for entry in ENTRIES + MULTI_METRIC + MMC}
    assert QUICK <= set(problems)
    assert {problems[name] for name in QUICK} == set(problems.values())


@pytest.mark.parametrize("entry", cases(ENTRIES))
def test_fast_solver_matches_stored_optimum(entry):
    stored = corpus.load_certificate(entry["name"]).verify()
    problem = stored.problem
    result = fast_solver.solve(problem)
    assert result.converged and result.relative_gap <= 1e-6
    assert result.upper == pytest.approx(problem.objective(result.metric), rel=1e-9)
    assert result.upper >= stored.lower * (1 - 1e-9)  # nothing beats a certified bound
    assert result.lower <= stored.upper * (1 + 1e-9)
    assert result.upper == pytest.approx(stored.upper, rel=1e-6)


@pytest.mark.parametrize("entry", cases(MULTI_METRIC))
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


@pytest.mark.parametrize("entry", cases(MMC))
def test_fast_mmc_matches_stored_optimum(entry):
    stored = corpus.load_certificate(entry["name"]).verify()
    problem = stored.problem
    result = fast_solver.solve_mmc_fast(problem.X, problem.y, diagonal=problem.diagonal)
    assert result.converged and result.relative_gap <= 1e-6
    assert result.upper >= stored.lower - 1e-9 * abs(stored.lower)  # nothing beats a bound
    assert result.lower <= stored.upper + 1e-9 * abs(stored.upper)
    assert result.objective == pytest.approx(stored.objective, rel=1e-6, abs=1e-6)
