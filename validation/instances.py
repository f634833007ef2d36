"""The instances the cross-check and the corpus run on.

``builtin_instances``: the suite of small LMNN instances, no download, every one
certifiable: subsets of iris, wine, breast cancer and digits (PCA-reduced),
synthetic blobs, the zebra-stripes toy of Fig. 2 and degenerate cases
(duplicate points, rank-deficient inputs, a class of exactly k+1 members, ten
classes, no impostors at all), with k from 1 to 5 and mu in {0.2, 0.5, 0.8}.
The cross-check and the certified corpus both draw from this list.

``medium_instances``: a few thousand rows of the fetched real data sets
(``python -m validation data fetch``), large enough that the fast solver runs
its working set and searches as at scale, small enough that the exact side
certifies them in seconds: letters, Satellite's raw 0..255 pixels (scale must
not matter), Ionosphere and a Fashion-MNIST subset.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.datasets import make_blobs

from lmnn_sdp import LMNNProblem
from validation.datasets import load_bundled, load_fashion_mnist, load_letters, load_mlbench


@dataclass(frozen=True)
class Instance:
    """One LMNN instance: data, k, mu and where the data came from."""

    name: str
    X: np.ndarray  # (n, d)
    y: np.ndarray  # (n,) integer labels
    k: int
    mu: float
    source: str

    def problem(self) -> LMNNProblem:
        return LMNNProblem(self.X, self.y, k=self.k, mu=self.mu)


def builtin_instances() -> list[Instance]:
    """The suite, in a fixed order (names are unique)."""
    suite = _real_subsets() + _synthetic() + _degenerate()
    names = [instance.name for instance in suite]
    assert len(set(names)) == len(names)
    return suite


def medium_instances() -> tuple[list[Instance], list[str]]:
    """The medium instances that can be loaded, and a message for each data set that cannot.

    A data set is skipped when its files are not fetched (the message names the fetch
    command) or when reading it needs an extra that is not installed (mlbench's ``.rda``
    files need ``rdata``; the message names the extra), so the main job runs on a core
    install with or without the data.
    """
    loaders = {
        "letters": _letters, "satellite": _satellite, "ionosphere": _ionosphere, "fashion-mnist": _fashion,
    }
    found, missing = [], []
    for name, loader in loaders.items():
        try:
            found.extend(loader())
        except (FileNotFoundError, ImportError) as err:
            missing.append(f"skipped {name}: {err}")
    return found, missing


def _letters() -> list[Instance]:
    X, y = load_letters()
    return [Instance(f"letters-n{n}-k{k}-mu{mu}", X[:n], y[:n], k, mu, f"UCI letters, first {n} rows")
            for n, k, mu in ((2000, 2, 0.3), (2500, 3, 0.5))]


def _satellite() -> list[Instance]:
    X, y = load_mlbench("Satellite")
    return [Instance("satellite-n1500-k3-mu0.5", X[:1500], y[:1500], 3, 0.5,
                     "mlbench Satellite, first 1500 rows, 36 raw pixel values 0..255")]


def _ionosphere() -> list[Instance]:
    X, y = load_mlbench("Ionosphere")
    return [Instance("ionosphere-n351-k3-mu0.5", X, y, 3, 0.5, "mlbench Ionosphere, all 351 rows")]


def _fashion() -> list[Instance]:
    from sklearn.decomposition import PCA

    X, y, _, _ = load_fashion_mnist()
    X = PCA(24, random_state=0).fit_transform(X[:2000])
    return [Instance("fashion-pca24-n2000-k3-mu0.5", X, y[:2000], 3, 0.5,
                     "Fashion-MNIST, first 2000 training images / 255, PCA-24 fitted on them")]


def bundled_subset(name: str, n: int, seed: int, pca: int | None = None):
    """``n`` rows of a bundled data set drawn without replacement, stratified by order."""
    X, y = load_bundled(name, pca=pca)
    rows = np.sort(np.random.default_rng(seed).choice(len(X), size=min(n, len(X)), replace=False))
    tag = f"{name}" + (f" PCA-{pca}" if pca else "")
    return X[rows], y[rows], f"{tag}, {len(rows)} of {len(X)} rows, seed {seed}"


def _real_subsets() -> list[Instance]:
    specs = [  # (data, n, seed, pca, k, mu)
        ("iris", 150, 0, None, 3, 0.5), ("iris", 90, 1, None, 1, 0.2), ("iris", 90, 2, None, 5, 0.8),
        ("iris", 60, 3, None, 2, 0.5), ("iris", 120, 4, None, 4, 0.2),
        ("wine", 178, 0, None, 3, 0.5), ("wine", 80, 1, None, 2, 0.2), ("wine", 80, 2, None, 4, 0.8),
        ("wine", 100, 3, 5, 1, 0.5), ("wine", 178, 0, None, 3, 0.99), ("wine", 178, 0, None, 3, 1.0),
        ("breast_cancer", 80, 0, 10, 3, 0.5), ("breast_cancer", 70, 1, 6, 1, 0.8),
        ("breast_cancer", 60, 2, None, 2, 0.2), ("breast_cancer", 90, 3, 4, 5, 0.5),
        ("digits", 120, 0, 10, 3, 0.5), ("digits", 100, 1, 8, 2, 0.2), ("digits", 200, 2, 6, 4, 0.8),
    ]
    out = []
    for data, n, seed, pca, k, mu in specs:
        X, y, source = bundled_subset(data, n, seed, pca)
        name = f"{data}{'-pca' + str(pca) if pca else ''}-n{len(X)}-k{k}-mu{mu}"
        out.append(Instance(name, X, y, k, mu, source))
    return out


def _synthetic() -> list[Instance]:
    out = []
    for seed, (n, d, centers, k, mu, spread) in enumerate([
        (60, 2, 3, 1, 0.2, 1.5), (60, 2, 3, 2, 0.5, 2.0), (80, 3, 4, 3, 0.8, 2.5),
        (90, 5, 3, 4, 0.5, 3.0), (72, 4, 2, 5, 0.2, 2.0), (50, 2, 2, 3, 0.8, 1.0),
        (120, 3, 12, 2, 0.5, 1.0),
    ]):
        X, y = make_blobs(n_samples=n, n_features=d, centers=centers, cluster_std=spread,
                          random_state=seed)
        name = f"blobs-n{n}-d{d}-c{centers}-k{k}-mu{mu}"
        out.append(Instance(name, X, y, k, mu, f"make_blobs, cluster_std {spread}, seed {seed}"))
    for seed, (k, mu) in enumerate([(3, 0.5), (1, 0.2), (2, 0.8)]):
        X, y = zebra_stripes(80, seed=seed)
        out.append(Instance(f"zebra-n80-k{k}-mu{mu}", X, y, k, mu, f"zebra stripes (Fig. 2), seed {seed}"))
    return out


def zebra_stripes(n: int, stripes: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The toy of Fig. 2: horizontal stripes of alternating class, wide in x and thin in y.

    Euclidean neighbours mix the classes; a metric stretching y separates them."""
    rng = np.random.default_rng(seed)
    stripe = np.arange(n) % stripes
    X = np.column_stack([rng.uniform(0, 4, n), stripe + rng.uniform(-0.15, 0.15, n)])
    return X, stripe % 2


