"""Command line: ``python -m validation [exact|corpus|data] ...``.

``exact`` (the default) solves and certifies LMNN on iris and wine;
``corpus build`` / ``corpus check`` regenerate / re-verify the certified corpus;
``data fetch`` / ``data list`` manage the real data sets (``validation.datasets``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from validation import certified_corpus, datasets
from validation.exact import certify_bundled, format_table


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "data":
        return datasets.main(argv[1:])
    if argv and argv[0] == "corpus":
        return corpus_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m validation", description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", default="exact", choices=["exact"])
    parser.add_argument("--data", nargs="+", default=["iris", "wine"], choices=sorted(datasets.BUNDLED))
    parser.add_argument("--full", action="store_true", help="also solve the full SDP over every triplet")
    parser.add_argument("--solver", default="CLARABEL", choices=["CLARABEL", "SCS"])
    parser.add_argument("--tol", type=float, default=1e-6, help="certified relative gap to reach")
    args = parser.parse_args(argv)
    methods = ("cutting-plane", "aggregated") + (("full",) if args.full else ())
    rows = certify_bundled(args.data, methods, args.solver, tol=args.tol)
    print(format_table(rows))
    failed = [f"{r['data']} ({r['method']})" for r in rows if not r["certified"]]
    if failed:
        print(f"not certified to relative gap {args.tol:g}: {', '.join(failed)}")
        return 1
    print(f"all {len(rows)} solves certified to relative gap {args.tol:g}")
    return 0


def corpus_main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m validation corpus")
    parser.add_argument("action", choices=["build", "check"])
    parser.add_argument("--dir", type=Path, default=certified_corpus.CORPUS_DIR)
    parser.add_argument("--tol", type=float, default=1e-6, help="largest relative gap accepted")
    args = parser.parse_args(argv)
    if args.action == "build":
        manifest = certified_corpus.build(args.dir)
        print(f"built {len(manifest['instances'])} certified instances in {args.dir}")
        return 0
    checked = certified_corpus.check(args.dir, tol=args.tol)
    rows = [{"instance": c.name, "optimum": c.optimum, "recomputed": c.objective,
             "lower_bound": c.lower_bound, "gap": c.relative_gap, "ok": c.ok} for c in checked]
    print(format_table(rows, columns=tuple(rows[0])))
    failed = [c.name for c in checked if not c.ok]
    print(f"{len(checked) - len(failed)} of {len(checked)} certificates re-verified"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
