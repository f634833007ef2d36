"""A corpus of certified instances for solver regression tests.

Four problem kinds, one module each: ``lmnn`` (eq. 14), ``multi_metric``
(sec. 5.2), ``mmc`` (MMC, full and diagonal). The data ships with the package
``lmnn_sdp.testing`` (``lmnn_sdp/testing/corpus/``, read by
``lmnn_sdp.testing.corpus_cases``); this module builds and checks it.
Format (documented in ``lmnn_sdp/testing/corpus/README.md``, readable without this
library): every instance is a saved certificate, ``NAME.npz`` with the inputs,
the certified metric(s) and the dual evidence and ``NAME.json`` with its
numbers (``lmnn_sdp.certificates.storage``); ``manifest.json`` lists the
instances with their problem kind and provenance (source data, subset, seed,
solver) and the versions that built them.

``build`` solves and certifies the built-in suite; ``check`` re-verifies every
stored certificate with its own ``verify()``: the objective of the stored
metric(s) and the bound proved by the stored evidence, against the stored numbers;
``refresh`` re-proves the stored evidence (metrics and multipliers, no solve) and saves
it in the current format, for when the rules of a certificate change.
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from tqdm.auto import tqdm

from lmnn_sdp import certificates
from lmnn_sdp.certificates import storage
from lmnn_sdp.certificates.certificate import prove
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.testing import corpus_dir
from validation.corpus import lmnn, mmc, multi_metric
from validation.corpus.mmc import MMCInstance, mmc_instances
from validation.corpus.multi_metric import MMInstance, mm_instances
from validation.instances import Instance, builtin_instances

CORPUS_DIR = corpus_dir()
MANIFEST = "manifest.json"
FORMAT_VERSION = 5
OBJECTIVES = {"lmnn": lmnn.OBJECTIVE, "multi-metric-lmnn": multi_metric.OBJECTIVE,
              "mmc": mmc.OBJECTIVE, "mmc-diagonal": mmc.OBJECTIVE_DIAGONAL}
CERTIFIERS = {Instance: lmnn.certify, MMInstance: multi_metric.certify,
              MMCInstance: mmc.certify}


def corpus_instances() -> list:
    """LMNN (``validation.instances``), multi-metric and MMC instances, in a fixed order."""
    return builtin_instances() + mm_instances() + mmc_instances()


def build(directory: Path = CORPUS_DIR, instances: list | None = None,
          tol: float = 1e-7, progress: bool = True) -> dict:
    """Solve, certify to ``tol`` and save every instance (default ``corpus_instances()``);
    returns the manifest. Given ``instances``, an existing manifest keeps its other entries
    and its ``versions``, which gain ``extended``, and the new entries take their place in
    the order of ``corpus_instances()``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    entries, versions = {}, _versions()
    if instances is not None and (directory / MANIFEST).exists():
        previous = load_manifest(directory)
        entries = {entry["name"]: entry for entry in previous["instances"]}
        versions = {**previous["versions"], "extended": versions}
    for instance in tqdm(instances or corpus_instances(), desc="corpus", disable=not progress):
        certificate, solver = CERTIFIERS[type(instance)](instance, tol)
        certificate.save(directory / instance.name)
        entries[instance.name] = {"name": instance.name, "problem": certificate.kind,
                                  "source": instance.source, "solver": solver}
    order = {instance.name: at for at, instance in enumerate(corpus_instances())}
    entries = sorted(entries.values(), key=lambda entry: order.get(entry["name"], len(order)))
    used = {entry["problem"] for entry in entries}
    manifest = {"format_version": FORMAT_VERSION,
                "objectives": {p: text for p, text in OBJECTIVES.items() if p in used},
                "versions": versions, "instances": entries}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def refresh(directory: Path = CORPUS_DIR, progress: bool = True) -> dict:
    """Re-prove every stored certificate from its evidence alone (the stored metric(s),
    triplets and multipliers, or MMC's tangents and multiplier; nothing is solved) and save
    it in the current format; returns the manifest, whose ``versions`` gain ``refreshed``."""
    directory = Path(directory)
    manifest = load_manifest(directory)
    for entry in tqdm(manifest["instances"], desc="refresh", disable=not progress):
        path = directory / entry["name"]
        if entry["problem"].startswith("mmc"):
            certificates.load(path).verify().save(path)
            continue
        arrays, fields = storage.load(path)
        problem = LMNNProblem(arrays["X"], arrays["y"], targets=arrays["targets"],
                              mu=float(arrays["mu"]), clusters=arrays.get("clusters"))
        prove(problem, arrays["M"], arrays["triplets"], arrays["multipliers"], tol=fields["tol"]).save(path)
    manifest["format_version"] = FORMAT_VERSION
    manifest["versions"]["refreshed"] = _versions()
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


@dataclass(frozen=True)
class CheckedInstance:
    name: str
    problem: str
    upper: float  # as stored
    lower: float
    relative_gap: float
    ok: bool
    error: str  # why it was refused ("" when ok)


def check(directory: Path = CORPUS_DIR, tol: float = 1e-6) -> list[CheckedInstance]:
    """Re-verify every stored certificate with its own ``verify()``.

    An instance passes when it loads (its arrays match their digest and its
    numbers the arrays), ``verify()`` re-derives every stored number from the
    evidence, and the certified gap is at most ``tol``."""
    out = []
    for entry in load_manifest(directory)["instances"]:
        path = Path(directory) / entry["name"]
        try:
            certificate = certificates.load(path)
            if certificate.kind != entry["problem"]:
                raise ValueError(f"the manifest says {entry['problem']!r} but the certificate "
                                 f"is {certificate.kind!r}")
            certificate.verify()
            error = "" if certificate.relative_gap <= tol else f"gap above tol={tol:g}"
        except ValueError as err:
            certificate, error = None, str(err)
        numbers = ((certificate.upper, certificate.lower, certificate.relative_gap)
                   if certificate is not None else (float("nan"),) * 3)
        out.append(CheckedInstance(entry["name"], entry["problem"], *numbers, not error, error))
    return out


def load_manifest(directory: Path = CORPUS_DIR) -> dict:
    path = Path(directory) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"no corpus at {directory}; build it with `python -m validation corpus build`.")
    return json.loads(path.read_text())


def load_certificate(name: str, directory: Path = CORPUS_DIR):
    """The stored certificate ``name`` (not yet verified)."""
    names = [e["name"] for e in load_manifest(directory)["instances"]]
    if name not in names:
        raise KeyError(f"no instance {name!r} in the corpus at {directory}.")
    return certificates.load(Path(directory) / name)


def _versions() -> dict:
    packages = ("numpy", "scipy", "cvxpy", "clarabel", "scikit-learn", "lmnn-sdp")
    return {"python": platform.python_version(), **{p: version(p) for p in packages}}
