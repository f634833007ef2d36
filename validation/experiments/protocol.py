"""The protocol of JMLR 2009, sec. 4 and Table 1, on every data set obtainable offline.

* k = 3 target neighbours and mu = 0.5 for every LMNN variant; 3-NN classification
  with ties broken by shrinking k (``validation.experiments.knn``); training error by
  leave-one-out.
* Random 70/30 splits, stratified by class (so a small class keeps at least k + 1
  training points; the paper says "random"), split ``s`` drawn with ``random_state=s``;
  as many splits as Table 1 averaged (iris and wine 100, letters 10) and 10 for the
  data sets Table 1 does not have. Fashion-MNIST, the MNIST stand-in, has its fixed
  60,000/10,000 split (as MNIST had), reduced by PCA to 164 dimensions fitted on the
  training images (Table 1's "reduced dimensions" of MNIST).
* Features as distributed: iris, wine (raw, as the paper's 25% Euclidean error shows),
  digits (pixels 0..16), letters (16 integers), mlbench's Ionosphere (its constant V2
  kept), Satellite (pixels 0..255), Vowel (without the speaker number V1), Vehicle,
  Sonar, Glass; Fashion-MNIST pixels / 255.
* On a data set with ``fit_rows`` (Fashion-MNIST: 10,000), the methods of ``SUBSET_METHODS``
  fit on a stratified subset of that many training rows (seed 0) and classify, as every
  other method, by the whole training part: their cost is quadratic in n by design (every
  pair in NCA's softmax, MMC's dissimilar pairs, MLNG's neighbourhood graph, kernel LMCA's
  kernel, scikit-learn NCA's n x n softmax), or the fit does not finish on all of it
  (mlpack, metric-learn, and for now multi-metric LMNN: its 10 class metrics on 60,000
  images take hours, record ``subset-costs-multimetric``). The subset is part of the task
  key and marked in the tables.
* ``max_rows`` (``--quick``) first draws a stratified subset of the data (seed 0) and
  splits that; a fixed split keeps 70% of the rows for training and 30% for testing, and
  its PCA at most as many components as training rows.

Everything is loaded where the task runs (a Dask worker) and cached per process, so the
scheduler ships names, never arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split

from validation import datasets

K = 3  # target neighbours and k-NN neighbours (Table 1)
MU = 0.5  # weight of the push term (eq. 14, eq. 15)
TEST_FRACTION = 0.3
QUICK_ROWS = 300  # --quick: rows of each data set's stratified subset
QUICK_SPLITS = 2  # --quick: splits per data set
# --quick's data sets unless named: those of at most 18 features. On 300-row subsets the
# others cost LMNN minutes per fit (Fashion-MNIST's PCA-164: 6 min; sonar, digits: 20-60 s,
# multi-metric 4 min, at load 10 on 2 cores), the low-dimensional ones seconds.
QUICK_DATASETS = ("iris", "wine", "letters", "vowel", "vehicle", "glass")
# --quick's methods unless named: ours but multi-metric LMNN and kernel LMCA, no peers. On an
# idle machine the 12 quick multi-metric fits took 608 s of a 10.8-minute quick run (the fast
# multi-metric solver is slow to certify on 26 letters classes), and with multi-metric out the
# peers' fits (metric-learn 105 s, mlpack 73 s, PyLMNN 49 s) kept it at 5.7 minutes; at load 12
# kernel LMCA's and scikit-learn NCA's took 423 s and 288 s.
QUICK_SKIPS = ("multimetric", "kernel-lmca", "pylmnn", "metric-learn", "mlpack", "sklearn-nca")
# fit on a data set's ``fit_rows`` (module docstring)
SUBSET_METHODS = ("mmc", "nca", "mlng", "kernel-lmca", "sklearn-nca", "mlpack", "metric-learn", "multimetric")


@dataclass(frozen=True)
class DataSpec:
    """One data set of the protocol.

    ``load`` returns ``(X, y)``, or ``(X_train, y_train, X_test, y_test)`` when
    ``fixed_split``; ``source`` is the ``validation.datasets.SOURCES`` entry holding its
    files (None: bundled with scikit-learn); ``tol`` is the certified gap asked of the
    LMNN solvers; ``paper`` names its column of Table 1, if any; ``fit_rows`` is the size of
    the training subset ``SUBSET_METHODS`` fit on (None: the whole training part)."""

    name: str
    description: str
    load: Callable[[], tuple]
    n_splits: int = 10
    fixed_split: bool = False
    pca: int | None = None
    tol: float = 1e-6
    source: str | None = None
    paper: str | None = None
    fit_rows: int | None = None


def _mlbench(name: str, columns: slice = slice(None)) -> Callable[[], tuple]:
    def load():
        X, y = datasets.load_mlbench(name)
        return X[:, columns], y
    return load


DATASETS = {spec.name: spec for spec in (
    DataSpec("iris", "scikit-learn iris, 150 x 4", lambda: datasets.load_bundled("iris"),
             n_splits=100, paper="iris"),
    DataSpec("wine", "scikit-learn wine, 178 x 13, raw", lambda: datasets.load_bundled("wine", standardise=False),
             n_splits=100, paper="wine"),
    DataSpec("digits", "scikit-learn digits, 1,797 x 64 pixels 0..16", lambda: datasets.load_bundled("digits")),
    DataSpec("letters", "UCI Letter Recognition, 20,000 x 16", datasets.load_letters,
             source="mlbench", paper="letters"),
    DataSpec("fashion-mnist", "Fashion-MNIST 60,000 / 10,000 x 784, PCA-164",
             datasets.load_fashion_mnist, n_splits=1, fixed_split=True, pca=164, tol=1e-4,
             source="fashion-mnist", paper="mnist", fit_rows=10_000),
    DataSpec("ionosphere", "mlbench Ionosphere, 351 x 34", _mlbench("Ionosphere"), source="mlbench"),
    DataSpec("satellite", "mlbench Satellite, 6,435 x 36", _mlbench("Satellite"), source="mlbench"),
    DataSpec("vowel", "mlbench Vowel, 990 x 9 (V2..V10)", _mlbench("Vowel", slice(1, None)),
             source="mlbench"),
    DataSpec("vehicle", "mlbench Vehicle, 846 x 18", _mlbench("Vehicle"), source="mlbench"),
    DataSpec("sonar", "mlbench Sonar, 208 x 60", _mlbench("Sonar"), source="mlbench"),
    DataSpec("glass", "mlbench Glass, 214 x 9", _mlbench("Glass"), source="mlbench"),
)}


@dataclass(frozen=True)
class Split:
    """One train/test split: ``X_*`` as distributed, ``Z_*`` after the data set's PCA
    (the same arrays when it has none); all read-only."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    Z_train: np.ndarray
    Z_test: np.ndarray


