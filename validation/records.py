"""Records under ``docs/results/``: every table a command writes names the command, the code
version and the machine that produced it.

A record ``NAME`` is two files written by ``write_record``: ``NAME.md`` (a title, the
provenance line, optional notes, a Markdown table) and ``NAME.csv`` (the same rows at full
precision, after a first comment line ``# <provenance line>``; ``read_record`` reads it
back). Both are replaced atomically, so a benchmark can rewrite its record after every row
and a killed run leaves the rows measured so far.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lmnn_sdp.core.machine import available_cores

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


def code_version() -> str:
    """The checkout's short commit, with ``+changes`` when the code differs from it (the records
    under ``docs/results`` do not count: a command writes them as it runs); "unknown" outside a
    git checkout."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=root, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(exclude)docs/results"],
                               capture_output=True, text=True, cwd=root, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+changes" if dirty else "")


def provenance(command: str | None = None, version: str | None = None) -> str:
    """One Markdown line: the command (by default this process's), the code version (by
    default the checkout's now, ``code_version``; a long run passes the one it measured) and
    the machine."""
    command = command or this_command()
    cpu = platform.processor() or platform.machine()
    return (f"Written by `{command}` at commit {version or code_version()} on {cpu}, {available_cores()} "
            f"cores, Python {platform.python_version()}, numpy {np.__version__}.")


def this_command() -> str:
    """The command line of this process: ``python -m MODULE ARGS`` for a module of the
    checkout, else the program's name and its arguments."""
    path, root = Path(sys.argv[0]).resolve(), Path(__file__).resolve().parents[1]
    if path.suffix == ".py" and root in path.parents:
        module = path.relative_to(root).with_suffix("").parts
        module = module[:-1] if module[-1] == "__main__" else module
        return " ".join(["python -m " + ".".join(module), *sys.argv[1:]])
    return " ".join([path.name, *sys.argv[1:]])


def module_command(module: str, argv: Sequence[str] | None = None) -> str:
    """``python -m MODULE ARGS``: the command that runs ``module``'s ``main(argv)``.

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"validation.benchmarks.letters_family"``.
    argv : sequence of str, optional
        The arguments given to ``main``; None means this process's (``sys.argv[1:]``), as
        ``main(None)`` parses them.

    Returns
    -------
    str
        The command line, arguments quoted for a POSIX shell.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["python -m " + module, *map(shlex.quote, args)])


def write_text_atomic(path: Path, text: str) -> Path:
    """Replace ``path`` by ``text`` atomically.

    The text is written to a hidden temporary file in the same directory, which
    ``os.replace`` then renames onto ``path``: a reader (or a process killed meanwhile)
    sees the old file or the new one, never a part. The directory is created if missing.

    Parameters
    ----------
    path : Path
        The file to write.
    text : str
        Its new content (UTF-8).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def table_columns(rows: Sequence[Mapping], columns: Sequence[str] | None = None) -> list[str]:
    """The columns of a record's table; a ValueError unless every row has the same keys.

    Parameters
    ----------
    rows : sequence of mapping
        The rows, all with the same keys (in any order).
    columns : sequence of str, optional
        The columns to show, in order (each a key of the rows); default: the first row's
        keys in its order. Needed when ``rows`` is empty.

    Returns
    -------
    list of str
        The columns.
    """
    if not rows and columns is None:
        raise ValueError("a record with no rows needs its columns")
    keys = set(rows[0]) if rows else set(columns)
    for i, row in enumerate(rows):
        if set(row) != keys:
            missing, extra = sorted(keys - set(row)), sorted(set(row) - keys)
            raise ValueError(f"row {i} of the record has different keys from row 0: "
                             f"missing {missing}, extra {extra}")
    columns = list(rows[0] if columns is None else columns)
    unknown = [c for c in columns if c not in keys]
    if unknown:
        raise ValueError(f"columns {unknown} are not keys of the rows {sorted(keys)}")
    return columns


def markdown_cell(value, spec: str | None = None) -> str:
    """One Markdown table cell: a float with ``spec`` (default ``.4g``), an int with ``spec``
    if given, None empty, a list or tuple joined by ``"; "``, any other value as ``str``;
    pipes escaped and line breaks made spaces."""
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        text = format(float(value), spec or ".4g")
    elif spec is not None and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        text = format(value, spec)
    elif isinstance(value, (list, tuple)):
        text = "; ".join(map(str, value))
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\r\n", " ").replace("\n", " ")


def markdown_table(rows: Sequence[Mapping], columns: Sequence[str] | None = None,
                   formats: Mapping[str, str] | None = None) -> str:
    """A Markdown table of ``rows`` (``table_columns``), cells by ``markdown_cell`` with the
    format spec ``formats[column]`` where given; ends with a newline."""
    columns, formats = table_columns(rows, columns), formats or {}
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(markdown_cell(row[c], formats.get(c)) for c in columns) + " |"
              for row in rows]
    return "\n".join(lines) + "\n"


def csv_text(rows: Sequence[Mapping], columns: Sequence[str] | None = None,
             provenance_line: str | None = None) -> str:
    """The CSV of a record: ``# <provenance_line>`` first when given, a header, one line per
    row; floats at full precision (``repr``), None and NaN empty, lists joined by ``"; "``."""
    columns = table_columns(rows, columns)
    out = io.StringIO()
    if provenance_line:
        out.write("# " + " ".join(provenance_line.split()) + "\n")
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows({c: _csv_cell(row[c]) for c in columns} for row in rows)
    return out.getvalue()


