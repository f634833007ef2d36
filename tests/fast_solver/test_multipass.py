"""Multi-pass LMNN (sec. 5.1): passes, composition, re-estimated targets, the rank cut of the
pass maps, ties, stopping rules, the estimator."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine, make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_estimator

from fast_solver import MultiPassLMNN, solve, solve_multipass
from fast_solver.lmnn.multipass import RANK_RTOL, _collapsed
from lmnn_sdp import LMNNProblem
from lmnn_sdp.core.space import data_range

EXPECTED_FAILURES = {
    "check_fit2d_1feature": "a class of 3 points cannot supply k=3 target neighbours; "
                            "LMNN raises a ValueError naming k (DESIGN.md)",
}


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return LMNNProblem((X - X.mean(0)) / X.std(0), y, k=3, mu=0.5)


@pytest.fixture(scope="module")
def iris_two_passes(iris):
    """Two passes on standardized iris and the callback's calls."""
    calls = []
    result = solve_multipass(iris, max_passes=2, stop="passes", callback=lambda *args: calls.append(args))
    return result, calls


def _brute_targets(Z, y, k):
    """The k nearest same-class points of each row of Z, ties to the smaller index."""
    D = _brute_distances(Z)
    D[y[:, None] != y[None]] = np.inf
    np.fill_diagonal(D, np.inf)
    return np.argsort(D, axis=1, kind="stable")[:, :k]


def _brute_distances(Z):
    return np.sum((Z[:, None] - Z[None]) ** 2, axis=2)


def _sorted_target_distances(Z, targets):
    return np.sort(_brute_distances(Z)[np.arange(len(Z))[:, None], targets], axis=1)


def _lattice_classes():
    """Four classes, each a 3 x 3 lattice of unit spacing, at the corners of a square of side
    20: symmetric under quarter turns (the LMNN metric is isotropic) and full of exact ties."""
    lattice = np.array([(a, b) for a in range(3) for b in range(3)], float)
    corners = np.array([[0, 0], [20, 0], [0, 20], [20, 20]], float)
    return np.vstack([c + lattice for c in corners]), np.repeat(np.arange(4), 9)


def test_one_pass_is_lmnn(iris):
    one = solve_multipass(iris, max_passes=1)
    single = solve(iris)
    assert one.n_passes == 1 and one.certified and one.status == "max_iter" and not one.converged
    assert "the targets still changed after max_passes=1 passes" in one.message
    np.testing.assert_allclose(one.metric, single.metric, rtol=1e-9, atol=1e-9 * np.abs(single.metric).max())


def test_passes_compose_and_reestimate_targets(iris, iris_two_passes):
    result, _ = iris_two_passes
    first, second = result.passes
    assert result.n_passes == 2 and result.converged
    np.testing.assert_array_equal(result.targets[0], iris.targets)
    Z1 = iris.X @ first.components.T
    np.testing.assert_array_equal(np.sort(result.targets[1], axis=1),  # sets: ties keep the order
                                  np.sort(_brute_targets(Z1, iris.label_codes, 3), axis=1))
    assert not np.array_equal(result.targets[1], result.targets[0])
    # eq. 14 on inputs L1 x with M' is eq. 14 on x with L1^T M' L1
    np.testing.assert_allclose(result.metric, first.components.T @ second.metric @ first.components,
                               rtol=0, atol=1e-10 * np.abs(result.metric).max())
    mapped = LMNNProblem(Z1, iris.y, mu=0.5, targets=result.targets[1])
    assert second.upper == pytest.approx(mapped.objective(second.metric), rel=1e-9)
    raw = LMNNProblem(iris.X, iris.y, mu=0.5, targets=result.targets[1])
    assert raw.objective(result.metric) == pytest.approx(second.upper, rel=1e-9)
    for p in result.passes:
        assert p.certificate.verify().certified


def test_callback_sees_every_pass_and_the_changed_targets(iris_two_passes):
    result, calls = iris_two_passes
    changed = int(np.sum(np.any(np.sort(result.targets[1], 1) != np.sort(result.targets[0], 1), axis=1)))
    assert changed > 0
    assert [(number, n) for number, _, n in calls] == [(1, None), (2, changed)]
    assert all(got is p for (_, got, _), p in zip(calls, result.passes))


def test_pass_maps_cut_rounding_eigenvalues():
    # standardized wine (every third row), mu = 0.5: the first metric has rank 2 and 11
    # eigenvalues of rounding (~1e-17 of the largest); kept, they came back at full size
    # after the second pass's whitening (10 input directions, gap 1 after 1,000 iterations)
    X, y = load_wine(return_X_y=True)
    X, y = X[::3], y[::3]
    result = solve_multipass(LMNNProblem((X - X.mean(0)) / X.std(0), y, k=3, mu=0.5), max_passes=2,
                             stop="passes")
    spectrum = np.linalg.eigvalsh(result.passes[0].metric)
    kept = np.sum(spectrum > RANK_RTOL * spectrum[-1])
    assert kept <= 3 and np.sum(spectrum <= RANK_RTOL * spectrum[-1]) >= 10  # rounding eigenvalues, cut
    assert [data_range(p.certificate.problem).shape[1] for p in result.passes] == [13, kept]
    assert np.linalg.matrix_rank(result.components, tol=0) == 2  # zero rows, not tiny ones
    assert np.sum(np.any(result.components != 0, axis=1)) == 2
    assert result.converged


