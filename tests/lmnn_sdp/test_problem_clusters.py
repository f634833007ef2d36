"""The problem holds its clusters (eq. 16): validated once, shared arrays, solved as multi-metric."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris

import fast_solver
from lmnn_sdp import LMNNProblem, certify


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return LMNNProblem(X[::5], y[::5], k=2, mu=0.5)


def test_a_problem_holds_its_clusters_read_only(iris):
    clusters = np.arange(iris.n_samples) % 2
    p = LMNNProblem(iris.X, iris.y, k=2, clusters=clusters)
    assert np.array_equal(p.clusters, clusters) and p.owner is p.clusters and p.n_clusters == 2
    assert not p.clusters.flags.writeable
    clusters[0] = 1  # the caller's array is copied
    assert p.clusters[0] == 0
    assert iris.clusters is None and iris.n_clusters == 1 and not iris.owner.any()
    assert repr(p).endswith("triplets=1200, clusters=2)") and "clusters" not in repr(iris)


def test_with_clusters_shares_the_arrays_and_targets(iris):
    two = iris.with_clusters(np.arange(iris.n_samples) % 2)
    assert two.targets is iris.targets and two.X is iris.X and two.X_centered is iris.X_centered
    assert two.n_clusters == 2 and iris.clusters is None
    back = two.with_clusters(None)
    assert back.clusters is None and back.targets is iris.targets


@pytest.mark.parametrize("clusters, error, match", [
    (np.zeros(5, np.intp), ValueError, "clusters must have shape"),
    (np.full(30, 0.0), TypeError, "integer cluster indices"),
    (np.r_[np.zeros(29, np.intp), -1], ValueError, "indices 0..C-1"),
    (np.r_[np.zeros(29, np.intp), 2], ValueError, "cluster 1 has no members"),
])
def test_bad_clusters_are_refused_at_construction(iris, clusters, error, match):
    with pytest.raises(error, match=match):
        LMNNProblem(iris.X, iris.y, k=2, clusters=clusters)
    with pytest.raises(error, match=match):
        iris.with_clusters(clusters)


def test_a_problem_with_clusters_solves_and_certifies_as_multi_metric(iris):
    start = fast_solver.solve(iris).metric
    held = fast_solver.solve(iris.with_clusters(iris.label_codes), start)
    given = fast_solver.solve(iris, start, clusters=iris.label_codes)
    assert held.metric.shape == (3, 4, 4) and np.array_equal(held.clusters, iris.label_codes)
    assert held.upper == given.upper and held.lower == given.lower
    again = certify(iris.with_clusters(iris.label_codes), held.metric, triplets=held.certificate.triplets,
                    multipliers=held.certificate.multipliers)  # the evidence proves the same bound
    assert again.certified and again.lower == pytest.approx(held.lower, rel=1e-12)


def test_the_data_range_and_pull_matrices_are_computed_once_per_problem(iris, monkeypatch):
    from lmnn_sdp.core import space
    problem = LMNNProblem(iris.X, iris.y, k=2)
    svds, scatters = [], []  # the factorizations of the centred inputs (QR: more points than features)
    qr, scatter = np.linalg.qr, space.cluster_scatter
    monkeypatch.setattr(np.linalg, "qr", lambda a, **kw: svds.append(a is problem.X_centered) or qr(a, **kw))
    monkeypatch.setattr(space, "cluster_scatter", lambda *a: scatters.append(a[0]) or scatter(*a))
    lmnn = fast_solver.solve(problem)
    assert sum(svds) == 1 and len(scatters) == len({id(x) for x in scatters})
    per_class = problem.with_clusters(problem.label_codes)
    assert space.sphered_space(per_class) is space.sphered_space(problem)
    n_scatters = len(scatters)
    fast_solver.solve(per_class, lmnn.metric)
    assert sum(svds) == 1 and len(scatters) > n_scatters  # the pull matrices of the clusters are new
    assert not space.pull_matrices(per_class, space.sphered_space(per_class)).flags.writeable
