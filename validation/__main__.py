"""Command line: ``python -m validation [crosscheck|exact|corpus|peers|data] ...``.

``crosscheck`` (the default) runs the fast solvers against the certified
optimum on the built-in instances; ``exact`` solves and certifies LMNN on iris
and wine; ``corpus build`` / ``corpus check`` regenerate / re-verify the
certified corpus; ``peers`` certifies PyLMNN's and metric-learn's metrics (the
``peers`` extra); ``data fetch`` / ``data list`` manage the real data sets
(``validation.datasets``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from validation import certified_corpus, crosscheck, datasets
from validation.exact import certify_bundled, format_table
from validation.instances import builtin_instances, medium_instances


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"crosscheck": crosscheck_main, "exact": exact_main, "corpus": corpus_main,
                "peers": peers_main, "data": datasets.main}
    if argv and argv[0] in commands:
        return commands[argv[0]](argv[1:])
    if argv and not argv[0].startswith("-"):
        print(f"python -m validation: unknown command {argv[0]!r}; choose one of "
              f"{', '.join(commands)} (default crosscheck)", file=sys.stderr)
        return 2
    return crosscheck_main(argv)


def exact_main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m validation exact",
                                     description="Solve and certify exact LMNN on bundled data.")
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


def crosscheck_main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m validation crosscheck",
                                     description=crosscheck.__doc__.splitlines()[0])
    parser.add_argument("--instances", nargs="+", metavar="TEXT",
                        help="only instances whose name contains one of these")
    parser.add_argument("--suite", choices=["all", "builtin", "medium"], default="all",
                        help="built-in instances, medium real-data ones (fetched data), or both")
    parser.add_argument("--solvers", nargs="+", default=list(crosscheck.FAST_SOLVERS),
                        choices=sorted(crosscheck.FAST_SOLVERS))
    parser.add_argument("--tol", type=float, default=1e-6,
                        help="largest relative difference and fast certified gap")
    parser.add_argument("--jobs", type=int, default=1, help="instances run in parallel")
    parser.add_argument("--report", type=Path, metavar="DIR", help="write JSON and Markdown here")
    args = parser.parse_args(argv)
    instances = builtin_instances() if args.suite != "medium" else []
    if args.suite != "builtin":
        medium, skipped = medium_instances()
        instances += medium
        for message in skipped:
            print(message)
    if args.instances:
        instances = [i for i in instances if any(text in i.name for text in args.instances)]
        if not instances:
            parser.error(f"no instance name contains any of {args.instances}")
    rows = crosscheck.crosscheck(instances, args.solvers, args.tol, args.jobs)
    print(format_table(rows, crosscheck.COLUMNS))
    print(crosscheck.summary(rows, args.tol))
    if args.report:
        crosscheck.write_report(rows, args.report, args.tol)
    return 0 if all(r["passed"] for r in rows) else 1


PEER_INSTANCES = ("iris-n150-k3-mu0.5", "wine-n178-k3-mu0.5", "iris-n90-k1-mu0.2",
                  "wine-n80-k4-mu0.8", "digits-pca10-n120-k3-mu0.5", "blobs-n80-d3-c4-k3-mu0.8",
                  "zebra-n80-k1-mu0.2")


def peers_main(argv) -> int:
    from validation import peers

    parser = argparse.ArgumentParser(prog="python -m validation peers",
                                     description=peers.__doc__.splitlines()[0])
    parser.add_argument("--instances", nargs="+", default=list(PEER_INSTANCES), metavar="NAME")
    parser.add_argument("--peers", nargs="+", default=list(peers.PEERS), choices=list(peers.PEERS))
    args = parser.parse_args(argv)
    known = {i.name: i for i in builtin_instances()}
    missing = [name for name in args.instances if name not in known]
    if missing:
        parser.error(f"unknown instance(s) {missing}; see validation/corpus/manifest.json")
    rows = peers.peers_table([known[name] for name in args.instances], args.peers)
    print(format_table(rows, tuple(rows[0])))
    print("gap_to_optimum = (objective - certified lower bound) / objective, on eq. 14 with our "
          "targets.\nPyLMNN optimises a squared hinge and metric-learn weighs the terms "
          "differently, so their gap is measured on our objective, not theirs.")
    absent = sorted({r["library"] for r in rows if r["shims"] == peers.NOT_INSTALLED})
    if absent:
        print(f"not installed: {', '.join(absent)}; {peers.INSTALL_HINT}")
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
    rows = [{"instance": c.name, "problem": c.problem, "optimum": c.optimum,
             "recomputed": c.objective, "bound": c.bound, "gap": c.relative_gap, "ok": c.ok}
            for c in checked]
    print(format_table(rows, columns=tuple(rows[0])))
    failed = [c.name for c in checked if not c.ok]
    print(f"{len(checked) - len(failed)} of {len(checked)} certificates re-verified"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
