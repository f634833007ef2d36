"""What the benchmarks share: the 3-NN error of a learned space and a fit in a fresh process."""

from __future__ import annotations

import math
import pickle
import time
import traceback
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

EXIT_GRACE = 60.0  # seconds a process that has answered gets to exit before it is killed


def knn_error(Z_train: np.ndarray, y_train: np.ndarray, Z_test: np.ndarray, y_test: np.ndarray,
              k: int = 3) -> float:
    """The fraction of test points (m, r) that k-NN on the training points (n, r) misclassifies."""
    knn = KNeighborsClassifier(n_neighbors=k).fit(Z_train, y_train)
    return float(np.mean(knn.predict(Z_test) != np.asarray(y_test)))


class ProcessTimeout(TimeoutError):
    """``in_fresh_process`` killed its process at the timeout.

    Attributes
    ----------
    seconds : float
        Wall-clock seconds from the start of the process to its kill.
    peak_gib : float or None
        The process's peak resident memory (GiB) just before the kill (``VmHWM`` of
        ``/proc/PID/status``); None where that file cannot be read.
    """

    def __init__(self, seconds: float, peak_gib: float | None):
        super().__init__(f"the process was killed after {seconds:.1f} s (its timeout)")
        self.seconds, self.peak_gib = seconds, peak_gib


class RemoteTraceback(Exception):
    """The traceback of an exception raised in the fresh process (the cause of its re-raise)."""

    def __str__(self) -> str:
        return "\n" + self.args[0]


def in_fresh_process(function, *args, timeout: float | None = None):
    """``function(*args)`` in a new spawned process (no compiled code or cache carried over).

    Parameters
    ----------
    function : callable
        A module-level function: the new process imports it by name.
    *args
        Its arguments (pickled).
    timeout : float, optional
        Seconds after the start of the process (interpreter start-up and imports included)
        at which it is killed; None waits for it however long it takes.

    Returns
    -------
    object
        The value of ``function(*args)``.

    Raises
    ------
    ProcessTimeout
        ``timeout`` seconds passed before the answer: the process was killed; the error
        carries the seconds and the process's peak resident memory.
    ChildProcessError
        The process ended without an answer (killed by a signal, e.g. out of memory).
    Exception
        Whatever ``function`` raised, raised here again with the fresh process's traceback as
        its ``__cause__``.
    """
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}.")
    context = get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_answer, args=(sender, function, args))
    start = time.perf_counter()
    process.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            seconds, peak = time.perf_counter() - start, _peak_gib_of(process.pid)
            process.kill()
            raise ProcessTimeout(seconds, peak)
        try:
            answered, value, trace = receiver.recv()
        except EOFError:
            process.join()
            raise ChildProcessError(f"the fresh process running {function.__name__} ended without an "
                                    f"answer (exit code {process.exitcode})") from None
    finally:
        process.join(EXIT_GRACE)
        if process.is_alive():
            process.kill()
            process.join()
        receiver.close()
    if answered:
        return value
    raise _unpickled(value, trace) from RemoteTraceback(trace)


def compile_solver() -> None:
    """Solve a small generated problem in a fresh process, so that numba's on-disk cache holds
    the solver's compiled loops: the first timed fit after a change to them then loads them
    instead of compiling them (seconds that are not the fit's)."""
    in_fresh_process(_small_solve)


def _small_solve() -> None:
    """A certified solve on 300 generated points in 6 features, and one with class metrics on
    400 points in 8 classes (each metric's pairs then touch few of the stacked coordinates, as
    on letters, so the loops over those run too)."""
    from sklearn.datasets import make_blobs, make_classification

    from fast_solver import solve
    from lmnn_sdp import LMNNProblem

    X, y = make_classification(300, 6, n_informative=4, n_classes=3, random_state=0)
    solve(LMNNProblem(X, y, k=3, mu=0.5), tol=1e-6)
    X, y = make_blobs(400, 6, centers=8, cluster_std=5.0, random_state=0)
    problem = LMNNProblem(X, y, k=3, mu=0.5)
    solve(problem, clusters=problem.label_codes, tol=1e-4)


def _answer(connection, function, args) -> None:
    """In the fresh process: send ``(True, value, "")`` or ``(False, pickled error, traceback)``."""
    try:
        message = (True, function(*args), "")
    except BaseException as error:
        trace = traceback.format_exc()
        try:
            message = (False, pickle.dumps(error), trace)
        except Exception:  # an error that does not pickle: its traceback says what it was
            message = (False, None, trace)
    try:
        connection.send(message)
    except Exception:  # the value does not pickle
        connection.send((False, None, traceback.format_exc()))
    connection.close()


def _unpickled(pickled: bytes | None, trace: str) -> BaseException:
    try:
        return pickle.loads(pickled)
    except Exception:  # None, or an error class that does not rebuild from its arguments
        return RuntimeError("the fresh process raised an error that could not be sent back:\n" + trace)


def _peak_gib_of(pid: int) -> float | None:
    """Peak resident memory (GiB) of a running process: ``VmHWM`` of ``/proc/PID/status``."""
    try:
        return status_gib("VmHWM", pid)
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def status_gib(field: str, pid: int | str = "self") -> float:
    """A memory field of ``/proc/PID/status`` (``VmHWM``, ``VmRSS``, ...) in GiB (Linux)."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return int(next(line.split()[1] for line in lines if line.startswith(field + ":"))) / 2**20  # kB


def growth_exponent(size_a: float, value_a: float, size_b: float, value_b: float) -> float:
    """The exponent ``p`` of ``value = c size^p`` through two points.

    Parameters
    ----------
    size_a, value_a, size_b, value_b : float
        Two sizes (distinct, positive) and their positive values (seconds, memory).

    Returns
    -------
    float
        ``log(value_b / value_a) / log(size_b / size_a)``.

    Examples
    --------
    >>> growth_exponent(100, 1.0, 200, 4.0)
    2.0
    """
    if size_a <= 0 or size_b <= 0 or size_a == size_b or value_a <= 0 or value_b <= 0:
        raise ValueError(f"need distinct positive sizes and positive values, got ({size_a}, {value_a}) and "
                         f"({size_b}, {value_b})")
    return math.log(value_b / value_a) / math.log(size_b / size_a)
