"""Certify a candidate metric (or metrics): ``certify`` (DESIGN.md, "Certificates").

The bound itself (genuine triplets, multipliers clipped into the box, scaled into
the dual cone, rounding allowance) is ``lmnn_sdp.certificates.bounds`` and the certificate with
its evidence ``lmnn_sdp.certificates.certificate``, both numpy only; this module
adds the multipliers of complementary slackness at given metrics, found by a
small dual SDP over the triplets near the margin (``sdp.complementary_multipliers``).
"""

from __future__ import annotations

from lmnn_sdp.certificates.bounds import check_candidate_metric
from lmnn_sdp.certificates.certificate import ATOL, Certificate, prove
from lmnn_sdp.core.checks import check_tol
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import ReducedSpace, reduced_space
from lmnn_sdp.formulations.sdp import complementary_multipliers

__all__ = ["Certificate", "certify"]


def certify(problem: LMNNProblem, M, *, clusters=None, triplets=None, multipliers=None,
            tol: float = 1e-6, atol: float = ATOL, band: float = 1e-3, solver: str = "CLARABEL",
            solver_options: dict | None = None, space: ReducedSpace | None = None) -> Certificate:
    """Certify how close a candidate metric is to the optimum of LMNN or multi-metric LMNN.

    The upper bound is the objective of eq. 14 (or of sec. 5.2 with ``clusters``) at
    ``M``, with a bound on its rounding. The lower bound is weak duality for the SDP of
    eq. 14 (DESIGN.md, "Certificates"): multipliers clipped into ``[0, mu]`` and scaled
    into the dual cone (``certificates.bounds.dual_lower_bound``). They are the given
    ``multipliers`` on ``triplets`` (for example an SDP's), or else the multipliers of
    complementary slackness at ``M``: tied at ``beta mu`` for triplets above the margin
    band, 0 below it and free within ``band``, found by a small dual SDP over the
    triplets near the margin (``formulations.sdp.complementary_multipliers``). Nothing is
    taken on trust: the bound holds for any multipliers, and a loose guess only widens
    the gap.

    Parameters
    ----------
    problem : LMNNProblem
        The data, target neighbours and ``mu``, and the clusters of multi-metric LMNN
        (eq. 16) when it has them.
    M : array-like of shape (n_features, n_features), or (n_clusters, n_features, n_features)
        The candidate: finite, symmetric and PSD up to rounding (eigenvalues down to
        ``-1e-8`` of the largest entry), one metric per cluster with clusters.
    clusters : array-like of int of shape (n_samples,), optional
        Cluster of each point for multi-metric LMNN (eq. 16), values ``0..C-1``, in place
        of the problem's own (``problem.with_clusters(clusters)``); by default the
        problem's.
    triplets : array-like of int of shape (n_triplets, 3), optional
        Distinct triplets ``(i, j, l)`` of the problem; give with ``multipliers``.
    multipliers : array-like of shape (n_triplets,), optional
        Their dual multipliers; clipped into ``[0, mu]``.
    tol : float, default=1e-6
        Certified relative gap up to which ``M`` counts as optimal; finite, >= 0.
    atol : float, default=1e-6
        Largest objective (with its rounding) that certifies a zero optimum: eq. 14 is
        non-negative, so no relative gap can prove an optimum of 0 (``Certificate.atol``).
    band : float, default=1e-3
        Margin band of the free multipliers of complementary slackness.
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The cvxpy solver of the complementary-slackness SDP (unused with
        ``multipliers``).
    solver_options : dict, optional
        Keyword arguments of ``cvxpy.Problem.solve``.
    space : ReducedSpace, optional
        Coordinates of the data range for the complementary-slackness SDP; default
        ``core.space.reduced_space(problem)``.

    Returns
    -------
    Certificate
        ``upper``, ``lower``, ``relative_gap``, ``certified`` and the evidence
        (``metric``, the triplets with positive multipliers, the multipliers);
        ``verify()`` re-derives the numbers from it.

    Raises
    ------
    ValueError
        A ``tol``, ``atol`` or ``band`` that is negative or not finite; ``triplets`` without
        ``multipliers`` or the reverse; ``M`` of the wrong shape, not finite, not symmetric
        or not PSD; ``triplets`` that are not distinct triplets of the problem;
        ``multipliers`` of the wrong shape or not finite; bad ``clusters``.
    TypeError
        Non-real ``M``; non-integer ``triplets`` or ``clusters``; a ``tol``, ``atol`` or ``band`` that is
        not a real number (``True``, ``"1e-6"``).

    See Also
    --------
    lmnn_sdp.solve_lmnn : Find the optimal metric and certify it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem, certify, solve_lmnn
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> result = solve_lmnn(problem)
    >>> certify(problem, result.metric).certified
    True
    >>> certify(problem, result.metric, triplets=result.triplets,
    ...         multipliers=result.multipliers).certified
    True

    The Euclidean metric is far from optimal; its bounds still bracket the optimum:

    >>> cert = certify(problem, np.eye(4))
    >>> cert.certified, round(cert.upper, 3)
    (False, 12.755)
    >>> bool(cert.lower <= result.upper <= cert.upper)
    True
    >>> certify(problem, -np.eye(4))
    Traceback (most recent call last):
    ...
    ValueError: M is not positive semidefinite...
    """
    check_tol(tol)
    check_tol(atol, "atol")
    check_tol(band, "band")
    if (triplets is None) != (multipliers is None):
        raise ValueError("pass triplets and multipliers together, or neither.")
    if clusters is not None:
        problem = problem.with_clusters(clusters)
    space = space or reduced_space(problem)
    if triplets is None:
        M = check_candidate_metric(problem, M)[0]
        metrics = M if problem.clusters is not None else M[None]
        triplets, multipliers, _, _ = complementary_multipliers(problem, space, metrics, band, solver,
                                                                solver_options)
    return prove(problem, M, triplets, multipliers, tol=tol, atol=atol)
