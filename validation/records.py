"""Records under ``docs/results/``: every table a command writes names the command, the code
version and the machine that produced it."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

from lmnn_sdp.core.machine import available_cores

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


def code_version() -> str:
    """The checkout's short commit, with ``+changes`` when the tree differs from it; "unknown"
    outside a git checkout."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=root, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, cwd=root, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+changes" if dirty else "")


def provenance(command: str | None = None) -> str:
    """One Markdown line: the command (by default this process's), the code version and the
    machine."""
    command = command or this_command()
    cpu = platform.processor() or platform.machine()
    return (f"Written by `{command}` at commit {code_version()} on {cpu}, {available_cores()} "
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
