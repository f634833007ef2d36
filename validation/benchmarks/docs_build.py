"""The documentation built from scratch, timed: a fresh clone of this checkout's HEAD, a fresh
venv, ``pip install -e ".[docs]"`` and the README's build command (warnings as errors, the
gallery executed) into a temporary folder. Writes the record ``docs/results/docs-build.md``
and ``.csv`` (``validation.records.write_record``).

    python -m validation.benchmarks.docs_build            # fresh venv: install and build
    python -m validation.benchmarks.docs_build --no-venv  # this interpreter: build only
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from validation.benchmarks.two_commands import timed
from validation.records import RESULTS, write_record

ROOT = RESULTS.parents[1]
BUILD = "python -m sphinx -W --keep-going -b html docs {out}"
NOT_PAGES = {"genindex.html", "search.html", "py-modindex.html"}


def count_pages(html: Path) -> int:
    """HTML pages the build wrote from source documents (not the index or search pages)."""
    return sum(1 for page in html.rglob("*.html") if page.name not in NOT_PAGES
               and "_static" not in page.parts and "_sources" not in page.parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-venv", action="store_true",
                        help="build with this interpreter and its packages, no fresh venv or install")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="lmnn-sdp-docs-") as tmp:
        clone, venv, out = Path(tmp) / "clone", Path(tmp) / "venv", Path(tmp) / "html"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "--quiet", commit], cwd=clone, check=True)
        if args.no_venv:
            bin_dir, install = Path(sys.executable).parent, None
        else:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            bin_dir = venv / "bin"
            install, _, _ = timed(["python", "-m", "pip", "install", "--quiet", "-e", ".[docs]"], clone, bin_dir)
        load = os.getloadavg()[0]
        build, log, _ = timed(["python", "-m", "sphinx", "-W", "--keep-going", "-b", "html", "docs", str(out)],
                              clone, bin_dir)
        pages, api = count_pages(out), len(list((out / "api" / "generated").glob("*.html")))
        executed = re.search(r"executed (\d+) out of (\d+)", log)
        examples = f"{executed[1]} of {executed[2]}" if executed else "?"
        versions = subprocess.run([str(bin_dir / "python"), "-c", "import importlib.metadata as m; print(', '.join("
                                   "f'{p} {m.version(p)}' for p in ('sphinx', 'numpydoc', 'sphinx-gallery', "
                                   "'myst-parser', 'pydata-sphinx-theme', 'matplotlib')))"],
                                  capture_output=True, text=True).stdout.strip()
    command = "python -m validation.benchmarks.docs_build" + (" --no-venv" if args.no_venv else "")
    rows = []
    if install is not None:
        rows.append({"step": "install, fresh venv", "command": '`pip install -e ".[docs]"`',
                     "seconds": install, "outcome": "exit 0"})
    rows.append({"step": "build, from scratch", "command": f"`{BUILD.format(out='OUT')}`", "seconds": build,
                 "outcome": f"exit 0 (no warnings); {pages} pages, of which {api} API pages; gallery: "
                            f"{examples} examples executed"})
    write_record("docs-build", rows, title="Building the documentation", command=command,
                 formats={"seconds": ".0f"},
                 notes=f"A fresh clone of the commit, {'this interpreter' if args.no_venv else 'a fresh venv'}, "
                       "an empty output folder `OUT`; pip's download cache as the machine had it; load average "
                       f"{load:.1f} when the build started (the machine is shared).\n\nPackages: {versions}.")
    print((RESULTS / "docs-build.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
