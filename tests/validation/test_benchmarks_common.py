"""``validation.benchmarks.common.in_fresh_process``: the value, the error and the timeout of a
call in a new process."""

from __future__ import annotations

import math
import time

import pytest

from validation.benchmarks.common import ProcessTimeout, RemoteTraceback, in_fresh_process


@pytest.mark.slow
def test_the_value_comes_back():
    assert in_fresh_process(math.hypot, 3.0, 4.0) == 5.0
    assert in_fresh_process(math.hypot, 3.0, 4.0, timeout=300) == 5.0


@pytest.mark.slow
def test_an_error_is_raised_again_with_the_remote_traceback():
    with pytest.raises(ValueError, match="math domain error") as caught:
        in_fresh_process(math.sqrt, -1.0)
    assert isinstance(caught.value.__cause__, RemoteTraceback)
    assert "ValueError" in str(caught.value.__cause__)


@pytest.mark.slow
def test_a_process_past_its_timeout_is_killed_and_says_so():
    with pytest.raises(ProcessTimeout) as caught:
        in_fresh_process(time.sleep, 600, timeout=1.0)
    assert caught.value.seconds >= 1.0
    assert caught.value.peak_gib is None or caught.value.peak_gib > 0


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan")])
def test_a_timeout_must_be_positive(timeout):
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        in_fresh_process(math.sqrt, 4.0, timeout=timeout)


def test_the_warm_up_solve_runs_every_compiled_loop_of_the_stacked_graphs(monkeypatch):
    """``compile_solver``'s small solves reach the compiled maps of the stacked cluster graphs
    in both precisions (float64 in the line searches, float32 in the Hessian products) and the
    blockwise cross products, so a letters fit after a change to them compiles nothing."""
    from fast_solver.lmnn import compiled
    from validation.benchmarks import common

    seen = set()
    for name in ("map_stacked_rows", "block_cross"):
        kernel = getattr(compiled, name)
        monkeypatch.setattr(compiled, name, lambda *args, kernel=kernel, name=name: (
            seen.add((name, args[0].dtype.name)), kernel(*args))[1])
    common._small_solve()
    assert seen == {(name, dtype) for name in ("map_stacked_rows", "block_cross") for dtype in ("float32", "float64")}
