"""The command line: ``lmnn-sdp COMMAND ...``, the same as ``python -m validation COMMAND ...``.

``crosscheck`` (the main job, and the command run when none is named) checks the
fast solver against the certified exact optimum; ``exact`` certifies LMNN on
scikit-learn's bundled data; ``corpus`` builds, re-verifies or exports the certified
corpus; ``check-solver`` checks the metric files another program wrote for the exported
corpus; ``peers`` certifies other libraries' metrics; ``data`` fetches or lists
the real data sets; ``certify`` certifies any metric on the user's data and
writes its certificate, which ``verify`` re-checks; ``experiments`` runs the paper's
Table 1 protocol on Dask into a resumable results store, with tables and plots. Each command is one ``add_*_parser`` function (its options,
help and description) and one ``run_*`` function (what it does, returning the
exit status: 0 success, 1 a check that failed, 2 a usage error, 130 stopped by Ctrl-C).

Every option is checked as it is parsed: numbers by the types at the end of this module
(``positive_float``, ``jobs_count``, ...), paths by ``input_file``, ``output_folder`` and
their kin, so a bad value exits 2 naming its option before any work. A Ctrl-C (SIGINT)
prints one line and exits 130 (``main``); a command with something to keep catches it
first (``crosscheck``: the rows finished; ``experiments``: the store).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np

from lmnn_sdp import certificates
from lmnn_sdp.certificates.bounds import significant
from validation import corpus, crosscheck, datasets, peers
from validation.exact import certify_bundled, format_table
from validation.instances import builtin_instances, medium_instances

PROG = "lmnn-sdp"  # the console script; ``python -m validation`` is the same command
DEFAULT_COMMAND = "crosscheck"
PEER_INSTANCES = ("iris-n150-k3-mu0.5", "wine-n178-k3-mu0.5", "iris-n90-k1-mu0.2",
                  "wine-n80-k4-mu0.8", "digits-pca10-n120-k3-mu0.5", "blobs-n80-d3-c4-k3-mu0.8",
                  "zebra-n80-k1-mu0.2")


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Run the command named in ``argv`` (default ``sys.argv[1:]``); return its exit status.

    Without a command (no arguments, or options first) the main job ``crosscheck``
    runs with those options. ``--help`` returns 0 and a usage error returns 2,
    after argparse has printed its message. A Ctrl-C returns 130 after one line on
    stderr (the command's own, or ``interrupted: COMMAND stopped before it finished``);
    a second one meanwhile is ignored (``_interrupted_once``). ``prog`` names the program
    in usage lines (``python -m validation`` passes its own name).
    """
    parser = build_parser(prog)
    try:
        argv = _with_default_command(argv)
        args = parser.parse_args(argv)
        args.command_line = " ".join([prog, *map(shlex.quote, argv)])  # as typed, for messages
        with _interrupted_once():
            try:
                return args.run(args)
            except KeyboardInterrupt:
                print(f"interrupted: {args.command_line} stopped before it finished", file=sys.stderr)
                return 130
    except SystemExit as stop:  # argparse's --help and usage errors
        return int(stop.code or 0)


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The argument parser: one subparser per command, each with help and a description."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Certified LMNN metric learning: cross-check the fast solver against the "
                    "certified exact optimum, certify, keep the certified corpus, compare "
                    "other libraries, manage the real data sets.",
        epilog=f"Without a command, runs {DEFAULT_COMMAND} (the main job) with the options "
               "given. '%(prog)s COMMAND --help' shows a command's options.",
    )
    subparsers = parser.add_subparsers(dest="command", title="commands", required=True)
    for add_parser in (add_crosscheck_parser, add_exact_parser, add_corpus_parser,
                       add_check_solver_parser, add_peers_parser, add_data_parser, add_certify_parser,
                       add_verify_parser, add_experiments_parser):
        add_parser(subparsers)
    return parser


