"""Checkpointed fits of LMCA, kernel LMCA and fast MMC (issue 30): killed with SIGKILL at
random points and resumed, they end bit for bit where an uninterrupted fit ends; a damaged or
foreign checkpoint is refused."""

from __future__ import annotations

import functools
import subprocess
import sys
import time

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from fast_solver import LMCA, KernelLMCA, solve_kernel_lmca, solve_lmca, solve_mmc_fast
from fast_solver.checkpoint import CheckpointError
from fast_solver.low_rank.kernel_lmca import make_kernel
from fast_solver.low_rank.solver import LMCAResult
from fast_solver.mmc import solver as mmc_solver
from lmnn_sdp import LMNNProblem

IRIS = load_iris(return_X_y=True)
WINE = (StandardScaler().fit_transform(load_wine(return_X_y=True)[0]), load_wine(return_X_y=True)[1])

# Each fit: its call saving at every restart point to a path (None: no checkpoint), and its data;
# ``pace`` slows the low-rank fits in the killed process (``_pace``) so that kills land before
# their end however loaded the machine (the callback does not change the answer).
FITS = {
    "lmca": (lambda path, pace=False: LMCA(n_components=2, checkpoint=path, checkpoint_interval=0,
                                           callback=_pace if pace else None).fit, WINE),
    "kernel-lmca": (lambda path, pace=False: KernelLMCA(n_components=2, max_iter=100, checkpoint=path,
                                                        checkpoint_interval=0,
                                                        callback=_pace if pace else None).fit, IRIS),
    "mmc": (lambda path, pace=False: functools.partial(solve_mmc_fast, tol=1e-12, checkpoint=path,
                                                       checkpoint_interval=0), WINE),  # 110 steps, uncertified
    "mmc-diagonal": (lambda path, pace=False: functools.partial(solve_mmc_fast, diagonal=True, tol=1e-9,
                                                                checkpoint=path, checkpoint_interval=0),
                     IRIS),  # certified
}


def _pace(x, n_iter):
    time.sleep(0.01)


def _compile_mmc_in_a_child() -> None:
    """Compile MMC's numba functions in a child process, which writes numba's cache, so that this
    process loads them from it as the killed processes do: with numba 0.55 a function compiled in
    the process that runs it differs in the last bits from the same function loaded from the cache
    (the full MMC fit of wine took 80 steps compiled here and 98 loaded)."""
    code = ("import numpy as np; from fast_solver import solve_mmc_fast; "
            "X = np.random.default_rng(0).normal(size=(12, 3)); y = np.repeat([0, 1, 2], 4); "
            "solve_mmc_fast(X, y, max_iter=2); solve_mmc_fast(X, y, diagonal=True, max_iter=2)")
    subprocess.run([sys.executable, "-c", code], check=True)


def _answer(fitted) -> dict:
    """What a fit (an estimator or a result) must reproduce: the map or metric, the objective,
    the counters, the certified decision."""
    if isinstance(fitted, LMCA | KernelLMCA | LMCAResult):
        r = getattr(fitted, "result_", fitted)
        return {"components": r.components, "embedding": r.embedding, "objective": r.objective,
                "value": r.value, "width": r.width, "status": r.status,
                "counters": (r.n_iter, r.n_stages, r.n_searches, r.n_evaluations, r.n_active),
                "stages": [(s.width, s.n_iter, s.value, s.objective, s.n_active, s.n_pairs, s.stop)
                           for s in r.stages]}
    return {"metric": fitted.metric, "bounds": (fitted.upper, fitted.lower, fitted.relative_gap),
            "certified": fitted.certified, "status": fitted.status, "estimated_gap": fitted.estimated_gap,
            "counters": (fitted.n_iter, fitted.n_certificates)}


def _assert_same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            assert got[key].dtype == value.dtype and np.array_equal(got[key], value), key
        else:
            assert got[key] == value, key


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(FITS))
def test_a_fit_killed_at_random_points_resumes_bit_for_bit(kind, tmp_path, kill_during):
    """SIGKILL at three random points (one resume after a single kill, one after two kills in
    a row) and a resume in this process: the answer of an uninterrupted fit, bit for bit. BLAS
    runs on one thread here as in the killed process (``kill_during``): a kernel PCA start
    differs in its last bits between thread counts."""
    make, data = FITS[kind]
    if kind.startswith("mmc"):
        _compile_mmc_in_a_child()
    with threadpool_limits(1):
        reference = _answer(make(None)(*data))
        tic = time.perf_counter()
        _assert_same(_answer(make(tmp_path / "timed.ckpt")(*data)), reference)  # saving changes nothing
        seconds = time.perf_counter() - tic
        afters = iter(np.random.default_rng(30).uniform(0.0, 0.5 * seconds, size=3))
        for n_kills, name in ((1, "once.ckpt"), (2, "twice.ckpt")):
            path = tmp_path / name
            for _ in range(n_kills):
                assert kill_during(make(path, pace=True), *data, checkpoint=path, after=next(afters))
            _assert_same(_answer(make(path)(*data)), reference)


@pytest.fixture(scope="module", params=list(FITS))
def finished(request, tmp_path_factory):
    """Each fit of ``FITS`` run to its end, and the checkpoint it leaves (bytes)."""
    make, data = FITS[request.param]
    path = tmp_path_factory.mktemp(request.param) / "fit.ckpt"
    make(path)(*data)
    return request.param, path.read_bytes()


