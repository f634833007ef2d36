"""The compiled loops run in blocks of rows on threads as on one thread, and a fit works
quietly where numba cannot write its cache (a read-only install)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from sklearn.datasets import make_blobs

from fast_solver import energies
from fast_solver.lmnn.smoothed import SmoothedObjective, WorkingSet
from fast_solver.mmc.compiled import gradient_rows, xing_sums
from lmnn_sdp.core import loops
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.whitening import whiten_clusters
from lmnn_sdp.mmc.compiled import label_layout, pair_sums


def run_loops(blocks: bool, monkeypatch) -> dict:
    """What every kind of compiled loop returns on small inputs, in one block or, with
    ``blocks``, in blocks on three threads (however many cores the machine has)."""
    if blocks:
        monkeypatch.setattr(loops, "PARALLEL_WORK", 0)
        monkeypatch.setattr(numba, "get_num_threads", lambda: 3)
    X, y = make_blobs(60, 3, centers=3, cluster_std=3.0, random_state=0)
    problem = LMNNProblem(X, y, k=2, mu=0.3)
    whitening = whiten_clusters(problem.with_clusters(problem.label_codes))
    pairs = np.unique(problem.all_triplets()[:, [0, 2]], axis=0)
    objective = SmoothedObjective(whitening, problem.targets, problem.mu,
                                  WorkingSet.from_pairs(pairs[:, 0], pairs[:, 1], problem.n_samples))
    rng = np.random.default_rng(0)
    L, V = rng.normal(size=(2, whitening.n_clusters, whitening.rank, whitening.rank))
    out = {"value": objective.evaluate(L, 0.5).value, "gradient": objective.current.gradient,
           "hessian": objective.hessian_product(V), "ray": objective.ray(V)(0.01),
           "energies": energies(X, y, problem.targets, 0.3, np.eye(3), X[:10] + 0.1)}
    layout = label_layout(problem.label_codes)
    ZT = np.ascontiguousarray(X[layout.order].T)
    H, values = np.empty((len(X), 3)), np.empty(len(X))
    out["collapsed"] = gradient_rows(ZT, ZT, layout.class_start, layout.class_end, H, values)
    out["H"], out["values"] = H, values
    out["xing"] = xing_sums(ZT, np.ones(3), layout.class_end, layout.dissimilar_chunks, True)
    out["pairs"] = pair_sums(ZT, np.eye(3), np.ones(3), 1e-16, layout.class_end, layout.dissimilar_chunks,
                             False, np.array([0.5, 1.0, 2.0]), False)
    return out


def test_the_loops_give_in_blocks_on_threads_what_they_give_in_one(monkeypatch):
    one = run_loops(False, monkeypatch)
    threaded = run_loops(True, monkeypatch)
    for name, value in one.items():
        parts = value if isinstance(value, tuple) else (value,)
        for a, b in zip(parts, threaded[name] if isinstance(value, tuple) else (threaded[name],)):
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("unwritable", ["read-only folder", "folder under a file"])
def test_a_fit_works_quietly_where_numba_cannot_write_its_cache(tmp_path, unwritable):
    """``NUMBA_CACHE_DIR`` that cannot be written, and no other place for numba's cache (its
    locators limited to that folder, as in a read-only install): the loops compile in the
    process, and nothing is printed."""
    if unwritable == "read-only folder":
        cache = tmp_path / "cache"
        cache.mkdir()
        cache.chmod(0o555)
    else:  # no one, root included, can create a folder under a file
        (tmp_path / "file").write_text("")
        cache = tmp_path / "file" / "cache"
    code = textwrap.dedent("""
        from sklearn.datasets import load_iris
        import fast_solver
        X, y = load_iris(return_X_y=True)
        model = fast_solver.LMNN(k=2, mu=0.5).fit(X[::5], y[::5])
        assert model.result_.converged
    """)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), NUMBA_CACHE_LOCATOR_CLASSES="UserProvidedCacheLocator")
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    finally:
        if cache.exists():
            cache.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == ""
