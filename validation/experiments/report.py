"""Tables of a run: mean ± std over splits, beside the paper's Table 1, in Markdown and CSV.

``summarise`` turns the stored rows (``ResultStore.rows``) into one line per (data set,
method): the number of finished splits, test and leave-one-out training error in percent
(mean and sample standard deviation, ddof = 1; NaN with one split), Table 1's test error
(``validation.experiments.paper``), the mean fit time, the mean number of active
triplets and the largest certified gap where the method has them, how many of its fits
stopped without proving their tolerance (``converged`` false: the row is kept, its gap is
what was proved), and how many of its tasks did not finish. ``write_tables`` writes
``results.md`` and ``results.csv``, each with the provenance line of ``validation.records``
(the command, the code version, the machine; the CSV's as its first comment line, read back
by ``validation.records.read_record``), each replaced atomically; the Markdown also lists
every unfinished task with its status and reason. ``export`` writes the same lines as a
record of ``validation.records`` (``NAME.md`` and ``NAME.csv`` with the provenance line):
``--export docs/results`` makes it the committed record, from which
``validation.table1`` generates the site's Table 1 page (docs/user/table1.md).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from validation.experiments.methods import METHODS
from validation.experiments.paper import paper_error
from validation.experiments.protocol import DATASETS, MU, K
from validation.experiments.store import COLUMNS as STORE_COLUMNS
from validation.records import csv_text, provenance, write_record, write_text_atomic

COLUMNS = ("dataset", "method", "splits", "test_error_mean", "test_error_std",
           "train_loo_error_mean", "train_loo_error_std", "paper_test_error", "fit_seconds_mean",
           "active_triplets_mean", "certified_gap_max", "not_converged", "not_finished", "fit_rows",
           "code_version")


def mean_std(values) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1) of the finite ``values``; NaN where
    undefined (no values; one value for the deviation)."""
    values = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    mean = float(values.mean()) if len(values) else math.nan
    std = float(values.std(ddof=1)) if len(values) > 1 else math.nan
    return mean, std


