"""What ``fast_solver.solve`` returns, in the manner of SciPy's ``OptimizeResult``, and the
status and message that say why it stopped."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lmnn_sdp.certificates.certificate import Certificate
from lmnn_sdp.certificates.certified import CertifiedResult
from lmnn_sdp.core.psd import psd_factor
from lmnn_sdp.status import CONVERGED, MAX_ITER, STALLED, push_only, singular_pull


@dataclass(frozen=True)
class Stage:
    """One continuation stage of ``fast_solver.solve``: its smoothing width and the bounds
    after it.

    Attributes
    ----------
    stage : int
        Its index, from 0.
    gamma : float
        The smoothing width of the hinge in this stage.
    newton_iterations : int
        iterations spent in it.
    stop : str
        Why its iterations ended.
    upper, lower, relative_gap : float
        The best bounds so far; ``lower`` as estimated in the whitened coordinates (the
        result's certificate recomputes it).
    n_active, n_transition, n_working : int
        Triplets with a positive hinge, triplets within the smoothing width, and
        triplets in the working set.
    elapsed : float
        Seconds since the start of the solve.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> from fast_solver import solve
    >>> result = solve(problem)
    >>> stage = result.stages[-1]
    >>> bool(stage.lower <= stage.upper), stage.stage == len(result.stages) - 1
    (True, True)
    """

    stage: int
    gamma: float
    newton_iterations: int
    stop: str  # why the iterations ended
    upper: float
    lower: float
    relative_gap: float
    n_active: int
    n_transition: int
    n_working: int  # working-set triplets
    elapsed: float  # seconds since the start of the solve


@dataclass(repr=False)
class FastLMNNResult(CertifiedResult):
    """A fast solve and the proof of how good it is; nothing is printed.

    ``metric`` (the learned PSD ``M``, (d, d), or one per cluster (C, d, d) for
    multi-metric LMNN), ``upper`` (eq. 14 or eq. 16 at it), ``lower`` (a
    rigorous lower bound on the optimum), ``relative_gap``, ``certified`` and ``tol``
    are those of ``certificate``. The solver's stopping rule is the certificate, so
    ``converged`` is ``certified``.

    Attributes
    ----------
    certificate : lmnn_sdp.Certificate
        The bounds with their evidence (``triplets``, ``multipliers``,
        ``dual_scale``); ``certificate.verify()`` re-derives them.
    status : {"converged", "max_iter", "stalled"}
        How the solve stopped (``lmnn_sdp.status``): its certificate proved the gap below
        ``tol``; ``max_iter`` iterations were spent first; or the solver's own
        estimate reached ``tol`` but the certificate does not prove it.
    message : str
        Why it stopped, for people.
    n_iter : int
        iterations over all stages.
    n_stages, n_searches, n_evaluations, n_hessian_products : int
    n_retreats : int
        Newton calls taken back because the impostor search after them found that they had
        raised ``F_gamma`` (``solver._Run._retract``).
    search_fraction : float
        Points searched per exact search, as a fraction of ``n``.
    n_active : int
        Triplets with a positive hinge at ``metric``.
    active_triplets : ndarray of int, shape (n_active, 3)
        Those triplets, a warm start for ``lmnn_sdp``'s constraint generation.
    stages : list of Stage
    upper_path : list of (float, float)
        ``(seconds since the start of the solve, upper)`` at every improvement of the upper
        bound: eq. 14 at the best metric so far, learnt right after an exact impostor search
        (at the start, after every search within a stage, and at the end of every stage).
    timings : dict of str to float
        Seconds in ``search``, ``newton``, ``escape`` (the line searches in ``M`` of
        ``factors.escape``), ``bounds`` and ``total``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> from fast_solver import solve
    >>> result = solve(problem)
    >>> result.status, result.converged, result.certified
    ('converged', True, True)
    >>> result.metric.shape, result.components.shape
    ((4, 4), (4, 4))
    >>> bool(result.relative_gap <= result.tol)
    True
    >>> result.certificate.verify().certified  # the proof, re-derived from its evidence
    True
    """

    certificate: Certificate
    status: str
    message: str
    n_iter: int
    n_stages: int
    n_searches: int
    n_evaluations: int
    n_hessian_products: int
    search_fraction: float
    n_active: int
    n_retreats: int
    active_triplets: np.ndarray
    stages: list = field(default_factory=list)
    upper_path: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)

    @property
    def clusters(self) -> np.ndarray | None:
        """Cluster of each point (n,) for multi-metric LMNN, else None."""
        return self.certificate.clusters

    @property
    def components(self) -> np.ndarray:
        """``L`` (d, d) with ``L^T L = metric``, rows by decreasing eigenvalue (eq. 2);
        (C, d, d), one per cluster, for multi-metric LMNN."""
        if self.metric.ndim == 3:
            return np.stack([psd_factor(m) for m in self.metric])
        return psd_factor(self.metric)

    def __repr__(self) -> str:
        return (f"FastLMNNResult(upper={self.upper:.10g}, lower={self.lower:.10g}, "
                f"relative_gap={self.relative_gap:.3g}, status={self.status!r}, "
                f"n_iter={self.n_iter}, stages={self.n_stages}, searches={self.n_searches}, "
                f"active={self.n_active}, time={self.timings.get('total', float('nan')):.3g} s, "
                f"message={self.message!r})")


def solve_status(certificate: Certificate, stop: str) -> str:
    """``FastLMNNResult.status`` of a solve that ended by ``stop``: the certificate alone
    decides ``converged``."""
    return CONVERGED if certificate.certified else MAX_ITER if stop == "max_iter" else STALLED


def solve_message(certificate: Certificate, stop: str, *, max_iter: int, max_stages: int,
                  estimated_gap: float, tol: float, fall: float = np.inf, window: int = 0) -> str:
    """``FastLMNNResult.message`` of a solve that ended by ``stop`` ("mu=0", "small mu", "proved",
    "max_iter", "stages", "unprovable", "zero", and at ``mu = 1`` "atol", "push only" or
    "width", ``fast_solver.lmnn.solver._Run._result``), with ``estimated_gap`` its own estimate
    of the gap at the end and ``fall`` the relative fall of its best objective over the last
    ``window`` stages (``degenerate.recent_fall``)."""
    if certificate.certified:
        return "converged: " + {"mu=0": "mu = 0, so M = 0 is optimal",
                                "small mu": f"mu = {certificate.problem.mu:.3g} is so small that M = 0, where eq. 14 "
                                            "is mu times the number of triplets, attains "
                                            f"{certificate.upper:.3g}, within atol={certificate.atol:g} "
                                            "of the optimum 0",
                                "max_iter": "the certified gap is below tol (proved at the iteration limit)",
                                "zero": f"eq. 14's optimum is 0 ({ZERO_OPTIMUM}), and the metric attains "
                                        f"eq. 14 = {certificate.upper:.3g} +- {certificate.upper_error:.3g}, "
                                        f"within atol={certificate.atol:g} of it",
                                }.get(stop, _proved(certificate, tol))
    if stop == "zero":
        return (f"not converged: eq. 14's optimum is 0 ({ZERO_OPTIMUM}); the metric attains eq. 14 = "
                f"{certificate.upper:.3g} +- {certificate.upper_error:.3g} in float64, more than "
                f"atol={certificate.atol:g} with its rounding, and no relative gap is proved at an optimum of 0")
    if stop == "small mu":
        return (f"not converged: M = 0 attains eq. 14 = {certificate.upper:.3g} +- "
                f"{certificate.upper_error:.3g}, more than atol={certificate.atol:g} with its rounding")
    if stop == "max_iter":
        message = f"not converged: max_iter={max_iter} iterations spent before the certified gap reached tol"
    elif stop == "stages":
        message = f"not converged: {max_stages} stages ended before the certified gap reached tol"
    elif stop == "push only":
        message = (f"not converged: the best objective stopped falling (by a relative {fall:.2g} over the "
                   f"last {window} stages)")
    elif stop == "width":
        message = (f"not converged: stopped at a cap, the smoothing width at float64's resolution of the unit "
                   f"margin, while the best objective still fell (by a relative {fall:.2g} over the last "
                   f"{window} stages), as it would forever towards an infimum that is not attained")
    else:
        message = (f"not converged: the estimated gap {estimated_gap:.2g} is below tol, but the "
                   f"certificate proves only {certificate.relative_gap:.3g}")
        if certificate.dual_scale is not None and 1.0 - certificate.dual_scale > tol / 2:
            message += (f"; the bound's scale into the dual cone is {certificate.dual_scale:.10g} (its "
                        "float64 rounding allowance grows with the number of points)")
    if certificate.problem.mu == 1.0:
        message += "; " + push_only(certificate.lower, certificate.upper)
    return message + _what_kept_the_proof(certificate, tol)


def _proved(certificate: Certificate, tol: float) -> str:
    """What a certificate that certifies proves: the gap below ``tol``, or the metric within
    ``atol`` of the optimum 0."""
    if certificate.relative_gap <= tol:
        return "the certified gap is below tol"
    return (f"the metric attains eq. 14 = {certificate.upper:.3g} +- {certificate.upper_error:.3g}, "
            f"within atol={certificate.atol:g} of the optimum 0")


def without_pull_message(certificate: Certificate) -> str:
    """The message of a solve whose points all coincide with their target neighbours
    (``fast_solver.lmnn.degenerate.without_pull``)."""
    why = ("every point coincides with its target neighbours, so eq. 14 is minimised by any "
           "metric that puts the impostors that differ from their point beyond the margin")
    if certificate.certified:
        return f"converged: {why}"
    return f"not converged: {why}; {certificate.refused or 'the gap in float64 is above tol'}"


ZERO_OPTIMUM = ("every impostor has a component on the null space of its cluster's pull matrix, as when "
                "the points are fewer than the features, where the metric puts it beyond the margin and "
                "leaves every target distance at 0")


def _what_kept_the_proof(certificate: Certificate, tol: float) -> str:
    """What kept ``certificate`` from proving more than it does, for a message."""
    if certificate.refused:
        message = f"; {certificate.refused}"
    elif certificate.upper_error > tol * certificate.upper:
        top = np.linalg.eigvalsh(certificate.metric)[..., -1].max()
        message = (f"; eq. 14 at the metric is known only to +-{certificate.upper_error:.3g} in "
                   f"float64 (its largest eigenvalue is {top:.3g})")
    else:
        message = ""
    if certificate.singular_clusters and certificate.problem.mu < 1.0:  # at mu = 1, ``push_only`` says why
        message += "; " + singular_pull(certificate.problem.mu)
    return message
