"""Fixtures shared by the test folders: ``kill_during`` runs a fit in a child process and
kills it with SIGKILL, for the checkpoint tests of every fit; ``thin_tail_points`` makes points
whose scatter has a thin tail, for the tests of principal coordinates; ``as_integers`` and
``exact_objective`` compute in exact arithmetic, for the tests of rounding bounds. With pytest-xdist
(``-n``), the workers share the cores (``pytest_configure``)."""

from __future__ import annotations

import math
import os
import pickle
import signal
import subprocess
import sys
import time
from fractions import Fraction
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


def _as_integers(values) -> tuple[np.ndarray, int]:
    """``values`` (floats or Fractions) times their least common denominator, exactly: an array
    of Python integers of the same shape; and that denominator (a power of two for floats)."""
    F = [v if isinstance(v, Fraction) else Fraction(float(v)) for v in np.ravel(values)]
    scale = math.lcm(*(f.denominator for f in F))
    return np.array([f.numerator * (scale // f.denominator) for f in F], dtype=object).reshape(np.shape(values)), scale


def _exact_objective(problem, metric, clusters=None) -> Fraction:
    """eq. 14 (sec. 5.2 with ``clusters``) at the metric(s) (floats or Fractions), in exact
    arithmetic: with the inputs and the metrics scaled to integers every distance is an integer
    ``scale`` times too large, and the sums are Python's exact integers."""
    metrics = np.asarray(metric)[None] if clusters is None else np.asarray(metric)
    owner = np.zeros(problem.n_samples, int) if clusters is None else np.asarray(clusters)
    X, x_scale = _as_integers(problem.X)
    Ms, m_scale = _as_integers(metrics)
    scale = x_scale**2 * m_scale

    def D(a, b):  # the distance times scale
        v = X[a] - X[b]
        return v @ Ms[owner[b]] @ v

    codes = problem.label_codes
    pull = push = 0
    for i in range(problem.n_samples):
        for j in problem.targets[i]:
            dij = D(i, j)
            pull += dij
            push += sum(max(0, scale + dij - D(i, l)) for l in np.flatnonzero(codes != codes[i]))
    mu = Fraction(problem.mu)
    return ((1 - mu) * pull + mu * push) / scale


@pytest.fixture(scope="session")
def as_integers():
    """``as_integers(values)``: an array as Python integers over its common denominator."""
    return _as_integers


@pytest.fixture(scope="session")
def exact_objective():
    """``exact_objective(problem, metric, clusters=None)``: eq. 14 in exact arithmetic."""
    return _exact_objective
