"""mlpack's truncated objective against a brute force over triplets, and against eq. 14."""

from __future__ import annotations

import numpy as np
import pytest

from lmnn_sdp.core.problem import LMNNProblem
from validation import mlpack_objective
from validation.mlpack_objective import impostor_profile, truncated_objective


def tiny_problem(seed=0, n=18, d=3, mu=0.3, k=2, duplicates=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if duplicates:
        X[1] = X[0]
        X[7] = X[0]  # another label: a zero distance impostor
    y = np.arange(n) % 3
    return LMNNProblem(X, y, k=k, mu=mu)


def random_metric(d, seed=1, scale=1.0):
    A = np.random.default_rng(seed).normal(size=(d, d))
    return scale * A.T @ A / d


def brute_force(problem, M, m):
    """Loops over points, targets and the m nearest other-label points (sorted)."""
    X, y = problem.X, problem.y
    pull = push = truncated = 0.0
    active = truncated_active = 0
    impostors, point_push, point_truncated = [], [], []
    for i in range(problem.n_samples):
        point_push.append(push)
        point_truncated.append(truncated)
        dist = np.array([(X[i] - X[l]) @ M @ (X[i] - X[l]) for l in range(problem.n_samples)])
        others = np.flatnonzero(y != y[i])
        nearest = others[np.argsort(dist[others], kind="stable")[:m]]
        d_targets = [dist[j] for j in problem.targets[i]]
        impostors.append(sum(dist[l] < 1 + max(d_targets) for l in others))
        for d_ij in d_targets:
            pull += d_ij
            for l in others:
                h = 1 + d_ij - dist[l]
                push += max(h, 0.0)
                active += h > 0
                if l in nearest:
                    truncated += max(h, 0.0)
                    truncated_active += h > 0
        point_push[-1] = push - point_push[-1]
        point_truncated[-1] = truncated - point_truncated[-1]
    mu = problem.mu
    return {"eq14": (1 - mu) * pull + mu * push, "truncated": (1 - mu) * pull + mu * truncated,
            "pull": pull, "active_triplets": active, "truncated_active": truncated_active,
            "impostors": np.array(impostors), "push": np.array(point_push),
            "truncated_push": np.array(point_truncated)}


@pytest.mark.parametrize("m", [1, 2, 5])
@pytest.mark.parametrize("duplicates", [False, True])
def test_profile_matches_brute_force(m, duplicates):
    problem = tiny_problem(duplicates=duplicates)
    M = random_metric(problem.n_features)
    profile = impostor_profile(problem, M, n_impostors=m)
    expected = brute_force(problem, M, m)
    for name in ("eq14", "truncated", "pull"):
        assert getattr(profile, name) == pytest.approx(expected[name], rel=1e-10)
    assert profile.active_triplets == expected["active_triplets"]
    assert profile.truncated_active == expected["truncated_active"]
    np.testing.assert_array_equal(profile.impostors, expected["impostors"])
    np.testing.assert_allclose(profile.push, expected["push"], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(profile.truncated_push, expected["truncated_push"], rtol=1e-10, atol=1e-12)
    assert profile.crowded == int(np.sum(expected["impostors"] > problem.k))
    assert 0 < profile.truncated < profile.eq14  # this metric leaves far impostors active


def test_eq14_is_the_problems_objective_and_every_impostor_gives_it_back():
    problem = tiny_problem(mu=0.7)
    M = random_metric(problem.n_features, seed=3)
    profile = impostor_profile(problem, M)
    assert profile.eq14 == pytest.approx(problem.objective(M), rel=1e-12)
    every = 12  # each point has 12 points of another label
    assert truncated_objective(problem, M, every) == pytest.approx(profile.eq14, rel=1e-12)


def test_default_keeps_k_impostors_and_mu_weighs_the_push():
    problem = tiny_problem(k=3)
    M = random_metric(problem.n_features)
    assert truncated_objective(problem, M) == truncated_objective(problem, M, 3)
    pulls_only = tiny_problem(k=3, mu=0.0)
    assert truncated_objective(pulls_only, M) == pytest.approx(impostor_profile(problem, M).pull)


def test_far_apart_classes_have_no_impostors():
    X = np.vstack([np.arange(4.0)[:, None] * 0.1, 100 + np.arange(4.0)[:, None] * 0.1])
    problem = LMNNProblem(X, [0] * 4 + [1] * 4, k=1, mu=0.5)
    profile = impostor_profile(problem, np.eye(1))
    assert profile.truncated == profile.eq14 == pytest.approx(0.5 * 8 * 0.01)
    assert profile.active_triplets == profile.crowded == 0


def test_blocks_do_not_change_the_answer(monkeypatch):
    problem = tiny_problem(n=30)
    M = random_metric(problem.n_features)
    whole = impostor_profile(problem, M)
    monkeypatch.setattr(mlpack_objective, "BLOCK_BYTES", 8 * 30 * 4 * 3)  # 3-row blocks
    blocked = impostor_profile(problem, M)
    assert blocked.truncated == pytest.approx(whole.truncated, rel=1e-12)
    np.testing.assert_array_equal(blocked.impostors, whole.impostors)


@pytest.mark.parametrize("m", [0, 13, 2.0, True, "3"])
def test_bad_number_of_impostors_is_named(m):
    problem = tiny_problem()
    with pytest.raises(ValueError, match=r"n_impostors must be an integer in \[1, 12\]"):
        impostor_profile(problem, np.eye(3), n_impostors=m)


def test_bad_metric_is_named():
    with pytest.raises(ValueError, match="M must have shape"):
        truncated_objective(tiny_problem(), np.eye(2))


def test_mlpack_descends_this_objective():
    """mlpack returns no objective; its L-BFGS should at least lower this one from its start."""
    pytest.importorskip("mlpack", reason="mlpack not installed (the peers extra)")
    from validation.peers import fit_mlpack

    problem = tiny_problem(n=45, mu=0.5)
    M = fit_mlpack(problem)
    assert truncated_objective(problem, M) < truncated_objective(problem, np.eye(3))


def test_mlpack_targets_are_ours_without_ties_and_nearest_with_them():
    pytest.importorskip("mlpack", reason="mlpack not installed (the peers extra)")
    problem = tiny_problem(n=30)  # continuous data: no ties
    np.testing.assert_array_equal(mlpack_objective.mlpack_targets(problem), problem.targets)
    X = np.array([[4.0], [3.0], [2.0], [1.0], [0.0], [10.0], [11.0], [12.0], [13.0], [14.0]])
    tied = LMNNProblem(X, [0] * 5 + [1] * 5, k=1)  # inner points have two neighbours at 1
    targets = mlpack_objective.mlpack_targets(tied)
    distances = np.abs(X[:, 0] - X[targets[:, 0], 0])
    assert np.all(distances == 1.0) and np.all(targets[:5] < 5) and np.all(targets[5:] >= 5)
    # a run of ties is ordered by the norm of the point with the same index in the whole
    # data (mlpack reorders before mapping class indices back): x=11 ties x=10 and x=12,
    # class indices 0 and 2, whose namesakes x=4 and x=2 put x=12 (global 7) first
    assert targets[6, 0] == 7


def test_missing_mlpack_names_the_install_command(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "mlpack", None)
    with pytest.raises(ImportError, match="mlpack>=4.8"):
        mlpack_objective.mlpack_targets(tiny_problem())
