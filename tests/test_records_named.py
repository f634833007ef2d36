"""Every record under ``docs/results`` is named by the README or a page of the documentation, so a
reader finds it from what cites it: its ``NAME.md`` or ``NAME.csv`` (a path or a link), ``NAME``
in backquotes (a record cited in prose, a ``:doc:`` link) or after ``--record``. The results
page's glob lists them all and does not count. A record's other files follow it: the ``.csv``
(and the main job's ``.json``) beside its ``.md``, a Table 1 export's ``-tasks.jsonl``."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"
GENERATED = ("_build", "auto_examples", "generated")


def pages(root: Path = ROOT) -> dict[Path, str]:
    """The README and the documentation's pages (Markdown and reStructuredText), without the
    records themselves and what the build generates."""
    docs = root / "docs"
    found = [root / "README.md"]
    for path in sorted(docs.rglob("*")):
        parts = path.relative_to(docs).parts
        if path.suffix in (".md", ".rst") and parts[0] != "results" and not set(parts) & set(GENERATED):
            found.append(path)
    return {path: path.read_text(encoding="utf-8") for path in found}


def named(name: str, text: str) -> bool:
    """Whether ``text`` names the record ``name`` explicitly (not as a prefix of another name)."""
    name = re.escape(name)
    return re.search(rf"(?<![\w-]){name}(?:\.md\b|\.csv\b|`)|--record {name}(?![\w-])", text) is not None


def unnamed_records(results: Path, texts: list[str]) -> list[str]:
    """The records (``NAME.md`` under ``results``) that none of ``texts`` names."""
    return [path.stem for path in sorted(results.glob("*.md")) if not any(named(path.stem, t) for t in texts)]


def orphans(results: Path) -> list[str]:
    """The files under ``results`` that belong to no record."""
    records = {path.stem for path in results.glob("*.md")}
    owner = {".csv": lambda stem: stem, ".json": lambda stem: stem,
             ".jsonl": lambda stem: stem.removesuffix("-tasks")}
    return sorted(path.name for path in results.iterdir() if path.suffix != ".md"
                  and owner.get(path.suffix, lambda stem: None)(path.stem) not in records)


def test_every_record_is_named_by_the_readme_or_a_docs_page():
    assert unnamed_records(RESULTS, list(pages().values())) == []


def test_every_file_under_results_belongs_to_a_record():
    assert orphans(RESULTS) == []


def test_the_results_page_globs_the_records_and_does_not_name_them():
    results_page = (DOCS / "results.rst").read_text()
    assert "results/*" in results_page
    assert unnamed_records(RESULTS, [results_page])  # the glob names none


def test_a_record_named_nowhere_or_by_a_longer_name_only_is_caught(tmp_path):
    for name in ("grid", "grid-10k", "family", "docs-build", "exact", "lost"):
        (tmp_path / f"{name}.md").write_text("# a record\n")
    (tmp_path / "grid-10k.csv").write_text("")
    (tmp_path / "lost-tasks.jsonl").write_text("")
    (tmp_path / "stray.csv").write_text("")
    texts = ["The grid is [grid-10k](results/grid-10k.md), rerun with `--record grid-10k`.",
             "The record `family` at abc1234; the build, :doc:`results/docs-build`.",
             "python -m validation.benchmarks.high_d_grid --record exact\n",
             "the lost record and lost-and-found.md"]
    assert unnamed_records(tmp_path, texts) == ["grid", "lost"]
    assert orphans(tmp_path) == ["stray.csv"]
