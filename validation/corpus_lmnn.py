"""Corpus entries of single-metric LMNN (Weinberger & Saul, JMLR 2009, eq. 14).

Arrays: ``X`` (n, d), ``y`` (n,), ``targets`` (n, k), ``mu`` (), the certified
metric ``M`` (d, d), and the dual certificate ``triplets`` (T, 3) with
``multipliers`` (T,) in ``[0, mu]``, already scaled into the dual cone. The
bound is ``certificate.dual_lower_bound`` of the stored multipliers (weak
duality, ``lmnn_sdp.dual``).
"""

from __future__ import annotations

import numpy as np

from lmnn_sdp import LMNNProblem, solve_lmnn
from lmnn_sdp.bounds import dual_lower_bound, relative_gap
from lmnn_sdp.dual import complementary_multipliers
from lmnn_sdp.formulation import reduced_space
from validation.instances import Instance

OBJECTIVE = ("eps(M) = (1-mu) sum_{i, j~>i} D_M(x_i, x_j) + mu sum_{i, j~>i, l: y_l != y_i} "
             "[1 + D_M(x_i, x_j) - D_M(x_i, x_l)]_+ with D_M(a, b) = (a-b)^T M (a-b) "
             "(Weinberger & Saul, JMLR 2009, eq. 14; linear hinge, unit margin)")


def certify(instance: Instance, tol: float) -> tuple[dict, dict]:
    """Solve and certify one instance; returns ``(arrays, manifest entry)``."""
    problem = instance.problem()
    result = solve_lmnn(problem, method="aggregated", tol=tol)
    if not result.certificate.certified:
        raise RuntimeError(f"{instance.name}: certified only to {result.relative_gap:.2g}")
    triplets, multipliers, lower = _certificate_arrays(problem, result)
    gap = relative_gap(result.objective, lower)
    if gap > tol:
        raise RuntimeError(f"{instance.name}: stored multipliers prove only a gap of {gap:.2g}")
    arrays = {**problem_arrays(problem), "M": result.M, "triplets": triplets.astype(np.int64),
              "multipliers": multipliers}
    entry = {"problem": "lmnn", **problem_fields(problem), "optimum": result.objective,
             "lower_bound": lower, "relative_gap": gap, "source": instance.source,
             "solver": f"lmnn_sdp aggregated active sets, {result.solver}"}
    return arrays, entry


def problem_arrays(problem: LMNNProblem) -> dict:
    """``X`` (n, d), ``y`` (n,), ``targets`` (n, k), ``mu`` (): the data of eq. 14."""
    return {"X": problem.X, "y": problem.label_codes.astype(np.int64),
            "targets": problem.targets.astype(np.int64), "mu": np.float64(problem.mu)}


def problem_fields(problem: LMNNProblem) -> dict:
    """Manifest fields describing the problem: sizes, ``k``, ``mu``, number of triplets."""
    return {"n": problem.n_samples, "d": problem.n_features, "k": problem.k, "mu": problem.mu,
            "classes": len(problem.classes), "triplets": problem.n_triplets}


def verify(data: dict) -> tuple[float, float, bool]:
    """``(eps(M), lower bound of the stored multipliers, M is PSD)`` from the arrays alone."""
    problem = LMNNProblem(data["X"], data["y"], targets=data["targets"], mu=float(data["mu"]))
    lower, _, _ = dual_lower_bound(problem, data["triplets"], data["multipliers"])
    return problem.objective(data["M"]), lower, is_psd(data["M"])


def is_psd(M: np.ndarray) -> bool:
    """Smallest eigenvalue of a symmetric (d, d) matrix >= -1e-10 of its largest entry."""
    return bool(np.linalg.eigvalsh(M)[0] >= -1e-10 * np.abs(M).max())


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
