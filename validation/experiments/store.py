"""The results store: one SQLite file, one row per task, written as each task finishes.

A task is keyed by ``KEY`` = (data set, split, method, parameters as canonical JSON, code
version), so a rerun finds what is done (``finished``) and computes only the rest; a
changed parameter or an edit to the code that computes results (``versions.code_version``)
makes a new key. Each row also holds the package versions, the timings, the test error,
the training leave-one-out error, the method's statistics (JSON), the status (``STATUSES``),
the error text of a task that did not finish and the run that recorded it (``run``). Only
``ok`` rows count as finished: a rerun retries failed, skipped and refused tasks.
``restore`` puts back rows read from an export (``report.read_tasks``), as they were.

The ``gates`` table caches the cross-check gate (``validation.experiments.gate``) of each
fast solver under an environment (package versions and code version); the ``figures``
table caches what each illustrative figure draws (``record_figure``), so a rerun redraws
without refitting.

Why SQLite, and how two runs share it. The store is one file beside the report, needs no
server and survives the process: SQLite commits are atomic and durable (the default
``synchronous = FULL``), so a row is on disk before ``record`` returns and the runner
reports it only then. The journal is a write-ahead log (WAL): readers never block the
writer and a killed process leaves the last committed state. Every write is one
transaction; those that read before they write (``claim``) take the write lock first
(``BEGIN IMMEDIATE``), so two runs cannot both see a task as free. A connection waits up to
``BUSY_SECONDS`` for another's lock instead of failing. WAL needs a local file system
(not NFS), which is where the store lives (``--results``).

Claims. A run registers itself (``start_run``, table ``runs``: its id, host, process and a
heartbeat it refreshes, ``heartbeat``) and claims each unfinished task before submitting it
(``claim``, table ``claims``); a task or gate claimed by another live run is left to it.
Recording a row releases its claim in the same transaction; ``end_run`` releases the rest
(a run that ends or is interrupted). A run whose heartbeat is older than ``CLAIM_EXPIRY``
seconds (a killed client), or whose process no longer exists on this machine, is dead: its
claims may be taken over. Gates are claimed the same
way (``claim_gate``), so two runs do not cross-check one solver at once; figures are not
claimed (two runs that start together may both fit them; the second write wins, with the
same content).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

DEFAULT_FOLDER = Path("lmnn-sdp-experiments")  # of results.sqlite and the report, by default
KEY = ("dataset", "split", "method", "params", "code_version")
STATUSES = ("ok", "failed", "skipped", "refused")  # skipped: a peer not installed; refused: the gate
NUMBERS = ("test_error", "train_loo_error", "fit_seconds", "eval_seconds", "total_seconds")
TEXTS = ("status", "error", "worker", "finished_at", "run")
JSONS = ("stats", "versions")
COLUMNS = (*KEY, *NUMBERS, *JSONS, *TEXTS)
BUSY_SECONDS = 60.0  # how long a connection waits for another's write lock
CLAIM_EXPIRY = 120.0  # seconds without a heartbeat after which a run is dead and its claims free
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS results (
    dataset TEXT NOT NULL, split INTEGER NOT NULL, method TEXT NOT NULL, params TEXT NOT NULL,
    code_version TEXT NOT NULL, {", ".join(f"{c} REAL" for c in NUMBERS)},
    stats TEXT, versions TEXT, status TEXT NOT NULL CHECK (status IN {STATUSES}), error TEXT,
    worker TEXT, finished_at TEXT, run TEXT, PRIMARY KEY ({", ".join(KEY)}));
CREATE TABLE IF NOT EXISTS gates (
    solver TEXT NOT NULL, environment TEXT NOT NULL, passed INTEGER NOT NULL, message TEXT,
    rows TEXT, seconds REAL, finished_at TEXT, PRIMARY KEY (solver, environment));
CREATE TABLE IF NOT EXISTS runs (
    run TEXT PRIMARY KEY, host TEXT, pid INTEGER, started_at TEXT, heartbeat REAL NOT NULL);
CREATE TABLE IF NOT EXISTS claims (item TEXT PRIMARY KEY, run TEXT NOT NULL, claimed_at TEXT);
CREATE TABLE IF NOT EXISTS figures (
    name TEXT NOT NULL, key TEXT NOT NULL, data BLOB NOT NULL, finished_at TEXT,
    PRIMARY KEY (name, key));
"""


@dataclass
class Claimed:
    """What ``ResultStore.claim`` found for each key asked: ``done`` (finished in the store),
    ``mine`` (now claimed by the asking run) or ``held`` (key -> the live run holding it)."""

    done: set = field(default_factory=set)
    mine: set = field(default_factory=set)
    held: dict = field(default_factory=dict)