@pytest.mark.parametrize("damage", ["truncate", "edit"])
def test_a_truncated_or_edited_checkpoint_is_refused(finished, damage, tmp_path):
    kind, raw = finished
    make, data = FITS[kind]
    path = tmp_path / "fit.ckpt"
    path.write_bytes(raw[: len(raw) // 2] if damage == "truncate" else raw[:-30] + bytes([raw[-30] ^ 4]) + raw[-29:])
    with pytest.raises(CheckpointError, match="damaged"):
        make(path)(*data)


def test_a_checkpoint_of_other_data_options_or_fit_is_refused(tmp_path):
    X, y = IRIS[0][::3], IRIS[1][::3]  # 50 points: each fit computes its start before it reads the checkpoint
    problem = LMNNProblem(X, y, k=3)
    path = tmp_path / "lmca.ckpt"
    solve_lmca(problem, 2, max_iter=20, checkpoint=path)
    for other in ({"problem": LMNNProblem(X, y, k=2)}, {"problem": LMNNProblem(X, y, k=3, mu=0.4)},
                  {"n_components": 1}, {"init": "identity"}, {"tol": 1e-4}, {"max_iter": 21}, {"hinge": "smooth"}):
        options = {"problem": problem, "n_components": 2, "max_iter": 20, **other}
        with pytest.raises(CheckpointError, match="other inputs or options"):
            solve_lmca(options.pop("problem"), options.pop("n_components"), checkpoint=path, **options)
    with pytest.raises(CheckpointError, match="checkpoint of a 'lmca' fit, not of this 'kernel-lmca'"):
        solve_kernel_lmca(problem, make_kernel("rbf", 4), 2, max_iter=20, checkpoint=path)
    path = tmp_path / "kernel.ckpt"
    solve_kernel_lmca(problem, make_kernel("rbf", 4), 2, max_iter=20, checkpoint=path)
    for kernel in (make_kernel("rbf", 4, gamma=0.3), make_kernel("poly", 4)):
        with pytest.raises(CheckpointError, match="other inputs or options"):
            solve_kernel_lmca(problem, kernel, 2, max_iter=20, checkpoint=path)
    with pytest.raises(CheckpointError, match="other inputs or options"):
        solve_kernel_lmca(problem, make_kernel("rbf", 4), 2, max_iter=20, checkpoint=path, kernel_memory=0)
    path = tmp_path / "mmc.ckpt"
    solve_mmc_fast(X, y, checkpoint=path)
    for other in ({"X": X[::-1]}, {"X": X + 1e-9}, {"y": np.where(y == 2, 1, y)}, {"diagonal": True},
                  {"tol": 1e-5}, {"max_iter": 100}):
        options = {"X": X, "y": y, **other}
        with pytest.raises(CheckpointError, match="other inputs or options"):
            solve_mmc_fast(options.pop("X"), options.pop("y"), checkpoint=path, **options)


def test_a_random_start_is_named_by_its_seed_or_by_its_draws(tmp_path):
    """An unseeded random start resumes (the state holds the start it drew); a start drawn
    from a RandomState instance is named by its numbers, so another draw is refused."""
    problem = LMNNProblem(*IRIS, k=3)
    path = tmp_path / "random.ckpt"
    first = solve_lmca(problem, 2, init="random", max_iter=20, checkpoint=path)
    again = solve_lmca(problem, 2, init="random", max_iter=20, checkpoint=path)
    assert np.array_equal(again.components, first.components)
    with pytest.raises(CheckpointError, match="other inputs or options"):
        solve_lmca(problem, 2, init="random", random_state=0, max_iter=20, checkpoint=path)
    path = tmp_path / "instance.ckpt"
    solve_lmca(problem, 2, init="random", random_state=np.random.RandomState(0), max_iter=20, checkpoint=path)
    resumed = solve_lmca(problem, 2, init="random", random_state=np.random.RandomState(0), max_iter=20,
                         checkpoint=path)
    assert resumed.n_iter == 20
    with pytest.raises(CheckpointError, match="other inputs or options"):
        solve_lmca(problem, 2, init="random", random_state=np.random.RandomState(1), max_iter=20, checkpoint=path)


def test_a_finished_fit_returns_its_result_without_iterating(tmp_path, monkeypatch):
    problem = LMNNProblem(*IRIS, k=3)
    for name, fit in (("lmca", functools.partial(solve_lmca, problem, 2)),
                      ("kernel", functools.partial(solve_kernel_lmca, problem, make_kernel("rbf", 4), 2, max_iter=30))):
        steps = []
        first = fit(checkpoint=tmp_path / name, callback=lambda x, n_iter: steps.append(n_iter))
        done = len(steps)
        again = fit(checkpoint=tmp_path / name, callback=lambda x, n_iter: steps.append(n_iter))
        assert done == first.n_iter > 0 and len(steps) == done, name
        _assert_same(_answer(again), _answer(first))
    first = solve_mmc_fast(*WINE, tol=1e-9, checkpoint=tmp_path / "mmc")

    def no_step(*args, **kwargs):
        raise AssertionError("a finished solve took a step")

    monkeypatch.setattr(mmc_solver._WhitenedPairs, "run", no_step)
    _assert_same(_answer(solve_mmc_fast(*WINE, tol=1e-9, checkpoint=tmp_path / "mmc")), _answer(first))


@pytest.mark.parametrize("estimator", [LMCA, KernelLMCA])
def test_the_estimators_validate_their_checkpoint_parameters(estimator, tmp_path):
    X, y = IRIS
    with pytest.raises(ValueError, match="checkpoint_interval"):
        estimator(checkpoint=tmp_path / "f.ckpt", checkpoint_interval=-1).fit(X, y)
    with pytest.raises(ValueError, match="'checkpoint' parameter"):
        estimator(checkpoint=3).fit(X, y)
    with pytest.raises(ValueError, match="interval"):
        solve_mmc_fast(X, y, checkpoint=tmp_path / "m.ckpt", checkpoint_interval=-1)