def _with_default_command(argv: Sequence[str] | None) -> list[str]:
    """``argv`` with ``crosscheck`` put first when it names no command and asks no help."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        return [DEFAULT_COMMAND, *argv]
    return argv


def _add_command(subparsers, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """A subparser with a one-line ``summary`` (top-level listing) and a ``description``."""
    command = subparsers.add_parser(name, help=summary, description=description)
    command.set_defaults(error=command.error)
    return command


# -- crosscheck ------------------------------------------------------------------
def add_crosscheck_parser(subparsers) -> None:
    """``crosscheck``: the fast solvers against the certified optimum (``validation.crosscheck``)."""
    command = _add_command(
        subparsers, "crosscheck",
        "fast solver vs the certified exact optimum (default)",
        f"{crosscheck.__doc__.splitlines()[0]} An instance passes when the fast solver proves "
        "its own gap at most --tol and agrees with the certified optimum to --tol; exits 1 "
        "naming any that does not. This is the main job, run when no command is named.",
    )
    command.add_argument("--instances", nargs="+", metavar="TEXT",
                         help="only instances whose name contains one of these")
    command.add_argument("--suite", choices=["all", "builtin", "medium"], default="all",
                         help="built-in instances, medium real-data ones (fetched data), or both")
    command.add_argument("--solvers", nargs="+", default=list(crosscheck.DEFAULT_SOLVERS),
                         choices=crosscheck.SOLVERS,
                         help="fast solvers to check (default: %(default)s; multi-metric is "
                              "one metric per class, sec. 5.2, on instances of at most "
                              f"{crosscheck.MAX_N['multi-metric']} points; energy is eq. 15 against "
                              "brute force)")
    command.add_argument("--tol", type=positive_float, default=1e-6,
                         help="largest relative difference and fast certified gap")
    command.add_argument("--jobs", type=jobs_count, default=1, metavar="N",
                         help="worker processes running the rows (default 1: none; -1: one per core)")
    command.add_argument("--report", type=output_folder, metavar="DIR",
                         help="write the record crosscheck.md, .csv and .json here (docs/results: the "
                              "committed one); after a Ctrl-C, the rows finished as crosscheck-partial")
    command.set_defaults(run=run_crosscheck)


def run_crosscheck(args: argparse.Namespace) -> int:
    """Print the cross-check table and summary; 0 when every instance passes, else 1
    (130 after a Ctrl-C: ``_crosscheck_interrupted``)."""
    instances = _crosscheck_instances(args.suite)
    if args.instances:
        instances = [i for i in instances if any(text in i.name for text in args.instances)]
        if not instances:
            args.error(f"no instance name contains any of {args.instances}")
    try:
        rows = crosscheck.crosscheck(instances, args.solvers, args.tol, args.jobs)
    except crosscheck.Interrupted as stop:
        return _crosscheck_interrupted(args, stop)
    print(format_table(rows, crosscheck.COLUMNS))
    print(crosscheck.summary(rows, args.tol))
    if args.report:
        crosscheck.write_report(rows, args.report, args.tol)
    return 0 if all(r["passed"] for r in rows) else 1


def _crosscheck_interrupted(args: argparse.Namespace, stop: crosscheck.Interrupted) -> int:
    """After a Ctrl-C: the table of the rows finished, then one line on stderr saying how
    many and, with --report, where their record ``crosscheck-partial`` is; returns 130."""
    print(format_table(stop.rows, crosscheck.COLUMNS), flush=True)
    written = ""
    if args.report:
        paths = crosscheck.write_report(stop.rows, args.report, args.tol, stop.total) if stop.rows else []
        written = f"; written: {', '.join(map(str, paths))}" if paths else "; no record written"
    print(f"{stop}, tabled above{written}", file=sys.stderr)
    return 130


def _crosscheck_instances(suite: str) -> list:
    """The instances of ``suite``; prints why each absent medium instance is skipped."""
    instances = builtin_instances() if suite != "medium" else []
    if suite != "builtin":
        medium, skipped = medium_instances()
        instances += medium
        for message in skipped:
            print(message)
    return instances


# -- exact -----------------------------------------------------------------------
def add_exact_parser(subparsers) -> None:
    """``exact``: solve and certify exact LMNN on bundled data (``validation.exact``)."""
    command = _add_command(
        subparsers, "exact", "solve and certify exact LMNN on iris and wine",
        "Solve and certify exact LMNN (k=3, mu=0.5) on scikit-learn's bundled data by "
        "constraint generation and aggregated active sets (and, with --full, the full SDP "
        "over every triplet); exits 1 if any solve is not certified to --tol.",
    )
    command.add_argument("--data", nargs="+", default=["iris", "wine"],
                         choices=sorted(datasets.BUNDLED))
    command.add_argument("--full", action="store_true",
                         help="also solve the full SDP over every triplet")
    command.add_argument("--solver", default="CLARABEL", choices=["CLARABEL", "SCS"])
    command.add_argument("--tol", type=positive_float, default=1e-6, help="certified relative gap to reach")
    command.set_defaults(run=run_exact)


def run_exact(args: argparse.Namespace) -> int:
    """Print one row per (data set, method); 0 when every solve is certified, else 1."""
    methods = ("cutting-plane", "aggregated") + (("full",) if args.full else ())
    rows = certify_bundled(args.data, methods, args.solver, tol=args.tol)
    print(format_table(rows))
    failed = [f"{r['data']} ({r['method']})" for r in rows if not r["certified"]]
    if failed:
        print(f"not certified to relative gap {args.tol:g}: {', '.join(failed)}")
        return 1
    print(f"all {len(rows)} solves certified to relative gap {args.tol:g}")
    return 0


# -- corpus ----------------------------------------------------------------------
def add_corpus_parser(subparsers) -> None:
    """``corpus build|check|refresh|export``: the certified corpus (``validation.corpus``)."""
    command = _add_command(
        subparsers, "corpus", "build, re-verify or export the corpus of certified instances",
        "The corpus of certified instances for solver regression tests. 'build' solves and "
        "certifies the built-in suite into --dir; 'check' re-verifies every stored certificate "
        "and exits 1 naming any that fails; 'refresh' re-proves the stored evidence (no solve) "
        "and saves it in the current format; 'export DEST' writes the shipped corpus into the new "
        "folder DEST as plain files (.npy, .csv, JSON) that a solver in any language reads, with "
        "the certified metrics in DEST/optimal for 'check-solver'.",
    )
    command.add_argument("action", choices=["build", "check", "refresh", "export"],
                         help="build: solve and certify; check: re-verify the stored certificates; "
                              "refresh: re-prove the stored evidence in the current format; "
                              "export: write the shipped corpus as plain files into DEST")
    command.add_argument("dest", nargs="?", type=Path, metavar="DEST",
                         help="export: the folder to write, which must not exist yet")
    command.add_argument("--dir", type=Path, default=corpus.CORPUS_DIR,
                         help="corpus folder (default: the one shipped in lmnn_sdp/testing/corpus)")
    command.add_argument("--tol", type=positive_float, default=1e-6,
                         help="largest relative gap accepted by check")
    command.set_defaults(run=run_corpus)


def run_corpus(args: argparse.Namespace) -> int:
    """Build, refresh or export the corpus, or check it and print one row per instance (1 if
    any fails)."""
    if (args.action == "export") != (args.dest is not None):
        args.error("DEST is the folder of 'corpus export' and of no other action")
    if args.action == "export":
        return _export_corpus(args)
    if args.action != "check":  # build and refresh write in --dir
        _check_option(args, "--dir", output_folder, str(args.dir))
    try:
        if args.action == "build":
            manifest = corpus.build(args.dir)
            print(f"built {len(manifest['instances'])} certified instances in {args.dir}")
            return 0
        if args.action == "refresh":
            manifest = corpus.refresh(args.dir)
            print(f"re-proved {len(manifest['instances'])} instances in {args.dir}")
            return 0
        checked = corpus.check(args.dir, tol=args.tol)
    except FileNotFoundError as error:  # no corpus there; the message names the build command
        print(f"error: --dir: {error}", file=sys.stderr)
        return 1
    rows = [asdict(c) for c in checked]
    print(format_table(rows, columns=tuple(rows[0])))
    failed = [c.name for c in checked if not c.ok]
    print(f"{len(checked) - len(failed)} of {len(checked)} certificates re-verified"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def _export_corpus(args: argparse.Namespace) -> int:
    """``corpus export DEST``: a usage error when DEST exists or cannot be made."""
    from validation.corpus.export import export

    if args.dest.exists():
        args.error(f"argument DEST: {args.dest} exists; give a new folder (the export writes every file "
                   "of it), or remove that one first")
    _check_option(args, "DEST", output_folder, str(args.dest))
    ids = export(args.dest)
    print(f"exported {len(ids)} certified cases into {args.dest} (protocol: {args.dest / 'README.md'}); "
          f"check a solver's metrics with: {PROG} check-solver --corpus {args.dest} --metrics OUT")
    return 0


# -- check-solver ---------------------------------------------------------------
def add_check_solver_parser(subparsers) -> None:
    """``check-solver``: metric files against the exported corpus (``validation.corpus.solver_files``)."""
    from lmnn_sdp.testing.corpus_cases import KINDS

    command = _add_command(
        subparsers, "check-solver", "check a solver's metric files against the exported corpus",
        "Check the metrics a solver in any language wrote for the cases of 'corpus export': one file "
        "per case in --metrics, named by the case's id, CASE.npy or CASE.csv holding M (d x d; "
        "diagonal MMC as a diagonal matrix), CASE.L.npy or CASE.L.csv holding L (r x d) with "
        "M = L^T L, a multi-metric case one C x d x d array in CASE.npy. Each is scored as "
        "check_lmnn_solver and assert_mmc_optimal score it: its gap against the case's certified "
        "bound, at most the case's tolerance to pass; an MMC metric must also satisfy the "
        "constraint. Prints one row per case; exit status 0 when every selected case passes, 1 when "
        "one fails or has no metric (missing), 2 for a usage error or a malformed file (one line "
        "naming it). Nothing is loaded with pickle.")
    command.add_argument("--corpus", required=True, type=input_folder, metavar="DIR",
                         help="a folder written by 'corpus export'")
    command.add_argument("--metrics", required=True, type=input_folder, metavar="OUT",
                         help="the solver's metric files, one per case")
    command.add_argument("--kind", nargs="+", choices=KINDS, default=list(KINDS),
                         help="the problems the solver handles (default: all)")
    command.add_argument("--report", type=output_file, metavar="PATH",
                         help="also write the table as PATH.md and PATH.csv (with the command, code "
                              "version and machine)")
    command.set_defaults(run=run_check_solver)


def run_check_solver(args: argparse.Namespace) -> int:
    """Print one row per selected case and a summary; 0 when all pass, 1 when one fails or is
    missing, 2 for a malformed file."""
    from validation.corpus.export import MalformedFile
    from validation.corpus.solver_files import COLUMNS, check_metrics, unexpected_files
    from validation.records import write_record

    try:
        rows = check_metrics(args.corpus, args.metrics, args.kind)
        ignored = unexpected_files(args.corpus, args.metrics)
    except MalformedFile as err:
        print(f"{PROG} check-solver: malformed file: {err}", file=sys.stderr)
        return 2
    if not rows:
        args.error(f"--corpus {args.corpus} has no case of the kinds {' '.join(args.kind)}")
    print(format_table(rows, tuple(c for c in COLUMNS if c != "file")))
    counts = {result: sum(row["result"] == result for row in rows) for result in ("pass", "fail", "missing")}
    print(f"{counts['pass']} of {len(rows)} cases pass, {counts['fail']} fail, {counts['missing']} missing")
    if ignored:
        print(f"ignored, naming no case: {', '.join(ignored)}")
    if args.report:
        paths = write_record(args.report.name.removesuffix(".md").removesuffix(".csv"), rows,
                             title=f"check-solver: {args.metrics} against {args.corpus}",
                             command=args.command_line, columns=COLUMNS,
                             formats={"objective": ".10g", "bound": ".10g", "gap": ".3g", "tolerance": ".2g"},
                             directory=args.report.parent)
        print("written: " + ", ".join(map(str, paths)))
    return 0 if counts["pass"] == len(rows) else 1


# -- peers -----------------------------------------------------------------------
def add_peers_parser(subparsers) -> None:
    """``peers``: other libraries' metrics, certified (``validation.peers``)."""
    command = _add_command(
        subparsers, "peers",
        "certify PyLMNN's, metric-learn's and mlpack's metrics",
        f"{peers.__doc__.splitlines()[0]} Each peer's gap to the certified optimum is "
        f"measured on our objective; peers not installed are reported ({peers.INSTALL_HINT}).",
    )
    command.add_argument("--instances", nargs="+", default=list(PEER_INSTANCES), metavar="NAME",
                         help="built-in instance names (see lmnn_sdp/testing/corpus/manifest.json)")
    command.add_argument("--peers", nargs="+", default=list(peers.PEERS), choices=list(peers.PEERS))
    command.set_defaults(run=run_peers)


