"""What an exact solve returns: the metric(s), the certificate and how they were found."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lmnn_sdp.candidate import certify
from lmnn_sdp.certificates.bounds import significant, snap_multipliers
from lmnn_sdp.certificates.certificate import Certificate
from lmnn_sdp.certificates.certified import CertifiedResult
from lmnn_sdp.core.clusters import lift_metrics
from lmnn_sdp.core.problem import LMNNProblem
from lmnn_sdp.core.space import ReducedSpace
from lmnn_sdp.formulations.sdp import SDPSolution
from lmnn_sdp.status import CONVERGED, MAX_ITER, STALLED, push_only, singular_pull


@dataclass(repr=False)
class SDPResult(CertifiedResult):
    """An exact solve of LMNN (``clusters`` None) or multi-metric LMNN (sec. 5.2).

    ``metric`` ((d, d), or (C, d, d) with ``clusters``), ``upper`` (eq. 14 or 16 at
    ``metric``, never the solver's value), ``lower``, ``relative_gap``, ``certified`` and
    ``tol`` are those of ``certificate``.

    Attributes
    ----------
    certificate : Certificate
        The best of ``certificates``; ``certificate.verify()`` re-derives it.
    certificates : dict of str to Certificate
        One per way of finding multipliers (the solver's, complementary slackness).
    status : {"converged", "max_iter", "stalled"}
        How the solve stopped (``lmnn_sdp.status``): the certificate proved the gap below
        ``tol``; constraint generation spent ``max_rounds`` first; or neither.
    message : str
        Why it stopped, for people.
    solver_status : str
        The cvxpy solver's status on the last SDP, reported, never trusted.
    solver, method : str
    n_triplets : int
        Triplets in the (final) SDP.
    triplets : ndarray of int of shape (n_triplets, 3)
    multipliers : ndarray of shape (n_triplets,)
        Their dual multipliers as the solver returned them.
    timings : dict of str to float
        Seconds spent building models (``build``) and inside the solver (``solve``).
    rounds : list
        The constraint-generation rounds.
    clusters : ndarray of int of shape (n_samples,) or None
        The cluster of each point for multi-metric LMNN (the certificate's problem's).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> from lmnn_sdp import solve_lmnn
    >>> result = solve_lmnn(problem)
    >>> result.status, result.converged, result.certified
    ('converged', True, True)
    >>> result.metric.shape, result.method
    ((4, 4), 'cutting-plane')
    >>> result.solver_status in {"optimal", "optimal_inaccurate"}
    True
    """

    certificate: Certificate
    certificates: dict  # name -> Certificate, one per way of finding multipliers
    status: str
    message: str
    solver_status: str
    solver: str
    method: str
    n_triplets: int  # triplets in the (final) SDP
    triplets: np.ndarray  # (T, 3) those triplets
    multipliers: np.ndarray  # (T,) their dual multipliers as the solver returned them
    timings: dict
    rounds: list = field(default_factory=list)

    @property
    def clusters(self) -> np.ndarray | None:
        return self.certificate.clusters

    @property
    def metrics(self) -> np.ndarray:
        """The metrics (C, d, d); ``metrics[c]`` measures distances to points of cluster c."""
        return self.metric if self.clusters is not None else self.metric[None]

    def __repr__(self) -> str:
        clusters = "" if self.clusters is None else f", clusters={len(self.metric)}"
        return (f"SDPResult(method={self.method!r}, solver={self.solver!r}, status={self.status!r}, "
                f"upper={self.upper:.10g}, lower={self.lower:.10g}, "
                f"relative_gap={significant(self.relative_gap)}, triplets={self.n_triplets}, "
                f"build={self.timings['build']:.2f}s, solve={self.timings['solve']:.2f}s{clusters})")


def certified_result(problem: LMNNProblem, space: ReducedSpace, solution: SDPSolution,
                     triplets: np.ndarray, solver: str, method: str, tol: float,
                     rounds: list | None = None, budget_spent: bool = False, final: bool = True) -> SDPResult:
    """Project the solver's metrics onto the PSD cone, lift them, push killable impostors out
    (``sdp.push_out_of_null_spaces``) and certify them.

    Two lower bounds: from the solver's multipliers and from complementary
    slackness at the metrics, and for a ``final`` answer the snapped multipliers
    (``certificates_of``); ``certificate`` is the best one."""
    if not np.all(np.isfinite(solution.metrics_reduced)) or not np.all(np.isfinite(solution.multipliers)):
        raise RuntimeError(f"{solver} returned no usable solution (status "
                           f"{solution.status!r}); try the other solver or solver_options.")
    metrics = lift_metrics(problem, space, solution.metrics_reduced)
    metric = metrics if problem.clusters is not None else metrics[0]
    certificates = certificates_of(problem, space, metric, triplets, solution.multipliers, solver, tol, final)
    certificate = max(certificates.values(), key=lambda c: c.lower)
    return SDPResult(certificate=certificate, certificates=certificates,
                     **stop_status(certificate, budget_spent), solver_status=solution.status, solver=solver,
                     method=method, n_triplets=len(triplets), triplets=triplets,
                     multipliers=solution.multipliers,
                     timings={"build": solution.build_time, "solve": solution.solve_time},
                     rounds=rounds or [])


def certificates_of(problem: LMNNProblem, space: ReducedSpace, metric: np.ndarray, triplets: np.ndarray,
                    multipliers: np.ndarray, solver: str, tol: float, snap: bool = True) -> dict[str, Certificate]:
    """The certificates of an exact method's ``metric``: with the solver's ``multipliers`` (T,)
    on ``triplets`` (T, 3), by complementary slackness, and with ``snap`` where neither proves
    ``tol``, the solver's multipliers snapped to their bounds 0 and mu (``bounds.snap_multipliers``;
    left out of a constraint-generation round that is not the last)."""
    certificates = {
        "solver multipliers": certify(problem, metric, triplets=triplets, multipliers=multipliers,
                                      tol=tol, space=space),
        "complementary slackness": certify(problem, metric, tol=tol, space=space, solver=solver),
    }
    if snap and not any(c.certified for c in certificates.values()):  # a tolerance short of the bounds
        certificates["snapped multipliers"] = snapped_certificate(problem, space, metric, triplets, multipliers, tol)
    return certificates


def snapped_certificate(problem: LMNNProblem, space: ReducedSpace, metric: np.ndarray, triplets: np.ndarray,
                        multipliers: np.ndarray, tol: float) -> Certificate:
    """The certificate of ``metric`` with the solver's ``multipliers`` (T,) on ``triplets`` (T, 3)
    snapped to their bounds 0 and mu (``bounds.snap_multipliers``)."""
    return certify(problem, metric, triplets=triplets, multipliers=snap_multipliers(multipliers, problem.mu),
                   tol=tol, space=space)


def stop_status(certificate: Certificate, budget_spent: bool) -> dict:
    """``status`` and ``message`` of an exact solve whose certificate is ``certificate``;
    ``budget_spent`` when constraint generation ran out of rounds."""
    if certificate.certified and certificate.relative_gap > certificate.tol:
        return {"status": CONVERGED, "message": f"converged: eq. 14 at the metric is {certificate.upper:.3g} "
                f"+- {certificate.upper_error:.3g}, within atol={certificate.atol:g} of the optimum, 0"}
    if certificate.certified:
        return {"status": CONVERGED, "message": "converged: the certified gap is below tol"}
    why = (f"the certified gap {significant(certificate.relative_gap)} is above tol={certificate.tol:g}"
           + (f" ({certificate.refused})" if certificate.refused else ""))
    if certificate.problem.mu == 1.0:
        why += "; " + push_only(certificate.lower, certificate.upper)
    elif certificate.singular_clusters:
        why += "; " + singular_pull(certificate.problem.mu)
    if budget_spent:
        return {"status": MAX_ITER, "message": f"not converged: max_rounds spent; {why}"}
    return {"status": STALLED, "message": f"not converged: {why}"}
