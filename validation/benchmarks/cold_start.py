"""Cold start: a user's first fit, which waits for numba to compile the loops, against the
same fit once numba's cache holds them (issue 61).

    python -m validation.benchmarks.cold_start [--no-venv] [--repeat N] [--skip-letters]
                                               [--skip-main-job] [--record NAME | --no-record]

Everything runs in a fresh venv made in a temporary directory (``python -m venv``, then
``pip install -e`` of this checkout with ``pylmnn==1.6.4`` and ``six`` for the peer; pip may
take a minute), or with ``--no-venv`` in this interpreter, and with ``NUMBA_CACHE_DIR`` an
empty temporary directory; every fit in a fresh process:

* iris: a process imports ``fast_solver`` and fits iris (``LMNN(k=3, mu=0.5)``) with an empty
  cache, then a second process does the same with the cache the first filled; the seconds of
  each whole process and of the fit alone, ``--repeat`` pairs (each with its own empty cache).
* letters: the first 16,000 rows, ``LMNN(k=3, mu=0.5, tol=1e-6)`` as in
  ``validation.benchmarks.letters_fashion``: the fast solver's first fit (empty cache), PyLMNN
  1.6.4's first fit (its defaults, ``n_neighbors=3``; ``validation.peers.import_pylmnn``), then
  each again (warm). The data is read once here and handed to the fits as ``.npy``.
* the main job: ``python -m validation`` first (empty cache) and second run, on its bundled
  instances (``LMNN_SDP_DATA`` an empty folder, as on a fresh machine).

Each row gives the loops numba compiled in that process (``compiled``, top-level compilations
from numba's ``numba:compile`` events) and their seconds, and the machine's 1-minute load
average before the run; the notes give it at the start and the end. The targets of issue 61:
the iris cold process at most 2x the warm one, and letters' first fit at least 3x faster than
PyLMNN's first fit in the same run. Writes ``docs/results/cold-start.md`` and ``.csv``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lmnn_sdp.core.machine import available_cores
from validation.records import RESULTS, Recorder, add_record_option, code_version, module_command

ROOT = RESULTS.parents[1]
PEER = ("pylmnn==1.6.4", "six")
COLUMNS = ("part", "run", "cache", "process_s", "fit_s", "compiled", "compile_s", "load", "detail")
TARGETS = {"iris": 2.0, "letters": 3.0}  # cold / warm process at most; PyLMNN / fast first fit at least

PRELUDE = """
import json, sys, time
START = time.perf_counter()
from numba.core import event

class Compiles(event.Listener):
    # top-level numba compilations (those inside one are part of it): how many, and seconds
    def __init__(self):
        self.depth, self.count, self.seconds = 0, 0, 0.0
    def on_start(self, ev):
        if self.depth == 0:
            self.began = time.perf_counter()
        self.depth += 1
    def on_end(self, ev):
        self.depth -= 1
        if self.depth == 0:
            self.count += 1
            self.seconds += time.perf_counter() - self.began

COMPILES = Compiles()
event.register("numba:compile", COMPILES)

def report(**values):
    print(json.dumps(dict(values, compiled=COMPILES.count, compile_s=COMPILES.seconds,
                          in_process_s=time.perf_counter() - START)))
"""
IRIS = PRELUDE + """
import fast_solver
from sklearn.datasets import load_iris
X, y = load_iris(return_X_y=True)
tic = time.perf_counter()
fast_solver.LMNN(k=3, mu=0.5).fit(X, y)
report(fit_s=time.perf_counter() - tic, detail="")
"""
LETTERS = PRELUDE + """
import numpy as np
import fast_solver
X, y = np.load(sys.argv[1]), np.load(sys.argv[2])
tic = time.perf_counter()
result = fast_solver.LMNN(k=3, mu=0.5, tol=1e-6, max_iter=1000).fit(X, y).result_
report(fit_s=time.perf_counter() - tic,
       detail=f"converged {result.converged}, gap {result.relative_gap:.2e}, {result.n_iter} iterations")
