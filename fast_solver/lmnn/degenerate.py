"""The problems whose optimum ``fast_solver.solve`` knows without iterating.

- ``mu = 0``: eq. 14 is the pull term alone, ``>= 0`` and attained at ``M = 0``.
- ``mu`` so small that ``M = 0``, where eq. 14 is ``mu`` times the number of triplets, is within
  ``atol`` of the optimum 0 (below it the smoothing's ``gamma / mu`` may overflow).
- Every impostor can be pushed out along the null space of its cluster's pull matrix
  (``ClusterWhitening.every_impostor_killable``, as with fewer points than features):
  eq. 14's optimum is 0, attained in the limit of metrics that grow along those null
  spaces; in the whitened coordinates the solver works in, that is ``M = 0`` (the
  certificate pushes the impostors out when it lifts the metric to the inputs).
- Every point coincides with its target neighbours (``LMNNProblem.pull_vanishes``): the pull
  term vanishes for every metric (``without_pull``).

The solver proves each of these with the same certificate as any other answer, so a
degenerate case is ``converged`` only when the certificate says so.

And one whose optimum no certificate proves: ``mu = 1`` (push only) with a positive optimum
(``push_only_stop``; design note ``docs/design/certificates.md``, "Push only").
"""

from __future__ import annotations

import time

import numpy as np

from fast_solver.lmnn.options import SolverOptions
from fast_solver.lmnn.result import FastLMNNResult, Stage, without_pull_message
from lmnn_sdp.certificates.certificate import ATOL, prove
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import sphered_space
from lmnn_sdp.core.whitening import ClusterWhitening
from lmnn_sdp.status import CONVERGED, STALLED


def known_optimum(problem: LMNNProblem, whitening: ClusterWhitening, L: np.ndarray,
                  resumed: bool) -> tuple[str, np.ndarray] | None:
    """Why the optimum is known ("mu=0", "small mu" or "zero") and the whitened metrics
    (C, r, r) that attain it (within ``ATOL``, the certificate's default, for "small mu"), for a
    solve that would start at ``L`` (C, r, r); None when it must iterate. A ``resumed`` solve
    had iterated, so it was not a zero optimum."""
    if problem.mu == 0.0:  # eq. 14 is (pull >= 0), attained at M = 0
        return "mu=0", np.zeros_like(L)
    if problem.mu * problem.n_triplets <= ATOL / 2:  # eq. 14 at M = 0, with room for its rounding
        return "small mu", np.zeros_like(L)
    if not resumed and whitening.every_impostor_killable(problem.label_codes):
        r = L.shape[2]
        return "zero", np.zeros((len(L), r, r))  # pushed out along the null spaces
    return None


def without_pull(problem: LMNNProblem, tol: float) -> FastLMNNResult:
    """eq. 14 (eq. 16) when every point coincides with its target neighbours.

    The pull term vanishes and each triplet costs ``mu [1 - D(i, l)]_+``. With ``B`` the
    sphered basis (``core.space.sphered_space``), every metric ``t B B^T`` puts the
    impostors that differ from their point at distance ``>= 2`` for ``t = 2 / min D_I(i, l)``
    (``D_I`` in sphered coordinates), so it attains the minimum, ``mu`` times the number of
    triplets whose impostor coincides with its point; multipliers ``mu`` on those triplets
    prove it (their dual matrix is 0)."""
    start = time.perf_counter()
    space = sphered_space(problem)
    codes, Xr = problem.label_codes, space.inputs
    i, l = np.nonzero(codes[:, None] != codes[None, :])
    same = ~np.any(problem.X[i] != problem.X[l], axis=1)
    distances = np.sum((Xr[i[~same]] - Xr[l[~same]]) ** 2, axis=1)
    distances = distances[distances > 0]  # a difference below the sphered rounding stays
    t = 2.0 / distances.min() if len(distances) else 1.0
    M = t * (space.basis @ space.basis.T)
    metric = M if problem.clusters is None else np.broadcast_to(M, (problem.n_clusters, *M.shape))
    k = problem.k
    triplets = np.column_stack([np.repeat(i[same], k), problem.targets[i[same]].ravel(),
                                np.repeat(l[same], k)])
    certificate = prove(problem, metric, triplets, np.full(len(triplets), problem.mu), tol=tol)
    return FastLMNNResult(
        certificate=certificate, status=CONVERGED if certificate.certified else STALLED,
        message=without_pull_message(certificate), n_iter=0, n_stages=0, n_searches=0,
        n_evaluations=0, n_hessian_products=0, n_retreats=0, search_fraction=0.0, n_active=len(triplets),
        active_triplets=triplets, timings={"total": time.perf_counter() - start})


def push_only_stop(stages: list[Stage], gamma: float, options: SolverOptions) -> str | None:
    """Why a solve at ``mu = 1`` ends after its last stage (``stages[-1]``, at width ``gamma``)
    without a certificate: "push only" when its best objective, above ``atol``, fell by at most
    ``push_only_decrease`` of itself over the last ``push_only_window`` stages; "width" when the
    width has reached float64's resolution of the unit margin (a cap: eq. 14 may still be
    falling, towards an infimum that is not attained); None while it should go on.

    At ``mu = 1`` the pull term, through which the bound scales multipliers into the dual cone,
    is 0: the bound proves no positive optimum (it drops the impostor multipliers, as for a
    singular pull matrix), only a zero one, by ``atol``. So iterations that no longer lower the
    best objective cannot end in a certificate unless it is within ``atol`` of 0 (the solver
    tries that proof first).

    Examples
    --------
    >>> from fast_solver.lmnn.options import SolverOptions
    >>> from fast_solver.lmnn.result import Stage
    >>> def stages(*uppers):
    ...     return [Stage(s, 0.1, 10, "radius", u, 0.0, 1.0, 5, 1, 9, 0.0) for s, u in enumerate(uppers)]
    >>> push_only_stop(stages(198.4, 198.2, 198.137, 198.137, 198.137), 1e-3, SolverOptions())
    >>> push_only_stop(stages(198.4, 198.137, 198.137, 198.137, 198.137), 1e-3, SolverOptions())
    'push only'
    >>> push_only_stop(stages(3.0, 2.0, 1.0), 1e-17, SolverOptions())
    'width'
    """
    stalled = recent_fall(stages, options.push_only_window) <= options.push_only_decrease
    if stalled and stages[-1].upper > ATOL:  # within ``atol`` of 0, a shrinking metric may still prove it
        return "push only"
    if gamma <= np.finfo(float).eps:
        return "width"
    return None


def recent_fall(stages: list[Stage], window: int) -> float:
    """The relative fall of the best objective over the last ``window`` stages; inf with
    ``window`` stages or fewer."""
    if len(stages) <= window:
        return np.inf
    before, best = stages[-1 - window].upper, stages[-1].upper
    return (before - best) / best if best > 0 else np.inf