def run_peers(args: argparse.Namespace) -> int:
    """Print each peer's certified gap on each instance."""
    known = {i.name: i for i in builtin_instances()}
    missing = [name for name in args.instances if name not in known]
    if missing:
        args.error(f"unknown instance(s) {missing}; see lmnn_sdp/testing/corpus/manifest.json")
    rows = peers.peers_table([known[name] for name in args.instances], args.peers)
    print(format_table(rows, tuple(rows[0])))
    print("gap_to_optimum = (objective - certified lower bound) / objective, on eq. 14 with our "
          "targets.\nPyLMNN optimises a squared hinge, metric-learn weighs the terms "
          "differently and mlpack keeps each point's k nearest impostors only, so their gap is "
          "measured on our objective, not theirs.")
    absent = sorted({r["library"] for r in rows if r["shims"] == peers.NOT_INSTALLED})
    if absent:
        print(f"not installed: {', '.join(absent)}; {peers.INSTALL_HINT}")
    return 0


# -- data ------------------------------------------------------------------------
def add_data_parser(subparsers) -> None:
    """``data fetch|list``: the real data sets (``validation.datasets``)."""
    command = _add_command(
        subparsers, "data", "fetch or list the real data sets",
        "Fetch or list the local data sets: UCI Letter Recognition and others from Debian's "
        "r-cran-mlbench, Fashion-MNIST from dataset-fashion-mnist, unpacked into a cache "
        "folder ($LMNN_SDP_DATA, default ~/.cache/lmnn-sdp).",
    )
    actions = command.add_subparsers(dest="action", title="actions", required=True)
    fetch = _add_command(actions, "fetch", "download and unpack Debian's data packages",
                         "Download Debian's data packages with apt-get and unpack them with "
                         "dpkg-deb into the cache folder; packages already there are skipped.")
    fetch.add_argument("--only", choices=sorted(datasets.SOURCES), help="fetch one data set only")
    fetch.set_defaults(run=run_data_fetch)
    listing = _add_command(actions, "list", "show which data sets are available and where",
                           "Show each data set, its Debian package and the folder holding it "
                           "(cache first, then the system path), or the command that fetches it.")
    listing.set_defaults(run=run_data_list)
    for action, folder in ((fetch, output_folder), (listing, str)):
        action.add_argument("--cache", type=folder, help="cache folder (default: $LMNN_SDP_DATA or "
                                                         "~/.cache/lmnn-sdp)")