def _csv_cell(value):
    if value is None or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return ""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (list, tuple)):
        return "; ".join(map(str, value))
    return value


def write_record(name: str, rows: Sequence[Mapping], *, title: str, notes: str = "",
                 command: str | None = None, columns: Sequence[str] | None = None,
                 formats: Mapping[str, str] | None = None,
                 directory: Path | None = None, version: str | None = None) -> tuple[Path, Path]:
    """Write the record ``name``: ``directory/name.md`` and ``directory/name.csv``.

    ``name.md`` is ``# title``, the provenance line (``provenance(command, version)``: the
    command, the code version, the machine), ``notes`` if any, and the Markdown table of ``rows``
    (floats to 4 significant digits unless ``formats`` gives the column's format spec).
    ``name.csv`` starts with the comment line ``# <provenance line>``, then the header and
    the same rows at full precision (None and NaN empty); ``read_record`` reads it back.
    Both files are replaced atomically (``write_text_atomic``): call this after every row
    and a run killed in between keeps the rows it wrote.

    Parameters
    ----------
    name : str
        File name without suffix, e.g. ``"letters-family"``.
    rows : sequence of mapping
        The table's rows, all with the same keys; a ValueError otherwise.
    title : str
        The Markdown title (without ``#``).
    notes : str, optional
        Markdown between the provenance line and the table (protocol, package versions).
    command : str, optional
        The command that writes the record; default ``this_command()``.
    columns : sequence of str, optional
        The columns, in order; default the first row's keys.
    formats : mapping of str to str, optional
        Column -> format spec of its numbers in the Markdown (e.g. ``".10g"``, ``".0f"``).
    directory : Path, optional
        Where to write; default ``RESULTS`` (``docs/results``) as the module has it when called.
    version : str, optional
        The code version measured, default the checkout's now (``code_version``): a run that
        outlasts a commit names the version it started at.

    Returns
    -------
    tuple of Path
        The Markdown and the CSV file.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> md, csv_path = write_record("demo", [{"n": 10, "gap": 1.234567e-7}], title="Demo",
    ...                             command="python -m demo", directory=folder)
    >>> md.read_text().splitlines()[-1]
    '| 10 | 1.235e-07 |'
    >>> read_record(csv_path)[1]
    [{'n': '10', 'gap': '1.234567e-07'}]
    """
    columns = table_columns(rows, columns)
    line = provenance(command, version)
    head = f"# {title}\n\n{line}\n\n" + (f"{notes.strip()}\n\n" if notes.strip() else "")
    directory = Path(RESULTS if directory is None else directory)
    md = write_text_atomic(directory / f"{name}.md", head + markdown_table(rows, columns, formats))
    csv_path = write_text_atomic(directory / f"{name}.csv", csv_text(rows, columns, line))
    return md, csv_path


def read_record(path: Path) -> tuple[str, list[dict]]:
    """The provenance line and the rows (dicts of strings) of a record's CSV.

    Parameters
    ----------
    path : Path
        A CSV written by ``write_record`` (or one without the comment line).

    Returns
    -------
    tuple
        The provenance line (empty when the file has none) and the rows as read by
        ``csv.DictReader``.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        text = handle.read()
    line = ""
    if text.startswith("# "):
        line, _, text = text.partition("\n")
        line = line[2:]
    return line, list(csv.DictReader(io.StringIO(text)))


@dataclass
class Recorder:
    """A benchmark's record, rewritten with every row (``write_record``); a Recorder with
    no ``name`` writes nothing (``--no-record``).

    Parameters
    ----------
    name : str or None
        The record's file name without suffix; None or "" to write nothing.
    title, notes, command, formats, directory, version
        As for ``write_record``.
    columns : sequence of str, optional
        The table's columns; each row is cut to them before writing (a row without one is a
        ValueError), so rows may carry other keys. Default: the rows' keys, all alike.
    """

    name: str | None
    title: str
    notes: str = ""
    command: str | None = None
    columns: Sequence[str] | None = None
    formats: Mapping[str, str] = field(default_factory=dict)
    directory: Path | None = None
    version: str | None = None  # the code version measured (``write_record``)

    def __call__(self, rows: Sequence[Mapping]) -> tuple[Path, Path] | None:
        """Write ``rows`` (all the rows so far) as the record; returns its files, or None
        without a name."""
        if not self.name:
            return None
        if self.columns is not None:
            missing = [c for row in rows for c in self.columns if c not in row]
            if missing:
                raise ValueError(f"rows of the record {self.name} miss the columns {sorted(set(missing))}")
            rows = [{c: row[c] for c in self.columns} for row in rows]
        return write_record(self.name, rows, title=self.title, notes=self.notes,
                            command=self.command, columns=self.columns, formats=self.formats,
                            directory=self.directory, version=self.version)


def add_record_option(parser: argparse.ArgumentParser, default: str | None,
                      default_help: str | None = None) -> None:
    """``--record NAME`` (default ``default``) and ``--no-record`` on a benchmark's parser.

    ``args.record`` is the record's name under ``docs/results/``, "" with ``--no-record``
    or ``--record ""`` (no record written), and ``default`` when neither is given (None:
    the benchmark names it from its other arguments, as ``default_help`` says in the help).
    """
    parser.add_argument("--record", default=default, metavar="NAME",
                        help="write the table as docs/results/NAME.md and NAME.csv, rewritten "
                             f"after every row (default: {default_help or '%(default)s'})")
    parser.add_argument("--no-record", dest="record", action="store_const", const="",
                        help="write no record")
