"""``assert_lmnn_optimal``: a test passes only when a certificate proves the metric optimal."""

from __future__ import annotations

import numpy as np

from lmnn_sdp.certificates.bounds import check_candidate_metric
from lmnn_sdp.certificates.certificate import Certificate
from lmnn_sdp.core.checks import check_tol
from lmnn_sdp.core.problem import LMNNProblem

TOP_TRIPLETS = 5


def lmnn_problem(X, y, k=3, mu=0.5, targets=None, clusters=None) -> LMNNProblem:
    """The problem of eq. 14 (or sec. 5.2 with clusters) with explicit ``targets`` or ``k``."""
    if targets is not None:
        return LMNNProblem(X, y, mu=mu, targets=targets, clusters=clusters)
    return LMNNProblem(X, y, k=k, mu=mu, clusters=clusters)


def checked_metric(problem: LMNNProblem, metric) -> np.ndarray:
    """The metric as given, or an AssertionError naming what is wrong with it."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this frame
    try:
        return check_candidate_metric(problem, metric)[0]
    except (TypeError, ValueError) as err:
        raise AssertionError(f"metric refused: {err}") from None


def assert_lmnn_optimal(X, y, metric, *, k: int = 3, mu: float = 0.5, targets=None, rtol: float = 1e-6,
                        clusters=None, excess: bool = True, solver: str = "CLARABEL") -> Certificate:
    """Assert that a certificate proves ``metric`` within ``rtol`` of the optimum of LMNN.

    The metric passes when a rigorous lower bound ``L`` on the optimum of eq. 14
    (Weinberger & Saul, JMLR 2009), or of multi-metric LMNN (sec. 5.2, eq. 16) with
    ``clusters``, proves ``(eps(M) - L) / eps(M) <= rtol`` (rounding counted against it).
    ``L`` is first the metric's own dual bound (``lmnn_sdp.certify``: multipliers of
    complementary slackness at ``M``); when that does not prove it and ``excess`` is True,
    the certified optimum is solved on the exact side (``lmnn_sdp.excess_over_optimum``:
    ``solve_lmnn(method="aggregated")``, cvxpy) and its bound is used. Nothing else
    decides: solver status strings play no part.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs.
    y : array-like of shape (n_samples,)
        Labels.
    metric : array-like of shape (n_features, n_features), or (n_clusters, n_features, n_features)
        The metric under test (one per cluster with ``clusters``).
    k : int, default=3
        Target neighbours per point (the k nearest same-class points); ignored with
        ``targets``.
    mu : float, default=0.5
        Weight of the push term, in [0, 1].
    targets : array-like of int of shape (n_samples, k), optional
        Explicit target neighbours.
    rtol : float, default=1e-6
        Largest certified relative gap accepted; finite, >= 0.
    clusters : array-like of int of shape (n_samples,), optional
        Cluster of each point, ``0..C-1``: multi-metric LMNN.
    excess : bool, default=True
        Solve for the certified optimum when the metric's own bound does not prove it;
        False skips that solve (faster; a failure then reports only the metric's own bound).
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The cvxpy solver of the bounds.

    Returns
    -------
    Certificate
        The metric's own certificate (with ``relative_gap`` from its own bound).

    Raises
    ------
    AssertionError
        The metric is not proved within ``rtol``: the message states what is wrong in its
        first line, then the objective, the certified lower bound and which certificate
        proves it, the gap, the excess over the optimum, the pull and push terms at the
        metric and at the optimum, and the triplets with the largest hinge at the metric.
        Also for a metric of the wrong shape, not finite, not symmetric or not PSD (the
        first line says which): a wrong metric is a failed test, not bad usage.
    ValueError
        Bad ``X``, ``y``, ``k``, ``mu``, ``targets``, ``clusters`` or ``rtol``.
    TypeError
        An ``rtol`` that is not a real number (``True``, ``"1e-6"``).

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp.testing import assert_lmnn_optimal, corpus_cases
    >>> case = corpus_cases()[3]
    >>> cert = assert_lmnn_optimal(case.X, case.y, case.metric, k=case.k, mu=case.mu)
    >>> cert.certified
    True
    >>> assert_lmnn_optimal(case.X, case.y, np.eye(4), k=case.k, mu=case.mu)
    Traceback (most recent call last):
    ...
    AssertionError: metric is far from optimal for LMNN (eq. 14): relative gap 0.4399 > rtol 1e-06
    ...
    >>> assert_lmnn_optimal(case.X, case.y, -np.eye(4), k=case.k, mu=case.mu)
    Traceback (most recent call last):
    ...
    AssertionError: metric refused: M is not positive semidefinite...
    """
    __tracebackhide__ = True  # a failure shows the test's line and the message, not this source
    from lmnn_sdp.candidate import certify
    from lmnn_sdp.excess import excess_over_optimum

    check_tol(rtol, "rtol")
    problem = lmnn_problem(X, y, k, mu, targets, clusters)
    M = checked_metric(problem, metric)
    own = certify(problem, M, tol=rtol, solver=solver)
    if own.certified:
        return own
    if own.refused:
        raise AssertionError(f"metric not certified: {own.refused}")
    found = excess_over_optimum(problem, M, certificate=own, tol=min(1e-7, rtol / 10),
                                solver=solver) if excess else None
    upper = own.upper + own.upper_error
    if found is not None and found.excess <= rtol:
        return own
    gap = found.excess if found is not None else own.relative_gap
    lower = found.lower if found is not None else own.lower - own.lower_error
    name = "LMNN (eq. 14)" if problem.clusters is None else "multi-metric LMNN (eq. 16)"
    what = "far from optimal" if gap > 100 * rtol else "not optimal to rtol"
    lines = [f"metric is {what} for {name}: relative gap {gap:.4g} > rtol {rtol:g}",
             f"  objective eps(M) = {own.upper:.10g} (+-{own.upper_error:.2g})",
             f"  certified lower bound on the optimum = {lower:.10g}, proved by "
             + ("the certified optimum's dual bound" if found is not None and found.bound == "optimum"
                else "the metric's own dual bound")
             + ("" if found is not None else " (excess=False: no optimum solved)"),
             f"  relative gap (eps(M) - lower) / eps(M) = {gap:.4g}"]
    if found is not None and found.reference is not None:
        lines.append(f"  excess over the optimum: at least {found.excess_at_least:.4g}, at most {found.excess:.4g} "
                     f"(optimum <= {found.optimum_upper:.10g})")
    lines.append("  " + _terms(problem, M, found.reference.metric if found is not None and found.reference
                                 is not None else None))
    lines.append("  " + _largest_hinges(problem, M, upper))
    raise AssertionError("\n".join(lines))


def _terms(problem: LMNNProblem, M, optimum) -> str:
    pull = (1 - problem.mu) * float(problem.target_distances(M).sum())
    push = problem.objective(M) - pull
    text = f"pull (1-mu) sum D(i, j) = {pull:.6g}, push mu sum hinge = {push:.6g}"
    if optimum is not None:
        pull_opt = (1 - problem.mu) * float(problem.target_distances(optimum).sum())
        text += f"; at the optimum {pull_opt:.6g} and {problem.objective(optimum) - pull_opt:.6g}"
    return text


def _largest_hinges(problem: LMNNProblem, M, upper: float, top: int = TOP_TRIPLETS) -> str:
    active = problem.active_triplets(M)
    if len(active) == 0:
        return "no triplet has a positive hinge at the metric"
    margins = problem.triplet_margins(M, active)
    order = np.argsort(-margins, kind="stable")[:top]
    share = problem.mu * margins.sum() / upper if upper > 0 else 0.0
    listed = ", ".join(f"({i}, {j}, {l}): {h:.4g}" for (i, j, l), h in zip(active[order], margins[order]))
    return (f"{len(active)} triplets (i, j, l) have a positive hinge ({share:.1%} of eps(M)); "
            f"largest 1 + D(i, j) - D(i, l): {listed}")
