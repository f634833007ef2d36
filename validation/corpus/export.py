"""The certified corpus as plain files, for solvers in any language: ``lmnn-sdp corpus export``.

``export(dest)`` writes every case of the shipped corpus (``lmnn_sdp.testing.corpus_cases``:
LMNN, multi-metric LMNN, MMC over full and over diagonal metrics) into a new folder ``dest``:

- ``CASE/``, one folder per case, named by its id: the arrays as ``NAME.npy`` and ``NAME.csv``
  (comma-separated, no header, floats with 17 significant digits so they read back to the
  same doubles, integers as integers, indices 0-based): ``X`` (n, d), ``y`` (n,), and
  ``targets`` (n, k) for LMNN, ``clusters`` (n,) for multi-metric LMNN, ``similar`` (S, 2)
  and ``dissimilar`` (P, 2) for MMC; ``metric``, the certified metric (d, d), or (C, d, d)
  for multi-metric LMNN (``.npy`` only); and ``case.json``: the problem, the objective (its
  equation and whether it is minimised or maximised), the certified ``optimum``, the dual
  ``bound`` and the ``tolerance`` a solver must meet (JSON Schema ``case.schema.json``);
- ``optimal/CASE.npy``: the certified metrics in the layout ``lmnn-sdp check-solver`` reads;
- ``index.json`` (the cases and their kinds, in the corpus's order), ``case.schema.json`` and
  ``README.md`` (the protocol).

Everything is derived from the shipped corpus (``lmnn_sdp/testing/corpus/``, digests checked
on loading) and written the same, byte for byte, every time: no timestamps, sorted keys.
``exported_cases(directory)`` reads a folder back as the corpus's own cases (``CorpusCase``,
``MMCCase``), so a metric is checked against the numbers a solver was given.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from importlib.metadata import version
from pathlib import Path

import numpy as np

from lmnn_sdp.certificates.certificate import ATOL
from lmnn_sdp.testing import CorpusCase, MMCCase, corpus_cases, corpus_dir
from lmnn_sdp.testing.corpus_cases import KINDS, LMNN_KINDS, MMC_KINDS
from validation.corpus import load_manifest

FORMAT = "lmnn-sdp corpus case"
INDEX_FORMAT = "lmnn-sdp corpus export"
FORMAT_VERSION = 1
SCHEMA = Path(__file__).with_name("case.schema.json")
CASE_FILE, INDEX_FILE, README_FILE, OPTIMAL = "case.json", "index.json", "README.md", "optimal"
ARRAYS = {"lmnn": ("X", "y", "targets"), "multi-metric-lmnn": ("X", "y", "targets", "clusters"),
          "mmc": ("X", "y", "similar", "dissimilar"), "mmc-diagonal": ("X", "y", "similar", "dissimilar")}
NAMES = {"lmnn": "LMNN", "multi-metric-lmnn": "multi-metric LMNN",
         "mmc": "MMC", "mmc-diagonal": "MMC over diagonal metrics"}
CONSTRAINT = "sum_{(i, j) similar} (x_i-x_j)^T A (x_i-x_j) <= 1"
GAPS = {  # the gap a solver's metric is judged by, in the case's own terms
    "lmnn": ("relative", "(objective - bound) / objective"),
    "multi-metric-lmnn": ("relative", "(objective - bound) / objective"),
    "mmc": ("relative", "(bound - objective) / bound"),
    "mmc-diagonal": ("absolute", "log(bound / objective): the absolute gap of Xing's "
                                 "g(a) = sum_S D_a - log sum_D sqrt(D_a), minimised at a = A / 2 "
                                 "with g = 1/2 + log(2)/2 - log f(A)"),
}


class MalformedFile(ValueError):
    """A file of an exported corpus, or a solver's metric file, cannot be read as the format
    says; the message names it."""


def export(dest: Path) -> list[str]:
    """Write the shipped certified corpus into the new folder ``dest`` as plain files.

    The folder is written beside ``dest`` under a hidden name and renamed into place, so
    ``dest`` holds a whole export or nothing.

    Parameters
    ----------
    dest : path-like
        A folder that does not exist yet (its parent must).

    Returns
    -------
    list of str
        The ids of the cases written, in the corpus's order.

    Raises
    ------
    FileExistsError
        ``dest`` exists.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> dest = Path(tempfile.mkdtemp()) / "corpus"
    >>> ids = export(dest)
    >>> len(ids), sorted(p.name for p in (dest / ids[0]).iterdir())[:4]
    (39, ['X.csv', 'X.npy', 'case.json', 'metric.csv'])
    >>> case = json.loads((dest / ids[0] / "case.json").read_text())
    >>> case["objective"]["sense"], case["problem"]["k"], case["tolerance"]["kind"]
    ('minimize', 3, 'relative')
    """
    dest = Path(dest)
    if dest.exists():
        raise FileExistsError(f"{dest} exists; the export writes a new folder: give a path that does not "
                              "exist yet, or remove that one first.")
    manifest = load_manifest()
    cases = {case.id: case for kind in KINDS for case in corpus_cases(kind)}  # tolerance 1e-6 or their gap
    partial = dest.with_name(f".{dest.name}.{os.getpid()}.partial")
    try:
        (partial / OPTIMAL).mkdir(parents=True)
        entries = manifest["instances"]
        for entry in entries:
            case = cases[entry["name"]]
            _write_case(partial / case.id, case, entry, manifest["objectives"][case.kind])
            np.save(partial / OPTIMAL / f"{case.id}.npy", case.metric)
        index = {"format": INDEX_FORMAT, "format_version": FORMAT_VERSION, "written_by": _written_by(),
                 "cases": [{"id": e["name"], "kind": e["problem"]} for e in entries]}
        _write_json(partial / INDEX_FILE, index)
        shutil.copyfile(SCHEMA, partial / SCHEMA.name)
        (partial / README_FILE).write_text(_readme(entries))
        partial.rename(dest)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return [entry["name"] for entry in entries]


def exported_cases(directory: Path, kinds: Iterable[str] = KINDS) -> list[CorpusCase | MMCCase]:
    """The cases of an exported corpus (``export``), read back from its ``.npy`` and JSON files.

    Parameters
    ----------
    directory : path-like
        A folder written by ``export``.
    kinds : iterable of str, default: all
        The problem kinds to read (``"lmnn"``, ``"multi-metric-lmnn"``, ``"mmc"``,
        ``"mmc-diagonal"``).

    Returns
    -------
    list of CorpusCase or MMCCase
        In the order of ``index.json``; ``metric`` is the certified one of the case folder,
        ``certificate`` None.

    Raises
    ------
    MalformedFile
        A file missing or not as the format says; the message names it.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> dest = Path(tempfile.mkdtemp()) / "corpus"
    >>> _ = export(dest)
    >>> cases = exported_cases(dest, ["mmc-diagonal"])
    >>> [case.id for case in cases], cases[0].diagonal
    (['mmc-diagonal-iris-n150', 'mmc-diagonal-wine-n100'], True)
    """
    directory, kinds = Path(directory), set(kinds)
    return [_read_case(directory / case_id, case_id, kind) for case_id, kind in _index(directory) if kind in kinds]


def case_ids(directory: Path) -> list[str]:
    """The ids of the cases of an exported corpus, from its ``index.json``.

    Raises
    ------
    MalformedFile
        ``index.json`` is missing or not as the format says.
    """
    return [case_id for case_id, _ in _index(Path(directory))]


def _index(directory: Path) -> list[tuple[str, str]]:
    """``(id, kind)`` of every case listed in ``index.json``."""
    index = _read_json(directory / INDEX_FILE, INDEX_FORMAT)
    try:
        return [(str(e["id"]), str(e["kind"])) for e in index["cases"]]
    except (KeyError, TypeError) as err:
        raise MalformedFile(f"{directory / INDEX_FILE}: no list of cases with id and kind ({err})") from None


def _write_case(folder: Path, case: CorpusCase | MMCCase, entry: dict, equation: str) -> None:
    """The folder of one case: its arrays, its certified metric and ``case.json``."""
    folder.mkdir()
    arrays = {name: getattr(case, name) for name in ARRAYS[case.kind]}
    for name, array in {**arrays, "metric": case.metric}.items():
        np.save(folder / f"{name}.npy", array)
        if array.ndim <= 2:
            np.savetxt(folder / f"{name}.csv", array, delimiter=",",
                       fmt="%d" if array.dtype.kind in "iu" else "%.17g")
    _write_json(folder / CASE_FILE, case_document(case, entry, equation, arrays))


def case_document(case: CorpusCase | MMCCase, entry: dict, equation: str, arrays: dict) -> dict:
    """``case.json`` of one case: problem, objective, optimum, bound, tolerance, files."""
    n, d = case.X.shape
    lmnn = case.kind in LMNN_KINDS
    problem = {"n": n, "d": d, "classes": int(np.unique(case.y).size)}
    if lmnn:
        problem.update(k=case.k, mu=case.mu, margin=1,
                       clusters=None if case.clusters is None else int(case.metric.shape[0]))
    else:
        problem.update(similar=len(case.similar), dissimilar=len(case.dissimilar), constraint=CONSTRAINT,
                       diagonal=case.diagonal)
    kind, gap = GAPS[case.kind]
    digest = json.loads((corpus_dir() / f"{case.id}.json").read_text())["sha256"]
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, "written_by": _written_by(),
        "id": case.id, "kind": case.kind, "problem": problem,
        "objective": {"name": NAMES[case.kind], "equation": equation,
                      "sense": "minimize" if lmnn else "maximize"},
        "optimum": case.optimum if lmnn else case.value,
        "bound": case.lower if lmnn else case.bound,
        "certified_gap": case.certificate.relative_gap,
        "tolerance": {"kind": kind, "value": case.tolerance, "gap": gap,
                      **({"absolute": ATOL} if lmnn else {})},
        "metric": {"shape": list(case.metric.shape), "diagonal": bool(getattr(case, "diagonal", False)),
                   "files": _files("metric", case.metric)},
        "arrays": {name: {"shape": list(a.shape), "dtype": a.dtype.name, "files": _files(name, a)}
                   for name, a in arrays.items()},
        "index_base": 0,
        "source": entry["source"], "solver": entry["solver"],
        "derived_from": {"file": f"lmnn_sdp/testing/corpus/{case.id}.json", "sha256": digest},
    }


def _files(name: str, array: np.ndarray) -> list[str]:
    return [f"{name}.npy", f"{name}.csv"] if array.ndim <= 2 else [f"{name}.npy"]


def _read_case(folder: Path, case_id: str, kind: str) -> CorpusCase | MMCCase:
    """One case folder as the corpus's case; a MalformedFile naming the file that is not right."""
    document = _read_json(folder / CASE_FILE, FORMAT)
    if kind not in KINDS or document.get("kind") != kind or document.get("id") != case_id:
        raise MalformedFile(f"{folder / CASE_FILE}: not the {kind!r} case {case_id!r} that {INDEX_FILE} lists")
    arrays = {name: read_npy(folder / f"{name}.npy") for name in (*ARRAYS[kind], "metric")}
    try:
        problem, tolerance = document["problem"], float(document["tolerance"]["value"])
        if kind in MMC_KINDS:
            return MMCCase(id=case_id, kind=kind, diagonal=bool(problem["diagonal"]),
                           value=float(document["optimum"]), bound=float(document["bound"]),
                           tolerance=tolerance, **arrays)
        return CorpusCase(id=case_id, kind=kind, k=int(problem["k"]), mu=float(problem["mu"]),
                          optimum=float(document["optimum"]), lower=float(document["bound"]),
                          tolerance=tolerance, **{"clusters": None, **arrays})
    except (KeyError, TypeError, ValueError) as err:
        raise MalformedFile(f"{folder / CASE_FILE}: a number is missing or not a number ({err!r})") from None