def concentric_circles(per_circle: int = 9, outer_radius: float = 3.0) -> tuple:
    """Fig. 7: two concentric circles, one class each, points at the same angles.

    The outer points' nearest neighbours lie on the inner circle (1-NN error 50%)."""
    angles = np.linspace(0, 2 * np.pi, per_circle, endpoint=False)
    ring = np.column_stack([np.cos(angles), np.sin(angles)])
    return np.vstack([ring, outer_radius * ring]), np.repeat([0, 1], per_circle)


def _degenerate() -> list[Instance]:
    rng = np.random.default_rng(7)
    base = rng.normal(size=(15, 3))
    duplicated = np.vstack([base, base])
    rank_deficient = np.column_stack([base, base[:, 0] - base[:, 1], np.zeros(15)])
    small_class_X = np.vstack([rng.normal(size=(20, 2)), rng.normal(loc=1.0, size=(4, 2))])
    separated = np.vstack([rng.normal(scale=0.2, size=(12, 2)), rng.normal(loc=20, scale=0.2, size=(12, 2))])
    digits_X, digits_y, source = bundled_subset("digits", 150, 3, pca=5)
    return [
        Instance("duplicates-n30-k2-mu0.5", duplicated, np.tile(np.arange(15) % 3, 2), 2, 0.5,
                 "15 normal points, each twice"),
        Instance("rank-deficient-n15-d5-k2-mu0.2", rank_deficient, np.arange(15) % 3, 2, 0.2,
                 "rank 3 in 5 dimensions (a difference column and a zero column)"),
        Instance("class-of-k+1-n24-k3-mu0.5", small_class_X, np.repeat([0, 1], [20, 4]), 3, 0.5,
                 "a class of exactly k+1 = 4 members"),
        Instance("ten-classes-digits-n150-k1-mu0.5", digits_X, digits_y, 1, 0.5, source),
        Instance("no-impostors-n24-k3-mu0.5", separated, np.repeat([0, 1], 12), 3, 0.5,
                 "two classes 20 units apart: no triplet violated at the identity"),
    ]
