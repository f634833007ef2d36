"""The illustrative figures of a run: their fits run on the cluster, the drawing here.

* ``ellipses``: Fig. 8's setting, scikit-learn digits 0, 1, 2 and 4 on their first two
  principal components, multi-metric LMNN with one metric per class (k = 3, mu = 0.5).
* ``convergence``: LMNN on the training part of split 0 of the run's first data set,
  every continuation stage of ``fast_solver.solve`` recorded through its ``callback``.
* ``neighbours``: Fashion-MNIST test images (digits when the run has no Fashion-MNIST) and
  their 3 nearest training images before (Euclidean, raw pixels) and after LMNN (on the
  data set's reduced inputs), on split 0.

The fits of the last two use at most ``FIGURE_MAX_ROWS`` rows of the data set (the
protocol's stratified subset), so a full run's figures cost minutes, not the full fits.
Each ``*_data`` function returns only what its plot needs (small arrays, and plain JSON
values), which the session caches in the results store under ``cache_key``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA

import fast_solver
from lmnn_sdp.core.problem import LMNNProblem
from validation.datasets import load_bundled
from validation.experiments import plots
from validation.experiments.knn import nearest_neighbours
from validation.experiments.protocol import MU, K, dataset_spec, load_split
from validation.experiments.versions import code_version, package_versions

FIG8_DIGITS = (0, 1, 2, 4)
FIGURE_MAX_ROWS = 10_000
IMAGE_SHAPES = {"fashion-mnist": (28, 28), "digits": (8, 8)}
NEIGHBOUR_ROWS = 6


def ellipse_data() -> dict:
    """Digits 0, 1, 2, 4 (PCA-2) and one certified LMNN metric per class (sec. 5.2)."""
    X, y = load_bundled("digits")
    keep = np.isin(y, FIG8_DIGITS)
    X2 = PCA(2, random_state=0).fit_transform(X[keep])
    model = fast_solver.MultiMetricLMNN(k=K, mu=MU).fit(X2, y[keep])
    return {"X": X2, "y": y[keep], "metrics": model.metrics_, "gap": model.result_.relative_gap}


def convergence_data(dataset: str, max_rows: int | None) -> dict:
    """The stages of one LMNN solve on split 0 of ``dataset`` (training part)."""
    split = load_split(dataset, 0, _rows(max_rows))
    stages = []
    result = fast_solver.solve(LMNNProblem(split.Z_train, split.y_train, k=K, mu=MU),
                               tol=dataset_spec(dataset).tol, callback=stages.append)
    return {"stages": [dataclasses.asdict(stage) for stage in stages], "gap": result.relative_gap,
            "n": len(split.y_train), "d": split.Z_train.shape[1]}


def neighbour_data(dataset: str, max_rows: int | None) -> dict:
    """The test images to show (``plots.pick_rows``) and their neighbours' images, labels."""
    split = load_split(dataset, 0, _rows(max_rows))
    lmnn = fast_solver.LMNN(k=K, mu=MU, tol=dataset_spec(dataset).tol).fit(split.Z_train, split.y_train)
    before = nearest_neighbours(split.X_train, split.X_test, K)
    after = nearest_neighbours(lmnn.transform(split.Z_train), lmnn.transform(split.Z_test), K)
    rows = plots.pick_rows(split.y_train, split.y_test, before, after, NEIGHBOUR_ROWS)
    used = np.unique(np.concatenate([before[rows].ravel(), after[rows].ravel()]))  # sorted
    shape = IMAGE_SHAPES[dataset]
    return {"train_images": split.X_train[used].reshape(-1, *shape), "y_train": split.y_train[used],
            "test_images": split.X_test[rows].reshape(-1, *shape), "y_test": split.y_test[rows],
            "before": np.searchsorted(used, before[rows]), "after": np.searchsorted(used, after[rows])}


def jobs(datasets: list[str], max_rows: int | None) -> dict[str, tuple]:
    """Figure name -> (function, arguments) for a run over ``datasets``."""
    found = {"ellipses": (ellipse_data,)}
    if datasets:
        found["convergence"] = (convergence_data, datasets[0], max_rows)
    found["neighbours"] = (neighbour_data, "fashion-mnist" if "fashion-mnist" in datasets
                           else "digits", max_rows)
    return found


def cache_key(name: str, job: tuple) -> str:
    """What determines figure ``name``'s data: its job's function and arguments (``jobs``),
    the code and package versions (``validation.experiments.versions``) and this module."""
    function, *arguments = job
    return json.dumps({"figure": name, "function": function.__name__, "arguments": arguments,
                       "code": code_version(), "packages": package_versions(),
                       "figures": hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]},
                      sort_keys=True)


def draw(name: str, data: dict, directory: Path, detail: str = "") -> Path:
    """Draw figure ``name`` from its data into ``directory/NAME.png``."""
    path = Path(directory) / f"{name}.png"
    if name == "ellipses":
        return plots.metric_ellipses(data["X"], data["y"], data["metrics"], path,
                                     f"digits {FIG8_DIGITS}, PCA-2, one LMNN metric per class "
                                     f"(certified gap {data['gap']:.1g})")
    if name == "convergence":
        stages = [fast_solver.Stage(**stage) for stage in data["stages"]]
        return plots.convergence(stages, path, f"LMNN on {detail}: n = {data['n']}, "
                                 f"d = {data['d']}, certified gap {data['gap']:.2g}")
    return plots.neighbour_rows(data["train_images"], data["y_train"], data["test_images"],
                                data["y_test"], data["before"], data["after"],
                                range(len(data["y_test"])), path)


def _rows(max_rows: int | None) -> int:
    return FIGURE_MAX_ROWS if max_rows is None else min(max_rows, FIGURE_MAX_ROWS)