def missing_data(name: str) -> str | None:
    """Why data set ``name`` cannot load here (with the command that fetches it), or None."""
    spec = dataset_spec(name)
    if spec.source is None or datasets.find_data_dir(spec.source) is not None:
        return None
    return (f"{name}: its data is not fetched; run `{datasets.FETCH_COMMAND} --only "
            f"{spec.source}`")


def dataset_spec(name: str) -> DataSpec:
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; choose from {sorted(DATASETS)}")
    return DATASETS[name]


def data_params(name: str, max_rows: int | None = None, method: str | None = None) -> dict:
    """The protocol's parameters of a data set for ``method``, stored in every task's key;
    ``fit_rows`` only where the method fits on a subset (``fit_subset``)."""
    spec = dataset_spec(name)
    params = {"max_rows": max_rows, "test_fraction": "fixed" if spec.fixed_split else TEST_FRACTION,
              "stratified": True, "pca": spec.pca}
    if method in SUBSET_METHODS and spec.fit_rows is not None:
        params["fit_rows"] = spec.fit_rows
    return params


def fit_subset(X: np.ndarray, y: np.ndarray, fit_rows: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The training rows a method fits on: a stratified subset of ``fit_rows`` rows (seed 0),
    or all of them when None or not fewer."""
    return _subset(X, y, fit_rows)


@lru_cache(maxsize=8)
def load_split(name: str, split: int, max_rows: int | None = None) -> Split:
    """Split ``split`` (0-based) of data set ``name``, subset to ``max_rows`` if given."""
    spec = dataset_spec(name)
    if split < 0 or (spec.fixed_split and split > 0):
        raise ValueError(f"split must be {'0 (the fixed split)' if spec.fixed_split else '>= 0'} "
                         f"for {name}, got {split}")
    if spec.fixed_split:
        X_train, y_train, X_test, y_test = _fixed_split(name, max_rows)
    else:
        X, y = _subset(*_load(name), max_rows)
        train, test = train_test_split(np.arange(len(y)), test_size=TEST_FRACTION, stratify=y,
                                       random_state=split)
        X_train, y_train, X_test, y_test = X[train], y[train], X[test], y[test]
    Z_train, Z_test = X_train, X_test
    if spec.pca is not None and spec.pca < X_train.shape[1]:  # at most one per training row
        pca = PCA(min(spec.pca, len(X_train)), random_state=0).fit(X_train)
        Z_train, Z_test = pca.transform(X_train), pca.transform(X_test)
    return Split(*(_readonly(a) for a in (X_train, y_train, X_test, y_test, Z_train, Z_test)))


@lru_cache(maxsize=2)
def _load(name: str) -> tuple:
    return dataset_spec(name).load()


def _fixed_split(name: str, max_rows: int | None) -> tuple:
    X_train, y_train, X_test, y_test = _load(name)
    if max_rows is None:
        return X_train, y_train, X_test, y_test
    n_train = round(max_rows * (1 - TEST_FRACTION))
    return (*_subset(X_train, y_train, n_train), *_subset(X_test, y_test, max_rows - n_train))


def _subset(X: np.ndarray, y: np.ndarray, rows: int | None) -> tuple[np.ndarray, np.ndarray]:
    """A stratified random subset of ``rows`` rows (seed 0), in the original order."""
    if rows is None or rows >= len(y):
        return X, y
    keep, _ = train_test_split(np.arange(len(y)), train_size=rows, stratify=y, random_state=0)
    keep = np.sort(keep)
    return X[keep], y[keep]


def _readonly(a: np.ndarray) -> np.ndarray:
    """``a`` made read-only: a task must not change the cached data of the next one."""
    a = np.asarray(a)
    a.flags.writeable = False
    return a
