"""Solver regression: the fast solver reaches every certified optimum of the corpus."""

from __future__ import annotations

import pytest

import fast_solver
from lmnn_sdp import LMNNProblem
from validation import certified_corpus

ENTRIES = certified_corpus.load_manifest()["instances"]
# Open in the fast solver (issue 4): d=30 > n/2 with mu=0.2 stops at 17.39 against the
# certified 6.2268. Strict, so the marker goes as soon as the solver reaches it.
KNOWN_MISSES = {"breast_cancer-n60-k2-mu0.2"}


def cases():
    for entry in ENTRIES:
        marks = [pytest.mark.xfail(strict=True, reason="fast solver misses this optimum (open)")] \
            if entry["name"] in KNOWN_MISSES else []
        yield pytest.param(entry, id=entry["name"], marks=marks)


@pytest.mark.parametrize("entry", cases())
def test_fast_solver_matches_stored_optimum(entry):
    data = certified_corpus.load_instance(entry["name"])
    problem = LMNNProblem(data["X"], data["y"], targets=data["targets"], mu=float(data["mu"]))
    objective = problem.objective(fast_solver.solve(problem).M)
    assert objective >= entry["lower_bound"] * (1 - 1e-9)  # nothing beats a certified bound
    assert objective == pytest.approx(entry["optimum"], rel=1e-4)
