"""The smoothed objective against brute force over every triplet: value, multipliers,
dual matrix, gradient and Hessian products by finite differences, with and without hinges
shifted by prior multipliers."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from fast_solver.lmnn.smoothed import ClusterGraphs, PairGraph, SmoothedObjective, WorkingSet
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.whitening import whiten_clusters


@pytest.fixture(scope="module", params=["lmnn", "class metrics", "other clusters", "lmnn, narrow L",
                                        "class metrics, narrow L"])
def setting(request):
    """LMNN (one metric), one metric per class, and clusters that cut across the classes; ``L``
    square (C, r, r) or narrow (C, r - 1, r)."""
    X, y = make_blobs(40, 3, centers=3, cluster_std=3.0, random_state=0)
    problem = LMNNProblem(X, y, k=2, mu=0.3)
    kind, _, narrow = request.param.partition(", ")
    clusters = {"lmnn": None, "class metrics": problem.label_codes,
                "other clusters": (X[:, 0] > np.median(X[:, 0])).astype(np.intp)}[kind]
    whitening = whiten_clusters(problem.with_clusters(clusters))
    pairs = np.unique(problem.all_triplets()[:, [0, 2]], axis=0)  # every impostor pair
    ws = WorkingSet.from_pairs(pairs[:, 0], pairs[:, 1], problem.n_samples)
    r = whitening.rank
    L = np.random.default_rng(1 if narrow else 0).normal(size=(whitening.n_clusters, r - 1 if narrow else r, r))
    return problem, clusters, whitening, SmoothedObjective(whitening, problem.targets, problem.mu, ws), L


def set_prior(problem, objective, shifted: bool) -> np.ndarray:
    """Set the objective's prior multipliers (random in [0, mu], or 0) and return them per
    triplet of ``problem.all_triplets()``."""
    rng = np.random.default_rng(7)
    objective.prior[:] = rng.uniform(0, problem.mu, objective.prior.shape) * (rng.random(objective.prior.shape) < 0.7) \
        if shifted else 0.0
    t = problem.all_triplets()
    n = problem.n_samples
    pair = np.searchsorted(objective.ws.owner * n + objective.ws.impostors, t[:, 0] * n + t[:, 2])
    rank = np.argmax(problem.targets[t[:, 0]] == t[:, 1][:, None], axis=1)
    return objective.prior[pair, rank]


def brute_force(problem, M, gamma, clusters, prior=0.0):
    """F_gamma, eq. 14 (eq. 16 with clusters), the multipliers and the dual matrices (C, d, d)
    over all triplets, on the inputs; hinges shifted by ``gamma prior / mu`` (per triplet)."""
    t = problem.all_triplets()
    metrics = M if clusters is not None else M[0]
    h = problem.triplet_margins(metrics, t, clusters)
    e = h + gamma * prior / problem.mu
    smooth = np.where(e >= gamma, e - gamma / 2, np.where(e > 0, e * e / (2 * gamma), 0.0))
    pull = problem.target_distances(metrics, clusters).sum()
    lam = problem.mu * np.clip(e / gamma, 0.0, 1.0)
    owner = problem.with_clusters(clusters).owner
    X = problem.X_centered
    n, k = problem.targets.shape
    i, j = np.repeat(np.arange(n), k), problem.targets.ravel()
    Z = []
    for c in range(len(M)):
        p, a, b = X[i] - X[j], X[t[:, 0]] - X[t[:, 1]], X[t[:, 0]] - X[t[:, 2]]
        p, wa, wb = p[owner[j] == c], lam * (owner[t[:, 1]] == c), lam * (owner[t[:, 2]] == c)
        Z.append((1 - problem.mu) * p.T @ p + (a * wa[:, None]).T @ a - (b * wb[:, None]).T @ b)
    return ((1 - problem.mu) * pull + problem.mu * smooth.sum(), problem.objective(metrics, clusters),
            lam, np.stack(Z), t, h)


@pytest.mark.parametrize("shifted", [False, True])
@pytest.mark.parametrize("gamma", [1.0, 0.3, 0.01])
def test_value_objective_and_multipliers_equal_brute_force(setting, gamma, shifted):
    problem, clusters, whitening, objective, L = setting
    prior = set_prior(problem, objective, shifted)
    ev = objective.evaluate(L, gamma)
    M = whitening.lift(np.matmul(L.transpose(0, 2, 1), L))
    value, eq14, lam, Z, t, h = brute_force(problem, M, gamma, clusters, prior)
    assert ev.value == pytest.approx(value, rel=1e-12)
    assert ev.objective == pytest.approx(eq14, rel=1e-12)
    assert ev.multiplier_sum == pytest.approx(lam.sum(), rel=1e-12)
    assert ev.complementarity == pytest.approx(np.sum(problem.mu * np.maximum(h, 0) - lam * h), rel=1e-10)
    assert ev.n_active == np.count_nonzero(h > 0)
    assert ev.n_transition == np.count_nonzero((lam > 0) & (lam < problem.mu))
    # the gradient in M_w is the dual matrix Z_c(lambda) of DESIGN.md, in each cluster's coordinates
    for c, space in enumerate(whitening.spaces):
        W = space.basis
        np.testing.assert_allclose(ev.dual_matrix[c], W.T @ Z[c] @ W, rtol=1e-9,
                                   atol=1e-9 * np.abs(ev.dual_matrix).max())
    triplets, multipliers = objective.multipliers()
    order = np.lexsort(t.T[::-1])
    positive = lam[order] > 0
    np.testing.assert_array_equal(np.unique(triplets, axis=0), t[order][positive])
    assert multipliers.sum() == pytest.approx(lam.sum(), rel=1e-12)


@pytest.mark.parametrize("shifted", [False, True])
@pytest.mark.parametrize("gamma", [1.0, 0.05])
def test_gradient_and_hessian_products_match_finite_differences(setting, gamma, shifted):
    problem, *_, objective, L = setting
    set_prior(problem, objective, shifted)
    step = 1e-6
    numeric = np.zeros_like(L)
    for index in np.ndindex(L.shape):
        E = np.zeros_like(L)
        E[index] = step
        numeric[index] = (objective.evaluate(L + E, gamma).value - objective.evaluate(L - E, gamma).value) / (2 * step)
    ev = objective.evaluate(L, gamma)
    np.testing.assert_allclose(ev.gradient, numeric, rtol=1e-6, atol=1e-6 * np.abs(numeric).max())
    V = np.random.default_rng(1).normal(size=L.shape)
    product = objective.hessian_product(V)
    difference = (objective.evaluate(L + step * V, gamma).gradient
                  - objective.evaluate(L - step * V, gamma).gradient) / (2 * step)
    np.testing.assert_allclose(product, difference, rtol=1e-5, atol=1e-5 * np.abs(difference).max())


@pytest.mark.parametrize("shifted", [False, True])
@pytest.mark.parametrize("gamma", [1.0, 0.05])
def test_ray_changes_equal_brute_force_along_L_and_along_the_metric(setting, gamma, shifted):
    problem, clusters, whitening, objective, L = setting
    prior = set_prior(problem, objective, shifted)
    rng = np.random.default_rng(3)
    V = rng.normal(size=L.shape)
    if len(V) > 1:
        V[0] = 0.0  # a cluster left where it is
    M = np.matmul(L.transpose(0, 2, 1), L)
    D = np.matmul(V.transpose(0, 2, 1), V)
    base = brute_force(problem, whitening.lift(M), gamma, clusters, prior)[0]
    objective.evaluate(L, gamma)
    along_L, along_M = objective.ray(V), objective.ray(V, metric=True)
    for t in (0.0, 1e-3, 0.2, 1.5, 0.05, 9.0):  # within the reach formed at 1.5, then beyond it
        at_L = whitening.lift(np.matmul((L + t * V).transpose(0, 2, 1), L + t * V))
        assert along_L(t) == pytest.approx(brute_force(problem, at_L, gamma, clusters, prior)[0] - base,
                                           rel=1e-9, abs=1e-9 * base)
        at_M = whitening.lift(M + t * D)
        assert along_M(t) == pytest.approx(brute_force(problem, at_M, gamma, clusters, prior)[0] - base,
                                           rel=1e-9, abs=1e-9 * base)


@pytest.mark.parametrize("shifted", [False, True])
def test_metric_rays_weight_each_cluster_as_brute_force_does(setting, shifted):
    """``metric_rays(V)`` weighted by ``w`` is the change along ``M_c + t w_c V_c^T V_c``: each
    cluster alone, the clusters together at unequal weights, and again a cluster alone after
    that (its coefficients are reweighted in place)."""
    problem, clusters, whitening, objective, L = setting
    prior = set_prior(problem, objective, shifted)
    V = np.random.default_rng(4).normal(size=L.shape)
    M = np.matmul(L.transpose(0, 2, 1), L)
    D = np.matmul(V.transpose(0, 2, 1), V)
    gamma = 0.3
    base = brute_force(problem, whitening.lift(M), gamma, clusters, prior)[0]
    objective.evaluate(L, gamma)
    along = objective.metric_rays(V)
    C = len(L)
    weightings = [np.eye(C)[c] for c in range(C)] + [np.arange(1.0, C + 1) / C, np.eye(C)[C - 1]]
    for w in weightings:
        change = along(w)
        for t in (1e-3, 0.2, 1.5, 0.05):
            at = whitening.lift(M + t * w[:, None, None] * D)
            assert change(t) == pytest.approx(brute_force(problem, at, gamma, clusters, prior)[0] - base,
                                              rel=1e-9, abs=1e-9 * base)


@pytest.mark.parametrize("few_pairs", [False, True])
def test_advance_along_a_ray_is_the_evaluation_there(setting, few_pairs):
    """After ``ray(V)``, ``advance(t)`` is ``evaluate(L + t V)``: the same value, eq. 14,
    multipliers, gradient and Hessian products; with a few pairs each cluster's graph holds
    only some points, whose rows alone ``Z`` keeps."""
    problem, clusters, whitening, objective, L = setting
    if few_pairs:
        keep = np.linspace(0, len(objective.ws) - 1, 6).astype(np.intp)
        objective = SmoothedObjective(whitening, problem.targets, problem.mu, WorkingSet.from_pairs(
            objective.ws.owner[keep], objective.ws.impostors[keep], problem.n_samples))
        partial = objective.graphs.nodes is not None  # the stacked graph touches under half its nodes
        assert partial == np.array_equal(clusters, problem.label_codes)  # class metrics: one class each
    rng = np.random.default_rng(4)
    V, W = rng.normal(size=(2, *L.shape))
    for t in (0.3, 1e-3, 2.0):
        objective.evaluate(L, 0.5)
        objective.ray(V)  # its polynomials are what ``advance`` reads
        moved = objective.advance(t)
        moved_product = objective.hessian_product(W)
        direct = objective.evaluate(L + t * V, 0.5)
        np.testing.assert_array_equal(moved.L, direct.L)
        for field in ("value", "objective", "multiplier_sum", "complementarity"):
            assert getattr(moved, field) == pytest.approx(getattr(direct, field), rel=1e-11, abs=1e-11)
        assert (moved.n_active, moved.n_transition) == (direct.n_active, direct.n_transition)
        np.testing.assert_allclose(moved.gradient, direct.gradient, rtol=1e-9, atol=1e-9 * np.abs(direct.gradient).max())
        product = objective.hessian_product(W)
        np.testing.assert_allclose(moved_product, product, rtol=1e-5, atol=1e-5 * np.abs(product).max())


def test_shifted_hinges_are_the_augmented_lagrangian_of_eq14(setting):
    """mu s(h + gamma prior / mu) = max over lambda in [0, mu] of lambda h - gamma (lambda -
    prior)^2 / (2 mu), plus gamma prior^2 / (2 mu): the maximum taken on a grid of lambda."""
    problem, clusters, whitening, objective, L = setting
    prior = set_prior(problem, objective, True)
    gamma = 0.05
    ev = objective.evaluate(L, gamma)
    M = whitening.lift(np.matmul(L.transpose(0, 2, 1), L))
    h = problem.triplet_margins(M if clusters is not None else M[0], problem.all_triplets(), clusters)
    grid = np.linspace(0.0, problem.mu, 30_001)
    maxima, maximisers = np.empty(len(h)), np.empty(len(h))
    for t, (h_t, prior_t) in enumerate(zip(h, prior)):  # a triplet at a time: all at once take 0.5 GB a term
        penalised = grid * h_t - gamma * (grid - prior_t) ** 2 / (2 * problem.mu)
        maxima[t], maximisers[t] = penalised.max(), grid[np.argmax(penalised)]
    pull = problem.target_distances(M if clusters is not None else M[0], clusters).sum()
    augmented = (1 - problem.mu) * pull + np.sum(maxima + gamma * prior**2 / (2 * problem.mu))
    assert ev.value == pytest.approx(augmented, rel=1e-9)
    # lambda is the maximiser: its multipliers are those the grid finds, to the grid's spacing
    lam = objective.multipliers()[1].sum()
    assert lam == pytest.approx(maximisers.sum(), abs=len(h) * grid[1])


def test_ray_resolves_changes_below_the_rounding_of_the_objective(setting):
    problem, *_, objective, L = setting
    set_prior(problem, objective, False)
    ev = objective.evaluate(L, 0.05)
    V = np.random.default_rng(4).normal(size=L.shape)
    slope = float(np.sum(ev.gradient * V))
    t = 1e-12 * ev.value / abs(slope)  # a change of 1e-12 F: rounding noise in F(t) - F(0)
    assert objective.ray(V)(t) == pytest.approx(t * slope, rel=1e-6)


def test_pair_graph_scatter_is_the_sum_of_weighted_outer_products():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(12, 4))
    a, b = rng.integers(0, 12, 30), rng.integers(0, 12, 30)
    w = rng.normal(size=30)
    D = X[a] - X[b]
    np.testing.assert_allclose(PairGraph(a, b, 12).scatter(w, X), (D * w[:, None]).T @ D, atol=1e-12)


def test_working_set_sorts_and_deduplicates_pairs():
    ws = WorkingSet.from_pairs(np.array([2, 0, 2, 0]), np.array([1, 3, 1, 2]), 4)
    assert ws.owner.tolist() == [0, 0, 2] and ws.impostors.tolist() == [2, 3, 1]
    assert ws.ptr.tolist() == [0, 2, 2, 3, 3]


@pytest.mark.parametrize("gamma", [1.0, 0.05])
def test_the_preconditioner_inverts_the_hessian_diagonal_in_the_eigenbases(setting, gamma, monkeypatch):
    """``preconditioner`` is ``1 / diag(H)`` in the bases of ``L L^T`` (left) and ``G`` (right):
    the diagonal of the Hessian there, formed by Hessian products on the basis matrices
    (with ``G``'s negative eigenvalues counted as 0), inverts it; and it is symmetric positive
    definite."""
    *_, objective, L = setting
    # every triplet, no floor: the exact diagonal
    monkeypatch.setattr(objective, "options", replace(objective.options, precondition_floor=0.0,
                                                      precondition_sample=10**9))
    ev = objective.evaluate(L, gamma)
    assert ev.n_transition > 0
    apply = objective.preconditioner()
    C, p, r = L.shape
    for c in range(C):
        U = np.linalg.eigh(L[c] @ L[c].T)[1]
        lam, Q = np.linalg.eigh(ev.dual_matrix[c])
        for a, b in [(0, 0), (p - 1, 0), (1, r - 1), (p - 1, r - 1)]:
            E = np.zeros_like(L)
            E[c] = np.outer(U[:, a], Q[:, b])
            curvature = np.sum(E * objective.hessian_product(E)) - 2 * min(lam[b], 0.0)
            assert np.sum(E * apply(E)) == pytest.approx(1 / curvature, rel=1e-5)  # both in float32
    X, Y = np.random.default_rng(2).normal(size=(2, *L.shape))
    assert np.sum(X * apply(Y)) == pytest.approx(np.sum(apply(X) * Y), rel=1e-10)
    assert np.sum(X * apply(X)) > 0


def test_the_preconditioner_samples_many_transition_triplets_evenly(setting, monkeypatch):
    """With fewer samples than triplets the diagonal is an estimate, scaled to the whole sum."""
    *_, objective, L = setting
    objective.evaluate(L, 1.0)
    bases = [(np.linalg.eigh(Lc @ Lc.T)[1], np.linalg.eigh(G)[1]) for Lc, G in zip(L, objective.current.dual_matrix)]
    exact = objective._hinge_curvature(bases)
    monkeypatch.setattr(objective, "options",
                        replace(objective.options, precondition_sample=objective.current.n_transition // 3))
    sampled = objective._hinge_curvature(bases)
    assert not np.allclose(sampled, exact)
    assert sampled.sum() == pytest.approx(exact.sum(), rel=0.5)


def test_the_preconditioner_leaves_a_cluster_with_a_vanishing_diagonal_unscaled(setting):
    *_, objective, L = setting
    L = L.copy()
    L[-1] = 0.0  # a collapsed metric: its triplets all active beyond the band, none in transition
    ev = objective.evaluate(L, 1e-3)
    R = np.random.default_rng(5).normal(size=L.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        applied = objective.preconditioner()(R)
    assert np.all(np.isfinite(applied)) and float(np.sum(applied * R)) > 0  # still positive definite
    assert ev.n_active > 0


def test_class_metrics_on_few_pairs_read_only_their_graphs_nodes():
    """With few working-set pairs each cluster's graph touches few points, and ``X[c] V_c^T`` is
    formed at its nodes only (buffers reused across calls): the value against brute force over
    the working set's triplets, gradient and Hessian products by finite differences, a ray by
    evaluations."""
    X, y = make_blobs(150, 3, centers=5, cluster_std=3.0, random_state=1)
    problem = LMNNProblem(X, y, k=2, mu=0.3)
    whitening = whiten_clusters(problem.with_clusters(problem.label_codes))
    pairs = np.unique(problem.all_triplets()[::300][:, [0, 2]], axis=0)
    n, k = problem.targets.shape
    objective = SmoothedObjective(whitening, problem.targets, problem.mu,
                                  WorkingSet.from_pairs(pairs[:, 0], pairs[:, 1], n))
    rng = np.random.default_rng(5)
    L, V = rng.normal(size=(2, 5, whitening.rank, whitening.rank))
    gamma = 2.0
    ev = objective.evaluate(L, gamma)
    assert objective.graphs.nodes is not None
    assert 0 < ev.n_transition
    ws = objective.ws
    t = ws.triplets(problem.targets, np.repeat(np.arange(len(ws)), k), np.tile(np.arange(k), len(ws)))
    metrics = whitening.lift(np.matmul(L.transpose(0, 2, 1), L))
    h = problem.triplet_margins(metrics, t, problem.label_codes)
    smooth = np.where(h >= gamma, h - gamma / 2, np.where(h > 0, h * h / (2 * gamma), 0.0))
    pull = problem.target_distances(metrics, problem.label_codes).sum()
    assert ev.value == pytest.approx((1 - problem.mu) * pull + problem.mu * smooth.sum(), rel=1e-12)
    step = 1e-6
    for _ in range(2):  # the second pass runs on buffers the first one filled
        objective.evaluate(L, gamma)
        product = objective.hessian_product(V)
        change = objective.ray(V)(0.3)
        difference = (objective.evaluate(L + step * V, gamma).gradient
                      - objective.evaluate(L - step * V, gamma).gradient) / (2 * step)
        np.testing.assert_allclose(product, difference, rtol=1e-5, atol=1e-5 * np.abs(difference).max())
        assert change == pytest.approx(objective.evaluate(L + 0.3 * V, gamma).value - ev.value, rel=1e-9)
        assert np.sum(objective.evaluate(L, gamma).gradient * V) == pytest.approx(
            (objective.evaluate(L + step * V, gamma).value - objective.evaluate(L - step * V, gamma).value)
            / (2 * step), rel=1e-6)
        V = rng.normal(size=V.shape)


@pytest.mark.parametrize("C, r", [(2, 3), (2, 40), (1, 3)])  # compiled loops; BLAS per cluster (many
def test_cluster_graphs_map_and_scatter_at_their_nodes(C, r):  # coordinates, or one cluster)
    """``X[c] V_c^T`` at the stacked graph's nodes (in several chunks and blocks), into the
    stacked layout (the other rows left as they were) or the compact one (row ``position[c n +
    u]``), equals the direct product; the scatter is the sum of each cluster's weighted outer
    products."""
    rng = np.random.default_rng(0)
    n = 30_000
    X, V = rng.normal(size=(C, n, r)), rng.normal(size=(C, r, r))
    a = rng.integers(0, n, 20_000)
    if C == 2:  # most points of cluster 0, a fifth of cluster 1
        b = np.concatenate([rng.integers(3_000, n, 16_000), rng.integers(0, 3_000, 4_000)])
        clusters = (np.arange(n) < 3_000).astype(np.intp)  # a pair lands in its second point's cluster
    else:
        a, b, clusters = a[:4_000], rng.integers(0, n, 4_000), np.zeros(n, dtype=np.intp)
    graphs = ClusterGraphs(a, b, clusters, X)
    assert graphs.nodes is not None and graphs.compiled == (C == 2 and r == 3)
    assert not graphs.compiled or len(graphs.blocks) > 3
    nodes = [graphs.nodes[lo:hi] - c * n for c, (lo, hi) in enumerate(zip(graphs.bounds, graphs.bounds[1:]))]
    assert C == 1 or (n / 2 < len(nodes[0]) < n and 5_000 < len(nodes[1]) < n / 2)
    out = graphs.map(V, np.full((C, n, r), np.nan))
    compact = graphs.map(V, np.full((len(graphs.nodes), r), np.nan), compact=True)
    assert (graphs.position[np.setdiff1d(np.arange(C * n), graphs.nodes)] == -1).all()
    for c in range(C):
        expected = X[c, nodes[c]] @ V[c].T
        np.testing.assert_allclose(out[c, nodes[c]], expected, rtol=1e-12, atol=1e-12)
        assert np.isnan(np.delete(out[c], nodes[c], axis=0)).all()
        np.testing.assert_allclose(compact[graphs.position[c * n + nodes[c]]], expected, rtol=1e-12, atol=1e-12)
    w = rng.normal(size=len(a))
    for c, S in enumerate(graphs.scatter(w)):
        m = clusters[b] == c
        D = X[c, a[m]] - X[c, b[m]]
        np.testing.assert_allclose(S, (D * w[m, None]).T @ D, rtol=1e-10, atol=1e-10 * np.abs(S).max())


@pytest.mark.parametrize("few_pairs", [False, True])
@pytest.mark.parametrize("shifted", [False, True])
def test_without_the_dual_matrix_the_gradient_is_the_same(setting, few_pairs, shifted):
    """``evaluate(dual=False)`` and ``advance(dual=False)`` form the gradient from ``Z``
    (``2 (X^T Lap Z)^T``) and no ``G``: the same value and gradient as with ``G``, at a point
    and along a ray, on graphs of every node and of a few."""
    problem, clusters, whitening, objective, L = setting
    if few_pairs:
        keep = np.linspace(0, len(objective.ws) - 1, 6).astype(np.intp)
        objective = SmoothedObjective(whitening, problem.targets, problem.mu, WorkingSet.from_pairs(
            objective.ws.owner[keep], objective.ws.impostors[keep], problem.n_samples))
    set_prior(problem, objective, shifted)
    V = np.random.default_rng(5).normal(size=L.shape)
    with_G = objective.evaluate(L + 0.4 * V, 0.05)
    for without in (objective.evaluate(L + 0.4 * V, 0.05, dual=False),
                    (objective.evaluate(L, 0.05, dual=False), objective.ray(V), objective.advance(0.4, dual=False))[2]):
        assert without.dual_matrix is None
        assert without.value == pytest.approx(with_G.value, rel=1e-12)
        np.testing.assert_allclose(without.gradient, with_G.gradient, rtol=1e-10,
                                   atol=1e-10 * np.abs(with_G.gradient).max())
