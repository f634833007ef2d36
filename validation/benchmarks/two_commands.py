"""The README's two commands on a fresh machine, timed: a fresh clone of this checkout's HEAD,
``bash .ci/run`` (the README's test commands, the quick loop and then the tests marked slow, in a
fresh venv with the newest packages, lint, the docs, the front door, the lowest versions' quick
loop; the pytest time of each), then the README's main command as written in another
fresh venv, its install and its first run apart (numba compiling included, ``--report`` into the
clone). Writes the record
``docs/results/two-commands.md`` and ``.csv`` (``validation.records.write_record``). The main
job's own record, ``docs/results/crosscheck``, is left as it is: a fresh machine has fetched no
data, so the clone's table lacks the medium real-data rows (``python -m validation --report
docs/results`` with the data fetched writes it).

    python -m validation.benchmarks.two_commands
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from validation.records import RESULTS, write_record

ROOT = RESULTS.parents[1]


def timed(command: list[str], cwd: Path, env_bin: Path, check: bool = True) -> tuple[float, str, int]:
    """Seconds, output and exit code of ``command`` run with the venv's ``bin`` first on PATH and
    an empty data folder (``LMNN_SDP_DATA``: a fresh machine has fetched no data, so the main job
    runs its bundled instances only); with ``check``, a failure ends the benchmark."""
    env = dict(os.environ, PATH=f"{env_bin}{os.pathsep}{os.environ['PATH']}", VIRTUAL_ENV=str(env_bin.parent),
               LMNN_SDP_DATA=str(cwd.parent / "no-data"))
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if check and done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return seconds, done.stdout, done.returncode


def _readme_main_command(clone: Path) -> tuple[str, str]:
    """The README's main command as ``.ci/readme-command`` reads it, split into its install and its run."""
    command = subprocess.run(["bash", ".ci/readme-command", "main"], cwd=clone, capture_output=True, text=True,
                             check=True).stdout.strip()
    install, run = (part.strip() for part in command.split("&&"))
    return install, run


def main() -> int:
    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="lmnn-sdp-fresh-") as tmp:
        clone, venv = Path(tmp) / "clone", Path(tmp) / "venv"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True,
                                check=True).stdout.strip()  # the commit measured, whatever HEAD is at the end
        ci_seconds, ci_out, _ = timed(["bash", ".ci/run"], clone, Path(sys.executable).parent)
        runs = re.findall(r"(\d+ passed.*?) in ([\d.]+)s", ci_out)  # the README's two test commands, .ci/lowest's
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        bin_dir = venv / "bin"
        install, main_job = _readme_main_command(clone)
        install_seconds, _, _ = timed(["bash", "-c", install], clone, bin_dir)
        job_seconds, job_out, job_code = timed(["bash", "-c", f"{main_job} --report docs/results"], clone,
                                               bin_dir, check=False)
        versions = subprocess.run([str(bin_dir / "python"), "-c", "import importlib.metadata as m; print(', '.join("
                                   "f'{p} {m.version(p)}' for p in ('numpy', 'scipy', 'scikit-learn', 'cvxpy', "
                                   "'clarabel', 'scs', 'numba')))"], capture_output=True, text=True).stdout.strip()
    summary = "; ".join(line for line in job_out.splitlines() if " passed (" in line or line.startswith("FAILED"))
    summary += f" (exit {job_code})"
    rows = [{"command": "`bash .ci/run` (the README's test commands, ruff; the docs; `.ci/front-door`; `.ci/lowest`)",
             "seconds": ci_seconds,
             "outcome": "; ".join(f"{job} pytest: {passed} in {float(seconds):.0f} s" for job, (passed, seconds)
                                  in zip(("the quick tests'", "the slow tests'", "lowest versions'"), runs))},
            {"command": f"`{install}` (a fresh venv, no extras)", "seconds": install_seconds, "outcome": "exit 0"},
            {"command": f"`{main_job} --report docs/results` (first run, numba compiling, no data)",
             "seconds": job_seconds, "outcome": summary}]
    write_record("two-commands", rows, title="The README's two commands on a fresh clone and a fresh venv",
                 notes=f"Packages: {versions}. Load average {load_at_start:.1f} at the start, "
                       f"{os.getloadavg()[0]:.1f} at the end (2 cores).", command="python -m validation.benchmarks.two_commands",
                 formats={"seconds": ".0f"}, version=commit)
    print((RESULTS / "two-commands.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