def summarise(rows: list[dict]) -> list[dict]:
    """One line per (data set, method), in the order they first appear in ``rows`` (``COLUMNS``)."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["dataset"], row["method"]), []).append(row)
    return [_line(dataset, method_name, group) for (dataset, method_name), group in groups.items()]


def _line(dataset: str, method_name: str, group: list[dict]) -> dict:
    ok = [row for row in group if row["status"] == "ok"]
    test = mean_std([100 * row["test_error"] for row in ok])
    loo = mean_std([100 * row["train_loo_error"] for row in ok])
    active = [row["stats"]["active_triplets"] for row in ok if "active_triplets" in row["stats"]]
    gaps = [row["stats"]["certified_gap"] for row in ok if "certified_gap" in row["stats"]]
    spec = DATASETS.get(dataset)
    return {
        "dataset": dataset, "method": method_name, "splits": len(ok),
        "test_error_mean": test[0], "test_error_std": test[1],
        "train_loo_error_mean": loo[0], "train_loo_error_std": loo[1],
        "paper_test_error": paper_error(spec.paper if spec else None, method_name),
        "fit_seconds_mean": mean_std([row["fit_seconds"] for row in ok])[0],
        "active_triplets_mean": mean_std(active)[0] if active else None,
        "certified_gap_max": max(gaps) if gaps else None,
        "not_converged": sum(row["stats"].get("converged") is False for row in ok),
        "not_finished": len(group) - len(ok),
        "fit_rows": json.loads(group[0]["params"])["data"].get("fit_rows"),
        "code_version": ", ".join(sorted({row["code_version"] for row in group})),
    }


def write_tables(rows: list[dict], directory: str | Path, command: str | None = None) -> list[Path]:
    """``results.md`` and ``results.csv`` of ``rows`` in ``directory``, each with the provenance
    line of ``command`` (default: this process's command line); returns their paths."""
    directory = Path(directory)
    lines = summarise(rows)
    line = provenance(command)
    md_path = write_text_atomic(directory / "results.md", markdown(lines, rows, line))
    csv_path = write_text_atomic(directory / "results.csv", csv_text(lines, COLUMNS, line))
    return [md_path, csv_path]


def export(rows: list[dict], directory: str | Path, name: str, command: str | None = None) -> list[Path]:
    """The record ``name`` (``validation.records.write_record``) of ``summarise(rows)`` in
    ``directory``, all ``COLUMNS``; returns its Markdown and CSV files."""
    notes = (f"k = {K}, mu = {MU}; errors in %, mean and sample std over the splits; "
             "paper_test_error is Table 1's (Fashion-MNIST beside MNIST's). The run's full report "
             "(one table per data set, unfinished tasks and their reasons) is its results.md.")
    return list(write_record(name, summarise(rows), title="Experiments: the protocol of JMLR 2009, Table 1",
                             notes=notes, command=command, columns=COLUMNS,
                             formats={"splits": "d", "not_converged": "d", "not_finished": "d"},
                             directory=Path(directory)))


def export_datasets(rows: list[dict], directory: str | Path, prefix: str, command: str | None = None) -> list[Path]:
    """Per data set of ``rows``: the record ``PREFIX-DATASET`` (``export`` of ``newest(rows)``)
    and its task rows ``PREFIX-DATASET-tasks.jsonl`` (``write_tasks``: every row, of every code
    version), so that a run of some data sets never replaces another's export and a store
    lost with its machine is restored from the export (``ResultStore.restore``); returns the
    files written."""
    written = []
    for dataset in dict.fromkeys(row["dataset"] for row in rows):
        mine = sorted((row for row in rows if row["dataset"] == dataset), key=_task_order)
        written += export(newest(mine), directory, f"{prefix}-{dataset}", command)
        written.append(write_tasks(mine, tasks_path(directory, prefix, dataset)))
    return written


def newest(rows: list[dict]) -> list[dict]:
    """The rows of each method's chosen code version: the one with the most ``ok`` rows (ties:
    the one that finished a row last), so that an export mixes versions only across methods
    and each line says its own (``code_version``)."""
    chosen = {}
    for method_name in dict.fromkeys(row["method"] for row in rows):
        versions: dict[str, tuple] = {}
        for row in rows:
            if row["method"] == method_name:
                ok, last = versions.get(row["code_version"], (0, ""))
                versions[row["code_version"]] = (ok + (row["status"] == "ok"), max(last, row["finished_at"] or ""))
        chosen[method_name] = max(versions, key=versions.get)
    return [row for row in rows if row["code_version"] == chosen[row["method"]]]


def tasks_path(directory: str | Path, prefix: str, dataset: str) -> Path:
    """The task rows of the export ``PREFIX-DATASET`` in ``directory``."""
    return Path(directory) / f"{prefix}-{dataset}-tasks.jsonl"


def write_tasks(rows: list[dict], path: str | Path) -> Path:
    """``rows`` (``ResultStore.rows``) as JSON lines at ``path``, NaN as null, replaced
    atomically; ``read_tasks`` reads them back."""
    lines = [json.dumps({c: _plain(row.get(c)) for c in STORE_COLUMNS}, sort_keys=True) for row in rows]
    return write_text_atomic(Path(path), "".join(line + "\n" for line in lines))


def read_tasks(path: str | Path) -> list[dict]:
    """The rows ``write_tasks`` wrote at ``path`` (none when it is absent)."""
    path = Path(path)
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []


def _plain(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _task_order(row: dict) -> tuple:
    order = list(METHODS)
    return (order.index(row["method"]) if row["method"] in order else len(order), row["method"],
            row["split"], row["code_version"])


def markdown(lines: list[dict], rows: list[dict], provenance_line: str = "") -> str:
    """The Markdown report: the title, ``provenance_line``, one table per data set, then the
    unfinished tasks."""
    out = ["# Experiments: the protocol of JMLR 2009, Table 1", ""]
    if provenance_line:
        out += [provenance_line, ""]
    out += [f"k = {K}, mu = {MU}; {K}-NN with ties broken by shrinking k; training error by "
            "leave-one-out (none for classifiers); errors in %, mean ± sample std over the "
            "splits; \"paper\" is Table 1's test error (Fashion-MNIST beside MNIST's).", ""]
    for dataset in dict.fromkeys(line["dataset"] for line in lines):
        spec = DATASETS.get(dataset)
        out += [f"## {dataset}" + (f": {spec.description}" if spec else ""), "",
                "| method | splits | test error | paper | training error (LOO) | fit s | "
                "active triplets | certified gap |", "|---|---|---|---|---|---|---|---|"]
        out += [_markdown_line(line) for line in lines if line["dataset"] == dataset]
        out.append("")
    unfinished = [row for row in rows if row["status"] != "ok"]
    if unfinished:
        out += ["## Tasks not finished", "", "| task | status | reason |", "|---|---|---|"]
        out += [f"| {r['dataset']}/{r['split']}/{r['method']} | {r['status']} | "
                f"{_reason(r['error'])} |" for r in unfinished]
        out.append("")
    return "\n".join(out)


def _markdown_line(line: dict) -> str:
    subset = f" (fit on {line['fit_rows']:,} training rows)" if line.get("fit_rows") else ""
    cells = [line["method"] + subset, f"{line['splits']}" + (f" ({line['not_finished']} not finished)"
                                                    if line["not_finished"] else ""),
             _pm(line["test_error_mean"], line["test_error_std"]),
             _number(line["paper_test_error"], ".2f"),
             _pm(line["train_loo_error_mean"], line["train_loo_error_std"]),
             _number(line["fit_seconds_mean"], ".3g"), _number(line["active_triplets_mean"], ",.0f"),
             _number(line["certified_gap_max"], ".2g")
             + (f" ({line['not_converged']} not converged)" if line["not_converged"] else "")]
    return "| " + " | ".join(cells) + " |"


def _pm(mean: float, std: float) -> str:
    if not math.isfinite(mean):
        return "-"
    return f"{mean:.2f}" + (f" ± {std:.2f}" if math.isfinite(std) else "")


def _number(value, spec: str) -> str:
    return "-" if value is None or not math.isfinite(value) else format(value, spec)


def _reason(error: str | None) -> str:
    """The last line of a traceback (or the whole message), without Markdown's pipes."""
    lines = [line for line in (error or "").strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "").replace("|", "/")[:400]
