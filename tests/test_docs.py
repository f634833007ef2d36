"""The documentation site's sources, checked without building it: every gallery example has a
title, every page under docs/ is in a toctree, and the API reference lists exactly the public
names."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATED = ("_build", "_templates", "auto_examples", "generated", "sg_execution_times.rst")


def source_pages() -> set[str]:
    """Every page under docs/ (.rst and .md, without suffix, relative to docs/), except those
    the build generates."""
    pages = set()
    for path in [*DOCS.rglob("*.rst"), *DOCS.rglob("*.md")]:
        relative = path.relative_to(DOCS)
        if not set(relative.parts) & set(GENERATED):
            pages.add(relative.with_suffix("").as_posix())
    return pages


def toctree_entries(page: str) -> list[str]:
    """The entries of the toctrees of ``page`` (reST directives or MyST fences), as written."""
    path = next(DOCS.glob(page + ".*"))
    text = path.read_text()
    entries = []
    for block in re.findall(r"^\.\. toctree::\n((?:[ \t]+.*\n|\n)*)", text, re.M):
        entries += [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith(":")]
    for block in re.findall(r"^```\{toctree\}\n(.*?)^```", text, re.M | re.S):
        entries += [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith(":")]
    return entries


def resolve(page: str, entry: str) -> str:
    """The page a toctree entry of ``page`` names: ``Title <name>`` or ``name``, relative to
    ``page``'s folder or, with a leading ``/``, to docs/."""
    entry = re.sub(r"^.*<(.+)>$", r"\1", entry)
    base = page.rpartition("/")[0]
    return entry[1:] if entry.startswith("/") else (f"{base}/{entry}" if base else entry)


def matches(page: str, pattern: str) -> bool:
    """Sphinx's toctree glob: ``*`` and ``?`` stop at ``/``."""
    return all(fnmatch.fnmatchcase(part, glob) for part, glob in
               zip(page.split("/"), pattern.split("/"))) and page.count("/") == pattern.count("/")


def reachable(pages: set[str]) -> set[str]:
    """The pages reachable from the root document through toctrees; the gallery (generated)
    counts as a leaf."""
    seen, todo = set(), ["index"]
    while todo:
        page = todo.pop()
        if page in seen or page not in pages:
            continue
        seen.add(page)
        for name in (resolve(page, entry) for entry in toctree_entries(page)):
            todo += [p for p in pages if matches(p, name)] if any(c in name for c in "*?[") else [name]
    return seen


def test_every_page_is_in_a_toctree():
    pages = source_pages()
    assert {"index", "guide", "results-history"} <= pages
    assert pages - reachable(pages) == set()


def test_every_toctree_entry_exists():
    pages = source_pages()
    for page in pages:
        for entry in toctree_entries(page):
            name = resolve(page, entry)
            if any(c in name for c in "*?[") or name.startswith("auto_examples/"):
                continue
            assert name in pages, f"{page}: toctree entry {entry!r} is no page"


def test_the_changelog_is_included():
    assert "../CHANGELOG.md" in (DOCS / "changelog.md").read_text()


def test_every_example_has_a_title():
    examples = sorted((ROOT / "examples").glob("*.py"))
    assert len(examples) >= 5
    assert (ROOT / "examples" / "README.txt").read_text().splitlines()[1].startswith("===")
    for example in examples:
        assert example.name.startswith("plot_"), f"{example.name}: the gallery runs plot_*.py only"
        docstring = ast.get_docstring(ast.parse(example.read_text()), clean=False)
        assert docstring, f"{example.name} has no docstring"
        lines = docstring.strip("\n").splitlines()
        assert len(lines) >= 3 and lines[1] == "=" * len(lines[0]), f"{example.name}: no title"
        assert lines[2] == "" and len(lines) > 3, f"{example.name}: no paragraph after the title"


def public_names(package: str) -> set[str]:
    """``__all__`` of a package's ``__init__.py``, read without importing it: a list literal, or
    the keys of ``_EXPORTS`` (lazy imports)."""
    tree = ast.parse((ROOT / package / "__init__.py").read_text())
    values = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
              for target in node.targets if isinstance(target, ast.Name)}
    names = values["__all__"]
    if isinstance(names, ast.Call):  # sorted(_EXPORTS)
        return set(ast.literal_eval(values["_EXPORTS"]))
    return set(ast.literal_eval(names))


def test_the_api_reference_lists_every_public_name_once():
    for package in ("fast_solver", "lmnn_sdp"):
        text = (DOCS / "api" / f"{package}.rst").read_text()
        listed = [line.strip() for block in re.findall(r"^\.\. autosummary::\n((?:[ \t]+.*\n|\n)*)", text, re.M)
                  for line in block.splitlines() if line.strip() and not line.strip().startswith(":")]
        assert len(listed) == len(set(listed)), f"{package}: a name listed twice"
        assert set(listed) == public_names(package), package


def test_included_records_start_at_a_part_of_the_record():
    """A page that includes a record from a line (``:start-line: N``, to leave out its title
    or its notes) starts at the provenance line or at the table's header."""
    included = 0
    for page in DOCS.rglob("*.rst"):
        if set(page.relative_to(DOCS).parts) & set(GENERATED):
            continue
        for target, line in re.findall(r"^\.\. include:: (\S*results/\S+\.md)\n(?:[ \t]+:.*\n)*?"
                                       r"[ \t]+:start-line: (\d+)", page.read_text(), re.M):
            first = (page.parent / target).read_text().splitlines()[int(line)]
            assert first.startswith(("Written by ", "| ")), f"{page.name}: {target} from line {line}: {first!r}"
            included += 1
    assert included >= 2
