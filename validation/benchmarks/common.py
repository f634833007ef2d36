"""What the benchmarks share: the 3-NN error of a learned space and a fit in a fresh process."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
from sklearn.neighbors import KNeighborsClassifier


def knn_error(Z_train: np.ndarray, y_train: np.ndarray, Z_test: np.ndarray, y_test: np.ndarray,
              k: int = 3) -> float:
    """The fraction of test points (m, r) that k-NN on the training points (n, r) misclassifies."""
    knn = KNeighborsClassifier(n_neighbors=k).fit(Z_train, y_train)
    return float(np.mean(knn.predict(Z_test) != np.asarray(y_test)))


def in_fresh_process(function, *args):
    """``function(*args)`` in a new spawned process (no compiled code or cache carried over)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(function, *args).result()