def run_data_fetch(args: argparse.Namespace) -> int:
    """Fetch the data sets and print where each is; 1 with the reason if fetching fails."""
    names = (args.only,) if args.only else tuple(datasets.SOURCES)
    try:
        data_dirs = datasets.fetch_data(args.cache, names)
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name, data_dir in data_dirs.items():
        print(f"{name:14s} {data_dir}")
    return 0


def run_data_list(args: argparse.Namespace) -> int:
    """Print each data set's package and folder, or the command that fetches it."""
    for name, source in datasets.SOURCES.items():
        data_dir = datasets.find_data_dir(name, args.cache)
        where = data_dir or f"missing; run `{datasets.FETCH_COMMAND} --only {name}`"
        print(f"{name:14s} {source.package:22s} {where}")
    return 0


# -- certify and verify ---------------------------------------------------------
def add_certify_parser(subparsers) -> None:
    command = _add_command(
        subparsers, "certify", "is this metric optimal for LMNN? bounds, gap and a certificate",
        "Certify how close a Mahalanobis metric (from any library) is to the optimum of LMNN "
        "(eq. 14 of Weinberger & Saul, JMLR 2009) on your data: prints the objective at the "
        "metric, a rigorous lower bound on the optimum and the relative gap, and writes the "
        "certificate (PATH.json + PATH.npz) that anyone can re-check with 'verify'. Files are "
        ".npy or .csv (comma-separated). When the metric's own bound does not prove the gap, the "
        "certified optimum is solved exactly (aggregated active sets) and the metric's excess over "
        "it, (eps(M) - lower*) / eps(M), is printed with the bound that proves it (--no-excess "
        "skips that solve). Exit status 0 when the gap is at most --tol, 1 when it is not.")
    command.add_argument("--X", required=True, type=input_file, metavar="FILE",
                         help="inputs, n rows of d features")
    command.add_argument("--y", required=True, type=input_file, metavar="FILE", help="n labels")
    command.add_argument("--metric", required=True, type=input_file, metavar="FILE",
                         help="the metric M (d x d); with --clusters, C metrics stacked (C x d x d, .npy)")
    command.add_argument("-k", type=positive_int, default=3, help="target neighbours per point (default 3)")
    command.add_argument("--mu", type=unit_float, default=0.5,
                         help="weight of the push term, in [0, 1] (default 0.5)")
    command.add_argument("--targets", type=input_file, metavar="FILE",
                         help="explicit target neighbours (n x k indices) instead of the k nearest")
    command.add_argument("--clusters", type=input_file, metavar="FILE",
                         help="cluster of each point, 0..C-1: certify multi-metric LMNN (sec. 5.2)")
    command.add_argument("--tol", type=positive_float, default=1e-6,
                         help="relative gap to certify (default 1e-6)")
    command.add_argument("--solver", default="CLARABEL", choices=["CLARABEL", "SCS"],
                         help="SDP solver for the multipliers near the margin")
    command.add_argument("--no-excess", dest="excess", action="store_false",
                         help="do not solve for the certified optimum when the metric's own bound is loose")
    command.add_argument("--out", type=output_file, metavar="PATH",
                         help="where to write PATH.json and PATH.npz (default: next to --metric, "
                              "named METRIC-certificate)")
    command.set_defaults(run=run_certify)


