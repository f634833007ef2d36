"""``python -m validation`` and the console script ``lmnn-sdp``: :func:`validation.cli.main`,
imported by ``run`` so that a Ctrl-C while the libraries load ends as one during a command
does: one line and exit status 130, no traceback."""

from __future__ import annotations

import sys


def run(prog: str = "lmnn-sdp") -> int:
    """Import the command line and run it (``validation.cli.main``); 130 after one line on
    stderr when a Ctrl-C comes while it is imported."""
    try:
        from validation.cli import main
    except KeyboardInterrupt:
        print(f"interrupted: {prog} stopped while loading", file=sys.stderr)
        return 130
    return main(prog=prog)


if __name__ == "__main__":
    raise SystemExit(run("python -m validation"))
