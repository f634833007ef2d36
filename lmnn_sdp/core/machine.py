"""The cores this process may use, on any platform, and the variables that set its threads."""

from __future__ import annotations

import os

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
# read by BLAS, OpenMP and numba when they load: the threads of a process started with them


def available_cores() -> int:
    """The CPU affinity of the process where the platform has one (Linux), else the cores of
    the machine; at least 1.

    Examples
    --------
    >>> available_cores() >= 1
    True
    """
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
