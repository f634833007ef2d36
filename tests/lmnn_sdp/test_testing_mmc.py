"""lmnn_sdp.testing for MMC: the corpus as cases and assert_mmc_optimal."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

import lmnn_sdp.mmc.solve
from lmnn_sdp.mmc.problem import mmc_objective, pair_distances
from lmnn_sdp.testing import MMCCase, assert_mmc_optimal, corpus_cases

CASES = corpus_cases("mmc") + corpus_cases("mmc-diagonal")


def value(case: MMCCase, metric) -> float:
    """f at the feasible rescaling of ``metric``: f(M) / sqrt(sum_S D_M)."""
    return mmc_objective(case.X, case.dissimilar, metric) / np.sqrt(pair_distances(case.X, case.similar, metric).sum())


def gap(case: MMCCase, metric) -> float:
    """The gap of ``metric`` against the case's certified bound, in the certificates' terms."""
    f = value(case, metric)
    return float(np.log(case.bound / f)) if case.diagonal else (case.bound - f) / case.bound


def below(case: MMCCase, shortfall: float = 1e-4) -> np.ndarray:
    """A metric on the segment from the certified one to the identity whose gap is ``shortfall``
    (bisection on the segment's parameter, from gap ~0 at M* to gap > shortfall at I)."""
    eye = np.eye(case.X.shape[1]) * np.trace(case.metric) / case.X.shape[1]
    lo, hi = 0.0, 1.0
    for _ in range(60):
        t = (lo + hi) / 2
        lo, hi = (t, hi) if gap(case, (1 - t) * case.metric + t * eye) < shortfall else (lo, t)
    return (1 - hi) * case.metric + hi * eye


def stated_gap(message: str) -> float:
    return float(re.search(r"relative gap ([0-9.e+-]+) > rtol", message).group(1))


def pairs(case: MMCCase) -> dict:
    return {"y": case.y, "diagonal": case.diagonal}


@pytest.fixture(scope="module")
def solved() -> dict:
    return {}


@pytest.fixture
def optimum_solved_once(monkeypatch, solved):
    """``solve_mmc``, as ``assert_mmc_optimal`` calls it, solving each problem once in this module:
    the failing metrics of a case share the exact solve of its certified optimum."""
    solve = lmnn_sdp.mmc.solve.solve_mmc

    def once(*args, **kwargs):
        key = pickle.dumps((args, kwargs))
        if key not in solved:
            solved[key] = solve(*args, **kwargs)
        return solved[key]

    monkeypatch.setattr(lmnn_sdp.mmc.solve, "solve_mmc", once)


def test_the_mmc_corpus_as_cases():
    assert [case.id for case in CASES] == ["mmc-iris-n150", "mmc-wine-n100", "mmc-diagonal-iris-n150",
                                           "mmc-diagonal-wine-n100"]
    for case in CASES:
        assert str(case) == case.id and case.diagonal == (case.kind == "mmc-diagonal")
        assert case.value <= case.bound and gap(case, case.metric) <= case.tolerance == 1e-6
        assert value(case, case.metric) == pytest.approx(case.certificate.value, rel=1e-12)
        assert len(case.similar) + len(case.dissimilar) == len(case.y) * (len(case.y) - 1) // 2
    assert CASES[0].bound == pytest.approx(781.1718465, rel=1e-9)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_certified_mmc_optimum_passes_and_any_multiple_too(case, monkeypatch):
    def no_solve(*args, **kwargs):
        raise AssertionError("solve_mmc called although the metric's own bound proves it")

    monkeypatch.setattr("lmnn_sdp.mmc.solve.solve_mmc", no_solve)
    for scale in (1.0, 7.5):
        certificate = assert_mmc_optimal(case.X, scale * case.metric, **pairs(case))
        assert certificate.certified and certificate.relative_gap <= 1e-6


# mmc-wine-n100 solves its full SDP (the excess of the failing metrics), about 4 s: slow;
# mmc-iris-n150 keeps the full case in the quick loop.
@pytest.mark.parametrize("case", [pytest.param(case, id=str(case), marks=[pytest.mark.slow] if case.id == "mmc-wine-n100"
                                               else []) for case in CASES])
def test_the_identity_and_a_metric_below_the_optimum_fail_with_their_gap(case, optimum_solved_once):
    eye = np.eye(case.X.shape[1])
    with pytest.raises(AssertionError, match="far from optimal") as info:
        assert_mmc_optimal(case.X, eye, **pairs(case))
    message = str(info.value)
    assert stated_gap(message) == pytest.approx(gap(case, eye), rel=1e-3)  # printed to 4 digits
    assert "proved by the certified optimum's bound" in message
    assert ("f at the certified optimum = " in message) and ("dissimilar pairs (i, j) furthest below" in message)
    metric = below(case)
    with pytest.raises(AssertionError, match="not optimal to rtol") as info:
        assert_mmc_optimal(case.X, metric, **pairs(case))
    assert stated_gap(str(info.value)) == pytest.approx(1e-4, rel=1e-3)
    assert_mmc_optimal(case.X, metric, rtol=2e-4, **pairs(case))  # within a looser rtol it passes


def test_without_the_excess_solve_only_the_metrics_own_bound_is_used():
    case = CASES[0]
    with pytest.raises(AssertionError) as info:
        assert_mmc_optimal(case.X, np.eye(4), y=case.y, excess=False)
    message = str(info.value)
    assert "proved by the metric's own bound (excess=False: no optimum solved)" in message
    assert stated_gap(message) >= gap(case, np.eye(4)) and "at the certified optimum" not in message


def test_the_failure_names_the_pairs_that_fall_shortest(optimum_solved_once):
    case = CASES[0]
    with pytest.raises(AssertionError) as info:
        assert_mmc_optimal(case.X, np.eye(4), y=case.y)
    last = str(info.value).splitlines()[-1]
    shortfall = np.sqrt(pair_distances(case.X, case.dissimilar, case.metric)) - np.sqrt(
        pair_distances(case.X, case.dissimilar, np.eye(4)) / pair_distances(case.X, case.similar, np.eye(4)).sum())
    i, j = case.dissimilar[np.argmax(shortfall)]
    assert last.startswith(f"  dissimilar pairs (i, j) furthest below their optimum, sqrt(D_opt) - sqrt(D_M): ({i}, {j}): ")
    assert f"{shortfall.max():.4g}" in last


@pytest.mark.parametrize("metric, diagonal, problem_named", [
    (-np.eye(4), False, "not positive semidefinite"),
    (np.triu(np.ones((4, 4))), False, "not symmetric"),
    (np.eye(3), False, r"must have shape \(4, 4\)"),
    (np.full((4, 4), np.nan), False, "NaN or infinity"),
    (np.ones((4, 4)), True, "diagonal=True needs a diagonal metric"),
    (np.zeros((4, 4)), False, "every similar pair distance 0"),
])
def test_a_bad_mmc_metric_is_refused_by_name(metric, diagonal, problem_named):
    case = CASES[0]
    with pytest.raises(AssertionError, match=f"^metric refused: .*{problem_named}"):
        assert_mmc_optimal(case.X, metric, y=case.y, diagonal=diagonal)


def test_bad_mmc_arguments_are_refused():
    case = CASES[0]
    for rtol in (-1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="rtol must be a finite number >= 0"):
            assert_mmc_optimal(case.X, case.metric, y=case.y, rtol=rtol)
    with pytest.raises(TypeError, match="rtol must be a real number"):
        assert_mmc_optimal(case.X, case.metric, y=case.y, rtol=True)
    with pytest.raises(ValueError, match="similar"):
        assert_mmc_optimal(case.X, case.metric, y=case.y, similar=case.similar)
    with pytest.raises(ValueError):
        assert_mmc_optimal(case.X, case.metric, y=np.zeros(len(case.y)))
