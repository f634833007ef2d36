"""Certificates on disk: ``NAME.npz`` holds the arrays, ``NAME.json`` the numbers.

This is the format of the certified corpus (``lmnn_sdp/testing/corpus/README.md``; the
JSON Schema of ``NAME.json`` is ``certificate.schema.json`` beside this module):
anyone with a ``.npz`` reader and a JSON parser can re-check a stored
certificate. The JSON carries a SHA-256 digest of the arrays and of its own
numbers, so an edited or damaged file is refused on loading, before any bound is
re-derived (a certificate's ``verify()`` then checks the mathematics itself).

Versions: format 5 adds ``atol`` to LMNN certificates (the absolute tolerance that certifies
a zero optimum; formats 3 and 4 read as ``atol`` 0, their rule). Format 4 names itself
(``format``) and the release that wrote it (``written_by``); format 3 is format 4 without
those two fields. Every release reads every format from 3 on and refuses a newer one by name.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

FORMAT = "lmnn-sdp certificate"
FORMAT_VERSION = 5
READABLE_VERSIONS = (3, 4, 5)


def digest(arrays: dict, fields: dict) -> str:
    """SHA-256 over the arrays' names, dtypes, shapes and bytes, in name order, and over
    ``fields`` (without a ``sha256`` entry) as canonical JSON."""
    h = hashlib.sha256()
    rest = {key: value for key, value in fields.items() if key != "sha256"}
    h.update(json.dumps(rest, sort_keys=True).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def stem(path) -> Path:
    """``path`` without a ``.npz`` or ``.json`` suffix (other dots, as in ``mu0.5``, stay)."""
    path = Path(path)
    return path.with_suffix("") if path.suffix in (".npz", ".json") else path


def _with(base: Path, suffix: str) -> Path:
    return base.with_name(base.name + suffix)


def save(path, arrays: dict, fields: dict) -> tuple[Path, Path]:
    """Write ``arrays`` to ``PATH.npz`` and ``fields`` (JSON-serialisable) to ``PATH.json``.

    The JSON gains ``format_version`` and ``sha256`` (``digest`` of both).
    Returns the two paths written."""
    base = stem(path)
    base.parent.mkdir(parents=True, exist_ok=True)
    arrays = {name: np.asarray(a) for name, a in arrays.items()}
    for name, a in arrays.items():
        if a.dtype == object:
            raise TypeError(f"array {name!r} has dtype=object, which .npz cannot store "
                            "without pickle; convert it to numbers or strings.")
    npz, js = _with(base, ".npz"), _with(base, ".json")
    np.savez_compressed(npz, **arrays)
    record = {"format": FORMAT, "format_version": FORMAT_VERSION, "written_by": writer(), **fields}
    record["sha256"] = digest(arrays, record)
    js.write_text(json.dumps(record, indent=1) + "\n")
    return npz, js


def writer() -> str:
    """The release that writes a file: ``"lmnn-sdp VERSION"``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"lmnn-sdp {version('lmnn-sdp')}"
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "lmnn-sdp (not installed)"


def check_format(fields: dict, where) -> None:
    """A ValueError unless ``fields`` are those of a certificate in a format this release reads."""
    version = fields.get("format_version")
    if version is None or not isinstance(fields.get("problem"), str):
        raise ValueError(f"{where}: not a certificate of lmnn-sdp (no format_version or problem "
                         "field); certificates are written by Certificate.save or lmnn-sdp certify.")
    if not isinstance(version, int) or version < min(READABLE_VERSIONS):
        raise ValueError(f"{where}: format_version={version!r} is not a certificate format "
                         f"(formats {min(READABLE_VERSIONS)}-{FORMAT_VERSION} are read).")
    if version > FORMAT_VERSION:
        raise ValueError(f"{where}: format {version} was written by a newer lmnn-sdp "
                         f"({fields.get('written_by', 'unknown')}); this release reads formats "
                         f"{min(READABLE_VERSIONS)}-{FORMAT_VERSION}: upgrade lmnn-sdp to read it.")
    if version >= 4 and fields.get("format") != FORMAT:
        raise ValueError(f"{where}: format={fields.get('format')!r} is not {FORMAT!r}; the file "
                         "is not a certificate of lmnn-sdp.")


def read_fields(path) -> dict:
    """The numbers of a saved certificate (``PATH.json``), unchecked."""
    js = _with(stem(path), ".json")
    if not js.exists():
        raise FileNotFoundError(f"no certificate fields at {js}.")
    return json.loads(js.read_text())


def load(path, fields: dict | None = None) -> tuple[dict, dict]:
    """``(arrays, fields)`` of a saved certificate; ``path`` may name either file.

    ``fields`` replaces ``PATH.json`` (a corpus keeps them in its manifest).
    A ValueError when the fields are not of a format this release reads (``check_format``)
    or the arrays or the fields do not match the stored digest."""
    base = stem(path)
    npz = _with(base, ".npz")
    if not npz.exists():
        raise FileNotFoundError(f"no certificate arrays at {npz}.")
    if fields is None:
        fields = read_fields(base)
    check_format(fields, base)
    with np.load(npz, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    stored = fields.get("sha256")
    if stored is None:
        raise ValueError(f"{base}: the fields carry no sha256 digest, so the files cannot "
                         "be checked; re-save the certificate.")
    if digest(arrays, fields) != stored:
        raise ValueError(f"{base}: the arrays or numbers differ from the digest saved with "
                         "them (edited or damaged); the certificate is refused.")
    return arrays, fields
