"""Ctrl-C around processes the command line starts: they begin with SIGINT ignored, so that a
terminal's Ctrl-C, sent to the whole process group, reaches this process alone, which ends
them itself (the cross-check's workers, the experiments' Dask cluster)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored meanwhile, so processes started meanwhile begin with it ignored; outside
    the main thread, where Python takes no signal handler, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
