"""``assert_mmc_optimal``: a test passes only when a certificate proves an MMC metric optimal."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lmnn_sdp.core.checks import check_tol

if TYPE_CHECKING:
    from lmnn_sdp.mmc.certificate import MMCCertificate

TOP_PAIRS = 5


def assert_mmc_optimal(X, metric, *, y=None, similar=None, dissimilar=None, diagonal: bool = False,
                       rtol: float = 1e-6, excess: bool = True, solver: str = "CLARABEL") -> MMCCertificate:
    """Assert that a certificate proves ``metric`` within ``rtol`` of the optimum of MMC.

    (MMC) is ``max f(A) = sum_D sqrt(D_A)`` s.t. ``sum_S D_A <= 1``, ``A`` PSD (Xing et
    al. 2002; Weinberger & Saul, JMLR 2009, sec. 2.3.1); with ``diagonal``, Xing's
    ``min g(a) = sum_S D_a - log sum_D sqrt(D_a)`` over ``a >= 0``. Only the direction of
    ``metric`` matters: it is rescaled to feasibility, which keeps every distance ratio.
    The metric passes when a rigorous bound on the optimum proves its relative gap
    ``(bound - f) / bound`` (diagonal: ``log(bound / f)``, ``g``'s gap) at most ``rtol``,
    rounding counted against it. The bound is first the metric's own
    (``lmnn_sdp.certify_mmc``: tangents at its distances); when that does not prove it
    and ``excess`` is True, the certified optimum is solved (``lmnn_sdp.solve_mmc``,
    cvxpy) and its tighter bound is used.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs.
    metric : array-like of shape (n_features, n_features)
        The metric under test (diagonal with ``diagonal``).
    y : array-like of shape (n_samples,), optional
        Labels: all pairs ``i < j``, similar when the labels agree. Give either ``y`` or
        both ``similar`` and ``dissimilar``.
    similar, dissimilar : array-like of int of shape (n_pairs, 2), optional
        Index pairs of the sets ``S`` and ``D``.
    diagonal : bool, default=False
        Xing's diagonal problem instead of (MMC).
    rtol : float, default=1e-6
        Largest certified gap accepted; finite, >= 0. Relative for (MMC); with
        ``diagonal``, the absolute gap of Xing's ``g`` (``lmnn_sdp.solve_mmc``).
    excess : bool, default=True
        Solve for the certified optimum when the metric's own bound does not prove it;
        False skips that solve (a failure then reports only the metric's own bound).
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The first cvxpy solver of ``solve_mmc``.

    Returns
    -------
    MMCCertificate
        The metric's own certificate.

    Raises
    ------
    AssertionError
        The metric is not proved within ``rtol``: the message states what is wrong in its
        first line, then the value at the metric, the certified bound and which
        certificate proves it, the gap, and the dissimilar pairs that fall shortest of
        their distance at the optimum. Also for a metric of the wrong shape, not finite,
        not symmetric, not PSD or not diagonal with ``diagonal`` (the first line says which).
    ValueError
        Bad ``X``, pairs, labels (``lmnn_sdp.mmc.problem.mmc_problem``) or ``rtol``.
    TypeError
        An ``rtol`` that is not a real number (``True``, ``"1e-6"``).

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp.testing import assert_mmc_optimal, corpus_cases
    >>> case = corpus_cases("mmc")[0]
    >>> cert = assert_mmc_optimal(case.X, case.metric, y=case.y)
    >>> cert.certified
    True
    >>> assert_mmc_optimal(case.X, np.eye(4), y=case.y)
    Traceback (most recent call last):
    ...
    AssertionError: metric is far from optimal for MMC: relative gap 0.5226 > rtol 1e-06
    ...
    """
    __tracebackhide__ = True  # a failure shows the test's line and the message, not this source
    from lmnn_sdp.mmc.certificate import certify_metric
    from lmnn_sdp.mmc.problem import mmc_problem
    from lmnn_sdp.mmc.solve import solve_mmc

    check_tol(rtol, "rtol")
    pairs = {"y": y, "similar": similar, "dissimilar": dissimilar}
    problem = mmc_problem(X, diagonal=diagonal, **pairs)
    try:  # the problem is checked: what is refused now is the metric
        own = certify_metric(problem, metric, rtol)
    except (TypeError, ValueError) as err:
        raise AssertionError(f"metric refused: {err}") from None
    if own.certified:
        return own
    optimum = solve_mmc(X, diagonal=diagonal, solver=solver, tol=min(1e-7, rtol / 10),
                        **pairs).certificate if excess else None
    gap, upper_bound = _gap(own, None if optimum is None else optimum.bound)
    if gap <= rtol:
        return own
    name = "Xing's diagonal MMC" if diagonal else "MMC"
    what = "far from optimal" if gap > 100 * rtol else "not optimal to rtol"
    proof = ("the certified optimum's bound" if optimum is not None and upper_bound == optimum.bound
             else "the metric's own bound") + ("" if excess else " (excess=False: no optimum solved)")
    lines = [f"metric is {what} for {name}: relative gap {gap:.4g} > rtol {rtol:g}",
             f"  f at the metric rescaled to sum_S D = 1: {own.value:.10g}",
             f"  certified upper bound on max f = {upper_bound:.10g}, proved by {proof}"]
    if optimum is not None:
        lines.append(f"  f at the certified optimum = {optimum.value:.10g}")
        lines.append("  " + _shortest_pairs(own, optimum))
    raise AssertionError("\n".join(lines))


def mmc_case_row(case, metric, tolerance: float = 1e-6) -> dict:
    """Score one metric against one MMC case of the corpus, as ``assert_mmc_optimal`` judges it.

    The metric must be feasible for the case's problem: symmetric PSD (diagonal for
    ``mmc-diagonal``) and ``sum_S D_M <= 1`` up to the tolerance (relative). It is then
    scored, as ``assert_mmc_optimal`` scores it, at its rescaling to ``sum_S D = 1`` (only
    its direction matters): its gap is ``(bound - f) / bound`` (diagonal: ``log(bound / f)``,
    the absolute gap of Xing's ``g``) with ``f`` its value less rounding and ``bound`` the
    tighter of its own certified bound and the case's.

    Parameters
    ----------
    case : MMCCase
        The case (``X``, ``similar``, ``dissimilar``, ``diagonal``, ``value``, ``bound``,
        ``tolerance``).
    metric : array-like of shape (n_features, n_features)
        The metric under test.
    tolerance : float, default=1e-6
        Largest gap that passes (raised to the case's own), and the relative slack of the
        constraint ``sum_S D_M <= 1``; finite, >= 0.

    Returns
    -------
    dict
        ``case``, ``objective`` (``f`` at the rescaled metric), ``optimum`` (the case's
        certified value), ``bound`` (the bound the gap is taken against), ``gap``,
        ``tolerance``, ``passed`` and ``error``: why the metric fails without its gap
        deciding (refused: wrong shape, not finite, not symmetric, not PSD, not diagonal;
        infeasible: ``sum_S D_M`` above 1, with its value), "" otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from lmnn_sdp.testing import corpus_cases
    >>> from lmnn_sdp.testing.mmc_assertion import mmc_case_row
    >>> case = corpus_cases("mmc")[0]
    >>> row = mmc_case_row(case, np.eye(4) / 5000)
    >>> round(row["gap"], 4), row["passed"], row["error"]
    (0.5226, False, '')
    >>> mmc_case_row(case, case.metric)["passed"]
    True
    >>> mmc_case_row(case, np.eye(4))["error"]
    'infeasible: sum_S D_M = 4464.87 > 1, the constraint of MMC...'
    """
    from lmnn_sdp.mmc.certificate import certify_metric
    from lmnn_sdp.mmc.pairs import similar_sums
    from lmnn_sdp.mmc.problem import mmc_problem

    tolerance = max(check_tol(tolerance, "tolerance"), case.tolerance)
    row = {"case": case.id, "objective": np.nan, "optimum": case.value, "bound": case.bound,
           "gap": np.nan, "tolerance": tolerance, "passed": False, "error": ""}
    problem = mmc_problem(case.X, similar=case.similar, dissimilar=case.dissimilar, diagonal=case.diagonal)
    try:
        own = certify_metric(problem, metric, tolerance)
    except (TypeError, ValueError) as err:
        return {**row, "error": f"metric refused: {err}"}
    gap, bound = _gap(own, case.bound)
    row.update(objective=float(own.value), bound=float(bound), gap=float(gap), passed=bool(gap <= tolerance))
    scale, rounding = similar_sums(problem, np.asarray(metric, dtype=float))
    if scale - rounding > 1 + tolerance:
        row.update(passed=False, error=f"infeasible: sum_S D_M = {scale:.6g} > 1, the constraint of MMC "
                                       f"(tolerance {tolerance:g}); its gap is that of the metric rescaled "
                                       "to sum_S D = 1")
    return row


def _gap(own: MMCCertificate, bound: float | None) -> tuple[float, float]:
    """The metric's certified relative gap (the certificates' vocabulary) with the tighter
    of its own upper bound on ``max f`` and ``bound`` (another certified one), and that bound."""
    bound = own.bound if bound is None else min(own.bound, bound)
    if own.diagonal:
        return float(np.log(bound / own.feasible_value)), bound
    return (bound - own.feasible_value) / bound, bound


def _shortest_pairs(own: MMCCertificate, optimum: MMCCertificate, top: int = TOP_PAIRS) -> str:
    """The dissimilar pairs whose root distance falls furthest below that at the optimum."""
    if own.problem.implicit:
        return "the pairs are implicit (all label pairs): no pair is listed"
    from lmnn_sdp.mmc.problem import pair_distances

    X, D = own.problem.X, own.problem.dissimilar
    short = (np.sqrt(np.maximum(pair_distances(X, D, optimum.M), 0))
             - np.sqrt(np.maximum(pair_distances(X, D, own.M), 0)))
    order = np.argsort(-short, kind="stable")[:top]
    listed = ", ".join(f"({i}, {j}): {s:.4g}" for (i, j), s in zip(D[order], short[order]))
    return f"dissimilar pairs (i, j) furthest below their optimum, sqrt(D_opt) - sqrt(D_M): {listed}"
