"""Multi-metric LMNN (sec. 5.2): evaluator, exact solves and certificates against brute force."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from sklearn.cluster import KMeans

from lmnn_sdp import LMNNProblem, certify, solve_lmnn, solve_mm_lmnn
from lmnn_sdp.certificates import bounds
from lmnn_sdp.certificates.bounds import dual_lower_bound, relative_gap
from lmnn_sdp.core.distances import distance_matrix, leave_one_out_error
from validation.datasets import load_bundled
from validation.instances import concentric_circles


def eq16(X, metrics, clusters, a, b) -> float:
    """D^(x_a, x_b) = (x_a - x_b)^T M_{c(b)} (x_a - x_b), eq. 16."""
    v = X[a] - X[b]
    return float(v @ metrics[clusters[b]] @ v)


def brute_objective(p: LMNNProblem, metrics, clusters) -> float:
    """The objective of sec. 5.2 by a plain triple loop."""
    pull = push = 0.0
    for i in range(p.n_samples):
        for j in p.targets[i]:
            pull += eq16(p.X, metrics, clusters, i, j)
            for l in range(p.n_samples):
                if p.y[l] != p.y[i]:
                    push += max(0.0, 1.0 + eq16(p.X, metrics, clusters, i, j)
                                - eq16(p.X, metrics, clusters, i, l))
    return (1 - p.mu) * pull + p.mu * push


def reference_optimum(p: LMNNProblem, clusters) -> float:
    """The SDP of sec. 5.2 as a plain cvxpy program: one distance (eq. 16) per target pair and
    one hinge per triplet, no tricks."""
    X, d = p.X, p.n_features
    M = [cp.Variable((d, d), PSD=True) for _ in range(clusters.max() + 1)]

    def D(a, b):  # (x_a - x_b)^T M_{c(b)} (x_a - x_b) for arrays of pairs (a, b)
        V = [(X[a] - X[b]) * (clusters[b] == c)[:, None] for c in range(len(M))]
        return sum(cp.sum(cp.multiply(V[c] @ M[c], V[c]), axis=1) for c in range(len(M)))

    t = p.all_triplets()
    pull = cp.sum(D(np.repeat(np.arange(p.n_samples), p.k), p.targets.ravel()))
    push = cp.sum(cp.pos(1 + D(t[:, 0], t[:, 1]) - D(t[:, 0], t[:, 2])))
    problem = cp.Problem(cp.Minimize((1 - p.mu) * pull + p.mu * push))
    problem.solve(solver="CLARABEL")
    return problem.value


def brute_dual_matrices(p: LMNNProblem, clusters, triplets, lam) -> list[np.ndarray]:
    """Z_c(lambda) of the dual of sec. 5.2 by explicit outer products."""
    C = lambda a, b: np.outer(p.X[a] - p.X[b], p.X[a] - p.X[b])  # noqa: E731
    Z = [np.zeros((p.n_features,) * 2) for _ in range(clusters.max() + 1)]
    for i in range(p.n_samples):
        for j in p.targets[i]:
            Z[clusters[j]] += (1 - p.mu) * C(i, j)
    for w, (i, j, l) in zip(lam, triplets):
        Z[clusters[l]] -= w * C(i, l)
        Z[clusters[j]] += w * C(i, j)
    return Z


def random_instance(seed: int, n: int = 12, d: int = 2, n_clusters: int = 3, mu: float = 0.2,
                    k: int = 2):
    rng = np.random.default_rng(seed)
    p = LMNNProblem(rng.normal(size=(n, d)), np.arange(n) % 2, k=k, mu=mu)
    clusters = rng.permutation(np.arange(n) % n_clusters)
    L = rng.normal(size=(n_clusters, d, d))
    return p, clusters, np.einsum("cji,cjk->cik", L, L) / d


@pytest.mark.parametrize("seed,mu", [(0, 0.2), (1, 0.5), (2, 0.8), (3, 0.0), (4, 1.0)])
def test_objective_matches_triple_loop(seed, mu):
    p, clusters, metrics = random_instance(seed, mu=mu)
    expected = brute_objective(p, metrics, clusters)
    assert p.objective(metrics, clusters) == pytest.approx(expected, rel=1e-12)


def test_objective_in_tiles_that_split_the_clusters_columns(monkeypatch):
    import lmnn_sdp.core.pair_search as search_module

    p, clusters, metrics = random_instance(6, n=40, n_clusters=4, mu=0.5)
    monkeypatch.setattr(search_module, "PANEL_BYTES", 8 * 2 * 3)  # tiles of 3 columns
    monkeypatch.setattr(search_module, "BLOCK_BYTES", 16 * 3 * 4)  # and 4 rows
    assert p.objective(metrics, clusters) == pytest.approx(brute_objective(p, metrics, clusters), rel=1e-12)


def test_target_and_impostor_terms_use_the_metric_of_the_second_point():
    p, clusters, metrics = random_instance(5)
    t = p.all_triplets()
    expected = [1 + eq16(p.X, metrics, clusters, i, j) - eq16(p.X, metrics, clusters, i, l)
                for i, j, l in t]
    margins = p.triplet_margins(metrics, t, clusters)
    assert np.allclose(margins, expected, rtol=1e-12, atol=1e-12)
    active = p.active_triplets(metrics, band=0.1, clusters=clusters)
    assert {tuple(r) for r in active} == {tuple(r) for r, m in zip(t, margins) if m > -0.1}


def test_one_cluster_is_single_metric_lmnn():
    p, _, metrics = random_instance(6, n=14, n_clusters=1)
    one = np.zeros(p.n_samples, dtype=int)
    assert p.objective(metrics, one) == pytest.approx(p.objective(metrics[0]), rel=1e-12)
    result = solve_mm_lmnn(p, one)
    assert result.certificate.certified
    assert result.upper == pytest.approx(solve_lmnn(p).upper, rel=1e-6)


def test_default_clusters_are_the_classes():
    p, _, _ = random_instance(7, n=10)
    result = solve_mm_lmnn(p)
    assert np.array_equal(result.clusters, p.label_codes) and result.metrics.shape == (2, 2, 2)


@pytest.mark.parametrize("seed,mu", [(0, 0.2), (2, 0.8)])
def test_every_method_and_formulation_matches_reference(seed, mu):
    p, clusters, _ = random_instance(seed, mu=mu)
    expected = reference_optimum(p, clusters)
    solves = [solve_mm_lmnn(p, clusters, method="full"), solve_mm_lmnn(p, clusters, method="full", formulation="dual"),
              solve_mm_lmnn(p, clusters, method="cutting-plane"),
              solve_mm_lmnn(p, clusters, method="cutting-plane", formulation="primal"),
              solve_mm_lmnn(p, clusters, method="aggregated")]
    for result in solves:
        assert result.certificate.certified, result
        assert result.upper == pytest.approx(expected, rel=1e-6)
        assert result.lower <= expected * (1 + 1e-9)
        assert result.upper == pytest.approx(p.objective(result.metrics, clusters), rel=1e-14)
        assert min(np.linalg.eigvalsh(M)[0] for M in result.metrics) >= -1e-12


# seeds 0-5 meet each number of clusters and k with each mu; seeds 6-19 (slow, 2 s) are more of the same
@pytest.mark.parametrize("seed", [*range(6), *(pytest.param(seed, marks=pytest.mark.slow) for seed in range(6, 20))])
def test_bounds_bracket_the_optimum_over_many_random_instances(seed):
    p, clusters, metrics = random_instance(100 + seed, n=9, n_clusters=2 + seed % 2,
                                           mu=[0.2, 0.5, 0.8][seed % 3], k=1 + seed % 2)
    optimum = solve_mm_lmnn(p, clusters, method="full")
    assert optimum.certificate.certified
    cert = certify(p, metrics, clusters=clusters)
    assert 0 <= cert.lower <= optimum.upper * (1 + 1e-9) <= cert.upper * (1 + 1e-9)
    rng = np.random.default_rng(seed)
    t = p.all_triplets()
    lam = rng.uniform(0, 2 * p.mu, size=len(t)) * (rng.uniform(size=len(t)) < 0.5)
    assert dual_lower_bound(p.with_clusters(clusters), t, lam).lower <= optimum.upper * (1 + 1e-9)


def common_scale(p: LMNNProblem, clusters, triplets, lam) -> float:
    """The largest one ``alpha`` for all clusters with every ``Z_c(alpha lambda)`` PSD, by
    bisection on the brute-force matrices (up to 1e-12 of their size), affine in ``alpha``."""
    pull = brute_dual_matrices(p, clusters, triplets, 0 * lam)
    push = [z - z0 for z, z0 in zip(brute_dual_matrices(p, clusters, triplets, lam), pull)]

    def feasible(alpha):
        return all(np.linalg.eigvalsh(z)[0] >= -1e-12 * np.abs(z).max()
                   for z in (z0 + alpha * dz for z0, dz in zip(pull, push)))

    lo, hi = 0.0, 1.0
    if feasible(hi):
        return hi
    for _ in range(50):
        lo, hi = ((lo + hi) / 2, hi) if feasible((lo + hi) / 2) else (lo, (lo + hi) / 2)
    return lo


def test_scaled_multipliers_are_dual_feasible_and_each_scale_is_maximal():
    for seed in range(8):
        p, clusters, _ = random_instance(200 + seed, n=10, d=3, mu=[0.2, 0.5, 0.8][seed % 3])
        rng = np.random.default_rng(seed)
        t = p.all_triplets()
        lam = rng.uniform(0, p.mu, size=len(t)) * (rng.uniform(size=len(t)) < 0.3)
        bound = dual_lower_bound(p.with_clusters(clusters), t, lam)
        scales = np.array(bound.scales)
        assert bound.alpha == scales.min() and bound.multiplier_sum == pytest.approx(lam.sum())
        assert bound.lower == pytest.approx(scales[clusters[t[:, 2]]] @ lam)
        Z = brute_dual_matrices(p, clusters, t, scales[clusters[t[:, 2]]] * lam)
        assert min(np.linalg.eigvalsh(z)[0] for z in Z) >= -1e-9
        for c in np.flatnonzero(scales < 1):  # each scale is the largest the others allow
            raised = scales.copy()
            raised[c] = min(1.0, 1.001 * raised[c] + 1e-6)
            Z = brute_dual_matrices(p, clusters, t, raised[clusters[t[:, 2]]] * lam)
            assert np.linalg.eigvalsh(Z[c])[0] < 0
        assert bound.lower >= common_scale(p, clusters, t, lam) * lam.sum() * (1 - 1e-9)


def test_sweeps_that_do_not_settle_fall_back_to_one_scale_for_all(monkeypatch):
    monkeypatch.setattr(bounds, "SCALE_SWEEPS", 0)
    for seed in range(4):
        p, clusters, _ = random_instance(300 + seed, n=10, d=3, mu=0.8)
        t = p.all_triplets()
        lam = np.random.default_rng(seed).uniform(0, p.mu, size=len(t))
        bound = dual_lower_bound(p.with_clusters(clusters), t, lam)
        assert bound.alpha < 1 and len(set(bound.scales)) == 1
        assert bound.lower == pytest.approx(common_scale(p, clusters, t, lam) * lam.sum(), rel=1e-6)


@pytest.mark.slow  # 3 s; test_scaled_multipliers_are_dual_feasible_and_each_scale_is_maximal keeps the scales quick
def test_cluster_scales_certify_raw_wine_class_metrics_that_one_scale_could_not():
    """Built-in wine-n80-k2-mu0.2, one metric per class: the SDP's multipliers sum to the
    optimum, but one scale for all three clusters proves only 7.2e-6; a scale per cluster
    pays only for the impostor multipliers of the cluster whose ``Z_c`` leaves the cone."""
    from validation.instances import builtin_instances
    problem = next(i for i in builtin_instances() if i.name == "wine-n80-k2-mu0.2").problem()
    clusters = problem.label_codes
    result = solve_mm_lmnn(problem, method="aggregated", tol=1e-7)
    t, lam = result.triplets, np.clip(result.multipliers, 0, problem.mu)  # the SDP's pair
    bound = dual_lower_bound(problem.with_clusters(clusters), t, lam)
    assert relative_gap(result.upper, bound.lower) <= 1e-7
    assert relative_gap(result.upper, common_scale(problem, clusters, t, lam) * lam.sum()) > 1e-6


def test_certify_closes_the_gap_at_the_optimum_and_not_at_the_identity():
    p, clusters, _ = random_instance(8)
    result = solve_mm_lmnn(p, clusters)
    assert certify(p, result.metrics, clusters=clusters).relative_gap <= 1e-6
    at_identity = certify(p, np.stack([np.eye(2)] * 3), clusters=clusters)
    assert not at_identity.certified and at_identity.lower <= result.upper * (1 + 1e-9)


def test_scs_is_available_and_judged_by_the_certificate():
    p, clusters, _ = random_instance(4, mu=0.5)
    result = solve_mm_lmnn(p, clusters, solver="SCS",
                           solver_options={"eps_abs": 1e-9, "eps_rel": 1e-9})
    assert result.solver == "SCS" and result.lower <= result.upper
    assert result.upper == pytest.approx(reference_optimum(p, clusters), rel=1e-4)


def line_and_cloud(seed: int, on_line: int = 0):
    """Class 0 on a line in 3-D (its pull matrix has rank 1), class 1 a cloud; the first
    ``on_line`` points of class 1 sit on the same line."""
    rng = np.random.default_rng(seed)
    line = np.outer(rng.normal(size=7 + on_line), [1.0, 0.5, 0.2]) + [0.3, 0, 0]
    X = np.vstack([line, rng.normal(size=(7 - on_line, 3))])
    return LMNNProblem(X, np.r_[np.zeros(7, int), np.ones(7, int)], k=2, mu=0.5)


@pytest.mark.parametrize("method", ["full", "cutting-plane", "aggregated"])
def test_cluster_with_singular_pull_matrix_is_certified_on_the_data_range(method):
    p = line_and_cloud(3)
    result = solve_mm_lmnn(p, method=method)
    assert result.certificate.singular_clusters == (0,)
    assert result.certificate.certified
    assert result.upper == pytest.approx(reference_optimum(p, p.label_codes), rel=1e-6)


def test_singular_cluster_with_impostors_in_its_range_is_never_overstated():
    p = line_and_cloud(4, on_line=2)  # impostors on the line cannot be pushed away for free
    optimum = reference_optimum(p, p.label_codes)
    cert = certify(p, solve_mm_lmnn(p).metrics, clusters=p.label_codes)
    assert cert.lower <= optimum * (1 + 1e-9) and cert.upper == pytest.approx(optimum, rel=1e-7)
    assert cert.singular_clusters == (0,)
    on_zero = p.label_codes[cert.triplets[:, 2]] == 0  # the singular cluster's impostors
    assert cert.n_dropped > 0 or not np.any(cert.multipliers[on_zero] > 0)  # dropped, or repaired to 0
    assert cert.certified == (cert.relative_gap <= cert.tol)


def test_cluster_that_holds_no_target_neighbour_gets_an_infinite_metric():
    rng = np.random.default_rng(12)
    X = np.vstack([rng.normal(size=(5, 2)), [[9.0, 9.0]], rng.normal(size=(6, 2))])
    p = LMNNProblem(X, np.r_[np.zeros(6, int), np.ones(6, int)], k=2, mu=0.5)
    assert 5 not in p.targets  # the outlier is nobody's target: P_2 = 0
    clusters = np.r_[np.zeros(5, int), 2, np.ones(6, int)]
    result = solve_mm_lmnn(p, clusters)
    assert result.certificate.certified and 2 in result.certificate.singular_clusters
    assert result.upper == pytest.approx(reference_optimum(p, clusters), rel=1e-6)


def test_fig7_leave_one_out_error_drops_with_three_metrics():
    X, y = concentric_circles()
    errors = []
    for n_clusters in (1, 2, 3):
        clusters = KMeans(n_clusters, n_init=10, random_state=0).fit(X).labels_
        result = solve_mm_lmnn(LMNNProblem(X, y, k=2, mu=0.5), clusters, method="aggregated")
        assert result.certificate.certified
        errors.append(leave_one_out_error(X, y, result.metrics, clusters))
    assert errors[0] >= 0.5 and 0 < errors[1] < errors[0] and errors[2] == 0.0


def test_distance_matrix_and_leave_one_out_error_by_brute_force():
    p, clusters, metrics = random_instance(9, n=10)
    D = distance_matrix(p.X, metrics, clusters)
    assert D[3, 7] == pytest.approx(eq16(p.X, metrics, clusters, 3, 7))
    assert D[7, 3] == pytest.approx(eq16(p.X, metrics, clusters, 7, 3))
    wrong = 0
    for i in range(10):
        others = [j for j in range(10) if j != i]
        nearest = min(others, key=lambda j: (eq16(p.X, metrics, clusters, i, j), j))
        wrong += p.y[nearest] != p.y[i]
    assert leave_one_out_error(p.X, p.y, metrics, clusters) == wrong / 10


def test_iris_cutting_plane_and_aggregated_agree():
    X, y = load_bundled("iris")
    X, y = X[::3], y[::3]  # 50 points, 4,998 triplets: the working set keeps about 1,900
    p = LMNNProblem((X - X.mean(0)) / X.std(0), y, k=3, mu=0.5)
    cut = solve_mm_lmnn(p, method="cutting-plane")
    aggregated = solve_mm_lmnn(p, method="aggregated")
    for result in (cut, aggregated):
        assert result.relative_gap <= 1e-6 and result.rounds
    assert aggregated.upper == pytest.approx(cut.upper, rel=1e-6)
    assert cut.rounds[-1].violated_outside == 0 and cut.n_triplets < p.n_triplets


@pytest.mark.parametrize("clusters,error,match", [
    (np.zeros(11, dtype=int), ValueError, "shape"),
    (np.r_[np.zeros(6, int), 2 * np.ones(6, int)], ValueError, "cluster 1 has no members"),
    (np.zeros(12), TypeError, "integer"),
    (np.r_[-np.ones(6, int), np.zeros(6, int)], ValueError, "0..C-1"),
])
def test_bad_clusters_are_rejected(clusters, error, match):
    p, _, _ = random_instance(10)
    with pytest.raises(error, match=match):
        solve_mm_lmnn(p, clusters)
    with pytest.raises(error, match=match):
        p.objective(np.stack([np.eye(2)] * 3), clusters)


def test_bad_metrics_methods_and_multipliers_are_rejected():
    p, clusters, metrics = random_instance(11)
    with pytest.raises(ValueError, match="one metric per cluster"):
        p.objective(metrics[:2], clusters)
    with pytest.raises(ValueError, match=r"metrics\[1\].*not positive semidefinite"):
        certify(p, np.stack([np.eye(2), -np.eye(2), np.eye(2)]), clusters=clusters)
    with pytest.raises(ValueError, match="method must be"):
        solve_mm_lmnn(p, clusters, method="newton")
    with pytest.raises(ValueError, match="need method"):
        solve_mm_lmnn(p, clusters, method="full", band=0.1)
    with pytest.raises(ValueError, match="formulation"):
        solve_mm_lmnn(p, clusters, formulation="lagrangian")
    with pytest.raises(ValueError, match="formulation applies"):
        solve_mm_lmnn(p, clusters, method="aggregated", formulation="primal")
    with pytest.raises(ValueError, match="together"):
        certify(p, metrics, clusters=clusters, triplets=p.all_triplets())
