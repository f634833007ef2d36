"""``python -m validation``: the command line of :mod:`validation.cli` (the same as ``lmnn-sdp``)."""
from validation.cli import main

if __name__ == "__main__":
    raise SystemExit(main(prog="python -m validation"))
