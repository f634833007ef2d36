"""How far a metric is from the LMNN optimum: ``excess_over_optimum``.

A metric's own certificate (``lmnn_sdp.certify``) bounds the optimum from below with
multipliers of complementary slackness at that metric; far from the optimum those
multipliers prove little. The certified optimum, solved on the exact side, proves the bound
that tells how far.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from lmnn_sdp.certificates.certificate import Certificate
from lmnn_sdp.core.checks import check_tol
from lmnn_sdp.core.problem import LMNNProblem

__all__ = ["Excess", "excess_over_optimum"]


@dataclass(frozen=True, eq=False)
class Excess:
    """A metric's excess over the certified optimum of LMNN (eq. 14) or multi-metric LMNN.

    Returned by ``excess_over_optimum``.

    Parameters
    ----------
    objective : float
        ``eps(M)`` at the metric (``certificate.upper``).
    lower : float
        The best certified lower bound on the optimum, less its rounding bound: the larger of
        the metric's own and the certified optimum's.
    excess : float
        ``(eps(M) - lower) / eps(M)`` with ``eps(M)`` raised by its rounding bound: at least
        the true relative excess ``(eps(M) - opt) / eps(M)``.
    excess_at_least : float
        ``(eps(M) - optimum_upper) / eps(M)`` with rounding counted against it, clipped at
        0: at most the true relative excess; the metric is provably this far above the
        optimum.
    optimum_upper : float
        The objective at the certified optimum plus its rounding bound (nan without a
        reference).
    bound : {"metric", "optimum"}
        Which certificate proves ``lower``: the metric's own or the certified optimum's.
    certificate : Certificate
        The metric's own certificate.
    reference : Certificate or None
        The certificate of the optimum solved on the exact side.
    seconds : float
        Time to compute the reference.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem, excess_over_optimum
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> found = excess_over_optimum(problem, np.eye(4))
    >>> found.bound, round(found.excess, 3), round(found.excess_at_least, 3)
    ('optimum', 0.539, 0.539)
    """

    objective: float
    lower: float
    excess: float
    excess_at_least: float
    optimum_upper: float
    bound: str
    certificate: Certificate = field(repr=False)
    reference: Certificate | None = field(repr=False, default=None)
    seconds: float = 0.0

    def __str__(self) -> str:
        proof = ("the metric's own dual bound" if self.bound == "metric"
                 else f"the certified optimum's dual bound (optimum <= {self.optimum_upper:.10g})")
        return (f"objective {self.objective:.10g}, certified lower bound {self.lower:.10g} "
                f"(proved by {proof}); excess over the optimum "
                f"(eps(M) - lower*) / eps(M) = {self.excess:.4g}, at least {self.excess_at_least:.4g}")


def excess_over_optimum(problem: LMNNProblem, M, *, certificate: Certificate | None = None,
                        clusters=None, tol: float = 1e-7, solver: str = "CLARABEL") -> Excess:
    """The metric's excess over the certified optimum, ``(eps(M) - lower*) / eps(M)``.

    ``lower*`` is the better of two rigorous lower bounds on the optimum of eq. 14 (or of
    sec. 5.2 with clusters): the metric's own certificate (``lmnn_sdp.certify``) and the
    certificate of the optimum, solved exactly by aggregated active sets
    (``solve_lmnn(method="aggregated")``, multi-metric when the problem holds clusters). The optimum's objective
    also bounds the excess from below (``Excess.excess_at_least``). Nothing is taken on
    trust: both bounds are proved by multipliers scaled into the dual cone, and rounding
    counts against the claim.

    Cost: one exact solve, skipped when the metric's own certificate already proves its
    gap within ``tol``; it grows with the number of triplets near the margin.

    Parameters
    ----------
    problem : LMNNProblem
        The data, target neighbours and ``mu`` (and clusters for multi-metric LMNN).
    M : array-like of shape (n_features, n_features), or (n_clusters, n_features, n_features)
        The metric(s): finite, symmetric, PSD up to rounding.
    certificate : Certificate, optional
        The metric's own certificate, if already computed (``certify(problem, M)``).
    clusters : array-like of int of shape (n_samples,), optional
        Cluster of each point (multi-metric LMNN) in place of the problem's own.
    tol : float, default=1e-7
        Certified relative gap of the exact solve of the optimum; finite, >= 0.
    solver : {"CLARABEL", "SCS"}, default="CLARABEL"
        The cvxpy solver.

    Returns
    -------
    Excess
        ``objective``, ``lower``, ``excess``, ``excess_at_least``, ``bound`` and both
        certificates.

    Raises
    ------
    ValueError
        ``M`` of the wrong shape, not finite, not symmetric or not PSD; bad ``clusters``; a
        ``tol`` that is negative or not finite.
    TypeError
        A ``tol`` that is not a real number (``True``, ``"1e-6"``).

    See Also
    --------
    lmnn_sdp.certify : The metric's own certificate.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem, certify, excess_over_optimum
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> own = certify(problem, 0.5 * np.eye(4))  # its own bound proves little
    >>> round(float(own.relative_gap), 3), round(own.lower, 3)
    (0.932, 1.455)
    >>> found = excess_over_optimum(problem, 0.5 * np.eye(4), certificate=own)
    >>> found.bound, round(found.excess, 3), round(found.lower, 3)
    ('optimum', 0.726, 5.878)
    """
    from lmnn_sdp.candidate import certify
    from lmnn_sdp.lmnn import solve_lmnn

    check_tol(tol)
    if clusters is not None:
        problem = problem.with_clusters(clusters)
    own = certificate if certificate is not None else certify(problem, M, tol=tol, solver=solver)
    upper = own.upper + own.upper_error
    own_lower = own.lower - own.lower_error
    reference, optimum_upper, seconds = None, float("nan"), 0.0
    if not own.certified:
        start = time.perf_counter()
        result = solve_lmnn(problem, solver, method="aggregated", tol=tol)  # with the problem's clusters
        seconds = time.perf_counter() - start
        reference = result.certificate
        optimum_upper = reference.upper + reference.upper_error
    ref_lower = reference.lower - reference.lower_error if reference is not None else -float("inf")
    lower, bound = (ref_lower, "optimum") if ref_lower > own_lower else (own_lower, "metric")
    excess = max(0.0, (upper - lower) / upper) if upper > 0 else 0.0
    at_least = 0.0
    if reference is not None and upper > 0:
        at_least = max(0.0, (own.upper - own.upper_error - optimum_upper) / upper)
    return Excess(objective=own.upper, lower=float(lower), excess=float(min(excess, 1.0)), excess_at_least=float(at_least),
                  optimum_upper=optimum_upper, bound=bound, certificate=own, reference=reference,
                  seconds=seconds)
