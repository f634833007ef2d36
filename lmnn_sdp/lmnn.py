"""Exact LMNN and multi-metric LMNN, certified: the entry points ``solve_lmnn``,
``solve_lmnn_dual`` and ``solve_mm_lmnn`` (JMLR 2009, eq. 14 and its SDP; sec. 5.2).

LMNN is multi-metric LMNN with one cluster, so both run the same code: the SDP
and its dual (``sdp``), constraint generation (``cutting_plane``, ``aggregated``)
and the certificate (``certificate``). ``"cutting-plane"`` (the default) and
``"aggregated"`` generate constraints; ``method="full"`` puts every triplet into one SDP.
"""

from __future__ import annotations

from lmnn_sdp.certificates.certificate import ATOL
from lmnn_sdp.core.checks import check_tol
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import reduced_space
from lmnn_sdp.formulations.sdp import FORMULATIONS, TIGHT_OPTIONS, check_solver
from lmnn_sdp.generation.aggregated import solve_aggregated
from lmnn_sdp.generation.cutting_plane import solve_cutting_plane
from lmnn_sdp.result import SDPResult, certified_result

TIGHT_WITHIN = 1e-3  # a relative gap this near tol is the solver's tolerance, not the method's

METHODS = ("full", "cutting-plane", "aggregated")


def solve_lmnn(problem: LMNNProblem, solver: str = "CLARABEL", method: str = "cutting-plane", *,
               tol: float = 1e-6, formulation: str | None = None,
               solver_options: dict | None = None, **options) -> SDPResult:
    """Solve the LMNN SDP exactly and certify the answer.

    The SDP of eq. 14 (Weinberger & Saul, JMLR 2009, sec. 3.4), solved in cvxpy in
    the data range of the inputs. The solver's metric is projected onto the PSD cone
    and certified twice, with the solver's multipliers and with multipliers from
    complementary slackness (``lmnn_sdp.certify``); the better certificate is the
    result's. The solver's status is reported, never trusted: the answer is
    ``certified`` only when the certificate proves the gap within ``tol``.

    Parameters
    ----------
    problem : LMNNProblem
        The data, target neighbours and ``mu``; a problem with clusters is solved as
        multi-metric LMNN (``solve_mm_lmnn``).
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The cvxpy solver, in any case.
    method : {"cutting-plane", "aggregated", "full"}, default="cutting-plane"
        ``"cutting-plane"`` generates constraints: it solves the SDP on a working set of
        triplets and adds those violated at its solution until none is
        (``generation.cutting_plane``); the fastest on the corpus and the main job's
        instances (docs/results/exact-methods.md). ``"aggregated"`` solves SDPs over the
        triplets near the margin only, with tied multipliers for those above it
        (``generation.aggregated``); the method of choice beyond a few hundred points.
        ``"full"`` puts every triplet into one SDP (at most 5,000,000 triplets): the
        literal formulation the others are checked against.
    tol : float, default=1e-6
        Certified relative gap up to which the answer counts as optimal; finite, >= 0.
    formulation : {"primal", "dual"}, optional
        The SDP solved; default ``"primal"`` for ``"full"`` and ``"dual"`` for
        ``"cutting-plane"``. ``"aggregated"`` always solves the dual and takes none.
    solver_options : dict, optional
        Keyword arguments of ``cvxpy.Problem.solve``. Without them, a solve that comes near
        ``tol`` without proving it (a relative gap within ``TIGHT_WITHIN``) runs once more with
        the solver's tight tolerances (``formulations.sdp.TIGHT_OPTIONS``).
    **options
        Only with constraint generation. ``"cutting-plane"``: ``working_set``
        (array of int of shape (T, 3)), ``start`` (a metric (d, d)), ``add_band``
        (float, default 0.05), ``drop_band`` (float or None, default 0.5),
        ``max_rounds`` (int >= 1, default 30), ``progress`` (bool, default False).
        ``"aggregated"``: ``start``, ``band`` (float, default 0.05), ``drop_band``
        (float, default 0.5), ``add_ratio`` (float, default 1.0) and ``add_floor`` (int,
        default 1000) (the triplets the model misjudged that join its working set:
        at most ``max(add_ratio * free, add_floor)`` a round, none further than
        ``drop_band`` below the margin), ``max_rounds`` (int >= 1, default 100), ``progress``.

    Returns
    -------
    SDPResult
        ``metric`` (ndarray of shape (n_features, n_features)), ``upper``, ``lower``,
        ``relative_gap``, ``certified``, the ``certificate`` with its evidence,
        ``status`` and ``message`` (``lmnn_sdp.status``), the solver's ``solver_status``, the SDP's ``triplets`` and ``multipliers``, ``rounds`` and
        ``timings``.

    Raises
    ------
    ValueError
        An unknown ``solver``, ``method`` or ``formulation``; ``formulation`` with
        ``"aggregated"``; ``options`` with ``"full"``; more than 5,000,000 triplets
        with ``"full"``; a ``tol`` that is negative or not finite; ``max_rounds`` below 1.
    TypeError
        An option the chosen method does not take; a ``tol`` that is not a real number
        (``True``, ``"1e-6"``) or a ``max_rounds`` that is not an integer.
    RuntimeError
        The solver returned no finite solution (``"full"`` and ``"cutting-plane"``).

    See Also
    --------
    lmnn_sdp.solve_lmnn_dual : The dual SDP over every triplet.
    lmnn_sdp.solve_mm_lmnn : Multi-metric LMNN (sec. 5.2).
    lmnn_sdp.certify : Certify any candidate metric.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem, solve_lmnn
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> result = solve_lmnn(problem)
    >>> result.certified
    True
    >>> result.metric.shape
    (4, 4)
    >>> round(result.upper, 3)
    5.878
    >>> aggregated = solve_lmnn(problem, method="aggregated")
    >>> aggregated.certified, round(aggregated.upper, 3)
    (True, 5.878)
    >>> aggregated.n_triplets < problem.n_triplets
    True
    """
    return _solve(problem, solver, method, tol, formulation, solver_options, options)


