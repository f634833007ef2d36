"""Checkpointed fits of the LMNN family: ``solve`` (LMNN and multi-metric), ``solve_multipass``
and their estimators resume bit-for-bit after SIGKILL; damaged and foreign checkpoints are refused."""

import time
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import load_iris

from fast_solver import LMNN, MultiMetricLMNN, MultiPassLMNN, solve, solve_multipass
from fast_solver.checkpoint import Checkpoint, CheckpointError
from fast_solver.lmnn import solver
from fast_solver.lmnn.state import solve_fingerprint
from lmnn_sdp import LMNNProblem

X, Y = load_iris(return_X_y=True)
X, Y = X[::5], Y[::5]  # 30 points; at tol 1e-9, 8 restart points for LMNN, 29 with clusters
TOL = 1e-9


def _problem(mu=0.5):
    return LMNNProblem(X, Y, k=3, mu=mu)


def _assert_same_solve(a, b):
    """Bit-for-bit the same solve (timings and the stages' elapsed seconds aside)."""
    assert np.array_equal(a.metric, b.metric)
    assert (a.upper, a.lower, a.status, a.n_iter, a.n_evaluations, a.n_hessian_products, a.n_searches,
            a.n_retreats) == \
        (b.upper, b.lower, b.status, b.n_iter, b.n_evaluations, b.n_hessian_products, b.n_searches, b.n_retreats)
    assert a.search_fraction == b.search_fraction and np.array_equal(a.active_triplets, b.active_triplets)
    assert np.array_equal(a.certificate.multipliers, b.certificate.multipliers)
    strip = [{**vars(s), "elapsed": 0.0} for s in a.stages]
    assert strip == [{**vars(s), "elapsed": 0.0} for s in b.stages]


class _Killed(Exception):
    pass


def _interrupt_at(monkeypatch, save_number):
    """Checkpoint.save raises right after writing its ``save_number``-th state, as a kill would."""
    saves, original = [0], Checkpoint.save

    def save(self, state):
        original(self, state)
        saves[0] += 1
        if saves[0] == save_number:
            raise _Killed

    monkeypatch.setattr(Checkpoint, "save", save)
    return saves


def test_saving_checkpoints_changes_nothing(tmp_path):
    problem = _problem()
    _assert_same_solve(solve(problem, tol=TOL, checkpoint=tmp_path / "fit.ckpt", checkpoint_interval=0),
                       solve(problem, tol=TOL))