def run_certify(args: argparse.Namespace) -> int:
    from lmnn_sdp import LMNNProblem, certify, excess_over_optimum

    try:
        X, y, metric = (read_array(args.X, "X"), read_array(args.y, "y"),
                        read_array(args.metric, "metric"))
        targets = read_array(args.targets, "targets") if args.targets else None
        clusters = read_array(args.clusters, "clusters") if args.clusters else None
        problem = (LMNNProblem(X, y, mu=args.mu, targets=targets) if targets is not None
                   else LMNNProblem(X, y, k=args.k, mu=args.mu))
        certificate = certify(problem, metric, clusters=clusters, tol=args.tol, solver=args.solver)
    except (OSError, TypeError, ValueError) as err:
        print(f"{PROG} certify: {err}", file=sys.stderr)
        return 2
    out = args.out or args.metric.with_name(f"{args.metric.stem}-certificate")
    try:
        npz, js = certificate.save(out)
    except OSError as err:  # --out is checked as parsed; its default, next to --metric, is not
        print(f"{PROG} certify: --out {out}: cannot write: {err.strerror or err}", file=sys.stderr)
        return 2
    print(certificate)
    print(f"{'upper (objective at the metric)':34s} {certificate.upper:.10g}\n"
          f"{'lower (bound on the optimum)':34s} {certificate.lower:.10g}\n"
          f"{'relative gap':34s} {significant(certificate.relative_gap)}\n"
          f"{'certified (gap <= tol)':34s} {certificate.certified} (tol {args.tol:g})\n"
          f"written: {js} and {npz}")
    if args.excess and not certificate.certified:
        found = excess_over_optimum(certificate.problem, certificate.metric, certificate=certificate,
                                    solver=args.solver)
        proof = ("the metric's own dual bound" if found.bound == "metric" else
                 f"the certified optimum's dual bound (exact solve, {found.seconds:.2g} s; "
                 f"its gap {significant(found.reference.relative_gap)})")
        print(f"{'certified optimum (at most)':34s} {found.optimum_upper:.10g}\n"
              f"{'lower* (best bound on the optimum)':34s} {found.lower:.10g}, proved by {proof}\n"
              f"{'excess (eps(M) - lower*) / eps(M)':34s} {significant(found.excess, 6)} "
              f"(at least {significant(found.excess_at_least, 6)})")
    return 0 if certificate.certified else 1