class ResultStore:
    """The SQLite results store at ``path`` (created with its folder if absent).

    Use as a context manager, or call ``close()``. One store object per process and thread;
    processes share the file (module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._write_ahead_log()
        with self._transaction():
            for statement in _SCHEMA.split(";"):
                self._db.execute(statement)
            if "run" not in {r["name"] for r in self._db.execute("PRAGMA table_info(results)")}:
                self._db.execute("ALTER TABLE results ADD COLUMN run TEXT")  # a store of before claims

    def _write_ahead_log(self) -> None:
        """Put the store in WAL mode (a property of the file: once set, only read). Converting
        needs the file to itself, and SQLite refuses it as "database is locked" at once rather
        than through the connection's busy timeout (two runs starting on one new store); so it
        is tried again until ``BUSY_SECONDS`` have passed."""
        deadline = time.monotonic() + BUSY_SECONDS
        while True:
            try:
                if self._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                    return
                if self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal":
                    return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise sqlite3.OperationalError(f"{self.path} could not be put in WAL mode in {BUSY_SECONDS:g} s; the "
                                               "store needs a local file system: give --results a local folder")
            time.sleep(0.05)

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def record(self, row: dict, run: str | None = None) -> None:
        """Insert or replace one task's row (``COLUMNS``; missing ones are NULL) and release
        ``run``'s claim on it, in one transaction."""
        unknown = set(row) - set(COLUMNS)
        if unknown or any(row.get(k) is None for k in KEY):
            raise ValueError(f"row: needs every key column {KEY} and only {COLUMNS}; "
                             f"unknown {sorted(unknown)}")
        if row.get("status") not in STATUSES:
            raise ValueError(f"row: status must be one of {STATUSES}, got {row.get('status')!r}")
        values = _stored({**row, "finished_at": row.get("finished_at") or _now(), "run": run or row.get("run")})
        with self._transaction():
            self._db.execute(f"INSERT OR REPLACE INTO results {_INSERT}", values)
            self._release([tuple(row[k] for k in KEY)], run)

    def restore(self, rows: Iterable[dict]) -> int:
        """Insert the ``ok`` rows of ``rows`` (as ``rows`` returns them, e.g. read back from an
        export's task rows, ``report.read_tasks``) whose key the store lacks, as they were
        (their run and time included); returns how many. A row the store holds is kept."""
        values = [_stored(row) for row in rows if row.get("status") == "ok"]
        with self._transaction():
            before = self._db.total_changes
            self._db.executemany(f"INSERT OR IGNORE INTO results {_INSERT}", values)
            return self._db.total_changes - before

    def finished(self, keys: Iterable[tuple]) -> set[tuple]:
        """The keys among ``keys`` whose row has status ``ok``."""
        done = {tuple(r) for r in self._db.execute(
            f"SELECT {', '.join(KEY)} FROM results WHERE status = 'ok'")}
        return {tuple(key) for key in keys} & done

    def rows(self, keys: Iterable[tuple] | None = None) -> list[dict]:
        """Every row, or those of ``keys`` (in that order, absent ones left out), as dicts
        with the JSON columns decoded and NULL numbers as NaN."""
        found = {tuple(r[c] for c in KEY): _decoded(r) for r in self._db.execute("SELECT * FROM results")}
        if keys is None:
            return list(found.values())
        return [found[tuple(key)] for key in keys if tuple(key) in found]

    def delete(self, key: tuple) -> int:
        """Remove one task's row; returns how many rows went (0 or 1)."""
        with self._transaction():
            cursor = self._db.execute(f"DELETE FROM results WHERE {' AND '.join(f'{c} = ?' for c in KEY)}",
                                      tuple(key))
        return cursor.rowcount

    def gate(self, solver: str, environment: str) -> dict | None:
        """The cached gate of ``solver`` under ``environment``, or None."""
        row = self._db.execute("SELECT * FROM gates WHERE solver = ? AND environment = ?",
                               (solver, environment)).fetchone()
        if row is None:
            return None
        return {**dict(row), "passed": bool(row["passed"]), "rows": json.loads(row["rows"])}

    def record_gate(self, solver: str, environment: str, passed: bool, message: str,
                    rows: list[dict], seconds: float, run: str | None = None) -> None:
        """Cache a gate's outcome and its cross-check rows; release ``run``'s claim on it."""
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO gates VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (solver, environment, int(passed), message,
                              json.dumps(rows, default=_plain), seconds, _now()))
            self._release([gate_key(solver, environment)], run)

    def figure(self, name: str, key: str) -> dict | None:
        """The data of figure ``name`` cached under ``key`` (``record_figure``), or None."""
        row = self._db.execute("SELECT data FROM figures WHERE name = ? AND key = ?", (name, key)).fetchone()
        return None if row is None else _unpacked(row["data"])

    def record_figure(self, name: str, key: str, data: dict) -> None:
        """Cache the data of figure ``name`` under ``key`` (what determines it): a dict of
        numpy arrays and JSON values (numbers, strings, lists, dicts), kept without pickle."""
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO figures VALUES (?, ?, ?, ?)",
                             (name, key, _packed(data), _now()))

    # -- runs and claims (module docstring) ------------------------------------------------
    def start_run(self) -> str:
        """Register a new run with a fresh heartbeat; returns its id."""
        run = uuid.uuid4().hex
        with self._transaction():
            self._db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?)",
                             (run, socket.gethostname(), os.getpid(), _now(), time.time()))
        return run

    def heartbeat(self, run: str) -> None:
        """Mark ``run`` alive now (registering it again if it had expired)."""
        with self._transaction():
            self._db.execute("INSERT INTO runs (run, host, pid, started_at, heartbeat) VALUES (?, ?, ?, ?, ?) "
                             "ON CONFLICT (run) DO UPDATE SET heartbeat = excluded.heartbeat",
                             (run, socket.gethostname(), os.getpid(), _now(), time.time()))

    def end_run(self, run: str) -> None:
        """Release every claim of ``run`` and forget it."""
        with self._transaction():
            self._db.execute("DELETE FROM claims WHERE run = ?", (run,))
            self._db.execute("DELETE FROM runs WHERE run = ?", (run,))

    def claim(self, keys: Iterable[tuple], run: str) -> Claimed:
        """Claim for ``run`` every task of ``keys`` that is neither finished nor claimed by
        another live run, in one write transaction (claims of dead runs are taken over)."""
        keys = [tuple(key) for key in keys]
        with self._transaction():
            done = self.finished(keys)
            mine, held = self._claim([key for key in keys if key not in done], run)
        return Claimed(done, mine, held)

    def claim_gate(self, solver: str, environment: str, run: str) -> str | None:
        """None when the gate is cached, else the run that holds its claim: ``run`` itself
        when it got it, another live run otherwise."""
        with self._transaction():
            if self.gate(solver, environment) is not None:
                return None
            mine, held = self._claim([gate_key(solver, environment)], run)
        return run if mine else next(iter(held.values()))

    def release(self, keys: Iterable[tuple], run: str) -> None:
        """Release ``run``'s claims on ``keys`` (task keys or ``gate_key``s)."""
        with self._transaction():
            self._release(keys, run)

    def claims(self) -> dict[tuple, str]:
        """Every claim: key -> the run holding it."""
        return {tuple(json.loads(r["item"])): r["run"] for r in self._db.execute("SELECT * FROM claims")}

    def _claim(self, keys: list[tuple], run: str) -> tuple[set, dict]:
        """Inside a write transaction: drop dead runs and their claims, then claim ``keys``."""
        self._db.execute("DELETE FROM runs WHERE heartbeat < ?", (time.time() - CLAIM_EXPIRY,))
        host = socket.gethostname()
        gone = [(r["run"],) for r in self._db.execute("SELECT run, pid FROM runs WHERE host = ?", (host,))
                if not _alive(r["pid"])]
        self._db.executemany("DELETE FROM runs WHERE run = ?", gone)
        self._db.execute("DELETE FROM claims WHERE run NOT IN (SELECT run FROM runs)")
        holders = {r["item"]: r["run"] for r in self._db.execute("SELECT item, run FROM claims")}
        held = {key: holders[_item(key)] for key in keys if holders.get(_item(key), run) != run}
        mine = {key for key in keys if key not in held}
        self._db.executemany("INSERT OR REPLACE INTO claims VALUES (?, ?, ?)",
                             [(_item(key), run, _now()) for key in mine])
        return mine, held

    def _release(self, keys: Iterable[tuple], run: str | None) -> None:
        if run is not None:
            self._db.executemany("DELETE FROM claims WHERE item = ? AND run = ?",
                                 [(_item(key), run) for key in keys])

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """A write transaction (``BEGIN IMMEDIATE``: the write lock first), committed on
        success and rolled back on any exception (KeyboardInterrupt included); nested
        uses join the outer one."""
        if self._db.in_transaction:
            yield
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.rollback()
            raise
        self._db.commit()


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (a run of this host whose process is
    gone is dead at once, without waiting for ``CLAIM_EXPIRY``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def gate_key(solver: str, environment: str) -> tuple:
    """The claim key of a gate."""
    return ("gate", solver, environment)


def _item(key: tuple) -> str:
    return json.dumps(list(key))


def _packed(data: dict) -> bytes:
    """``data``'s arrays in an npz, its other values as one JSON entry."""
    arrays = {name: value for name, value in data.items() if isinstance(value, np.ndarray)}
    others = {name: value for name, value in data.items() if name not in arrays}
    if "__json__" in arrays:
        raise ValueError("data: '__json__' is reserved; rename that entry")
    buffer = io.BytesIO()
    np.savez(buffer, __json__=np.array(json.dumps(others, default=_plain)), **arrays)
    return buffer.getvalue()


def _unpacked(blob: bytes) -> dict:
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
        data = {name: npz[name] for name in npz.files if name != "__json__"}
        return {**json.loads(str(npz["__json__"])), **data}


_INSERT = f"({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"


def _stored(row: dict) -> list:
    """The values of ``row`` in the order of ``COLUMNS``, its JSON columns encoded (missing: NULL)."""
    return [json.dumps(row.get(c) or {}, sort_keys=True, default=_plain) if c in JSONS else row.get(c)
            for c in COLUMNS]


def _decoded(row: sqlite3.Row) -> dict:
    out = dict(row)
    for column in JSONS:
        out[column] = json.loads(out[column]) if out[column] else {}
    for column in NUMBERS:
        out[column] = math.nan if out[column] is None else out[column]
    return out


def _plain(value):
    """numpy scalars and arrays as plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
