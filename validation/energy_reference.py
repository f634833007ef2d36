"""Eq. 15 by brute force: the reference that energy-based classification is checked against.

Written to be read against the paper, not to be fast: for every test point ``t`` and
hypothetical label ``c`` it finds the ``k`` Euclidean-nearest points of class ``c``
(ties to the smaller index) and sums, over explicit loops, the pull to them, the hinge of
every impostor ``l`` of label other than ``c`` against each of them, and the hinge of
every training triplet ``(i, j, t)`` with ``y_i != c`` that ``t`` invades (JMLR 2009,
sec. 3.5). Distances to a training point use its cluster's metric (eq. 16); ``D(i, t)``
uses ``test_clusters[t, c]``. ``test_targets="metric"`` ranks class ``c`` by those
distances instead, and ``test_margin`` replaces the 1 of the test point's own hinge.
"""

from __future__ import annotations

import numpy as np


def energies_by_loops(X, y, targets, mu, metrics, X_test, clusters, test_clusters,
                      test_targets="euclidean", test_margin=1.0) -> np.ndarray:
    """E (m, n_classes) of eq. 15; ``metrics`` (C, d, d), ``clusters`` (n,), ``test_clusters``
    (m, n_classes): the cluster of test point ``t`` under each hypothetical label."""
    classes = np.unique(y)

    def D(a, b, g):
        v = a - b
        return float(v @ metrics[g] @ v)

    E = np.zeros((len(X_test), len(classes)))
    for t, x in enumerate(X_test):
        for c, label in enumerate(classes):
            members = np.flatnonzero(y == label)
            if test_targets == "metric":
                rank = [D(x, X[j], clusters[j]) for j in members]
            else:
                rank = [float(np.sum((x - X[j]) ** 2)) for j in members]
            ranked = sorted(range(len(members)), key=lambda a: (rank[a], members[a]))
            near = [members[a] for a in ranked[:targets.shape[1]]]
            pull = sum(D(x, X[j], clusters[j]) for j in near)
            push = 0.0
            for j in near:
                for l in np.flatnonzero(y != label):
                    push += max(0.0, test_margin + D(x, X[j], clusters[j]) - D(x, X[l], clusters[l]))
            for i in np.flatnonzero(y != label):
                for j in targets[i]:
                    push += max(0.0, 1 + D(X[i], X[j], clusters[j]) - D(X[i], x, test_clusters[t, c]))
            E[t, c] = (1 - mu) * pull + mu * push
    return E