def add_verify_parser(subparsers) -> None:
    command = _add_command(
        subparsers, "verify", "re-check a saved certificate from its own evidence",
        "Re-derive a saved certificate (PATH.json + PATH.npz, from 'certify', the corpus or "
        "a paper) from its evidence alone: the objective of the stored metric and the bound "
        "proved by the stored multipliers, against the stored numbers. Exit status 0 when "
        "every number is proved, 1 when the certificate is refused, 2 when its files are not there.")
    command.add_argument("path", type=certificate_file, metavar="PATH", help="PATH, PATH.json or PATH.npz")
    command.set_defaults(run=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    try:
        certificate = certificates.load(args.path).verify()
    except (OSError, ValueError) as err:
        print(f"{PROG} verify: refused: {err}", file=sys.stderr)
        return 1
    print(f"verified: {certificate}")
    return 0


# -- experiments ----------------------------------------------------------------
def add_experiments_parser(subparsers) -> None:
    """``experiments``: Table 1's protocol on Dask (``validation.experiments``)."""
    from validation.experiments import protocol
    from validation.experiments.gate import QUICK_GATE_N
    from validation.experiments.methods import METHODS
    from validation.experiments.store import DEFAULT_FOLDER

    command = _add_command(
        subparsers, "experiments", "the paper's Table 1 protocol on Dask, with tables and plots",
        "Run the protocol of Weinberger & Saul (JMLR 2009, sec. 4, Table 1) on every data set "
        "obtainable offline: every (data set, split, method) is a task on dask.distributed "
        "(a LocalCluster unless --scheduler), each result is stored as it finishes in a "
        "SQLite store under --results, and a rerun resumes, recomputing only unfinished tasks. "
        "Fast solvers run only after their cross-check on the built-in instances passes "
        "(cached per environment). Writes Markdown and CSV tables beside Table 1's numbers "
        "(results.md, results.csv, each naming the command, the code version and the machine) "
        "and PNG plots to --report; exits 1 if any task failed or was refused.")
    command.add_argument("--datasets", nargs="+", choices=list(protocol.DATASETS), metavar="NAME",
                         help="data sets (default: all, with --quick "
                              f"{' '.join(protocol.QUICK_DATASETS)}; those not fetched are "
                              "skipped): %(choices)s")
    command.add_argument("--methods", nargs="+", choices=list(METHODS), metavar="NAME",
                         help="methods (default: all, with --quick all but "
                              f"{' '.join(protocol.QUICK_SKIPS)}): %(choices)s")
    command.add_argument("--splits", type=positive_int, metavar="N",
                         help="at most N splits per data set (default: Table 1's, 10 elsewhere)")
    command.add_argument("--quick", action="store_true",
                         help=f"the small version: {protocol.QUICK_SPLITS} splits of stratified "
                              f"subsets of {protocol.QUICK_ROWS} rows, gates on the built-in "
                              f"instances of at most {QUICK_GATE_N} points")
    command.add_argument("--scheduler", metavar="ADDRESS",
                         help="a running Dask scheduler (default: a LocalCluster)")
    command.add_argument("--workers", type=positive_int, default=2,
                         help="LocalCluster worker processes, one thread each (default 2)")
    command.add_argument("--results", type=output_folder, default=DEFAULT_FOLDER, metavar="DIR",
                         help="folder of the results store results.sqlite (default: %(default)s)")
    command.add_argument("--report", type=output_folder, metavar="DIR",
                         help="folder of the tables and plots (default: RESULTS/report); "
                              "--report docs/results writes the committed record")
    command.add_argument("--export", type=output_folder, metavar="DIR",
                         help="also write the final table of each data set as the record table1-NAME "
                              "(table1-quick-NAME with --quick), .md and .csv with the command, code "
                              "version and machine; --export docs/results is the committed one, which "
                              "the site's Table 1 page (docs/user/table1.md) is generated from (python -m validation.table1)")
    command.add_argument("--checkpoints", type=output_folder, metavar="DIR",
                         help="folder of the fits' checkpoints, from which a task run again resumes its "
                              "fit (default: RESULTS/checkpoints; on a cluster of several machines a "
                              "folder every worker reaches)")
    command.add_argument("--checkpoint-interval", type=nonnegative_float, default=60.0, metavar="SECONDS",
                         help="seconds between a fit's checkpoints (default %(default)s)")
    command.add_argument("--no-figures", action="store_true",
                         help="tables and bar chart only: skip the fits of the illustrative figures")
    command.add_argument("--no-progress", action="store_true", help="no progress bar")
    command.set_defaults(run=run_experiments)


def run_experiments(args: argparse.Namespace) -> int:
    """Run, then print the Markdown tables and what was written; 1 if a task failed."""
    missing = [name for name in ("distributed", "matplotlib") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"{PROG} experiments: needs {' and '.join(missing)}; install the extra with "
              "pip install 'lmnn-sdp[experiments]'.", file=sys.stderr)
        return 2
    from validation.experiments import session

    try:
        outcome = session.experiments(
            args.datasets, args.methods, splits=args.splits, quick=args.quick,
            scheduler=args.scheduler, workers=args.workers, results=args.results,
            report_dir=args.report, progress=not args.no_progress,
            make_figures=not args.no_figures, export=args.export,
            checkpoints=args.checkpoints, checkpoint_interval=args.checkpoint_interval)
    except (session.Interrupted, KeyboardInterrupt) as stop:  # Ctrl-C: main's _interrupted_once
        print(f"{stop or 'interrupted before the run started'}; resume with: {args.command_line}",
              file=sys.stderr)
        return 130
    for message in outcome.skipped:
        print(f"skipped {message}")
    print(outcome.written[0].read_text())
    for name, error in outcome.figure_errors.items():
        print(f"figure {name} not made: {error}")
    counts = outcome.counts
    print(", ".join(f"{counts[s]} {s}" for s in ("ok", "failed", "skipped", "refused", "finished"))
          + f", {counts['another_run']} by another run (finished: in the store from an earlier run; "
          "by another run: finished meanwhile by a run sharing the store)")
    print("written: " + ", ".join(map(str, outcome.written)))
    return 1 if counts["failed"] or counts["refused"] else 0


@contextlib.contextmanager
def _interrupted_once():
    """The first SIGINT raises KeyboardInterrupt and later ones are ignored until the block
    ends, so the cleanup after a Ctrl-C (ending the workers, closing the cluster, releasing
    claims, writing the rows finished) is not cut short by a second; the previous handler is
    restored after. Outside the main thread, where Python takes no signal handler, nothing
    changes. ``main`` runs every command inside it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def read_array(path: Path, name: str) -> np.ndarray:
    """The array ``--name`` from a ``.npy`` or ``.csv`` file: labels may be text, indices
    (``targets``, ``clusters``) are integers, the rest numbers. A ValueError naming
    ``--name`` when the file cannot be read as one."""
    if path.suffix not in (".npy", ".csv", ".txt"):
        raise ValueError(f"--{name} {path}: give a .npy or .csv file, not {path.suffix or 'no suffix'!r}.")
    try:
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if name == "y":
            return np.genfromtxt(path, delimiter=",", dtype=None, encoding="utf-8")
        dtype, ndmin = (int, 1) if name == "clusters" else (int, 2) if name == "targets" else (float, 2)
        return np.loadtxt(path, delimiter=",", dtype=dtype, ndmin=ndmin)
    except (OSError, ValueError, EOFError) as err:
        raise ValueError(f"--{name} {path}: cannot read it: {err}") from None


# -- option types: each checks one kind of value as argparse parses it ----------
def _number(convert, accepts, expected: str):
    """An argparse type: ``convert(text)`` when ``accepts`` it, else a message naming what
    was ``expected`` (argparse puts the option's name before it and exits 2)."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not accepts(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    parse.__doc__ = f"``text`` as {expected}."
    return parse


positive_int = _number(int, lambda n: n >= 1, "a whole number >= 1")
jobs_count = _number(int, lambda n: n >= 1 or n == -1, "a number of jobs >= 1, or -1 for one per core")
positive_float = _number(float, lambda x: 0 < x < math.inf, "a finite number > 0")
nonnegative_float = _number(float, lambda x: x >= 0, "a number >= 0")  # NaN fails every comparison
unit_float = _number(float, lambda x: 0 <= x <= 1, "a number in [0, 1]")


def input_file(text: str) -> Path:
    """A file to read: it exists and is readable."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    if not path.is_file() or not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"not a readable file: {text}")
    return path


def input_folder(text: str) -> Path:
    """A folder to read: it exists and can be listed."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such folder: {text}")
    if not path.is_dir() or not os.access(path, os.R_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"not a readable folder: {text}")
    return path


def certificate_file(text: str) -> Path:
    """A saved certificate, ``PATH``, ``PATH.json`` or ``PATH.npz``: both files exist."""
    base = certificates.storage.stem(text)
    for suffix in (".json", ".npz"):
        input_file(str(base.with_name(base.name + suffix)))
    return Path(text)


def output_folder(text: str) -> Path:
    """A folder to write in: it exists, or it can be made (its nearest existing parent is
    a folder), and it is writable."""
    path = Path(text)
    existing = next((p for p in (path, *path.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"not a folder: {existing}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write in {existing}")
    return path


def output_file(text: str) -> Path:
    """Where to write files ``PATH.*``: their folder passes ``output_folder``."""
    output_folder(str(Path(text).parent))
    return Path(text)


def _check_option(args: argparse.Namespace, option: str, check, text: str) -> None:
    """``check(text)`` for an option checked only once the others are known; a usage error
    naming ``option`` if it fails."""
    try:
        check(text)
    except argparse.ArgumentTypeError as error:
        args.error(f"argument {option}: {error}")
