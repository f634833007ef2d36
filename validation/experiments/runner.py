"""Run the tasks on ``dask.distributed``, resumable, with the gate in front of the fast solvers.

``run`` skips the tasks the store already holds as finished (status ``ok``), submits the
others to the cluster (``run_task`` on a worker, which loads its own data) and records each
row the moment its task finishes, so an interrupted run loses only the tasks in flight.
Methods behind a gate (``validation.experiments.gate``) wait for their solvers'
cross-checks, which run once per environment as tasks on the cluster too (or come from
the store's cache); the other tasks start at once.

A worker that dies (killed, out of memory, its machine gone) is left to Dask's scheduler,
not to ``client.submit(..., retries=N)``: the scheduler runs the tasks the worker held again
on the other workers, up to ``distributed.scheduler.allowed-failures`` times (default 3),
then fails them with ``KilledWorker``, which ``run`` records as a failed row with that error
while the rest go on. ``retries`` would re-run tasks that raise, and none needs it:
``run_task`` returns its own failures as rows, and a gate that raises (another environment)
would raise again. Each task has one future, so a task run twice is still recorded once,
from the result that reaches the client; a result lost with its worker after it finished is
computed again and recorded then. The rows recorded before a worker or the client died stay
in the store, so a rerun computes only the tasks without an ``ok`` row.

``dask_client`` opens a ``LocalCluster`` (``workers`` processes of one thread each, and
BLAS / numba threads shared out between them; its log shows errors only, not the warning
that a worker took over 4 s to exit at shutdown, which it does on a loaded machine) or
connects to a running scheduler.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections import Counter
from collections.abc import Iterator

from distributed import Client, LocalCluster, as_completed
from tqdm.auto import tqdm

from validation.experiments.gate import GateResult, cache_gate, cached_gate, gate_environment, refusal, run_gate
from validation.experiments.methods import method
from validation.experiments.store import KEY, ResultStore
from validation.experiments.task import WORKER_THREADS, Task, run_task

# numba's share goes in WORKER_THREADS for ``task.limit_numba_threads``, not in NUMBA_NUM_THREADS
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, workers: int = 2) -> Iterator[Client]:
    """A client of the scheduler at ``scheduler`` (e.g. "tcp://host:8786"), or of a new
    ``LocalCluster`` with ``workers`` single-threaded worker processes (closed on exit)."""
    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.ERROR,
                      env=dict.fromkeys((*THREAD_VARIABLES, WORKER_THREADS), threads)) as cluster, \
            Client(cluster) as client:
        yield client


def run(tasks: list[Task], store: ResultStore, client: Client, progress: bool = True,
        gate_max_n: int | None = None) -> Counter:
    """Run the unfinished ``tasks``; returns how many ended ``ok``, ``failed``, ``skipped``,
    ``refused`` and were already ``finished`` in the store. Gates run on the built-in
    instances of at most ``gate_max_n`` points (default: all of them)."""
    done = store.finished(task.key for task in tasks)
    counts = Counter(finished=len(done))
    run = _Run(store, client, gate_max_n, counts)
    with tqdm(total=len(tasks), initial=len(done), desc="experiments", unit="task",
              disable=not progress) as bar:
        run.bar = bar
        for task in tasks:
            if task.key not in done:
                run.admit(task)
        for future in run.futures:
            run.collect(future)
    return counts


class _Run:
    """The state of one ``run``: gates known and pending, tasks waiting for them, futures."""

    def __init__(self, store: ResultStore, client: Client, gate_max_n: int | None, counts: Counter):
        self.store, self.client, self.counts = store, client, counts
        self.gate_max_n, self.environment = gate_max_n, gate_environment(gate_max_n)
        self.gates: dict[str, GateResult] = {}
        self.gate_futures: dict = {}  # future -> solver
        self.task_futures: dict = {}  # future -> task
        self.waiting: list[Task] = []
        self.futures = as_completed()
        self.bar = None

    def admit(self, task: Task) -> None:
        """Submit ``task``, refuse it, or hold it until its gates are known."""
        needed = method(task.method).gate
        for solver in needed:
            self._ensure_gate(solver)
        if any(solver not in self.gates for solver in needed):
            self.waiting.append(task)
            return
        message = refusal(task.method, [self.gates[solver] for solver in needed])
        if message:
            self._record(task, {"status": "refused", "error": message})
            return
        future = self.client.submit(run_task, task, key=f"task-{task.name}-{uuid.uuid4().hex}")
        self.task_futures[future] = task
        self.futures.add(future)

    def collect(self, future) -> None:
        """Record a finished task, or take in a finished gate and admit what waited on it."""
        result, failure = _outcome(future)
        future.release()
        if future in self.gate_futures:
            solver = self.gate_futures.pop(future)
            if failure is None:
                cache_gate(self.store, result, self.environment)
            else:
                result = GateResult(solver, False, f"the cross-check of '{solver}' could not run: "
                                    f"{failure}", [], 0.0)
            self.gates[solver] = result
            waiting, self.waiting = self.waiting, []
            for task in waiting:
                self.admit(task)
            return
        task = self.task_futures.pop(future)
        self._record(task, result if failure is None else
                     {"status": "failed", "error": f"the task did not return: {failure}"})

    def _ensure_gate(self, solver: str) -> None:
        if solver in self.gates or solver in self.gate_futures.values():
            return
        cached = cached_gate(self.store, solver, self.environment)
        if cached is not None:
            self.gates[solver] = cached
            return
        future = self.client.submit(run_gate, solver, self.environment, self.gate_max_n,
                                    key=f"gate-{solver}-{uuid.uuid4().hex}")
        self.gate_futures[future] = solver
        self.futures.add(future)

    def _record(self, task: Task, row: dict) -> None:
        self.store.record({**row, **dict(zip(KEY, task.key))})
        self.counts[row["status"]] += 1
        self.bar.update(1)
        self.bar.set_postfix_str(f"{task.name} {row['status']}", refresh=False)


def _outcome(future) -> tuple[object, str | None]:
    """``(result, None)`` of a future that ``as_completed`` gave, waiting while a result lost
    with its worker is computed again; ``(None, the error)`` when the task raised, its workers
    died (``KilledWorker``, which names the last one) or it was cancelled."""
    try:
        return future.result(), None
    except Exception as error:
        return None, f"{type(error).__name__}: {error}"
