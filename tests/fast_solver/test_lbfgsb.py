import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der

from fast_solver.checkpoint import Checkpoint, CheckpointError
from fast_solver.nca.lbfgsb import minimize_lbfgsb


def rosenbrock(x):
    return rosen(x), rosen_der(x)


X0 = np.array([-1.2, 1.0, -0.5, 0.8, 1.5])


class Interrupted(Exception):
    pass


def _checkpoint(path, interval=0.0):
    return Checkpoint(path, kind="lbfgsb-test", fingerprint="rosenbrock", interval=interval)


@pytest.mark.parametrize("tol, max_iter, status", [(1e-8, 500, 0), (0.0, 500, 2), (1e-5, 7, 1)])
def test_iterates_counters_and_message_are_scipys_bit_for_bit(tol, max_iter, status):
    """Converged, stopped by the line search (tol=0) and at max_iter."""
    ours, theirs = [], []

    def record(intermediate_result):  # scipy passes an OptimizeResult to a callback of this name
        theirs.append((intermediate_result.x.copy(), intermediate_result.fun))

    result = minimize_lbfgsb(rosenbrock, X0, max_iter=max_iter, tol=tol,
                             callback=lambda x, f, n: ours.append((x, f, n)))
    expected = minimize(rosenbrock, X0, jac=True, method="L-BFGS-B", tol=tol, options={"maxiter": max_iter},
                        callback=record)
    assert np.array_equal(result.x, expected.x) and result.fun == expected.fun
    assert np.array_equal(result.jac, expected.jac)
    assert (result.nit, result.nfev, result.njev) == (expected.nit, expected.nfev, expected.njev)
    assert (result.status, result.success, result.message) == (expected.status, expected.success, expected.message)
    assert len(ours) == len(theirs) == result.nit and [n for _, _, n in ours] == list(range(1, result.nit + 1))
    assert all(np.array_equal(a, b) and f == g for (a, f, _), (b, g) in zip(ours, theirs))
    assert result.status == status


@pytest.mark.parametrize("stop_at", [1, 9, 23])
def test_a_run_stopped_at_an_iterate_resumes_bit_for_bit(tmp_path, stop_at):
    expected = minimize_lbfgsb(rosenbrock, X0, max_iter=500, tol=1e-8)

    def stop(x, f, n_iter):
        if n_iter == stop_at + 1:  # after the state of iterate stop_at was saved
            raise Interrupted

    with pytest.raises(Interrupted):
        minimize_lbfgsb(rosenbrock, X0, max_iter=500, tol=1e-8, callback=stop, checkpoint=_checkpoint(tmp_path / "a"))
    seen = []
    result = minimize_lbfgsb(rosenbrock, X0, max_iter=500, tol=1e-8, callback=lambda x, f, n: seen.append(n),
                             checkpoint=_checkpoint(tmp_path / "a"))
    assert seen[0] == stop_at + 1 and seen[-1] == result.nit == expected.nit
    assert np.array_equal(result.x, expected.x) and result.fun == expected.fun
    assert (result.nfev, result.message) == (expected.nfev, expected.message)


def test_a_finished_run_returns_its_result_without_evaluating(tmp_path):
    first = minimize_lbfgsb(rosenbrock, X0, max_iter=500, tol=1e-8, checkpoint=_checkpoint(tmp_path / "a", 3600))

    def never(x):
        raise AssertionError("evaluated")

    again = minimize_lbfgsb(never, X0, max_iter=500, tol=1e-8, checkpoint=_checkpoint(tmp_path / "a", 3600))
    assert np.array_equal(again.x, first.x) and (again.nit, again.nfev, again.message) == (
        first.nit, first.nfev, first.message)


def test_a_state_of_another_dimension_is_refused(tmp_path):
    minimize_lbfgsb(rosenbrock, X0, max_iter=3, tol=1e-8, checkpoint=_checkpoint(tmp_path / "a"))
    with pytest.raises(CheckpointError, match="over 5 variables.*over 4"):
        minimize_lbfgsb(rosenbrock, X0[:4], max_iter=3, tol=1e-8, checkpoint=_checkpoint(tmp_path / "a"))


def test_a_scipy_without_the_routine_fails_at_the_run_with_a_clear_error_not_at_import(monkeypatch):
    import scipy.optimize._lbfgsb as routine

    monkeypatch.delattr(routine, "setulb")
    with pytest.raises(ImportError, match="private L-BFGS-B routine"):
        minimize_lbfgsb(lambda x: (float(x @ x), 2 * x), np.ones(3), max_iter=5, tol=1e-8)
