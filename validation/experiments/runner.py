"""Run the tasks on ``dask.distributed``, resumable, with the gate in front of the fast solvers.

``run`` registers a run in the store and claims every task the store does not hold as
finished (status ``ok``) and no other live run has claimed (``ResultStore.claim``), submits
the claimed ones to the cluster (``run_task`` on a worker, which loads its own data) and
records each row the moment its task finishes, committed before the progress bar counts
it, so an interrupted run loses only the tasks in flight. Tasks another live run holds are
left to it: this run looks at the store every ``WAIT_SECONDS`` until their rows are there
(and takes over those the other run gave up without a row), so two runs on one store
compute each task once and end with the same table. The loop refreshes the run's
heartbeat every ``HEARTBEAT_SECONDS`` (well within ``store.CLAIM_EXPIRY``) and releases the
run's claims when it ends, however it ends (an interrupt included).
Methods behind a gate (``validation.experiments.gate``) wait for their solvers'
cross-checks, which run once per environment as tasks on the cluster too (or come from
the store's cache, or from another run that holds the gate's claim); the other tasks start
at once.

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
that a worker took over 4 s to exit at shutdown, which it does on a loaded machine; no
dashboard, and its HTTP server on a free port rather than 8787, which another cluster may
hold) or connects to a running scheduler. The worker processes start with SIGINT ignored,
so Ctrl-C at a terminal, which reaches the whole process group, interrupts the run only
and the cluster then stops its workers, with the logs of the cluster and the workers
silenced first (a worker stopped mid-task logs its lost scheduler). A Ctrl-C while the
cluster starts is ignored; a worker process the nanny restarts later takes SIGINT as usual.
The ``LocalCluster``'s scheduler has no worker TTL (``distributed.scheduler.worker-ttl``,
5 min by default): its workers are processes on this machine, watched by their nannies, and
a worker that misses heartbeats there is paused or busy (a suspended laptop, a process
stopped with SIGSTOP, a long call that holds the GIL), not gone, and removing it would
compute its task again from the start. A cluster given by ``--scheduler`` keeps its own
configuration.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator

import dask
from distributed import Client, LocalCluster, WorkerPlugin, as_completed
from tqdm import tqdm as std_tqdm
from tqdm.auto import tqdm

from validation.experiments.gate import GateResult, cache_gate, cached_gate, gate_environment, refusal, run_gate
from validation.experiments.methods import method
from validation.experiments.store import KEY, ResultStore, gate_key
from validation.experiments.task import WORKER_THREADS, Task, run_task
from validation.interrupts import sigint_ignored

# numba's share goes in WORKER_THREADS for ``task.limit_numba_threads``, not in NUMBA_NUM_THREADS
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
POLL_SECONDS = 0.2  # the loop looks for finished futures this often
WAIT_SECONDS = 2.0  # and at the store for the tasks and gates other runs hold this often
HEARTBEAT_SECONDS = 10.0  # and marks its run alive this often (store.CLAIM_EXPIRY: 120 s)


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, workers: int = 2) -> Iterator[Client]:
    """A client of the scheduler at ``scheduler`` (e.g. "tcp://host:8786"), or of a new
    ``LocalCluster`` with ``workers`` single-threaded worker processes (closed on exit)."""
    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    with sigint_ignored(), dask.config.set({"distributed.scheduler.worker-ttl": None}):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR,
                               scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"},
                               env=dict.fromkeys((*THREAD_VARIABLES, WORKER_THREADS), threads))
    with cluster, Client(cluster) as client:
        client.register_plugin(_ThreadLockedProgress(), name="lmnn-sdp-thread-locked-progress")
        try:
            yield client
        except KeyboardInterrupt:
            _silence_logs()  # workers stopped mid-task log their lost scheduler
            with contextlib.suppress(Exception):  # a worker already gone: the interrupt still goes up
                client.run(_silence_logs)
            raise


class _ThreadLockedProgress(WorkerPlugin):
    """tqdm's lock in a worker process as a thread lock: its default, a multiprocessing lock,
    is a named semaphore that a worker stopped mid-task (the cluster closing after a Ctrl-C)
    leaves behind, and the resource tracker then warns of it on stderr."""

    def setup(self, worker) -> None:
        std_tqdm.set_lock(threading.RLock())


def _silence_logs() -> None:
    logging.getLogger("distributed").setLevel(logging.CRITICAL)


def run(tasks: list[Task], store: ResultStore, client: Client, progress: bool = True,
        gate_max_n: int | None = None, checkpoints: dict | None = None,
        on_record: Callable[[Task], None] | None = None) -> Counter:
    """Run the unfinished ``tasks`` (module docstring); returns how many ended ``ok``,
    ``failed``, ``skipped``, ``refused``, were already ``finished`` in the store, and were
    finished meanwhile by another run (``another_run``; a task another run recorded with
    another status counts under that status). Gates run on the built-in instances of at
    most ``gate_max_n`` points (default: all of them). ``checkpoints``: the keyword arguments
    of ``run_task`` for the fits' checkpoints (``{"checkpoints": FOLDER, "checkpoint_interval":
    SECONDS}``; None: no checkpoints). ``on_record(task)`` is called after each row this run
    records (``--export`` rewrites the task's data set's export there)."""
    run_id = store.start_run()
    try:
        claimed = store.claim((task.key for task in tasks), run_id)
        counts = Counter(finished=len(claimed.done))
        state = _Run(store, client, gate_max_n, counts, run_id, checkpoints or {}, on_record)
        with tqdm(total=len(tasks), initial=len(claimed.done), desc="experiments", unit="task",
                  disable=not progress) as bar:
            state.bar = bar
            for task in tasks:
                if task.key in claimed.mine:
                    state.admit(task)
                elif task.key in claimed.held:
                    state.held[task.key] = (task, claimed.held[task.key])
            state.finish()
    finally:
        store.end_run(run_id)
    return counts


class _Run:
    """The state of one ``run``: gates known and pending, tasks waiting for them, futures,
    and the tasks and gates another run holds."""

    def __init__(self, store: ResultStore, client: Client, gate_max_n: int | None, counts: Counter,
                 run_id: str, checkpoints: dict, on_record: Callable[[Task], None] | None = None):
        self.store, self.client, self.counts, self.run_id = store, client, counts, run_id
        self.checkpoints, self.on_record = checkpoints, on_record
        self.gate_max_n, self.environment = gate_max_n, gate_environment(gate_max_n)
        self.gates: dict[str, GateResult] = {}
        self.gate_futures: dict = {}  # future -> solver
        self.task_futures: dict = {}  # future -> task
        self.waiting: list[Task] = []
        self.held: dict[tuple, tuple[Task, str]] = {}  # key -> (task, the run holding it)
        self.held_gates: set[str] = set()  # solvers whose gate another run holds
        self.futures = as_completed()
        self.bar = None

    def finish(self) -> None:
        """Collect every future, heartbeat, and wait for what other runs hold."""
        beat = look = time.monotonic()
        while not self.futures.is_empty() or self.held or self.held_gates:
            if self.futures.has_ready():
                for future in self.futures.next_batch(block=False):
                    self.collect(future)
            else:
                time.sleep(POLL_SECONDS)
            now = time.monotonic()
            if now - beat >= HEARTBEAT_SECONDS:
                self.store.heartbeat(self.run_id)
                beat = now
            if (self.held or self.held_gates) and now - look >= WAIT_SECONDS:
                self._look_at_held()
                look = now

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
        future = self.client.submit(run_task, task, **self.checkpoints, key=f"task-{task.name}-{uuid.uuid4().hex}")
        self.task_futures[future] = task
        self.futures.add(future)

    def collect(self, future) -> None:
        """Record a finished task, or take in a finished gate and admit what waited on it."""
        result, failure = _outcome(future)
        future.release()
        if future in self.gate_futures:
            solver = self.gate_futures.pop(future)
            if failure is None:
                cache_gate(self.store, result, self.environment, self.run_id)
            else:
                result = GateResult(solver, False, f"the cross-check of '{solver}' could not run: "
                                    f"{failure}", [], 0.0)
                self.store.release([gate_key(solver, self.environment)], self.run_id)
            self.gates[solver] = result
            self._readmit()
            return
        task = self.task_futures.pop(future)
        self._record(task, result if failure is None else
                     {"status": "failed", "error": f"the task did not return: {failure}"})

    def _ensure_gate(self, solver: str) -> None:
        if solver in self.gates or solver in self.gate_futures.values() or solver in self.held_gates:
            return
        owner = self.store.claim_gate(solver, self.environment, self.run_id)
        if owner is None:
            self.gates[solver] = cached_gate(self.store, solver, self.environment)
        elif owner != self.run_id:
            self.held_gates.add(solver)
        else:
            future = self.client.submit(run_gate, solver, self.environment, self.gate_max_n,
                                        key=f"gate-{solver}-{uuid.uuid4().hex}")
            self.gate_futures[future] = solver
            self.futures.add(future)

    def _readmit(self) -> None:
        waiting, self.waiting = self.waiting, []
        for task in waiting:
            self.admit(task)

    def _look_at_held(self) -> None:
        """Take in what other runs finished; claim what they gave up (ended without it)."""
        solvers, self.held_gates = self.held_gates, set()
        for solver in solvers:
            self._ensure_gate(solver)
        self._readmit()
        claimed = self.store.claim(self.held, self.run_id)
        for key in claimed.done:
            self._report(self.held.pop(key)[0], "ok", "another_run")
        for key in claimed.mine:
            task, owner = self.held.pop(key)
            row = next(iter(self.store.rows([key])), None)
            if row is not None and row["run"] == owner:  # recorded by the other run, not ok
                self.store.release([key], self.run_id)
                self._report(task, row["status"])
            else:
                self.admit(task)
        for key, owner in claimed.held.items():
            self.held[key] = (self.held[key][0], owner)

    def _record(self, task: Task, row: dict) -> None:
        self.store.record({**row, **dict(zip(KEY, task.key))}, self.run_id)  # committed, then reported
        self._report(task, row["status"])
        if self.on_record is not None:
            self.on_record(task)

    def _report(self, task: Task, status: str, counted_as: str | None = None) -> None:
        self.counts[counted_as or status] += 1
        self.bar.update(1)
        self.bar.set_postfix_str(f"{task.name} {status}", refresh=False)


def _outcome(future) -> tuple[object, str | None]:
    """``(result, None)`` of a future that ``as_completed`` gave, waiting while a result lost
    with its worker is computed again; ``(None, the error)`` when the task raised, its workers
    died (``KilledWorker``, which names the last one) or it was cancelled."""
    try:
        return future.result(), None
    except Exception as error:
        return None, f"{type(error).__name__}: {error}"
