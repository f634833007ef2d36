"""Fixtures shared by the test folders: ``kill_during`` runs a fit in a child process and
kills it with SIGKILL, for the checkpoint tests of every fit; ``thin_tail_points`` makes points
whose scatter has a thin tail, for the tests of principal coordinates. With pytest-xdist
(``-n``), the workers share the cores (``pytest_configure``)."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from lmnn_sdp.core.machine import THREAD_VARIABLES, available_cores


def pytest_configure(config):
    """Under ``pytest -n N``, give each of the N worker processes its share of the cores for
    BLAS, OpenMP and numba (unless the caller set those variables), so that N workers with a
    thread per core each do not contend for the cores. Set in the controller, whose
    environment the workers and the processes they start inherit before they import numpy
    or numba; the controller runs no tests."""
    workers = getattr(config.option, "numprocesses", None)
    if not workers or hasattr(config, "workerinput"):
        return
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(max(1, available_cores() // workers)))


_CHILD = ("import pickle, sys\n"
          "fit, args, kwargs = pickle.load(open(sys.argv[1], 'rb'))\n"
          "fit(*args, **kwargs)\n")


def _kill_during(fit, *args, checkpoint, after: float, timeout: float = 120.0, **kwargs) -> bool:
    """Run ``fit(*args, **kwargs)`` in a child Python process (``fit`` and its arguments are
    pickled; ``fit`` must be importable, e.g. a library function or an estimator's bound
    ``fit``) and kill it with SIGKILL ``after`` seconds after the file ``checkpoint`` first
    appears or changes. True when it was killed, False when it ended first."""
    checkpoint = Path(checkpoint)
    job = checkpoint.with_name(checkpoint.name + ".job")
    job.write_bytes(pickle.dumps((fit, args, kwargs)))
    before = checkpoint.stat().st_mtime_ns if checkpoint.exists() else None
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(job)], env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.monotonic() + timeout
        while child.poll() is None:
            if checkpoint.exists() and checkpoint.stat().st_mtime_ns != before:
                time.sleep(after)
                if child.poll() is not None:
                    break
                child.send_signal(signal.SIGKILL)
                child.wait()
                return True
            if time.monotonic() > deadline:
                raise TimeoutError(f"the fit wrote no checkpoint at {checkpoint} in {timeout} s")
            time.sleep(0.002)
        if child.returncode != 0:
            raise RuntimeError(f"the fit in the child process failed (exit code {child.returncode})")
        return False
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        job.unlink(missing_ok=True)


@pytest.fixture
def kill_during():
    """``kill_during(fit, *args, checkpoint=PATH, after=SECONDS, **kwargs) -> bool``: run the
    fit in a child process and SIGKILL it ``after`` seconds after its checkpoint is (re)written;
    True when killed, False when the fit ended first."""
    return _kill_during


@pytest.fixture
def thin_tail_points():
    """``make(seed, n=240, r=12, kept=5, thin=0.01)``: n points in r dimensions whose scatter holds
    all but ``7 thin^2 / 23`` of its trace in ``kept`` directions, 5 from the origin."""
    def make(seed, n=240, r=12, kept=5, thin=0.01):
        rng = np.random.default_rng(seed)
        scales = np.r_[np.linspace(3.0, 1.0, kept), np.full(r - kept, thin)]
        rotation = np.linalg.qr(rng.normal(size=(r, r)))[0]
        return 5.0 + (rng.normal(size=(n, r)) * scales) @ rotation
    return make
