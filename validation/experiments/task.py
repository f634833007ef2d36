"""One task of the experiments: a (data set, split, method), what it measures, and the plan.

``run_task`` is what a Dask worker executes: it loads the split itself (names travel, not
arrays), fits the method on the training part (or its subset, ``protocol.fit_subset``), and measures the fit time, the 3-NN test
error (or the classifier's) and the training error by leave-one-out. It never raises: a
failure becomes a row with status "failed" and the traceback, a peer that is not
installed a row with status "skipped" and the reason. With a folder of ``checkpoints``, the
method's iterative fit saves its state in ``checkpoint_path(task, folder)`` every
``checkpoint_interval`` seconds and a task run again (its worker or the client killed) resumes the fit from there; the file is removed once
the row is made, and ``stats["resumed"]`` says that the fit resumed (``fit_seconds`` then
counts this run's part only).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from validation import peers
from validation.experiments.knn import knn_error, nearest_neighbours
from validation.experiments.methods import Fitted, method, method_params
from validation.experiments.protocol import K, data_params, dataset_spec, fit_subset, load_split
from validation.experiments.store import KEY
from validation.experiments.versions import code_version, package_versions

MAX_WARNINGS = 10  # distinct warning messages kept in a row's stats
# numba's threads for a task (``limit_numba_threads``), set by ``runner.dask_client``. Not
# NUMBA_NUM_THREADS: a worker has imported numba before the nanny's environment reaches it,
# and numba refuses to compile once that variable disagrees with the threads it launched
# (letters, MLNG, from a fresh checkout: every task failed)
WORKER_THREADS = "LMNN_SDP_WORKER_THREADS"


@dataclass(frozen=True)
class Task:
    """A task and its store key: ``params`` is canonical JSON ``{"data": ..., "method": ...}``."""

    dataset: str
    split: int
    method: str
    params: str
    code_version: str

    @property
    def key(self) -> tuple:
        return (self.dataset, self.split, self.method, self.params, self.code_version)

    @property
    def name(self) -> str:
        return f"{self.dataset}/{self.split}/{self.method}"


def plan(datasets: list[str], methods: list[str], splits: int | None = None,
         max_rows: int | None = None) -> list[Task]:
    """Every (data set, split, method) of a run, data set by data set, split by split.

    ``splits`` caps each data set's number of splits (default: its own, ``DataSpec.n_splits``);
    ``max_rows`` subsets every data set (``--quick``)."""
    tasks = []
    for name in datasets:
        spec = dataset_spec(name)
        for split in range(min(spec.n_splits, splits) if splits else spec.n_splits):
            for method_name in methods:
                params = {"data": data_params(name, max_rows, method_name),
                          "method": method_params(method_name, spec.tol)}
                tasks.append(Task(name, split, method_name, json.dumps(params, sort_keys=True),
                                  code_version()))
    return tasks


def checkpoint_path(task: Task, folder) -> Path:
    """The checkpoint file of ``task`` in ``folder``: named by a digest of its store key, so a
    changed parameter or code version never resumes another task's fit."""
    digest = hashlib.sha256(json.dumps(list(task.key)).encode()).hexdigest()[:24]
    return Path(folder) / f"{task.dataset}-{task.split}-{task.method}-{digest}.ckpt"


def run_task(task: Task, checkpoints: str | None = None, checkpoint_interval: float = 60.0) -> dict:
    """Fit and score one task; the row for ``ResultStore.record`` (module docstring).
    ``checkpoints``: the folder of the fits' checkpoints (None: no checkpoints)."""
    start = time.perf_counter()
    row = dict(zip(KEY, task.key), versions=package_versions(),
               worker=f"{socket.gethostname()}:{os.getpid()}")
    try:
        limit_numba_threads()
        if code_version() != task.code_version:
            raise RuntimeError(f"the worker's code version {code_version()} is not the planner's "
                               f"{task.code_version}: run workers on the same checkout")
        checkpoint = None if checkpoints is None else checkpoint_path(task, checkpoints)
        row.update(_measure(task, checkpoint, checkpoint_interval), status="ok")
        if checkpoint is not None:
            checkpoint.unlink(missing_ok=True)
    except peers.PeerMissing as missing:
        row.update(status="skipped", error=str(missing))
    except Exception:  # recorded with its traceback; the other tasks go on
        row.update(status="failed", error=traceback.format_exc(limit=20))
    row["total_seconds"] = time.perf_counter() - start
    return row


def limit_numba_threads() -> None:
    """Numba's threads for this task's thread: the worker's share that ``runner.dask_client``
    puts in ``WORKER_THREADS``, at most the threads numba launched; nothing when the variable
    is absent (a worker of another cluster)."""
    share = os.environ.get(WORKER_THREADS)
    if share:
        numba.set_num_threads(max(1, min(int(share), numba.config.NUMBA_NUM_THREADS)))


def _measure(task: Task, checkpoint: Path | None, interval: float) -> dict:
    params = json.loads(task.params)
    split = load_split(task.dataset, task.split, params["data"]["max_rows"])
    chosen = method(task.method)
    X_train, X_test = ((split.X_train, split.X_test) if chosen.inputs == "raw"
                       else (split.Z_train, split.Z_test))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tick = time.perf_counter()
        resumed = checkpoint is not None and checkpoint.exists()
        options = None if checkpoint is None else {"checkpoint": str(checkpoint), "checkpoint_interval": interval}
        fitted = chosen.fit(*fit_subset(X_train, split.y_train, params["data"].get("fit_rows")),
                            params["method"], options)
        fit_seconds = time.perf_counter() - tick
        tick = time.perf_counter()
        test_error, loo_error = evaluate(fitted, X_train, split.y_train, X_test, split.y_test, K)
        eval_seconds = time.perf_counter() - tick
    stats = dict(fitted.stats, **({"resumed": True} if resumed else {}))
    messages = sorted({f"{w.category.__name__}: {w.message}"[:300] for w in caught})
    if messages:
        stats["warnings"] = messages[:MAX_WARNINGS]
    return {"test_error": test_error, "train_loo_error": loo_error, "fit_seconds": fit_seconds,
            "eval_seconds": eval_seconds, "stats": stats}


def evaluate(fitted: Fitted, X_train, y_train, X_test, y_test, k: int) -> tuple[float, float]:
    """``(test error, training leave-one-out error)`` of a fitted method.

    k-NN methods (``transform`` or ``neighbours``): ``k``-NN with ties broken by shrinking k,
    the training error by leave-one-out (each point's neighbours among the others).
    Classifiers (``predict``): the test error, and NaN for the training error (no
    leave-one-out without refitting once per training point)."""
    if fitted.predict is not None:
        return float(np.mean(fitted.predict(X_test) != y_test)), float("nan")
    if fitted.transform is not None:
        Z_train, Z_test = fitted.transform(X_train), fitted.transform(X_test)
        test, loo = nearest_neighbours(Z_train, Z_test, k), nearest_neighbours(Z_train, None, k)
    else:
        test, loo = (fitted.neighbours(X_train, y_train, X_test, k),
                     fitted.neighbours(X_train, y_train, None, k))
    return knn_error(y_train, test, y_test), knn_error(y_train, loo, y_train)