def test_targets_rule_stops_at_a_fixed_point():
    X, y = make_blobs(60, 2, centers=[[0, 0], [30, 0]], cluster_std=1.0, random_state=0)
    result = solve_multipass(LMNNProblem(X, y, k=2, mu=0.5), max_passes=5)
    assert result.n_passes < 5 and result.status == "converged" and "a fixed point" in result.message
    # the targets under the composed map are those of the last pass: the next pass would repeat it
    np.testing.assert_array_equal(np.sort(_brute_targets(X @ result.components.T, y, 2), axis=1),
                                  np.sort(result.targets[-1], axis=1))


def test_ties_turned_into_rounding_keep_the_targets():
    # on one feature any metric only rescales distances; 0..4 has exact ties (k = 3) that the
    # mapped inputs turn into last-bit differences, which must not count as new targets
    X = np.r_[0:5, 10:15].astype(float)[:, None]
    result = solve_multipass(LMNNProblem(X, np.repeat([0, 1], 5), k=3), max_passes=4)
    assert result.status == "converged" and result.message.startswith("fixed point") and result.n_passes == 1


def test_lattice_ties_reach_a_fixed_point_after_one_pass():
    X, y = _lattice_classes()
    result = solve_multipass(LMNNProblem(X, y, k=3), max_passes=5)
    assert result.message.startswith("fixed point") and result.n_passes == 1 and result.converged
    M = result.metric
    # isotropic by symmetry, up to what a certified gap of 1e-6 (of eq. 14, not of M) leaves free
    np.testing.assert_allclose(M, M[0, 0] * np.eye(2), rtol=1e-6, atol=1e-5 * M[0, 0])
    # the kept targets are nearest up to the metric's certified accuracy
    Z = X @ result.components.T
    np.testing.assert_allclose(_sorted_target_distances(Z, result.targets[0]),
                               _sorted_target_distances(Z, _brute_targets(Z, y, 3)), rtol=1e-6)


def test_zero_metric_collapses_with_a_message(iris):
    result = solve_multipass(LMNNProblem(iris.X, iris.y, k=3, mu=0.0), max_passes=3, stop="passes")
    assert result.n_passes == 1 and result.message.startswith("collapsed") and result.converged
    assert "is zero (pass 1 learned the zero metric" in result.message
    assert not result.metric.any()


def test_collapse_is_every_point_on_its_targets():
    # a map that merges each class into one point (classes apart along the first feature)
    X = np.column_stack([np.repeat([0.0, 1.0], 10), np.arange(20.0)])
    targets = LMNNProblem(X, np.repeat([0, 1], 10), k=3).targets
    assert _collapsed(X * [1.0, 0.0], targets)
    assert not _collapsed(X * [1.0, 1e-5], targets)  # mean target distance 4e-10 of the spread
    assert not _collapsed(X, targets)


@pytest.mark.parametrize("options, error, match", [({"max_passes": 0}, ValueError, "max_passes"),
                                                   ({"max_passes": 2.0}, TypeError, "max_passes"),
                                                   ({"max_iter": 0}, ValueError, "max_iter"),
                                                   ({"tol": True}, TypeError, "tol"),
                                                   ({"stop": "never"}, ValueError, "stop must be one of")])
def test_bad_options_are_refused(iris, options, error, match):
    with pytest.raises(error, match=match):
        solve_multipass(iris, **options)


def test_duplicate_points_run():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(20, 3))
    X, y = np.vstack([base, base]), np.tile(np.arange(20) % 2, 2)
    result = solve_multipass(LMNNProblem(X, y, k=2, mu=0.5), max_passes=2, stop="passes")
    assert result.n_passes == 2 and np.all(np.isfinite(result.components))
    twin = (np.arange(40) + 20) % 40
    for targets in result.targets:  # a duplicate is always a target, at distance 0
        assert np.all(np.any(targets == twin[:, None], axis=1))


def test_estimator_transforms_by_the_composed_map_and_prints_one_row_per_pass(iris, iris_two_passes, capsys):
    result, calls = iris_two_passes
    model = MultiPassLMNN(max_passes=2, stop="passes", verbose=1).fit(iris.X, iris.y)
    assert model.n_passes_ == 2 and model.converged_ and model.n_iter_ == result.n_iter
    np.testing.assert_array_equal(model.components_, result.components)
    np.testing.assert_allclose(model.transform(iris.X), iris.X @ model.result_.components.T)
    np.testing.assert_allclose(model.metric_, model.components_.T @ model.components_, atol=1e-10)
    out = capsys.readouterr().out.splitlines()
    assert "Changed" in out[1] and "Gap" in out[1]
    rows = [line.split()[1:] for line in out[3:]]
    assert [r[:3] for r in rows] == [["1", "-", str(result.passes[0].n_iter)],
                                     ["2", str(calls[1][2]), str(result.passes[1].n_iter)]]
    assert [float(r[5]) for r in rows] == pytest.approx([p.relative_gap for p in result.passes], rel=1e-2)


def test_estimator_warns_naming_the_passes_that_did_not_certify():
    X, y = load_iris(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match=r"2 of 2 passes did not converge \(pass 1: max_iter, gap .*, pass 2: max_iter, gap "):
        model = MultiPassLMNN(max_iter=2, max_passes=2, stop="passes").fit(X, y)
    assert not model.converged_ and model.n_passes_ == 2  # an uncertified pass still retargets


# scikit-learn's whole suite stays quick for LMNN (test_estimators.py::test_passes_sklearn_estimator_checks)
@pytest.mark.slow
def test_passes_sklearn_estimator_checks():
    results = check_estimator(MultiPassLMNN(max_passes=2, max_iter=30),
                              expected_failed_checks=EXPECTED_FAILURES, on_fail=None)
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []
