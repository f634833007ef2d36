"""How the compiled loops run: blocks of rows on threads, and the bisection they share."""

from __future__ import annotations

import threading

import numba
import numpy as np
import pytest

from lmnn_sdp.core import loops


def _block(start, stop):
    return start, stop, threading.current_thread().name


@pytest.fixture
def three_threads(monkeypatch):
    """numba's thread count 3, whatever the machine has (the pool may hold fewer threads)."""
    monkeypatch.setattr(numba, "get_num_threads", lambda: 3)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 100])
def test_small_work_runs_one_block_on_the_calling_thread(three_threads, n):
    assert loops.in_row_blocks(_block, n, work=loops.PARALLEL_WORK - 1) == [(0, n, "MainThread")]


@pytest.mark.parametrize("n, blocks", [(1, 1), (2, 2), (3, 3), (100, 3)])
def test_large_work_splits_the_rows_into_consecutive_blocks_one_a_thread(three_threads, n, blocks):
    done = loops.in_row_blocks(_block, n, work=loops.PARALLEL_WORK)
    assert len(done) == blocks
    assert [(a, b) for a, b, _ in done] == [(n * i // blocks, n * (i + 1) // blocks) for i in range(blocks)]
    assert done[0][2] == "MainThread"
    assert all(name != "MainThread" for _, _, name in done[1:])


def test_a_block_that_fails_raises_after_every_block_has_ended(three_threads):
    ended = []

    def loop(start, stop):
        if start > 0:
            raise ValueError(f"block {start}")
        ended.append(start)

    with pytest.raises(ValueError, match="block"):
        loops.in_row_blocks(loop, 90, work=loops.PARALLEL_WORK)
    assert ended == [0]


def test_the_blocks_of_a_compiled_loop_fill_every_row_as_one_block_does(three_threads):
    @loops.compiled()
    def squares(start, stop, x, out):  # pragma: no cover - compiled
        for i in range(start, stop):
            out[i] = x[i] * x[i]

    x = np.arange(1000.0)
    out = np.full_like(x, np.nan)
    loops.in_row_blocks(squares, len(x), x, out, work=loops.PARALLEL_WORK)
    np.testing.assert_array_equal(out, x * x)


def test_count_below_is_searchsorted_on_both_sides():
    rng = np.random.default_rng(0)
    ascending = np.sort(rng.integers(0, 6, size=25).astype(float))
    for value in [-1.0, 0.0, 2.0, 2.5, 5.0, 7.0]:
        assert loops.count_below(ascending, value, False) == np.searchsorted(ascending, value, "left")
        assert loops.count_below(ascending, value, True) == np.searchsorted(ascending, value, "right")
    assert loops.count_below(np.empty(0), 1.0, True) == 0
