"""Starting metrics of the exact solvers: the best multiple of the identity (reduced space)."""

from __future__ import annotations

import numpy as np

from lmnn_sdp.certificates.bounds import check_candidate_metric
from lmnn_sdp.core.clusters import push_out_of_null_spaces
from lmnn_sdp.core.line_search import golden_section
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import ReducedSpace


def best_scaled_identity(problem: LMNNProblem, space: ReducedSpace) -> np.ndarray:
    """The metric ``s * I`` (reduced space, ``2^-6 <= s <= 2^10``) of least ``eps``, (d, d).

    ``eps(s I)`` is convex in ``s``, so unimodal in ``log s``: golden section, 20 steps."""
    metric = lambda e: space.lift(2.0**e * np.eye(space.rank))  # noqa: E731
    lmnn = problem.with_clusters(None)  # one metric for all clusters: eq. 16 is eq. 14
    exponent, _ = golden_section(lambda e: lmnn.objective(metric(e)), -6.0, 10.0, 20)
    return metric(exponent)


def starting_metrics(problem: LMNNProblem, space: ReducedSpace, start=None) -> np.ndarray:
    """``start`` validated (a metric (d, d), or (C, d, d) for a problem with clusters), or the
    best scaled identity for every cluster; then killable impostors are pushed out
    (``sdp.push_out_of_null_spaces``). Shape (C, d, d), C = 1 without clusters."""
    if start is not None:
        metrics = check_candidate_metric(problem, start)[0]
        metrics = metrics if problem.clusters is not None else metrics[None]
    else:
        metrics = np.repeat(best_scaled_identity(problem, space)[None], problem.n_clusters, axis=0)
    return push_out_of_null_spaces(problem, space, metrics)
