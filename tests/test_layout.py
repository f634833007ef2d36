"""The layout's promises: no import cycles, and cvxpy only where an SDP is built."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lmnn_sdp", "fast_solver", "validation")


@functools.cache
def parsed() -> dict[Path, ast.Module]:
    """The syntax tree of every module of the packages, by path (parsed once for the tests below)."""
    return {path: ast.parse(path.read_text()) for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def module_imports() -> dict[str, set[str]]:
    """Each module of the packages and the package modules it imports (anywhere in it)."""
    modules = {}
    for path in parsed():
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(parsed()[path]):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    candidate = f"{node.module}.{alias.name}"
                    found.add(candidate if candidate in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    graph = module_imports()
    assert len(graph) > 40
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.slow
def test_numpy_parts_never_load_cvxpy():
    code = ("import sys, fast_solver, lmnn_sdp.core.problem, lmnn_sdp.certificates.certificate, "
            "lmnn_sdp.certificates.bounds, lmnn_sdp.core.clusters, lmnn_sdp.mmc.certificate; "
            "assert 'cvxpy' not in sys.modules, 'cvxpy was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_fast_solver_is_one_subpackage_per_family():
    entries = {p.name for p in (ROOT / "fast_solver").iterdir() if p.name != "__pycache__"}
    families = {"lmnn", "low_rank", "mlng", "mmc", "nca", "rca.py"}
    shared = {"__init__.py", "_base.py", "checkpoint.py"}  # what every family uses
    assert entries <= families | shared, sorted(entries - families - shared)
    prefixed = [p for p in (ROOT / "fast_solver").rglob("*.py")
                if p.stem.split("_")[0] in {"lmnn", "lmca", "mmc", "mlng", "nca", "rca"}
                and "_" in p.stem]
    assert prefixed == []


def test_no_private_name_is_imported_from_another_module():
    private = []
    for path, tree in parsed().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
                private += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")]
    assert private == []


def foreign_private_attributes(tree: ast.Module) -> list[str]:
    """``name._x`` in ``tree`` where ``name`` is not ``self`` or ``cls`` and ``_x`` is not a
    private attribute or method of the class the line sits in (another instance of one's own
    class may be reached): a module reaching into another's private state."""
    own = {}  # class node -> the private names it defines (self._x = ..., def _x)
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        own[cls] = {n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                    and n.value.id == "self"} | {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
    found = []

    def visit(node, classes):
        if isinstance(node, ast.ClassDef):
            classes = classes + [node]
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id not in ("self", "cls")
                and not any(node.attr in own[c] for c in classes)):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
        for child in ast.iter_child_nodes(node):
            visit(child, classes)

    visit(tree, [])
    return found


PROFILER = "validation/benchmarks/high_d_profile.py"  # wraps the solver's internals to time them, by design


def test_no_module_reaches_into_another_objects_private_attributes():
    reached = {str(path.relative_to(ROOT)): foreign_private_attributes(tree) for path, tree in parsed().items()}
    assert {path: lines for path, lines in reached.items() if lines and path != PROFILER} == {}


def test_the_private_attribute_finder_finds_a_write_and_allows_ones_own_class():
    source = ("def store(problem):\n    problem._derived['x'] = 1\n"
              "class A:\n    def __init__(self):\n        self._x = 1\n"
              "    def same(self, other):\n        return other._x\n")
    assert foreign_private_attributes(ast.parse(source)) == ["2: problem._derived"]


@pytest.mark.slow
def test_importing_the_solvers_needs_no_linux_only_call():
    code = "import os; del os.sched_getaffinity; import fast_solver, lmnn_sdp"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
