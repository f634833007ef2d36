"""A corpus of certified LMNN instances for solver regression tests.

Format (documented in ``validation/corpus/README.md``, readable without this
library): one ``NAME.npz`` per instance holding ``X`` (n, d) float64, ``y`` (n,)
int64, ``targets`` (n, k) int64, ``mu`` (), ``M`` (d, d) the certified metric,
``triplets`` (T, 3) int64 and ``multipliers`` (T,) the dual certificate; and
``manifest.json`` with, per instance, the optimum (``eps(M)``), the certified
lower bound, the relative gap and provenance (source data, subset, solver,
versions).

``build`` solves and certifies the built-in suite (``validation.instances``);
``check`` re-verifies every stored certificate from the stored arrays alone:
the objective of the stored ``M`` and the lower bound of the stored multipliers
(clipped into the box and scaled into the dual cone by ``dual_lower_bound``).
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from lmnn_sdp import LMNNProblem, solve_lmnn
from lmnn_sdp.certificate import dual_lower_bound, relative_gap
from lmnn_sdp.dual import complementary_multipliers
from lmnn_sdp.formulation import reduced_space
from validation.instances import Instance, builtin_instances

CORPUS_DIR = Path(__file__).parent / "corpus"
MANIFEST = "manifest.json"
FORMAT_VERSION = 1
OBJECTIVE = ("eps(M) = (1-mu) sum_{i, j~>i} D_M(x_i, x_j) + mu sum_{i, j~>i, l: y_l != y_i} "
             "[1 + D_M(x_i, x_j) - D_M(x_i, x_l)]_+ with D_M(a, b) = (a-b)^T M (a-b) "
             "(Weinberger & Saul, JMLR 2009, eq. 14; linear hinge, unit margin)")


def build(directory: Path = CORPUS_DIR, instances: list[Instance] | None = None,
          tol: float = 1e-7, progress: bool = True) -> dict:
    """Solve, certify and store every instance; returns the manifest."""
    directory.mkdir(parents=True, exist_ok=True)
    entries = []
    for instance in tqdm(instances or builtin_instances(), desc="corpus", disable=not progress):
        problem = instance.problem()
        result = solve_lmnn(problem, method="aggregated", tol=tol)
        if not result.certificate.certified:
            raise RuntimeError(f"{instance.name}: certified only to {result.relative_gap:.2g}")
        triplets, multipliers, lower = _certificate_arrays(problem, result)
        gap = relative_gap(result.objective, lower)
        if gap > tol:
            raise RuntimeError(f"{instance.name}: stored multipliers prove only a gap of {gap:.2g}")
        np.savez_compressed(directory / f"{instance.name}.npz", X=problem.X,
                            y=problem.label_codes.astype(np.int64),
                            targets=problem.targets.astype(np.int64), mu=np.float64(problem.mu),
                            M=result.M, triplets=triplets.astype(np.int64), multipliers=multipliers)
        entries.append({
            "name": instance.name, "file": f"{instance.name}.npz",
            "n": problem.n_samples, "d": problem.n_features, "k": problem.k, "mu": problem.mu,
            "classes": len(problem.classes), "triplets": problem.n_triplets,
            "optimum": result.objective, "lower_bound": lower,
            "relative_gap": gap, "source": instance.source,
            "solver": f"lmnn_sdp aggregated active sets, {result.solver}",
        })
    manifest = {"format_version": FORMAT_VERSION, "objective": OBJECTIVE,
                "versions": _versions(), "instances": entries}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _certificate_arrays(problem: LMNNProblem, result) -> tuple[np.ndarray, np.ndarray, float]:
    """The best multipliers we have for ``result.M``, clipped and scaled as proved.

    Candidates: the solve's own and those of complementary slackness at ``M``.
    Returns ``(triplets (T, 3), multipliers (T,), lower bound they prove)``."""
    space = reduced_space(problem)
    candidates = [(result.triplets, result.multipliers),
                  complementary_multipliers(problem, space, result.M, band=1e-3)[:2]]
    best = None
    for triplets, multipliers in candidates:
        lower, alpha, _ = dual_lower_bound(problem, triplets, multipliers, space)
        if best is None or lower > best[2]:
            best = (triplets, alpha * np.clip(multipliers, 0, problem.mu), lower)
    return best


@dataclass(frozen=True)
class CheckedInstance:
    name: str
    optimum: float  # stored
    objective: float  # eps(stored M), recomputed
    lower_bound: float  # recomputed from the stored multipliers
    relative_gap: float
    ok: bool


def check(directory: Path = CORPUS_DIR, tol: float = 1e-6) -> list[CheckedInstance]:
    """Re-verify every stored certificate from the stored arrays alone."""
    manifest = load_manifest(directory)
    out = []
    for entry in manifest["instances"]:
        data = load_instance(entry["name"], directory)
        problem = LMNNProblem(data["X"], data["y"], targets=data["targets"], mu=float(data["mu"]))
        objective = problem.objective(data["M"])
        lower, _, _ = dual_lower_bound(problem, data["triplets"], data["multipliers"])
        gap = relative_gap(objective, lower)
        ok = (np.linalg.eigvalsh(data["M"])[0] >= -1e-10 * np.abs(data["M"]).max()
              and abs(objective - entry["optimum"]) <= 1e-9 * max(1.0, abs(entry["optimum"]))
              and lower >= entry["lower_bound"] - 1e-9 * max(1.0, abs(entry["lower_bound"]))
              and gap <= tol)
        out.append(CheckedInstance(entry["name"], entry["optimum"], objective, lower, gap, bool(ok)))
    return out


def load_manifest(directory: Path = CORPUS_DIR) -> dict:
    path = Path(directory) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"no corpus at {directory}; build it with `python -m validation corpus build`.")
    return json.loads(path.read_text())


def load_instance(name: str, directory: Path = CORPUS_DIR) -> dict:
    """The arrays of one stored instance as a dict (keys as in the module docstring)."""
    with np.load(Path(directory) / f"{name}.npz") as data:
        return {key: data[key] for key in data.files}


def _versions() -> dict:
    packages = ("numpy", "scipy", "cvxpy", "clarabel", "scikit-learn", "lmnn-sdp")
    return {"python": platform.python_version(), **{p: version(p) for p in packages}}
