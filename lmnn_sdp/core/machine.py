"""The cores this process may use, on any platform."""

from __future__ import annotations

import os


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
