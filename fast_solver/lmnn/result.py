"""What ``fast_solver.solve`` returns, in the manner of SciPy's ``OptimizeResult``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lmnn_sdp.certificates.certificate import Certificate
from lmnn_sdp.certificates.certified import CertifiedResult
from lmnn_sdp.core.psd import psd_factor


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
        Newton iterations spent in it.
    stop : str
        Why its Newton iterations ended.
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
    stop: str  # why the Newton iterations ended
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
        ``tol``; ``max_iter`` Newton iterations were spent first; or the solver's own
        estimate reached ``tol`` but the certificate does not prove it.
    message : str
        Why it stopped, for people.
    n_iter : int
        Newton iterations over all stages.
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
        ``solver._escape``), ``bounds`` and ``total``.

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
