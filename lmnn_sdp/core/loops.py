"""How the compiled loops are compiled and run: plain numba loops over a range of rows,
cached on disk where numba can write its cache, run over blocks of rows on threads.

A loop is compiled by ``compiled`` (numba's ``njit`` with ``nogil``) and takes the range of
rows it walks as its first two arguments, ``start`` and ``stop``; ``in_row_blocks`` splits
``range(n)`` into one block per thread and runs them side by side, each block writing only
its own rows. No loop is a parfor (``parallel=True``), which compiles each ``prange`` a
second time as a gufunc: a first call compiles plain loops only, at every size of input
(design note: docs/design/cold-start.md).

numba's cache needs a folder it can write (``NUMBA_CACHE_DIR``, the package's
``__pycache__`` or the user's cache folder); where there is none (a read-only install),
the loops compile in each process instead, silently.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numba

PARALLEL_WORK = 1 << 16  # iterations x coordinates below which waking threads costs more than it saves

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def compiled(**options):
    """numba's ``njit`` with ``nogil=True`` (so that ``in_row_blocks`` runs blocks on threads),
    no C-callable wrapper (the loops are called from Python and from each other, never as
    first-class functions) and ``cache=True``, or without the cache where numba has no folder
    to write it in; ``options`` go to ``njit`` (e.g. ``fastmath``, ``inline``)."""
    def decorate(function):
        options.update(nogil=True, no_cfunc_wrapper=True)
        try:
            return numba.njit(cache=True, **options)(function)
        except RuntimeError as error:  # numba: "cannot cache function ...: no locator available"
            if "cannot cache" not in str(error):
                raise
            return numba.njit(**options)(function)
    return decorate


@numba.njit(inline="always")
def count_below(ascending, value, inclusive):  # pragma: no cover - compiled
    """How many entries of ``ascending`` (1-d, sorted, no NaN) lie below ``value``, or at
    most ``value`` when ``inclusive``: ``np.searchsorted`` with side "left" or "right", by
    bisection, inlined into the loop that calls it (numba's ``np.searchsorted`` compiles
    several functions of its own)."""
    low, high = 0, len(ascending)
    while low < high:
        middle = (low + high) // 2
        if ascending[middle] < value or (inclusive and ascending[middle] == value):
            low = middle + 1
        else:
            high = middle
    return low


def in_row_blocks(loop, n: int, *args, work: int) -> list:
    """Run ``loop(start, stop, *args)`` over consecutive blocks of ``range(n)``, one block
    per thread, and return their results in the order of the blocks.

    ``work`` (iterations times coordinates) below ``PARALLEL_WORK`` runs one block on the
    calling thread; above it, one block per thread of numba's thread count (per calling
    thread, ``numba.set_num_threads``), at most ``n``. The calling thread runs the first
    block itself.
    """
    threads = 1 if work < PARALLEL_WORK else max(1, min(numba.get_num_threads(), n))
    if threads == 1:
        return [loop(0, n, *args)]
    cuts = [n * b // threads for b in range(threads + 1)]
    futures = [_threads().submit(loop, cuts[b], cuts[b + 1], *args) for b in range(1, threads)]
    try:
        first = loop(0, cuts[1], *args)
    except BaseException:
        wait(futures)  # no block outlives the call
        raise
    return [first, *(future.result() for future in futures)]


def _threads() -> ThreadPoolExecutor:
    """The process's worker threads (numba's thread count at most, less the caller), started
    at the first call and again in a forked child."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(1, numba.config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="lmnn-sdp-loops")
        return _pool


def _forget_threads() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_threads)  # a forked child has none of them