"""
PYLMNN = PRELUDE + """
import numpy as np
from validation.peers import import_pylmnn
PyLMNN = import_pylmnn()
X, y = np.load(sys.argv[1]), np.load(sys.argv[2])
tic = time.perf_counter()
model = PyLMNN(n_neighbors=3).fit(X, y)
report(fit_s=time.perf_counter() - tic, detail=f"{model.n_iter_} iterations")
"""
MAIN_JOB = PRELUDE + """
import runpy
sys.argv = ["python -m validation"]
try:
    runpy.run_module("validation", run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as done:
    code = done.code or 0
report(fit_s=None, detail=f"exit {code}")
sys.exit(code)
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-venv", action="store_true", help="run in this interpreter, not a fresh venv")
    parser.add_argument("--repeat", type=int, default=3, help="iris cold/warm pairs (default 3)")
    parser.add_argument("--skip-letters", action="store_true", help="no letters fits")
    parser.add_argument("--skip-main-job", action="store_true", help="no runs of the main job")
    add_record_option(parser, "cold-start")
    args = parser.parse_args(argv)
    load_at_start, version = os.getloadavg()[0], code_version()
    rows = []
    with tempfile.TemporaryDirectory(prefix="lmnn-sdp-cold-") as tmp:
        tmp = Path(tmp)
        python = sys.executable if args.no_venv else fresh_venv(tmp / "venv")
        versions = package_versions(python)
        record = Recorder(args.record, "Cold start: the first fit, numba compiling, against the warm one",
                          command=module_command("validation.benchmarks.cold_start", argv), columns=COLUMNS,
                          formats={"process_s": ".2f", "fit_s": ".2f", "compile_s": ".2f", "load": ".2f"},
                          version=version)

        def add(row: dict) -> None:
            rows.append(row)
            print(" | ".join(str(row[c]) if not isinstance(row[c], float) else f"{row[c]:.2f}" for c in COLUMNS),
                  flush=True)
            record.notes = notes(rows, args, versions, load_at_start)
            record(rows)

        for pair in range(args.repeat):
            cache = fresh_cache(tmp)
            for state in ("empty", "filled"):
                add(run(python, IRIS, cache, part="iris", run_name=f"fast_solver.LMNN, process {2 * pair + 1 + (state == 'filled')}",
                        state=state))
        if not args.skip_letters:
            data = letters_files(tmp)
            cache = fresh_cache(tmp)
            for state in ("empty", "filled"):
                add(run(python, LETTERS, cache, *data, part="letters", run_name="fast_solver.LMNN", state=state))
                add(run(python, PYLMNN, cache, *data, part="letters", run_name="PyLMNN 1.6.4",
                        state="first" if state == "empty" else "second"))
        if not args.skip_main_job:
            cache, no_data = fresh_cache(tmp), tmp / "no-data"
            no_data.mkdir()
            for state in ("empty", "filled"):
                add(run(python, MAIN_JOB, cache, part="main job", run_name="python -m validation", state=state,
                        env={"LMNN_SDP_DATA": str(no_data)}))
    record.notes = notes(rows, args, versions, load_at_start)
    record(rows)
    print("\n" + record.notes)
    return 0


def fresh_venv(venv: Path) -> str:
    """A venv at ``venv`` with this checkout installed (editable) and the peer; its python."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    print(f"pip install -e {ROOT} {' '.join(PEER)} into {venv} ...", flush=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "-e", str(ROOT), *PEER], check=True)
    return python


def fresh_cache(tmp: Path) -> Path:
    """A new empty folder for numba's cache."""
    return Path(tempfile.mkdtemp(prefix="numba-cache-", dir=tmp))


def letters_files(tmp: Path) -> tuple[str, str]:
    """Letters' 16,000 training rows and labels as ``.npy`` files in ``tmp``."""
    import numpy as np

    from validation.datasets import letters_split

    X, y, _, _ = letters_split()
    paths = tmp / "letters-X.npy", tmp / "letters-y.npy"
    np.save(paths[0], X)
    np.save(paths[1], y)
    return str(paths[0]), str(paths[1])


def run(python: str, code: str, cache: Path, *args: str, part: str, run_name: str, state: str,
        env: dict | None = None) -> dict:
    """One fresh process running ``code`` with numba's cache in ``cache``: its row."""
    load = os.getloadavg()[0]
    environment = dict(os.environ, NUMBA_CACHE_DIR=str(cache), **(env or {}))
    tic = time.perf_counter()
    done = subprocess.run([python, "-c", code, *args], env=environment, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - tic
    if done.returncode != 0 and part != "main job":
        raise SystemExit(f"{part} ({run_name}) failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    detail = answer["detail"]
    if part == "main job":
        summary = [line for line in done.stdout.splitlines() if " passed (" in line]
        detail = "; ".join(summary + [detail])
    return {"part": part, "run": run_name, "cache": state, "process_s": seconds, "fit_s": answer["fit_s"],
            "compiled": answer["compiled"], "compile_s": answer["compile_s"], "load": load, "detail": detail}


def package_versions(python: str) -> str:
    """The versions that matter here, as the interpreter ``python`` has them."""
    code = ("import importlib.metadata as m, platform; print('Python ' + platform.python_version() + ', ' + "
            "', '.join(f'{p} {m.version(p)}' for p in ('numba', 'llvmlite', 'numpy', 'scipy', 'scikit-learn')))")
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def notes(rows: list[dict], args, versions: str, load_at_start: float) -> str:
    """The record's notes: the set-up, the load, and the targets as measured so far."""
    where = "this interpreter" if args.no_venv else f"a fresh venv (`pip install -e` of the checkout, {', '.join(PEER)})"
    lines = [f"Every run a fresh process in {where}, numba's cache (`NUMBA_CACHE_DIR`) a new empty folder for "
             f"each iris pair, for letters and for the main job; `cache`: empty (the process compiles) or "
             f"filled (the process before filled it). Wall-clock seconds: `process_s` the whole process, "
             f"`fit_s` the fit alone, `compile_s` numba compiling (`compiled`: top-level compilations). "
             f"{versions}; {available_cores()} cores, numba's threads as many. `load`: 1-minute load "
             f"average before the run; {load_at_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end.",
             "", *targets(rows)]
    return "\n".join(lines)


def targets(rows: list[dict]) -> list[str]:
    """The issue's two targets, as far as the rows measure them."""
    out = []
    iris = [r["process_s"] for r in rows if r["part"] == "iris"]
    if len(iris) >= 2:
        ratios = [cold / warm for cold, warm in zip(iris[::2], iris[1::2])]
        ratio = statistics.median(ratios)
        out.append(f"- Iris: cold process / warm process {', '.join(f'{r:.2f}' for r in ratios)} (median "
                   f"{ratio:.2f}); target at most {TARGETS['iris']:g}: "
                   f"{'reached' if ratio <= TARGETS['iris'] else 'not reached'}.")
    first = {r["run"]: r["fit_s"] for r in rows if r["part"] == "letters" and r["cache"] in ("empty", "first")}
    if len(first) == 2:
        fast, peer = first["fast_solver.LMNN"], first["PyLMNN 1.6.4"]
        out.append(f"- Letters: PyLMNN's first fit {peer:.2f} s / the fast solver's first fit {fast:.2f} s = "
                   f"{peer / fast:.2f}; target at least {TARGETS['letters']:g}: "
                   f"{'reached' if peer / fast >= TARGETS['letters'] else 'not reached'}.")
    return out


if __name__ == "__main__":
    sys.exit(main())
