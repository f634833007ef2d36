"""Corpus entries of multi-metric LMNN (Weinberger & Saul, JMLR 2009, sec. 5.2, eq. 16).

Arrays: those of ``corpus_lmnn`` with ``clusters`` (n,) int64 (cluster of each
point, 0..C-1) and the certified metrics ``M`` (C, d, d); the stored
``multipliers`` (T,) are clipped into ``[0, mu]``, scaled into the dual cone
(every ``Z_c`` PSD) and zero for impostors of singular clusters; zeros are left
out. The bound is ``multi_metric_certificate.mm_dual_lower_bound`` of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs

from lmnn_sdp import LMNNProblem
from lmnn_sdp.bounds import relative_gap
from lmnn_sdp.formulation import reduced_space
from lmnn_sdp.multi_metric import MMResult, solve_mm_lmnn
from lmnn_sdp.multi_metric_certificate import mm_complementary_multipliers, mm_dual_lower_bound
from lmnn_sdp.multi_metric_objective import mm_objective
from validation.corpus_lmnn import is_psd, problem_arrays, problem_fields
from validation.instances import Instance, bundled_subset, concentric_circles

OBJECTIVE = ("eps(M_1..M_C) = eq. 14 with D_M(x_i, x_j) replaced by D^(x_i, x_j) = "
             "(x_i-x_j)^T M_{c(j)} (x_i-x_j), the metric of the cluster c(j) of the second "
             "point (JMLR 2009, sec. 5.2, eq. 16)")


@dataclass(frozen=True)
class MMInstance(Instance):
    """An LMNN instance with a cluster assignment: one metric per cluster."""

    clusters: np.ndarray  # (n,) values 0..C-1


def mm_instances() -> list[MMInstance]:
    """Iris and wine (PCA-5) subsets with one metric per class; the Fig. 7 circles and
    blobs with k-means clusters that are not the classes."""
    out = []
    for data, n, seed, pca, k, mu in [("iris", 90, 5, None, 3, 0.5), ("wine", 80, 5, 5, 2, 0.8)]:
        X, y, source = bundled_subset(data, n, seed, pca)
        name = f"mm-{data}{'-pca' + str(pca) if pca else ''}-n{n}-k{k}-mu{mu}-c3"
        out.append(MMInstance(name, X, y, k, mu, source + ", one cluster per class",
                              np.unique(y, return_inverse=True)[1]))
    X, y = concentric_circles()
    out.append(MMInstance("mm-circles-n18-k2-mu0.5-c3", X, y, 2, 0.5,
                          "concentric circles (Fig. 7), 9 points each; k-means, 3 clusters, "
                          "seed 0", _kmeans(X, 3)))
    X, y = make_blobs(n_samples=60, n_features=2, centers=3, cluster_std=1.5, random_state=3)
    out.append(MMInstance("mm-blobs-n60-d2-k2-mu0.2-c4", X, y, 2, 0.2,
                          "make_blobs, 3 centers, cluster_std 1.5, seed 3; k-means, 4 clusters, "
                          "seed 0", _kmeans(X, 4)))
    return out


def certify(instance: MMInstance, tol: float) -> tuple[dict, dict]:
    """Solve and certify one instance; returns ``(arrays, manifest entry)``."""
    problem, clusters = instance.problem(), instance.clusters
    result = solve_mm_lmnn(problem, clusters, method="aggregated", tol=tol)
    if not (result.certificate.certified and np.all(np.isfinite(result.metrics))):
        raise RuntimeError(f"{instance.name}: certified only to {result.relative_gap:.2g}")
    triplets, multipliers, lower = _certificate_arrays(problem, clusters, result)
    gap = relative_gap(result.objective, lower)
    if gap > tol:
        raise RuntimeError(f"{instance.name}: stored multipliers prove only a gap of {gap:.2g}")
    arrays = {**problem_arrays(problem), "clusters": clusters.astype(np.int64),
              "M": result.metrics, "triplets": triplets.astype(np.int64),
              "multipliers": multipliers}
    entry = {"problem": "multi-metric-lmnn", **problem_fields(problem), "clusters": len(result.metrics),
             "optimum": result.objective, "lower_bound": lower, "relative_gap": gap,
             "source": instance.source,
             "solver": f"lmnn_sdp multi-metric aggregated active sets, {result.solver}"}
    return arrays, entry


def verify(data: dict) -> tuple[float, float, bool]:
    """``(eps(M_1..M_C), lower bound of the stored multipliers, every M_c is PSD)``."""
    problem = LMNNProblem(data["X"], data["y"], targets=data["targets"], mu=float(data["mu"]))
    bound = mm_dual_lower_bound(problem, data["clusters"], data["triplets"], data["multipliers"])
    objective = mm_objective(problem, data["M"], data["clusters"])
    return objective, bound.lower, all(is_psd(M) for M in data["M"])


def _certificate_arrays(problem: LMNNProblem, clusters: np.ndarray,
                        result: MMResult) -> tuple[np.ndarray, np.ndarray, float]:
    """The best multipliers for ``result.metrics`` as ``mm_dual_lower_bound`` uses them.

    Candidates: the solve's best round and complementary slackness at the metrics.
    Returns ``(triplets (T, 3), multipliers (T,) > 0, lower bound they prove)``."""
    space = reduced_space(problem)
    candidates = [(result.triplets, result.multipliers),
                  mm_complementary_multipliers(problem, space, clusters, result.metrics, 1e-3)[:2]]
    best = None
    for triplets, multipliers in candidates:
        bound = mm_dual_lower_bound(problem, clusters, triplets, multipliers, space)
        if best is None or bound.lower > best[2]:
            proved = bound.alpha * np.clip(multipliers, 0, problem.mu)
            proved[np.isin(clusters[triplets[:, 2]], bound.singular_clusters)] = 0.0
            best = (triplets[proved > 0], proved[proved > 0], bound.lower)
    return best


def _kmeans(X: np.ndarray, n_clusters: int) -> np.ndarray:
    return KMeans(n_clusters, n_init=10, random_state=0).fit(X).labels_.astype(np.int64)
