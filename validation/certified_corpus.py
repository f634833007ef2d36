"""A corpus of certified instances for solver regression tests.

Four problem kinds, one module each: ``corpus_lmnn`` (eq. 14),
``corpus_multi_metric`` (sec. 5.2), ``corpus_mmc`` (MMC, full and diagonal).
Format (documented in ``validation/corpus/README.md``, readable without this
library): one ``NAME.npz`` per instance with the inputs, the certified
metric(s) and the dual certificate, and ``manifest.json`` with, per instance,
its ``problem`` kind, the optimum, the certified bound (``lower_bound`` of a
minimisation, ``upper_bound`` of MMC, a maximisation), the relative gap and
provenance (source data, subset, seed, solver, versions).

``build`` solves and certifies the built-in suite; ``check`` re-verifies every
stored certificate from the stored arrays alone: the objective of the stored
metric(s) and the bound proved by the stored certificate, against the manifest.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from functools import partial
from importlib.metadata import version
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from lmnn_sdp.bounds import relative_gap
from validation import corpus_lmnn, corpus_mmc, corpus_multi_metric
from validation.corpus_mmc import MMCInstance, mmc_instances
from validation.corpus_multi_metric import MMInstance, mm_instances
from validation.instances import Instance, builtin_instances

CORPUS_DIR = Path(__file__).parent / "corpus"
MANIFEST = "manifest.json"
FORMAT_VERSION = 2
OBJECTIVES = {"lmnn": corpus_lmnn.OBJECTIVE, "multi-metric-lmnn": corpus_multi_metric.OBJECTIVE,
              "mmc": corpus_mmc.OBJECTIVE, "mmc-diagonal": corpus_mmc.OBJECTIVE_DIAGONAL}
VERIFY = {"lmnn": corpus_lmnn.verify, "multi-metric-lmnn": corpus_multi_metric.verify,
          "mmc": partial(corpus_mmc.verify, diagonal=False),
          "mmc-diagonal": partial(corpus_mmc.verify, diagonal=True)}
MAXIMISATIONS = {"mmc", "mmc-diagonal"}  # their bound is an upper bound


def corpus_instances() -> list:
    """LMNN (``validation.instances``), multi-metric and MMC instances, in a fixed order."""
    return builtin_instances() + mm_instances() + mmc_instances()


def build(directory: Path = CORPUS_DIR, instances: list | None = None,
          tol: float = 1e-7, progress: bool = True) -> dict:
    """Solve, certify and store every instance; returns the manifest."""
    certifiers = {Instance: corpus_lmnn.certify, MMInstance: corpus_multi_metric.certify,
                  MMCInstance: corpus_mmc.certify}
    directory.mkdir(parents=True, exist_ok=True)
    entries = []
    for instance in tqdm(instances or corpus_instances(), desc="corpus", disable=not progress):
        arrays, entry = certifiers[type(instance)](instance, tol)
        np.savez_compressed(directory / f"{instance.name}.npz", **arrays)
        entries.append({"name": instance.name, "file": f"{instance.name}.npz", **entry})
    used = {entry["problem"] for entry in entries}
    manifest = {"format_version": FORMAT_VERSION,
                "objectives": {p: text for p, text in OBJECTIVES.items() if p in used},
                "versions": _versions(), "instances": entries}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


@dataclass(frozen=True)
class CheckedInstance:
    name: str
    problem: str
    optimum: float  # stored
    objective: float  # of the stored metric(s), recomputed
    bound: float  # recomputed from the stored certificate: lower, or upper for MMC
    relative_gap: float
    ok: bool


def check(directory: Path = CORPUS_DIR, tol: float = 1e-6) -> list[CheckedInstance]:
    """Re-verify every stored certificate from the stored arrays alone.

    An instance passes when its metric(s) are feasible, the recomputed objective
    matches ``optimum``, the recomputed bound is at least as strong as the stored
    one and the gap is at most ``tol``: ``(optimum - lower) / optimum`` for a
    minimisation, ``(upper - optimum) / optimum`` for MMC."""
    out = []
    for entry in load_manifest(directory)["instances"]:
        problem = entry["problem"]
        objective, bound, feasible = VERIFY[problem](load_instance(entry["name"], directory))
        if problem in MAXIMISATIONS:
            claimed = entry["upper_bound"]
            proves, gap = bound <= claimed + _slack(claimed), (bound - objective) / objective
        else:
            claimed = entry["lower_bound"]
            proves, gap = bound >= claimed - _slack(claimed), relative_gap(objective, bound)
        ok = (feasible and proves and gap <= tol
              and abs(objective - entry["optimum"]) <= _slack(entry["optimum"]))
        out.append(CheckedInstance(entry["name"], problem, entry["optimum"], objective, bound,
                                   gap, bool(ok)))
    return out


def load_manifest(directory: Path = CORPUS_DIR) -> dict:
    path = Path(directory) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"no corpus at {directory}; build it with `python -m validation corpus build`.")
    return json.loads(path.read_text())


def load_instance(name: str, directory: Path = CORPUS_DIR) -> dict:
    """The arrays of one stored instance as a dict (keys in ``validation/corpus/README.md``)."""
    with np.load(Path(directory) / f"{name}.npz") as data:
        return {key: data[key] for key in data.files}


def _slack(value: float) -> float:
    """Rounding allowed when a recomputed number is compared with a stored one."""
    return 1e-9 * max(1.0, abs(value))


def _versions() -> dict:
    packages = ("numpy", "scipy", "cvxpy", "clarabel", "scikit-learn", "lmnn-sdp")
    return {"python": platform.python_version(), **{p: version(p) for p in packages}}
