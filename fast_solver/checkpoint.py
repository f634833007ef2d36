"""Checkpoints of long fits: one fit's state in one file, written atomically, refused when
it is damaged or belongs to another fit.

A fit that can run for minutes takes ``checkpoint=PATH``: it saves its state (iterate,
working set, stage, counters, random state) at restart points at most every ``interval``
seconds, and a fit started again with the same inputs, options and path resumes from the
state saved last and ends with the answer an uninterrupted fit gives. The state is a tree of
dicts, lists and tuples whose leaves are numpy arrays, numbers, strings, booleans and None.

The file is a header line ``lmnn-sdp checkpoint <format> <sha256>`` followed by an ``.npz``
archive (no pickle) of the state's arrays and of a JSON record (the kind of fit, the
fingerprint of its inputs and options, the writer and the state's other values). The digest
covers everything after the header, so a truncated or edited file is refused; so is the
checkpoint of another release, of another kind of fit or of other inputs or options
(``fingerprint``). Writes go
to a temporary file in the same folder, flushed to disk, then renamed over the old one: a
process killed at any moment leaves the previous checkpoint or the new one, never a mix.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from lmnn_sdp.certificates.storage import writer

__all__ = ["Checkpoint", "CheckpointError", "as_checkpoint", "fingerprint"]

MAGIC = b"lmnn-sdp checkpoint"
FORMAT_VERSION = 1
_META = "__checkpoint__"  # the archive's entry that holds the JSON record


class CheckpointError(ValueError):
    """A checkpoint file that cannot be trusted: damaged, of a newer format, or of another fit."""


def fingerprint(*arrays, **options) -> str:
    """SHA-256 of a fit's inputs and options: what a checkpoint must have been written for.

    Parameters
    ----------
    *arrays : array-like
        The fit's data (dtype, shape and bytes enter the digest).
    **options
        The fit's options: JSON values, numpy scalars or arrays.

    Returns
    -------
    digest : str
        64 hexadecimal digits.

    Examples
    --------
    >>> import numpy as np
    >>> a = fingerprint(np.eye(2), k=3, mu=0.5)
    >>> a == fingerprint(np.eye(2), mu=0.5, k=3), a == fingerprint(np.eye(2), k=3, mu=0.4)
    (True, False)
    """
    h = hashlib.sha256()
    for a in arrays:
        _update(h, np.asarray(a))
    h.update(json.dumps(options, sort_keys=True, default=lambda v: _hashed(v)).encode())
    return h.hexdigest()


class Checkpoint:
    """The checkpoint file of one fit (module docstring).

    Parameters
    ----------
    path : str, path-like or None
        The file; None makes an inert checkpoint (``load`` returns None, ``save`` and
        ``due`` do nothing), so a fit needs no branch for "no checkpoint".
    kind : str
        The kind of fit, e.g. ``"lmnn"``; a file of another kind is refused.
    fingerprint : str
        ``fingerprint`` of the fit's inputs and options; a file of another is refused.
    interval : float >= 0, default=60
        Seconds between saves (``due``); 0 saves at every restart point.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> path = tempfile.mkdtemp() + "/fit.ckpt"
    >>> ckpt = Checkpoint(path, kind="demo", fingerprint=fingerprint(np.ones(3)), interval=0)
    >>> ckpt.load() is None, ckpt.due()
    (True, True)
    >>> ckpt.save({"x": np.arange(3.0), "stage": 2, "rng": ("MT19937", 5)})
    >>> state = ckpt.load()
    >>> state["x"], state["stage"], state["rng"]
    (array([0., 1., 2.]), 2, ('MT19937', 5))
    >>> Checkpoint(path, kind="other", fingerprint=ckpt.fingerprint).load()
    Traceback (most recent call last):
    ...
    fast_solver.checkpoint.CheckpointError: ...
    """

    def __init__(self, path, *, kind: str, fingerprint: str, interval: float = 60.0):
        if not (isinstance(interval, (int, float)) and np.isfinite(interval) and interval >= 0):
            raise ValueError(f"checkpoint interval must be a number of seconds >= 0, got {interval!r}.")
        self.path = None if path is None else Path(path)
        self.kind, self.fingerprint, self.interval = kind, fingerprint, float(interval)
        self._last = time.monotonic()
        self._state: dict | None = None  # the state saved or loaded last, for ``section``
        self._known = False  # whether ``_state`` is the file's

    @property
    def enabled(self) -> bool:
        """Whether there is a file (``path`` is not None)."""
        return self.path is not None

    def due(self) -> bool:
        """Whether ``interval`` seconds have passed since the last save (or since creation)."""
        return self.enabled and time.monotonic() - self._last >= self.interval

    def save(self, state: dict) -> None:
        """Write ``state`` atomically (write, fsync, rename); nothing when inert."""
        if not self.enabled:
            return
        arrays: dict[str, np.ndarray] = {}
        record = {"format": FORMAT_VERSION, "kind": self.kind, "fingerprint": self.fingerprint,
                  "written_by": writer(), "written_at": datetime.now(timezone.utc).isoformat(),
                  "state": _encode(state, arrays)}
        arrays[_META] = np.frombuffer(json.dumps(record, allow_nan=True).encode(), dtype=np.uint8)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        payload = buffer.getvalue()
        header = b"%s %d %s\n" % (MAGIC, FORMAT_VERSION, hashlib.sha256(payload).hexdigest().encode())
        _write_atomically(self.path, header + payload)
        self._last = time.monotonic()
        self._state, self._known = state, True

    def load(self) -> dict | None:
        """The state saved last, or None when there is no file (or the checkpoint is inert).

        Raises
        ------
        CheckpointError
            If the file is not a checkpoint, is truncated or edited, is of a newer format,
            was written by another release, or by another kind of fit or for other inputs or
            options.
        """
        if not self.enabled or not self.path.exists():
            return None
        data = self.path.read_bytes()
        header, _, payload = data.partition(b"\n")
        parts = header.split(b" ")
        if not header.startswith(MAGIC + b" ") or len(parts) != 4:
            raise CheckpointError(f"{self.path} is not a checkpoint of lmnn-sdp; give the path of "
                                  "one, or a path that does not exist yet to start afresh.")
        version, digest = parts[2], parts[3].decode(errors="replace")
        if not version.isdigit() or int(version) > FORMAT_VERSION:
            raise CheckpointError(f"{self.path} is of checkpoint format {version.decode(errors='replace')}, "
                                  f"newer than this release reads ({FORMAT_VERSION}); upgrade lmnn-sdp "
                                  "or delete the file to start afresh.")
        if hashlib.sha256(payload).hexdigest() != digest:
            raise CheckpointError(f"{self.path} is damaged (truncated or edited: its contents do not "
                                  "match the digest in its header); delete it to start afresh.")
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        record = json.loads(arrays.pop(_META).tobytes().decode())
        if record["written_by"] != writer():
            raise CheckpointError(f"{self.path} was written by {record['written_by']}, not by this release "
                                  f"({writer()}), whose fits may take other steps; delete it to start afresh.")
        if record["kind"] != self.kind:
            raise CheckpointError(f"{self.path} is the checkpoint of a {record['kind']!r} fit, not of "
                                  f"this {self.kind!r} fit; give another path.")
        if record["fingerprint"] != self.fingerprint:
            raise CheckpointError(f"{self.path} was written by a {self.kind!r} fit of other inputs or "
                                  "options; give another path, or delete it to start afresh.")
        self._state, self._known = _decode(record["state"], arrays), True
        return self._state

    def section(self, name: str) -> Section:
        """The part of this file that holds one step of a fit made of steps (``Section``)."""
        return Section(self, name)

    def _tree(self) -> dict | None:
        """The state saved or loaded last (the file is read once)."""
        return self._state if self._known else self.load()

    def __repr__(self) -> str:
        return f"Checkpoint({str(self.path) if self.enabled else None!r}, kind={self.kind!r}, interval={self.interval})"


class Section:
    """One step of a fit made of steps, e.g. one pass of multi-pass LMNN: its state is stored
    under ``name`` in the state of ``parent`` (a ``Checkpoint`` or a ``Section``), beside the
    other steps', in the same file. It has the interface of ``Checkpoint`` (``enabled``,
    ``due``, ``load``, ``save``, ``section``); kind and fingerprint are checked by the file's.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> path = tempfile.mkdtemp() + "/fit.ckpt"
    >>> ckpt = Checkpoint(path, kind="demo", fingerprint="f", interval=0)
    >>> ckpt.section("pass 1").save({"x": 1.0})
    >>> ckpt.section("pass 2").save({"x": 2.0})
    >>> again = Checkpoint(path, kind="demo", fingerprint="f")
    >>> again.section("pass 1").load(), again.section("pass 3").load(), sorted(again.load())
    ({'x': 1.0}, None, ['pass 1', 'pass 2'])
    """

    def __init__(self, parent: Checkpoint | Section, name: str):
        self.parent, self.name = parent, name
        self.path, self.kind, self.fingerprint = parent.path, parent.kind, parent.fingerprint

    @property
    def enabled(self) -> bool:
        """Whether there is a file (``Checkpoint.enabled``)."""
        return self.parent.enabled

    def due(self) -> bool:
        """``Checkpoint.due`` of the file."""
        return self.parent.due()

    def load(self) -> dict | None:
        """This step's state saved last, or None (``Checkpoint.load``; the file is read once)."""
        tree = self.parent._tree()
        return None if tree is None else tree.get(self.name)

    def save(self, state: dict) -> None:
        """Write this step's state, the other steps' unchanged (``Checkpoint.save``)."""
        if self.enabled:
            self.parent.save({**(self.parent._tree() or {}), self.name: state})

    section = Checkpoint.section
    _tree = load

    def __repr__(self) -> str:
        return f"{self.parent!r}.section({self.name!r})"


