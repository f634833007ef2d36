"""A solver's metric files checked against an exported corpus: ``lmnn-sdp check-solver``.

A program in any language reads the cases of ``lmnn-sdp corpus export`` (``export``) and
writes one metric per case into a folder, named by the case's id (``metric_path``):
``CASE.npy`` or ``CASE.csv`` holds M (d, d) (diagonal MMC as a diagonal matrix),
``CASE.L.npy`` or ``CASE.L.csv`` a map L (r, d) with M = L^T L, and a multi-metric case one
(C, d, d) array in ``CASE.npy``. ``check_metrics`` scores each as the Python API does:
``lmnn_sdp.testing.solver_check.case_row`` (the rows of ``check_lmnn_solver``) for LMNN,
``lmnn_sdp.testing.mmc_assertion.mmc_case_row`` (the judgement of ``assert_mmc_optimal``,
with the constraint checked) for MMC. Nothing is read through pickle; CSV is read as
written, with 17 significant digits.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from lmnn_sdp.testing import CorpusCase, MMCCase
from lmnn_sdp.testing.corpus_cases import KINDS, MMC_KINDS
from lmnn_sdp.testing.mmc_assertion import mmc_case_row
from lmnn_sdp.testing.solver_check import case_row
from validation.corpus.export import MalformedFile, case_ids, exported_cases, read_npy

SUFFIXES = (".npy", ".csv", ".L.npy", ".L.csv")
COLUMNS = ("case", "kind", "objective", "bound", "gap", "tolerance", "result", "file", "reason")
RESULTS = ("pass", "fail", "missing")


def check_metrics(corpus: Path, metrics: Path, kinds: Iterable[str] = KINDS) -> list[dict]:
    """One row per case of ``kinds`` in the exported ``corpus``: its metric from ``metrics``, scored.

    Parameters
    ----------
    corpus : path-like
        A folder written by ``lmnn-sdp corpus export``.
    metrics : path-like
        The solver's folder of metric files (``metric_path``).
    kinds : iterable of str, default: all
        The problem kinds to check.

    Returns
    -------
    list of dict
        ``COLUMNS``: the case, its kind, the objective at the metric (LMNN: eps; MMC: f at the
        metric rescaled to sum_S D = 1), the certified bound the gap is taken against, the
        gap and tolerance (as the case's ``tolerance`` says), ``result`` (``"pass"``,
        ``"fail"`` or ``"missing"``), the metric's file name and ``reason``: why a case failed
        or is missing where its gap does not say (a refused or infeasible metric, no file).

    Raises
    ------
    MalformedFile
        A corpus file or a metric file cannot be read (not an array of real numbers, a
        pickle, a ragged CSV), or a case has two metric files; the message names the file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from validation.corpus.export import export
    >>> corpus = Path(tempfile.mkdtemp()) / "corpus"
    >>> _ = export(corpus)
    >>> rows = check_metrics(corpus, corpus / "optimal", ["mmc", "mmc-diagonal"])
    >>> [row["result"] for row in rows]
    ['pass', 'pass', 'pass', 'pass']
    """
    rows = []
    for case in exported_cases(corpus, kinds):
        path = metric_path(Path(metrics), case.id)
        if path is None:
            rows.append(_row(case, "missing", reason=f"no metric file: write {case.id}.npy, .csv, .L.npy or .L.csv"))
            continue
        metric, refused = read_metric(path, case)
        if refused:
            rows.append(_row(case, "fail", path.name, refused))
            continue
        score = mmc_case_row if case.kind in MMC_KINDS else case_row
        scored = score(case, metric, tolerance=case.tolerance)
        passed = scored["passed"] and not scored["error"]
        rows.append(_row(case, "pass" if passed else "fail", path.name, scored["error"], scored))
    return rows


def metric_path(metrics: Path, case_id: str) -> Path | None:
    """The metric file of ``case_id`` in ``metrics`` (``CASE`` with one of ``SUFFIXES``), or None.

    Raises
    ------
    MalformedFile
        More than one file for the case: which one is meant is not known.
    """
    found = [metrics / f"{case_id}{suffix}" for suffix in SUFFIXES if (metrics / f"{case_id}{suffix}").is_file()]
    if len(found) > 1:
        raise MalformedFile(f"{found[0]}: case {case_id} has {len(found)} metric files "
                            f"({', '.join(p.name for p in found)}); keep one")
    return found[0] if found else None


def read_metric(path: Path, case: CorpusCase | MMCCase) -> tuple[np.ndarray | None, str]:
    """The metric M of a metric file, and why it is refused ("" when it is not).

    ``CASE.L.*`` holds L (r, d): M = L^T L; an L of another shape is refused (a failed case,
    not a malformed file). A file that is not an array of real numbers is a MalformedFile.
    """
    array = read_npy(path) if path.suffix == ".npy" else _read_csv(path)
    if not path.name.endswith((".L.npy", ".L.csv")):
        return array, ""
    d = case.X.shape[1]
    if array.ndim != 2 or array.shape[1] != d:
        return None, f"metric refused: L must have shape (r, {d}), got {array.shape}"
    return array.T @ array, ""


def unexpected_files(corpus: Path, metrics: Path) -> list[str]:
    """The files in ``metrics`` that name no case of the exported ``corpus`` (typos, say)."""
    expected = {f"{case_id}{suffix}" for case_id in case_ids(corpus) for suffix in SUFFIXES}
    return sorted(p.name for p in Path(metrics).iterdir() if p.is_file() and p.name not in expected)


def _read_csv(path: Path) -> np.ndarray:
    try:
        return np.loadtxt(path, delimiter=",", dtype=float, ndmin=2)
    except (OSError, ValueError) as err:
        raise MalformedFile(f"{path}: not a CSV of numbers ({err})") from None


def _row(case, result: str, file: str = "", reason: str = "", scored: dict | None = None) -> dict:
    """A row of ``COLUMNS``; ``scored`` is the row of ``case_row`` or ``mmc_case_row`` when the
    metric was scored (LMNN's ``lower``, MMC's ``bound``: the bound the gap is taken against)."""
    scored = scored or {}
    bound = scored.get("bound", scored.get("lower", case.bound if case.kind in MMC_KINDS else case.lower))
    return {"case": case.id, "kind": case.kind, "objective": scored.get("objective", np.nan), "bound": bound,
            "gap": scored.get("gap", np.nan), "tolerance": case.tolerance, "result": result, "file": file,
            "reason": reason}
