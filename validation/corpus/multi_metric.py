"""Corpus entries of multi-metric LMNN (Weinberger & Saul, JMLR 2009, sec. 5.2, eq. 16).

Each entry is a ``lmnn_sdp.Certificate`` with ``clusters``: the arrays of
``corpus_lmnn`` with ``clusters`` (n,) int64 (cluster of each point, 0..C-1) and
the certified metrics ``M`` (C, d, d).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs

from lmnn_sdp import Certificate
from lmnn_sdp.lmnn import solve_mm_lmnn
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


def certify(instance: MMInstance, tol: float) -> tuple[Certificate, str]:
    """Solve and certify one instance to ``tol``; returns ``(certificate, solver)``."""
    result = solve_mm_lmnn(instance.problem(), instance.clusters, method="aggregated", tol=tol)
    if not result.certificate.certified:
        raise RuntimeError(f"{instance.name}: certified only to {result.relative_gap:.2g}")
    return result.certificate, f"lmnn_sdp multi-metric aggregated active sets, {result.solver}"


def _kmeans(X: np.ndarray, n_clusters: int) -> np.ndarray:
    return KMeans(n_clusters, n_init=10, random_state=0).fit(X).labels_.astype(np.int64)