def as_checkpoint(checkpoint, *, kind: str, fingerprint, interval: float = 60.0) -> Checkpoint | Section:
    """The checkpoint of a fit's ``checkpoint=`` argument: a path (or None) opens
    ``Checkpoint(path, kind=kind, fingerprint=fingerprint, interval=interval)``; a ``Checkpoint``
    or ``Section`` (a step of a larger fit, whose file checks kind and fingerprint) is used as is.
    ``fingerprint`` is a string, or a function that returns it, called only when a path is given
    (hashing the inputs costs a pass over them).

    Raises
    ------
    TypeError
        If ``checkpoint`` is none of these.
    """
    if isinstance(checkpoint, (Checkpoint, Section)):
        return checkpoint
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(f"checkpoint must be a file path, a Checkpoint or None, got {type(checkpoint).__name__}.")
    if checkpoint is not None and callable(fingerprint):
        fingerprint = fingerprint()
    return Checkpoint(checkpoint, kind=kind, fingerprint=fingerprint, interval=interval)


def _encode(value, arrays: dict):
    """The JSON form of a state tree; its arrays go into ``arrays`` under references."""
    if isinstance(value, np.ndarray):
        name = f"a{len(arrays)}"
        arrays[name] = value
        return {"__array__": name}
    if isinstance(value, np.generic):
        return _encode(value.item(), arrays)
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("checkpoint state: dict keys must be strings.")
        if set(value) & {"__array__", "__tuple__"}:
            raise TypeError("checkpoint state: '__array__' and '__tuple__' are reserved keys.")
        return {key: _encode(item, arrays) for key, item in value.items()}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(item, arrays) for item in value]}
    if isinstance(value, list):
        return [_encode(item, arrays) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"checkpoint state: cannot store a {type(value).__name__}; use arrays, numbers, "
                    "strings, booleans, None, dicts, lists and tuples.")


def _decode(value, arrays: dict):
    if isinstance(value, dict):
        if "__array__" in value:
            return arrays[value["__array__"]]
        if "__tuple__" in value:
            return tuple(_decode(item, arrays) for item in value["__tuple__"])
        return {key: _decode(item, arrays) for key, item in value.items()}
    if isinstance(value, list):
        return [_decode(item, arrays) for item in value]
    return value


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
    if hasattr(os, "O_DIRECTORY"):  # the rename itself on disk (POSIX)
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _update(h, a: np.ndarray) -> None:
    a = np.ascontiguousarray(a)
    if a.dtype == object:
        raise TypeError("fingerprint: arrays of dtype=object cannot be hashed; convert them to numbers or strings.")
    h.update(f"{a.dtype.str}|{a.shape}|".encode())
    h.update(a.tobytes())


def _hashed(value):
    """A JSON stand-in for an option that is a numpy scalar or array."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        h = hashlib.sha256()
        _update(h, value)
        return {"array_sha256": h.hexdigest()}
    raise TypeError(f"fingerprint: option of type {type(value).__name__} is not a JSON value or array; "
                    "pass its defining numbers instead.")