# multi-metric is marked slow: [lmnn] keeps the restart points quick, and the retraction test an
# interrupted class-metrics solve
@pytest.mark.parametrize("clusters", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["lmnn", "multi-metric"])
def test_a_solve_interrupted_at_restart_points_resumes_bit_for_bit(tmp_path, monkeypatch, clusters):
    problem = _problem()
    options = dict(tol=TOL, clusters=problem.label_codes if clusters else None, checkpoint_interval=0)
    saves = _interrupt_at(monkeypatch, 0)
    reference = solve(problem, checkpoint=tmp_path / "count.ckpt", **options)
    total = saves[0]
    assert total >= (25 if clusters else 8)  # with clusters, the LMNN solve of the start is kept too
    for point in (1, total // 3, 2 * total // 3):  # with clusters: in the LMNN start, then in the multi-metric
        path = tmp_path / f"at{point}.ckpt"
        _interrupt_at(monkeypatch, point)
        with pytest.raises(_Killed):
            solve(problem, checkpoint=path, **options)
        monkeypatch.undo()
        _assert_same_solve(solve(problem, checkpoint=path, **options), reference)


def test_a_solve_interrupted_right_after_a_retraction_resumes_bit_for_bit(tmp_path, monkeypatch):
    """The restart point after a retraction holds its shorter radius and the union of the sets."""
    data, labels = load_iris(return_X_y=True)
    problem = LMNNProblem(data[::3], labels[::3], k=3, mu=0.5)  # class metrics retract once
    options = dict(tol=1e-6, clusters=problem.label_codes, checkpoint_interval=0)
    newton_from_the_start = replace(solver.OPTIONS, quasi_newton_window=0)  # no first phase: a retraction
    retracted, original = [], Checkpoint.save

    def save(self, state):
        original(self, state)
        retracted.append(state.get("multi", {}).get("retreat") is not None)

    monkeypatch.setattr(Checkpoint, "save", save)
    monkeypatch.setattr(solver, "OPTIONS", newton_from_the_start)
    reference = solve(problem, checkpoint=tmp_path / "count.ckpt", **options)
    monkeypatch.undo()
    assert reference.n_retreats >= 1 and reference.converged
    point = retracted.index(True) + 1
    _interrupt_at(monkeypatch, point)
    monkeypatch.setattr(solver, "OPTIONS", newton_from_the_start)
    with pytest.raises(_Killed):
        solve(problem, checkpoint=tmp_path / "fit.ckpt", **options)
    monkeypatch.undo()
    monkeypatch.setattr(solver, "OPTIONS", newton_from_the_start)
    _assert_same_solve(solve(problem, checkpoint=tmp_path / "fit.ckpt", **options), reference)


def test_a_solve_on_narrow_factors_resumes_bit_for_bit(tmp_path, monkeypatch):
    """Breast cancer, 150 points of 30 features: ``L`` is cut to fewer rows (the optimum has low
    rank), and a solve resumed at a restart point after the cut starts from the narrow ``L``."""
    from sklearn.datasets import load_breast_cancer

    from fast_solver.lmnn.smoothed import SmoothedObjective

    data, labels = load_breast_cancer(return_X_y=True)
    cancer = LMNNProblem(data[:300:2], labels[:300:2], k=3, mu=0.5)
    widths, evaluate = [], SmoothedObjective.evaluate

    def spy(self, L, gamma, dual=True):
        widths.append(L.shape[1])
        return evaluate(self, L, gamma, dual)

    saves = _interrupt_at(monkeypatch, 0)
    reference = solve(cancer, checkpoint=tmp_path / "count.ckpt", checkpoint_interval=0)
    for point in (saves[0] // 2, saves[0] - 2):
        path = tmp_path / f"at{point}.ckpt"
        _interrupt_at(monkeypatch, point)
        with pytest.raises(_Killed):
            solve(cancer, checkpoint=path, checkpoint_interval=0)
        monkeypatch.undo()
        widths.clear()
        monkeypatch.setattr(SmoothedObjective, "evaluate", spy)
        _assert_same_solve(solve(cancer, checkpoint=path, checkpoint_interval=0), reference)
        assert widths[0] < 30  # resumed from a narrow L


def _lmnn(path):
    return LMNN(k=3, tol=TOL, checkpoint=path, checkpoint_interval=0)


def _multi_metric(path):
    return MultiMetricLMNN(k=3, tol=1e-6, checkpoint=path, checkpoint_interval=0)


def _multipass(path):
    return MultiPassLMNN(k=3, tol=TOL, max_passes=2, stop="passes", checkpoint=path, checkpoint_interval=0)


def _assert_same_fit(a, b):
    if isinstance(a, MultiPassLMNN):
        assert np.array_equal(a.components_, b.components_) and a.n_passes_ == b.n_passes_
        for p, q in zip(a.result_.passes, b.result_.passes):
            _assert_same_solve(p, q)
        return
    _assert_same_solve(a.result_, b.result_)
    if isinstance(a, MultiMetricLMNN):
        _assert_same_solve(a.global_result_, b.global_result_)


@pytest.mark.slow
@pytest.mark.parametrize("make", [_lmnn, _multi_metric, _multipass], ids=["lmnn", "multi-metric", "multipass"])
def test_a_fit_killed_at_random_points_resumes_bit_for_bit(tmp_path, kill_during, make):
    tic = time.perf_counter()
    reference = make(None).fit(X, Y)
    seconds = time.perf_counter() - tic
    rng = np.random.default_rng(30)
    path = tmp_path / "fit.ckpt"
    afters = rng.uniform(0.0, 0.6 * seconds, size=3)
    killed = [kill_during(make(path).fit, X, Y, checkpoint=path, after=after) for after in afters[:2]]  # twice
    _assert_same_fit(make(path).fit(X, Y), reference)
    path = tmp_path / "again.ckpt"
    killed.append(kill_during(make(path).fit, X, Y, checkpoint=path, after=afters[2]))
    _assert_same_fit(make(path).fit(X, Y), reference)
    assert any(killed)  # at least one kill fell inside the fit


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A solve of ``_problem()`` to tol 1e-6, and the checkpoint it left at its end (bytes)."""
    path = tmp_path_factory.mktemp("finished") / "fit.ckpt"
    return solve(_problem(), tol=1e-6, checkpoint=path), path.read_bytes()


def test_a_finished_solve_returns_its_result_without_iterating(tmp_path, monkeypatch, finished):
    (first, saved), problem, path = finished, _problem(), tmp_path / "done.ckpt"
    path.write_bytes(saved)

    def no_newton(*args, **kwargs):
        raise AssertionError("a finished solve iterated again")

    monkeypatch.setattr(solver._Run, "_newton", no_newton)
    _assert_same_solve(solve(problem, tol=1e-6, checkpoint=path), first)


def test_multipass_resumes_from_its_passes(tmp_path, monkeypatch):
    problem = _problem()
    saves = _interrupt_at(monkeypatch, 0)
    reference = solve_multipass(problem, max_passes=2, stop="passes", tol=TOL, checkpoint=tmp_path / "count.ckpt",
                                checkpoint_interval=0)
    point = saves[0] - 3  # inside pass 2
    monkeypatch.undo()
    path = tmp_path / "passes.ckpt"
    _interrupt_at(monkeypatch, point)
    with pytest.raises(_Killed):
        solve_multipass(problem, max_passes=2, stop="passes", tol=TOL, checkpoint=path, checkpoint_interval=0)
    monkeypatch.undo()
    saved = Checkpoint(path, kind="multipass-lmnn",
                       fingerprint=solve_fingerprint(problem, max_passes=2, stop="passes", tol=TOL)).load()
    assert saved["pass 1"]["stop"] == "proved" and saved["pass 2"]["stop"] is None  # killed inside pass 2
    result = solve_multipass(problem, max_passes=2, stop="passes", tol=TOL, checkpoint=path, checkpoint_interval=0)
    assert np.array_equal(result.components, reference.components)
    for p, q in zip(result.passes, reference.passes):
        _assert_same_solve(p, q)


@pytest.mark.parametrize("damage", ["truncate", "edit"])
def test_a_damaged_checkpoint_is_refused(tmp_path, damage, finished):
    problem, path, data = _problem(), tmp_path / "fit.ckpt", finished[1]
    path.write_bytes(data[: len(data) // 2] if damage == "truncate" else data[:-40] + bytes([data[-40] ^ 4]) + data[-39:])
    with pytest.raises(CheckpointError, match="damaged"):
        solve(problem, tol=1e-6, checkpoint=path)
    with pytest.raises(CheckpointError, match="damaged"):
        _lmnn(path).set_params(tol=1e-6).fit(X, Y)


def test_a_checkpoint_of_other_inputs_options_or_fits_is_refused(tmp_path, finished):
    problem, path = _problem(), tmp_path / "fit.ckpt"
    path.write_bytes(finished[1])
    for other in [dict(tol=1e-7), dict(max_iter=999), dict(band=0.4), dict(M0=2 * np.eye(4)),
                  dict(clusters=problem.label_codes)]:
        with pytest.raises(CheckpointError, match="other inputs or options"):
            solve(problem, **{"tol": 1e-6, **other}, checkpoint=path)
    with pytest.raises(CheckpointError, match="other inputs or options"):
        solve(_problem(mu=0.4), tol=1e-6, checkpoint=path)
    with pytest.raises(CheckpointError, match="other inputs or options"):
        solve(LMNNProblem(X + 1e-9, Y, k=3), tol=1e-6, checkpoint=path)
    with pytest.raises(CheckpointError, match="'lmnn' fit, not of this 'multipass-lmnn'"):
        solve_multipass(problem, tol=1e-6, checkpoint=path)


def test_a_checkpoint_needs_a_seeded_random_start():
    with pytest.raises(ValueError, match="random_state=<int>"):
        LMNN(init="random", checkpoint="fit.ckpt").fit(X, Y)
    with pytest.raises(ValueError, match="random_state=<int>"):
        MultiMetricLMNN(clusters=2, checkpoint="fit.ckpt").fit(X, Y)
    with pytest.raises(TypeError, match="checkpoint must be a file path"):
        solve(_problem(), checkpoint=3)