def read_npy(path: Path) -> np.ndarray:
    """A ``.npy`` file as a real (int or float) array, never through pickle; a MalformedFile
    naming the file otherwise."""
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise MalformedFile(f"{path}: not a readable .npy array ({err})") from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "iuf":
        raise MalformedFile(f"{path}: holds {getattr(array, 'dtype', type(array).__name__)}, not real numbers")
    return array


def _read_json(path: Path, expected: str) -> dict:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise MalformedFile(f"{path}: not a readable JSON file ({err})") from None
    if not isinstance(document, dict) or document.get("format") != expected:
        raise MalformedFile(f"{path}: not a {expected!r} file (its \"format\" field)")
    if document.get("format_version") != FORMAT_VERSION:
        raise MalformedFile(f"{path}: format_version {document.get('format_version')!r}; this release "
                              f"reads {FORMAT_VERSION}")
    return document


def _write_json(path: Path, document: dict) -> None:
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def _written_by() -> str:
    return f"lmnn-sdp {version('lmnn-sdp')}"


def _readme(entries: list[dict]) -> str:
    counts = ", ".join(f"{sum(e['problem'] == kind for e in entries)} {kind}" for kind in KINDS)
    return README.format(counts=counts, version=_written_by())


README = """\
# The certified corpus of lmnn-sdp, as plain files

Written by `lmnn-sdp corpus export` ({version}) from the corpus it ships: {counts}.
Each case is a convex metric-learning problem with a certified optimum; test a solver in any
language against them.

## Protocol

1. For each case folder `CASE/` (listed with its kind in `index.json`), read `case.json` and the
   arrays (`.npy`, or `.csv`: comma-separated, no header, floats with 17 significant digits).
   Indices (`targets`, `similar`, `dissimilar`, `clusters`) are 0-based.
   - `lmnn`: `X` (n, d), `y` (n,), `targets` (n, k); minimise eq. 14 over PSD M at `problem.mu`
     with these target neighbours (the k nearest same-class points, ties to the smaller index).
   - `multi-metric-lmnn`: the same with `clusters` (n,): one PSD metric per cluster (eq. 16).
   - `mmc`, `mmc-diagonal`: `X`, `y`, `similar` (S, 2), `dissimilar` (P, 2); maximise
     f(A) = sum over dissimilar pairs of sqrt(D_A) subject to sum over similar pairs of D_A <= 1,
     A PSD (or diagonal >= 0).
   `case.json` states the objective's equation and sense (`objective`), the certified `optimum`,
   the dual `bound` and the `tolerance` (its `kind` and `gap` say how the gap is measured).
2. Write one metric per case into a folder OUT, named by the case's id: `CASE.npy` or
   `CASE.csv` holding M (d, d) (diagonal MMC as a diagonal matrix), or `CASE.L.npy` or
   `CASE.L.csv` holding a map L (r, d) with M = L^T L; multi-metric LMNN: `CASE.npy`, one
   (C, d, d) array.
3. Run `lmnn-sdp check-solver --corpus THIS_FOLDER --metrics OUT [--kind KIND ...]`: one row
   per case (objective, bound, gap, tolerance, pass, fail or missing); exit status 0 when every
   selected case passes, 1 when one fails or has no metric, 2 for a malformed file.

A metric passes when its gap, computed by lmnn-sdp from the metric alone, is at most the
tolerance; an LMNN metric passes too when its objective is at most `tolerance.absolute` (the
objective is never negative, so such a metric is that close to the optimum: the rule that
certifies a zero optimum, as in the cases at mu = 1). MMC metrics must be feasible (sum over similar pairs of D_M at most 1 + tolerance)
and are scored at their rescaling to sum 1. `optimal/` holds the certified metrics in that
layout: `check-solver --metrics optimal` passes every case.

`case.schema.json` is the JSON Schema of `case.json`; `metric.npy` in each folder is the
certified metric; `derived_from` names the shipped certificate (and its SHA-256) each case
comes from.
"""
