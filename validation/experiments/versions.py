"""What a result depends on besides its inputs: the installed packages and our own code.

``package_versions()`` names the versions of Python and of every package that can change a
number; ``code_version()`` is a digest of the source files that compute the results (the two
libraries, the data loaders and the experiment's protocol, methods and task), so an edit to
any of them starts fresh results while an edit to the report or the command line does not.
Both are part of every stored result (``validation.experiments.store``).
"""

from __future__ import annotations

import hashlib
import json
import platform
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("numpy", "scipy", "scikit-learn", "numba", "cvxpy", "clarabel", "scs", "threadpoolctl")
CODE = ("lmnn_sdp", "fast_solver", "validation/datasets.py", "validation/peers.py",
        "validation/crosscheck.py", "validation/instances.py", "validation/energy_reference.py",
        "validation/experiments/protocol.py", "validation/experiments/knn.py",
        "validation/experiments/methods.py", "validation/experiments/task.py")
DIGEST_CHARS = 16


@lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    """``{"python": ..., "numpy": ..., ...}`` for ``PACKAGES``; absent ones are "absent"."""
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "absent"
    return found


@lru_cache(maxsize=1)
def code_version() -> str:
    """SHA-256 (first ``DIGEST_CHARS`` hex digits) of the ``CODE`` sources, paths included."""
    digest = hashlib.sha256()
    for path in _sources():
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:DIGEST_CHARS]


def environment_key() -> str:
    """One string for the packages and the code: the key of a cached cross-check gate."""
    return json.dumps({"packages": package_versions(), "code": code_version()}, sort_keys=True)


def _sources() -> list[Path]:
    paths = []
    for entry in CODE:
        path = ROOT / entry
        paths.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return paths
