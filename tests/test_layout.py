"""The layout's promises: no import cycles, and cvxpy only where an SDP is built."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("lmnn_sdp", "fast_solver", "validation")


def module_imports() -> dict[str, set[str]]:
    """Each module of the packages and the package modules it imports (anywhere in it)."""
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
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
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
                    private += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                                if a.name.startswith("_") and not a.name.startswith("__")]
    assert private == []


@pytest.mark.slow
def test_importing_the_solvers_needs_no_linux_only_call():
    code = "import os; del os.sched_getaffinity; import fast_solver, lmnn_sdp"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