def solve_lmnn_dual(problem: LMNNProblem, solver: str = "CLARABEL", *, tol: float = 1e-6,
                    solver_options: dict | None = None) -> SDPResult:
    """Solve the dual of the LMNN SDP over every triplet and certify the answer.

    The Lagrange dual of the SDP of eq. 14 (``maximize sum lambda_t`` subject to
    ``0 <= lambda_t <= mu`` and ``Z(lambda)`` PSD; DESIGN.md, "Certificates"); the metric
    is the dual value of its PSD constraint. The same as ``solve_lmnn(problem, solver,
    "full", formulation="dual")``.

    Parameters
    ----------
    problem : LMNNProblem
        The data, target neighbours and ``mu``.
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The cvxpy solver, in any case.
    tol : float, default=1e-6
        Certified relative gap up to which the answer counts as optimal; finite, >= 0.
    solver_options : dict, optional
        Keyword arguments of ``cvxpy.Problem.solve``.

    Returns
    -------
    SDPResult
        As for ``solve_lmnn``, with ``method="dual"``; ``multipliers`` are the
        solver's ``lambda``.

    Raises
    ------
    ValueError
        An unknown ``solver``, more than 5,000,000 triplets, or a ``tol`` that is negative
        or not finite.
    TypeError
        A ``tol`` that is not a real number (``True``, ``"1e-6"``).
    RuntimeError
        The solver returned no finite solution.

    See Also
    --------
    lmnn_sdp.solve_lmnn : The primal, or constraint generation.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem, solve_lmnn_dual
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> result = solve_lmnn_dual(problem)
    >>> result.method, result.certified
    ('dual', True)
    >>> result.triplets.shape, result.multipliers.shape
    ((1200, 3), (1200,))
    >>> round(result.upper, 3)
    5.878
    """
    return solve_lmnn(problem, solver, "full", tol=tol, formulation="dual",
                      solver_options=solver_options)


