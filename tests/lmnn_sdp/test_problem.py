"""LMNNProblem against brute-force references (eq. 14) and its input checks."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import lmnn_sdp.core.pair_search as search_module
from lmnn_sdp.core.checks import NonRealInputError
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import grouped_scatter, pair_scatter


def random_problem(seed: int, n: int = 14, d: int = 3, classes: int = 3, k: int = 2, mu: float = 0.2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.arange(n) % classes
    return LMNNProblem(X, y, k=k, mu=mu)


def random_psd(rng, d: int) -> np.ndarray:
    L = rng.normal(size=(d, d))
    return L.T @ L


def brute_objective(X, y, targets, mu, M) -> float:
    """Eq. 14 by a plain triple loop."""
    def dist(a, b):
        v = X[a] - X[b]
        return v @ M @ v

    pull = push = 0.0
    for i in range(len(X)):
        for j in targets[i]:
            pull += dist(i, j)
            for l in range(len(X)):
                if y[l] != y[i]:
                    push += max(0.0, 1.0 + dist(i, j) - dist(i, l))
    return (1 - mu) * pull + mu * push


def brute_targets(X, y, k):
    out = []
    for i in range(len(X)):
        same = [j for j in range(len(X)) if j != i and y[j] == y[i]]
        same.sort(key=lambda j: (np.sum((X[i] - X[j]) ** 2), j))
        out.append(same[:k])
    return np.array(out)


@pytest.mark.parametrize("seed,mu", [(0, 0.2), (1, 0.5), (2, 0.8), (3, 0.0), (4, 1.0)])
def test_objective_matches_triple_loop(seed, mu):
    p = random_problem(seed, mu=mu)
    M = random_psd(np.random.default_rng(seed), 3) / 3
    assert p.objective(M) == pytest.approx(brute_objective(p.X, p.y, p.targets, mu, M), rel=1e-12)


def test_objective_weights_cannot_be_swapped():
    p = random_problem(5, mu=0.2)
    M = np.eye(3)
    pull = np.sum(p.target_distances(M))
    push = np.sum(np.maximum(p.triplet_margins(M, p.all_triplets()), 0))
    assert pull != pytest.approx(push)
    assert p.objective(M) == pytest.approx(0.8 * pull + 0.2 * push, rel=1e-12)


def test_objective_is_blockwise(monkeypatch):
    p = random_problem(6, n=30)
    M = random_psd(np.random.default_rng(6), 3)
    whole = p.objective(M)
    monkeypatch.setattr(search_module, "BLOCK_BYTES", 8)  # one row per block
    assert p.objective(M) == pytest.approx(whole, rel=1e-12)
    assert len(p.active_triplets(M)) == int(np.sum(p.triplet_margins(M, p.all_triplets()) > 0))


@pytest.mark.parametrize("budget,panel", [(8, 2**21), (16 * 30 * 3, 2**21), (2**26, 2**21),  # blocks of
                                          (16 * 4 * 5, 8 * 3 * 5)])  # 1 row, 3 rows growing, one; 5 x 5 tiles
def test_symmetric_blocks_count_every_pair_once_in_both_directions(monkeypatch, budget, panel):
    p = random_problem(9, n=30, classes=4, mu=0.5)
    M = random_psd(np.random.default_rng(9), 3) / 4
    monkeypatch.setattr(search_module, "BLOCK_BYTES", budget)
    monkeypatch.setattr(search_module, "PANEL_BYTES", panel)
    assert p.objective(M) == pytest.approx(brute_objective(p.X, p.y, p.targets, 0.5, M), rel=1e-12)
    expected = [(i, j, l) for i in range(30) for j in p.targets[i] for l in range(30)
                if p.y[l] != p.y[i] and p.triplet_margins(M, np.array([[i, j, l]]))[0] > -0.25]
    np.testing.assert_array_equal(p.active_triplets(M, band=0.25), np.array(expected))


def test_default_targets_are_nearest_same_class_smallest_index_first():
    rng = np.random.default_rng(7)
    X = rng.integers(0, 3, size=(24, 2)).astype(float)  # many exact ties and duplicates
    y = np.arange(24) % 2
    p = LMNNProblem(X, y, k=3)
    np.testing.assert_array_equal(p.targets, brute_targets(X, y, 3))


def test_default_targets_on_shifted_data_with_large_offset():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(40, 3))
    y = np.arange(40) % 4
    np.testing.assert_array_equal(LMNNProblem(X + 1e4, y, k=2).targets, brute_targets(X, y, 2))


def test_active_triplets_match_brute_force_with_band():
    p = random_problem(9, n=16, k=3)
    M = random_psd(np.random.default_rng(9), 3) / 5
    everything = p.all_triplets()
    margins = p.triplet_margins(M, everything)
    for band in (0.0, 0.3):
        found = p.active_triplets(M, band=band)
        expected = everything[margins > -band]
        assert sorted(map(tuple, found)) == sorted(map(tuple, expected))


def test_all_triplets_count_and_membership():
    p = random_problem(10, n=12, classes=3, k=2)
    t = p.all_triplets()
    assert len(t) == p.n_triplets == 12 * 2 * 8
    assert np.all(p.y[t[:, 0]] == p.y[t[:, 1]]) and np.all(p.y[t[:, 0]] != p.y[t[:, 2]])
    assert len({tuple(r) for r in t}) == len(t)


def test_scatters_match_outer_product_sums():
    p = random_problem(11)
    rng = np.random.default_rng(11)
    C = lambda a, b: np.outer(p.X[a] - p.X[b], p.X[a] - p.X[b])  # noqa: E731
    pull = sum(C(i, j) for i in range(p.n_samples) for j in p.targets[i])
    np.testing.assert_allclose(p.pull_matrix(), pull, rtol=1e-12, atol=1e-12)
    t = p.all_triplets()[rng.choice(p.n_triplets, 30, replace=False)]
    w = rng.uniform(size=30)
    expected = sum(wt * (C(i, l) - C(i, j)) for wt, (i, j, l) in zip(w, t))
    a, b = np.r_[t[:, 0], t[:, 0]], np.r_[t[:, 2], t[:, 1]]
    scatter = pair_scatter(p.X, a, b, np.r_[w, -w])  # the sums of the dual matrix
    np.testing.assert_allclose(scatter, expected, rtol=1e-10, atol=1e-10)


def test_grouped_scatter_sums_each_groups_outer_products():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 3))
    a, b = rng.integers(0, 20, size=50), rng.integers(0, 20, size=50)
    w, group = rng.normal(size=50), rng.integers(0, 5, size=50)
    group[group == 3] = 4  # an empty group gives zeros
    out = grouped_scatter(X, a, b, w, group, 6)
    for g in range(6):
        expected = sum((wp * np.outer(X[ap] - X[bp], X[ap] - X[bp])
                        for ap, bp, wp, gp in zip(a, b, w, group) if gp == g), np.zeros((3, 3)))
        np.testing.assert_allclose(out[g], expected, rtol=1e-10, atol=1e-10)


def test_triplet_margins_are_exact_for_duplicates():
    X = np.array([[0.0, 0], [0, 0], [1, 0], [1, 0], [5, 5], [5, 5]])
    y = np.array([0, 0, 1, 1, 2, 2])
    p = LMNNProblem(X, y, k=1)
    np.testing.assert_array_equal(p.targets.ravel(), [1, 0, 3, 2, 5, 4])
    t = np.array([[0, 1, 2], [0, 1, 3]])
    np.testing.assert_allclose(p.triplet_margins(np.eye(2), t), [0.0, 0.0], atol=1e-15)


def test_explicit_targets_are_used_and_k_inferred():
    X = np.arange(12, dtype=float).reshape(6, 2)
    y = np.array([0, 0, 0, 1, 1, 1])
    targets = np.array([[2], [2], [0], [5], [3], [3]])
    p = LMNNProblem(X, y, targets=targets, mu=0.3)
    assert p.k == 1
    np.testing.assert_array_equal(p.targets, targets)


@pytest.mark.parametrize("X,y,kwargs,error,match", [
    ([[0.0, np.nan], [1, 1], [2, 2], [3, 3]], [0, 0, 1, 1], {"k": 1}, ValueError, "NaN"),
    ([[0.0, np.inf], [1, 1], [2, 2], [3, 3]], [0, 0, 1, 1], {"k": 1}, ValueError, "infinity"),
    ([0.0, 1, 2, 3], [0, 0, 1, 1], {"k": 1}, ValueError, "2-D"),
    ([[0.0], [1], [2], [3]], [0, 0, 1], {"k": 1}, ValueError, "4 rows but y has 3"),
    ([[0.0], [1], [2], [3]], [0, 0, 0, 0], {"k": 1}, ValueError, "single class"),
    ([[0.0], [1], [2], [3], [4]], [0, 0, 0, 1, 1], {"k": 2}, ValueError, r"class 1 has 2 members.*k <= 1"),
    ([[0.0], [1], [2], [3]], [0, 0, 1, 1], {"k": 1, "mu": 1.5}, ValueError, r"mu must lie in \[0, 1\]"),
    ([[0.0], [1], [2], [3]], [0, 0, 1, 1], {"k": 1, "mu": -0.1}, ValueError, "mu must lie"),
    ([[0.0], [1], [2], [3]], [0, 0, 1, 1], {"k": 1, "mu": "a"}, TypeError, "mu must be a real"),
    ([[0.0], [1], [2], [3]], [0, 0, 1, 1], {"k": 1, "mu": 0.5 + 0j}, TypeError, "mu must be a real"),
    ([[0.0], [1], [2], [3]], [0, 0, 1, 1], {"k": 0}, ValueError, "k must be at least 1"),
    ([[0.0], [1], [2], [3]], [0, 0, 1, 1], {"k": 1.5}, TypeError, "k must be a positive integer"),
    ([[0.0], [1], [2], [3]], [[0, 0, 1, 1]], {"k": 1}, ValueError, "y must be 1-D"),
])
def test_bad_inputs_raise_clear_errors(X, y, kwargs, error, match):
    with pytest.raises(error, match=match):
        LMNNProblem(X, y, **kwargs)


@pytest.mark.parametrize("targets,error,match", [
    ([[1], [0], [3], [7]], ValueError, r"indices in \[0, 3\]"),
    ([[-1], [0], [3], [2]], ValueError, r"indices in \[0, 3\]"),
    ([[0], [0], [3], [2]], ValueError, "point 0 is its own target"),
    ([[2], [0], [3], [2]], ValueError, "point 0 has a target neighbour of another class"),
    ([[1, 1], [0, 0], [3, 3], [2, 2]], ValueError, "same target neighbour twice"),
    ([[1.0], [0], [3], [2]], TypeError, "integer"),
    ([1, 0, 3, 2], ValueError, "shape"),
])
def test_bad_targets_raise_clear_errors(targets, error, match):
    X = np.arange(8, dtype=float).reshape(4, 2)
    with pytest.raises(error, match=match):
        LMNNProblem(X, [0, 0, 1, 1], targets=np.array(targets))


def test_bad_metric_raises():
    p = random_problem(12)
    with pytest.raises(ValueError, match="shape"):
        p.objective(np.eye(2))
    with pytest.raises(ValueError, match="NaN"):
        p.objective(np.full((3, 3), np.nan))


X4 = np.array([[0.0, 1.0], [1.0, 0.5], [2.0, 2.5], [3.0, 1.5]])
Y4 = [0, 0, 1, 1]
NON_REAL = [  # the data, and the dtype and fix its message must name
    pytest.param(X4 + 1j, r"complex128; pass X\.real if the imaginary part is zero", id="complex"),
    pytest.param(X4 + 0j, r"complex128; pass X\.real", id="complex-zero-imaginary"),
    pytest.param((X4 + 1j).tolist(), "complex128", id="complex-list"),
    pytest.param(X4.astype(object), r"object; convert it with np\.asarray\(X, dtype=float\)",
                 id="object"),
    pytest.param(X4.astype(str), r"<U\d+; parse it with np\.asarray\(X, dtype=float\)", id="str"),
    pytest.param([["0", "1"], ["1", "0.5"], ["2", "2.5"], ["3", "1.5"]], "<U3; parse it",
                 id="str-list"),
    pytest.param(X4.astype(bytes), r"\|S\d+; parse it", id="bytes"),
    pytest.param(X4.astype("datetime64[s]"), r"datetime64\[s\]; convert dates to numbers",
                 id="datetime"),
    pytest.param(X4.astype("timedelta64[s]"), r"timedelta64\[s\]; convert durations to numbers",
                 id="timedelta"),
]


@pytest.mark.parametrize("X, match", NON_REAL)
def test_non_real_inputs_raise_a_type_error_naming_x_and_the_fix(X, match):
    with pytest.raises(TypeError, match="X must be real numbers, got " + match):
        LMNNProblem(X, Y4, k=1)


def test_complex_inputs_raise_no_complex_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning would fail here
        with pytest.raises(NonRealInputError):
            LMNNProblem(X4 + 1j, Y4, k=1)


def test_boolean_and_integer_inputs_are_numbers():
    flags = np.array([[True, False], [True, True], [False, False], [False, True]])
    p = LMNNProblem(flags, Y4, k=1)
    assert p.X.dtype == np.float64
    np.testing.assert_array_equal(p.X, flags.astype(float))
    np.testing.assert_array_equal(LMNNProblem(X4.astype(np.int32), Y4, k=1).X, X4.astype(np.int32))


def test_inputs_are_copied_not_frozen():
    X, y, targets = X4.copy(), np.array(Y4), np.array([[1], [0], [3], [2]])
    problem = LMNNProblem(X, y, targets=targets)
    for given, kept in ((X, problem.X), (y, problem.y), (targets, problem.targets)):
        assert not np.shares_memory(given, kept)
        before = kept.copy()
        given[0] = given[1]  # the caller's array stays writable...
        np.testing.assert_array_equal(kept, before)  # ...and the problem's data does not follow it


@pytest.mark.parametrize("M, match", [
    (np.eye(2) + 1j, r"M must be real numbers, got complex128; pass M\.real"),
    (np.eye(2).astype(object), "M must be real numbers, got object"),
    (np.eye(2).astype(str), r"M must be real numbers, got <U\d+"),
    (np.eye(2).astype("timedelta64[s]"), "M must be real numbers, got timedelta64"),
])
def test_non_real_metric_raises_a_type_error(M, match):
    p = LMNNProblem(X4, Y4, k=1)
    with pytest.raises(TypeError, match=match):
        p.objective(M)
    with pytest.raises(TypeError, match=match):
        p.target_distances(M)


def test_boolean_metric_is_a_zero_one_matrix():
    p = LMNNProblem(X4, Y4, k=1)
    assert p.objective(np.eye(2, dtype=bool)) == pytest.approx(p.objective(np.eye(2)), rel=1e-15)


@pytest.mark.parametrize("targets, match", [
    ([[1.0], [0], [3], [2]], r"dtype=float64; convert whole numbers with np\.asarray\(targets, dtype=int\)"),
    ([[1 + 0j], [0], [3], [2]], "dtype=complex128; pass point indices"),
    ([["1"], ["0"], ["3"], ["2"]], "dtype=<U1; pass point indices"),
    ([[True], [False], [True], [False]], "dtype=bool; pass point indices"),
    (np.array([[1], [0], [3], [2]], dtype=object), "dtype=object; pass point indices"),
])
def test_non_integer_targets_raise_a_type_error(targets, match):
    with pytest.raises(TypeError, match="targets must hold integer indices, got " + match):
        LMNNProblem(X4, Y4, targets=np.array(targets))


@pytest.mark.parametrize("triplets, match", [
    (np.array([[0, 1, 2]]) + 0j, "dtype=complex128"),
    (np.array([[0.0, 1, 2]]), "dtype=float64; convert whole numbers"),
    (np.array([["0", "1", "2"]]), "dtype=<U1"),
    (np.array([[0, 1, 2]], dtype="timedelta64[s]"), "dtype=timedelta64"),
])
def test_non_integer_triplets_raise_a_type_error(triplets, match):
    p = LMNNProblem(X4, Y4, k=1)
    with pytest.raises(TypeError, match="triplets must hold integer indices, got " + match):
        p.triplet_margins(np.eye(2), triplets)


def test_empty_float_triplets_are_an_empty_working_set():
    p = LMNNProblem(X4, Y4, k=1)
    assert p.triplet_margins(np.eye(2), np.empty((0, 3))).shape == (0,)
    with pytest.raises(TypeError, match="triplets must hold integer indices"):
        p.triplet_margins(np.eye(2), np.empty((0, 3), dtype=complex))


def test_no_impostors_gives_no_active_triplets():
    X = np.array([[0.0, 0], [0.1, 0], [0, 0.1], [10, 10], [10.1, 10], [10, 10.1]])
    p = LMNNProblem(X, [0, 0, 0, 1, 1, 1], k=2)
    assert len(p.active_triplets(np.eye(2))) == 0
    assert p.objective(np.eye(2)) == pytest.approx(0.5 * np.sum(p.target_distances(np.eye(2))))


def test_problem_is_immutable():
    p = random_problem(13)
    with pytest.raises(ValueError):
        p.X[0, 0] = 1.0
    assert list(itertools.islice(p.targets.flat, 1))  # readable


@pytest.mark.parametrize("size", [2, 3])
def test_default_k_is_checked_against_the_smallest_class(size):
    X = np.arange(2 * 10, dtype=float).reshape(10, 2)
    y = np.r_[np.zeros(10 - size), np.ones(size)]
    with pytest.raises(ValueError, match=f"class 1.0 has {size} members.*k=3.*k <= {size - 1}"):
        LMNNProblem(X, y)
