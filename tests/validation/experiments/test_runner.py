"""The runner on an in-process Dask cluster: the gate refuses, caches and admits; failures
are recorded and the rest go on; a rerun computes only what is missing."""

from __future__ import annotations

import functools

import pytest
from distributed import Client, LocalCluster

from validation import crosscheck
from validation.experiments import gate, methods, runner
from validation.experiments.methods import Method
from validation.experiments.store import ResultStore
from validation.experiments.task import plan
from validation.instances import builtin_instances


@pytest.fixture(scope="module")
def client():
    """Threads in this process, so monkeypatches reach the tasks."""
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as connected:
        yield connected


@pytest.fixture(autouse=True)
def prompt_loop(monkeypatch):
    """The run's loop looks for finished futures, and at the store, every 10 ms instead of
    every 0.2 s and 2 s: the tests wait for the loop, not for its pauses."""
    monkeypatch.setattr(runner, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(runner, "WAIT_SECONDS", 0.01)


@functools.cache
def suite() -> tuple:
    """The built-in instances, built once for this module (0.3 s each time)."""
    return tuple(builtin_instances())


@pytest.fixture()
def fake_crosscheck(monkeypatch):
    """``crosscheck.crosscheck`` answering from ``outcome`` (solver -> passed) and counting calls;
    the gates pick their instances from ``suite()``."""
    calls, outcome = [], {}
    monkeypatch.setattr(gate, "builtin_instances", lambda: list(suite()))

    def fake(instances, solvers, tol=1e-6, jobs=1, progress=True):
        [solver] = solvers
        calls.append((solver, len(instances)))
        return [{"instance": i.name, "solver": solver, "passed": outcome.get(solver, True) or n > 0}
                for n, i in enumerate(instances[:2])]

    monkeypatch.setattr(crosscheck, "crosscheck", fake)
    return calls, outcome


def test_run_gate_fails_when_any_row_fails_and_names_it(fake_crosscheck):
    calls, outcome = fake_crosscheck
    outcome["lmnn"] = False
    result = gate.run_gate("lmnn", gate.gate_environment(60), 60)
    assert not result.passed and calls == [("lmnn", 9)]  # the built-in instances of <= 60 points
    assert result.message == ("cross-check of 'lmnn': 1 of 2 rows on the built-in instances of at "
                              "most 60 points pass; FAILED: iris-n60-k2-mu0.5")
    message = gate.refusal("energy", [result])
    assert message.startswith("refused: energy needs fast solvers whose cross-check")
    assert "--solvers lmnn" in message


def test_run_gate_refuses_to_judge_another_environment():
    with pytest.raises(RuntimeError, match="same checkout and environment"):
        gate.run_gate("lmnn", "another environment", 60)


def test_a_failing_gate_refuses_its_methods_once_per_environment(client, fake_crosscheck, tmp_path):
    calls, outcome = fake_crosscheck
    outcome["lmnn"] = False
    tasks = plan(["iris"], ["euclidean", "lmnn", "energy", "mmc"], splits=1, max_rows=45)
    with ResultStore(tmp_path / "r.sqlite") as store:
        counts = runner.run(tasks, store, client, progress=False, gate_max_n=60)
        rows = {row["method"]: row for row in store.rows()}
        assert rows["euclidean"]["status"] == "ok" and rows["mmc"]["status"] == "ok"
        assert rows["lmnn"]["status"] == rows["energy"]["status"] == "refused"
        assert "FAILED: iris-n60-k2-mu0.5" in rows["lmnn"]["error"]
        assert counts == {"ok": 2, "refused": 2, "finished": 0}
        assert sorted(calls) == [("energy", 9), ("lmnn", 9), ("mmc", 9)]
        again = runner.run(tasks, store, client, progress=False, gate_max_n=60)
        assert again == {"finished": 2, "refused": 2}
        assert len(calls) == 3  # the gates came from the store's cache


def test_a_passing_gate_lets_the_solver_run(client, fake_crosscheck, tmp_path):
    tasks = plan(["iris"], ["lmnn"], splits=1, max_rows=45)
    with ResultStore(tmp_path / "r.sqlite") as store:
        assert runner.run(tasks, store, client, progress=False, gate_max_n=60) == {"ok": 1, "finished": 0}
        [row] = store.rows()
        assert row["stats"]["converged"] and row["test_error"] <= 0.2


def test_a_failing_task_is_recorded_and_the_rest_go_on(client, monkeypatch, tmp_path):
    def broken(X, y, params, checkpoint=None):
        raise FloatingPointError("no luck on this split")

    monkeypatch.setitem(methods.METHODS, "lda", Method(broken))
    tasks = plan(["iris"], ["euclidean", "lda", "rca"], splits=2)
    with ResultStore(tmp_path / "r.sqlite") as store:
        assert runner.run(tasks, store, client, progress=False) == {"ok": 4, "failed": 2, "finished": 0}
        failed = [row for row in store.rows() if row["status"] == "failed"]
        assert {row["method"] for row in failed} == {"lda"}
        assert "FloatingPointError: no luck on this split" in failed[0]["error"]
        monkeypatch.undo()
        assert runner.run(tasks, store, client, progress=False) == {"ok": 2, "finished": 4}


LAUNCH_THEN_COMPILE = """
import os
import numba  # imported by the main module, as the CLI does, so spawned workers import it first
import numpy as np
from validation.experiments.runner import dask_client

def launch_then_compile():
    from validation.experiments.task import limit_numba_threads
    agrees = os.environ.get("NUMBA_NUM_THREADS") in (None, str(numba.config.NUMBA_NUM_THREADS))
    numba.get_num_threads()  # launches the threads

    @numba.njit(parallel=True)
    def total(x):  # compiled afresh: numba re-reads its environment
        s = 0.0
        for i in numba.prange(len(x)):
            s += x[i]
        return s

    value = float(total(np.ones(10)))
    limit_numba_threads()
    return agrees, numba.get_num_threads(), value

if __name__ == "__main__":
    with dask_client(None, workers=2) as client:
        print(sorted(client.run(launch_then_compile).values()))
"""


@pytest.mark.slow
def test_worker_processes_compile_numba_after_launching_its_threads(tmp_path):
    """``dask_client``'s workers, started from a main module that imports numba (as the CLI's
    does): numba's environment agrees with its configuration, a compile after its threads
    are launched succeeds, and each task gets the worker's share of threads (with
    NUMBA_NUM_THREADS given to the workers, every MLNG task on letters failed to compile)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "launch_then_compile.py"
    script.write_text(LAUNCH_THEN_COMPILE)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    share = max(1, (os.cpu_count() or 1) // 2)
    assert done.stdout.strip().splitlines()[-1] == str([(True, share, 10.0)] * 2)


def test_every_task_is_committed_before_the_progress_bar_counts_it(client, monkeypatch, tmp_path):
    path = tmp_path / "r.sqlite"
    seen = []

    class Bar:
        """tqdm's part the runner uses; each update reads the store through another connection."""

        def __init__(self, total, initial, **options):
            self.n = initial

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def update(self, n):
            self.n += n
            with ResultStore(path) as reader:
                seen.append((self.n, len(reader.rows())))

        def set_postfix_str(self, text, refresh=True):
            pass

    monkeypatch.setattr(runner, "tqdm", Bar)
    tasks = plan(["iris"], ["euclidean", "rca"], splits=2)
    with ResultStore(path) as store:
        assert runner.run(tasks, store, client) == {"ok": 4, "finished": 0}
    assert seen == [(1, 1), (2, 2), (3, 3), (4, 4)]


def record_when_waited_for(path, task, run, status="ok"):
    """Another run: once this run records its first row (``stored``, set by ``run``'s
    ``on_record``; it holds ``task`` as another run's meanwhile and waits for it), record
    ``task`` (as ``run``) and end that run. Returns the thread and ``stored``."""
    import threading

    stored = threading.Event()

    def later():
        stored.wait(timeout=120)
        with ResultStore(path) as other:
            if status:
                other.record({**dict(zip(("dataset", "split", "method", "params", "code_version"), task.key)),
                              "status": status, "test_error": 0.5}, run)
            other.end_run(run)

    thread = threading.Thread(target=later)
    thread.start()
    return thread, stored


@pytest.mark.parametrize("status, counts", [
    ("ok", {"ok": 1, "another_run": 1, "finished": 0}),  # its row, taken as it is
    ("failed", {"ok": 1, "failed": 1, "finished": 0}),  # its row, counted by its status
    (None, {"ok": 2, "finished": 0}),  # it ended without a row: computed here
])
def test_a_task_another_run_holds_is_waited_for_and_taken_over_when_given_up(client, tmp_path, status, counts):
    path = tmp_path / "r.sqlite"
    tasks = plan(["iris"], ["euclidean"], splits=2)
    with ResultStore(path) as store:
        other = store.start_run()
        store.claim([tasks[1].key], other)
        thread, stored = record_when_waited_for(path, tasks[1], other, status)
        assert runner.run(tasks, store, client, progress=False, on_record=lambda task: stored.set()) == counts
        thread.join()
        rows = store.rows(task.key for task in tasks)
        assert [row["status"] for row in rows] == ["ok", status or "ok"]
        assert (rows[1]["run"] == other) == (status is not None)
        assert store.claims() == {}


PAUSED_WORKER = """
import os
import sys
import time
from validation.experiments.runner import dask_client

def slow(path):
    with open(path, "a") as starts:
        starts.write("start\\n")
    time.sleep(6)
    return os.getpid()

if __name__ == "__main__":
    with dask_client(None, workers=1) as client:
        print(*client.run(os.getpid).values(), flush=True)
        print(client.submit(slow, sys.argv[1]).result(), flush=True)
"""


@pytest.mark.slow
def test_a_local_worker_paused_past_the_worker_ttl_keeps_its_task(tmp_path):
    """A LocalCluster worker stopped (SIGSTOP) for 5 times Dask's worker TTL, then continued,
    finishes the task it held, once: with the TTL the scheduler removed it, its nanny
    restarted it and the task was computed again from its start."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script, starts = tmp_path / "paused_worker.py", tmp_path / "starts.txt"
    script.write_text(PAUSED_WORKER)
    env = dict(os.environ, DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL="2s")
    with subprocess.Popen([sys.executable, str(script), str(starts)], stdout=subprocess.PIPE, text=True,
                          env=env) as run:
        try:
            worker = int(run.stdout.readline())
            deadline = time.monotonic() + 120
            while not starts.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            os.kill(worker, signal.SIGSTOP)
            time.sleep(10)
            os.kill(worker, signal.SIGCONT)
            out, _ = run.communicate(timeout=120)
        finally:
            run.kill()
    assert run.returncode == 0
    assert int(out.split()[-1]) == worker
    assert starts.read_text().count("start") == 1