def solve_mm_lmnn(problem: LMNNProblem, clusters=None, solver: str = "CLARABEL",
                  method: str = "cutting-plane", *, tol: float = 1e-6, formulation: str | None = None,
                  solver_options: dict | None = None, **options) -> SDPResult:
    """Solve multi-metric LMNN exactly, all metrics jointly, and certify the answer.

    Multi-metric LMNN (Weinberger & Saul, JMLR 2009, sec. 5.2, eq. 16): every cluster
    ``c`` of points has its own metric ``M_c``, and the distance to ``x_j`` is measured
    by ``M_{c(j)}``. The SDP couples the metrics through the triplets; LMNN is the case
    of one cluster. Solved and certified as by ``solve_lmnn``.

    Parameters
    ----------
    problem : LMNNProblem
        The data, target neighbours and ``mu``.
    clusters : array-like of int of shape (n_samples,), optional
        Cluster of each point, values ``0..C-1`` with every cluster used (e.g. k-means
        labels), in place of the problem's own (``problem.with_clusters``); default the
        problem's clusters, or one cluster per class (``problem.label_codes``) when it
        has none.
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The cvxpy solver, in any case.
    method : {"cutting-plane", "aggregated", "full"}, default="cutting-plane"
        As for ``solve_lmnn``.
    tol : float, default=1e-6
        Certified relative gap up to which the answer counts as optimal; finite, >= 0.
    formulation : {"primal", "dual"}, optional
        As for ``solve_lmnn``.
    solver_options : dict, optional
        Keyword arguments of ``cvxpy.Problem.solve``.
    **options
        As for ``solve_lmnn``; ``start`` is then metrics (C, d, d).

    Returns
    -------
    SDPResult
        As for ``solve_lmnn``, with ``metric`` of shape (n_clusters, n_features,
        n_features) (also ``metrics``) and ``clusters`` of shape (n_samples,).

    Raises
    ------
    ValueError
        Bad ``clusters`` (wrong shape, negative or unused indices), and as for
        ``solve_lmnn``.
    TypeError
        Non-integer ``clusters``, or an option the chosen method does not take.
    RuntimeError
        The solver returned no finite solution (``"full"`` and ``"cutting-plane"``).

    See Also
    --------
    lmnn_sdp.solve_lmnn : One metric for all points.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem, solve_mm_lmnn
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> result = solve_mm_lmnn(problem)  # one metric per class
    >>> result.certified
    True
    >>> result.metric.shape
    (3, 4, 4)
    >>> round(result.upper, 3)
    3.62
    >>> two = solve_mm_lmnn(problem, clusters=np.arange(30) % 2)
    >>> two.certified, two.metric.shape
    (True, (2, 4, 4))
    """
    if clusters is not None or problem.clusters is None:
        problem = problem.with_clusters(problem.label_codes if clusters is None else clusters)
    return _solve(problem, solver, method, tol, formulation, solver_options, options)


def _solve(problem, solver, method, tol, formulation, solver_options, options):
    """The solve of ``method``; where it proves no gap within ``tol`` but comes near (a relative
    gap within ``TIGHT_WITHIN``, or bounds within ``ATOL`` of each other at a tiny optimum), once
    more with the solver's ``TIGHT_OPTIONS`` unless ``solver_options`` were given, since the
    solver's tolerance, not the method, stopped the proof; the better certificate wins (design
    note docs/design/certificates.md, "The property test over mu, at length")."""
    result = _solve_once(problem, solver, method, tol, formulation, solver_options, options)
    near = result.relative_gap <= TIGHT_WITHIN or result.upper - result.lower <= ATOL
    if result.certified or solver_options is not None or not near:
        return result
    tight = _solve_once(problem, solver, method, tol, formulation, TIGHT_OPTIONS[check_solver(solver)], options)
    return min(result, tight, key=lambda r: (not r.certified, r.relative_gap))


def _solve_once(problem, solver, method, tol, formulation, solver_options, options):
    check_tol(tol)
    solver = check_solver(solver)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    if formulation is not None and formulation not in FORMULATIONS:
        raise ValueError(f"formulation must be one of {tuple(FORMULATIONS)}, got {formulation!r}.")
    if method == "aggregated":
        if formulation is not None:
            raise ValueError("formulation applies to method='full' or 'cutting-plane'; the "
                             "aggregated scheme always solves the dual.")
        return solve_aggregated(problem, solver, tol=tol,
                                solver_options=solver_options, **options)
    if method == "cutting-plane":
        return solve_cutting_plane(problem, solver, tol=tol,
                                   formulation=formulation or "dual",
                                   solver_options=solver_options, **options)
    if options:
        raise ValueError(f"options {sorted(options)} need method='cutting-plane' or 'aggregated'.")
    space = reduced_space(problem)
    triplets = problem.all_triplets()
    solve = FORMULATIONS[formulation or "primal"]
    solution = solve(problem, space, triplets, solver, solver_options=solver_options)
    label = "dual" if formulation == "dual" else "full"
    return certified_result(problem, space, solution, triplets, solver, label, tol)
