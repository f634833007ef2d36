"""The results store: one SQLite file, one row per task, written as each task finishes.

A task is keyed by ``KEY`` = (data set, split, method, parameters as canonical JSON, code
version), so a rerun finds what is done (``finished``) and computes only the rest; a
changed parameter or an edit to the code that computes results (``versions.code_version``)
makes a new key. Each row also holds the package versions, the timings, the test error,
the training leave-one-out error, the method's statistics (JSON), the status (``STATUSES``)
and the error text of a task that did not finish. Only ``ok`` rows count as finished: a
rerun retries failed, skipped and refused tasks.

The ``gates`` table caches the cross-check gate (``validation.experiments.gate``) of each
fast solver under an environment (package versions and code version).

Only the process that drives the run writes (workers return their rows), so one
connection and SQLite's own locking are enough.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

DEFAULT_FOLDER = Path("lmnn-sdp-experiments")  # of results.sqlite and the report, by default
KEY = ("dataset", "split", "method", "params", "code_version")
STATUSES = ("ok", "failed", "skipped", "refused")  # skipped: a peer not installed; refused: the gate
NUMBERS = ("test_error", "train_loo_error", "fit_seconds", "eval_seconds", "total_seconds")
TEXTS = ("status", "error", "worker", "finished_at")
JSONS = ("stats", "versions")
COLUMNS = (*KEY, *NUMBERS, *JSONS, *TEXTS)
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS results (
    dataset TEXT NOT NULL, split INTEGER NOT NULL, method TEXT NOT NULL, params TEXT NOT NULL,
    code_version TEXT NOT NULL, {", ".join(f"{c} REAL" for c in NUMBERS)},
    stats TEXT, versions TEXT, status TEXT NOT NULL CHECK (status IN {STATUSES}), error TEXT,
    worker TEXT, finished_at TEXT, PRIMARY KEY ({", ".join(KEY)}));
CREATE TABLE IF NOT EXISTS gates (
    solver TEXT NOT NULL, environment TEXT NOT NULL, passed INTEGER NOT NULL, message TEXT,
    rows TEXT, seconds REAL, finished_at TEXT, PRIMARY KEY (solver, environment));
"""


class ResultStore:
    """The SQLite results store at ``path`` (created with its folder if absent).

    Use as a context manager, or call ``close()``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path)
        self._db.row_factory = sqlite3.Row
        with self._db:
            self._db.executescript(_SCHEMA)

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def record(self, row: dict) -> None:
        """Insert or replace one task's row (``COLUMNS``; missing ones are NULL)."""
        unknown = set(row) - set(COLUMNS)
        if unknown or any(row.get(k) is None for k in KEY):
            raise ValueError(f"row: needs every key column {KEY} and only {COLUMNS}; "
                             f"unknown {sorted(unknown)}")
        if row.get("status") not in STATUSES:
            raise ValueError(f"row: status must be one of {STATUSES}, got {row.get('status')!r}")
        values = {c: row.get(c) for c in COLUMNS}
        for column in JSONS:
            values[column] = json.dumps(values[column] or {}, sort_keys=True, default=_plain)
        values["finished_at"] = values["finished_at"] or _now()
        with self._db:
            self._db.execute(f"INSERT OR REPLACE INTO results ({', '.join(COLUMNS)}) VALUES "
                             f"({', '.join('?' * len(COLUMNS))})", [values[c] for c in COLUMNS])

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
        with self._db:
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
                    rows: list[dict], seconds: float) -> None:
        """Cache a gate's outcome and its cross-check rows."""
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO gates VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (solver, environment, int(passed), message,
                              json.dumps(rows, default=_plain), seconds, _now()))


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
