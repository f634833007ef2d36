"""Certificates of LMNN and multi-metric LMNN: bounds, the evidence that proves them, a file.

A ``Certificate`` states ``upper`` (eq. 14, or sec. 5.2's objective, at the metric),
``lower`` (a rigorous lower bound on the optimum, ``bounds.dual_lower_bound``), a bound
on the rounding of each (``lmnn_sdp.core.rounding``), ``relative_gap`` (with the rounding
counted against it) and ``certified``, and carries what proves them: the problem, the
metric(s), the triplets and their positive multipliers.
``verify()`` re-derives both bounds from that evidence alone, numpy and scipy
only, and refuses any stored number the evidence does not reproduce;
``save``/``load`` write and read it in the corpus format (``storage``), so a
certificate can travel with a paper and anyone can re-check it.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from lmnn_sdp.certificates import storage
from lmnn_sdp.certificates.bounds import (
    check_candidate_metric,
    dual_lower_bound,
    relative_gap,
    repair_multipliers,
    significant,
)
from lmnn_sdp.core.checks import check_tol, check_triplets
from lmnn_sdp.core.problem import LMNNProblem, ObjectiveValue
from lmnn_sdp.core.psd import project_psd
from lmnn_sdp.core.rounding import summation

KINDS = ("lmnn", "multi-metric-lmnn")
ATOL = 1e-6  # default ``atol``: eq. 14 counts distances and hinges in units of the unit margin


@dataclass(frozen=True, eq=False, repr=False)
class Certificate:
    """Bounds on the LMNN optimum proved for one metric, with their evidence.

    Attributes
    ----------
    upper, upper_error : float
        ``eps(metric)`` as computed and a bound on its rounding: ``upper + upper_error`` is
        at least ``eps`` at a PSD metric within rounding of ``metric``
        (``lmnn_sdp.core.rounding``).
    lower, lower_error : float
        A lower bound on the optimum proved by the multipliers (``bounds.dual_lower_bound``)
        and a bound on the rounding of its sum: the optimum is at least ``lower - lower_error``.
    relative_gap : float
        ``(U - L) / U`` with ``U = upper + upper_error`` and ``L = lower - lower_error``: a
        bound on ``(eps(metric) - opt) / eps(metric)`` that no rounding can undercut.
    certified : bool
        ``relative_gap <= tol``, or ``upper + upper_error <= atol`` (a zero optimum, below),
        and an independent evaluation of eq. 14 (``independent_check``) agrees with ``upper``
        to within the two rounding bounds.
    refused : str
        Why the certificate is not certified although ``relative_gap <= tol``; "" otherwise.
    tol : float
    atol : float
        Absolute tolerance of a zero optimum. eq. 14 is non-negative, so a metric whose
        objective with its rounding is at most ``atol`` is within ``atol`` of the optimum,
        however small that is; no relative gap can prove an optimum of 0, so this is how one
        is certified (mu = 0, mu = 1 with every hinge cleared, fewer points than features).
        Default ``ATOL`` = 1e-6, a millionth of the unit margin; 0 in certificates of formats
        3 and 4, which had no such rule. Design note: docs/design/certificates.md.
    metric : ndarray of shape (d, d), or (C, d, d) with ``clusters``
    triplets : ndarray of int, shape (T, 3)
    multipliers : ndarray of shape (T,)
        The evidence: the triplets with a positive multiplier, and those multipliers;
        ``dual_lower_bound(problem, triplets, multipliers)`` proves ``lower``.
    problem : LMNNProblem
        With its clusters for multi-metric LMNN (eq. 16).
    clusters : ndarray of int, shape (n,), or None
        ``problem.clusters``: the cluster of each point for multi-metric LMNN; None for LMNN.
    min_eig_metric : float or None
        Smallest eigenvalue of the metric(s) as given (None when only loaded; ``verify``
        re-derives it).
    dual_scale, min_eig_dual : float or None; singular_clusters : tuple; n_dropped : int
        How the lower bound was proved, in the coordinates the proof used (the smallest
        scale into the dual cone, the smallest eigenvalue of the scaled ``Z_c``, clusters
        with a singular pull matrix and the impostor multipliers dropped for them). Not
        saved and not claims: ``verify`` returns a certificate with its own.
    provenance : {"computed", "loaded", "verified"}
        Where the numbers come from: proved here, read from a file (not yet checked), or
        re-derived by ``verify``.
    timings : dict of str to float
        Seconds spent proving (``prove``), loading (``load``) or verifying (``verify``).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import LMNNProblem
    >>> X, y = load_iris(return_X_y=True)
    >>> problem = LMNNProblem(X[::5], y[::5], k=2)
    >>> import numpy as np
    >>> from lmnn_sdp import certify
    >>> cert = certify(problem, np.eye(4))
    >>> cert.certified, cert.provenance, cert.kind
    (False, 'computed', 'lmnn')
    >>> bool(cert.lower <= cert.upper), round(cert.upper, 3)
    (True, 12.755)
    >>> again = cert.verify()  # re-derived from the evidence alone
    >>> again.provenance, again.certified
    ('verified', False)
    """

    upper: float
    lower: float
    relative_gap: float
    certified: bool
    tol: float
    metric: np.ndarray
    triplets: np.ndarray
    multipliers: np.ndarray
    problem: LMNNProblem
    upper_error: float = 0.0
    lower_error: float = 0.0
    refused: str = ""
    atol: float = 0.0
    dual_scale: float | None = None
    min_eig_metric: float | None = None
    min_eig_dual: float | None = None
    singular_clusters: tuple = ()
    n_dropped: int = 0
    provenance: str = "computed"
    timings: dict = field(default_factory=dict)

    @property
    def clusters(self) -> np.ndarray | None:
        return self.problem.clusters

    @property
    def kind(self) -> str:
        """``"lmnn"`` or ``"multi-metric-lmnn"``."""
        return "lmnn" if self.clusters is None else "multi-metric-lmnn"

    @property
    def proves_zero(self) -> bool:
        """The upper bound with its rounding is at most ``atol``: the optimum is within ``atol``
        of 0 and so is the metric's objective."""
        return proves_zero(self.upper + self.upper_error, self.atol)

    @property
    def n_multipliers(self) -> int:
        """Number of positive multipliers in the evidence."""
        return int(np.count_nonzero(self.multipliers > 0))

    def __repr__(self) -> str:
        verdict = "certified" if self.certified else "NOT certified"
        singular = f", singular_clusters={self.singular_clusters}" if self.singular_clusters else ""
        alpha = "" if self.dual_scale is None else f"alpha={self.dual_scale:.6g}, "
        return (f"Certificate({self.kind}, {verdict}: upper={self.upper:.10g} "
                f"(+-{self.upper_error:.2g}), lower={self.lower:.10g}, "
                f"relative_gap={significant(self.relative_gap)}, tol={self.tol:g}, "
                + (f"zero optimum within atol={self.atol:g}, " if self.proves_zero else "") + f"{alpha}"
                f"multipliers={self.n_multipliers}{singular}, provenance={self.provenance!r})")

    def verify(self, rtol: float = 1e-9) -> Certificate:
        """Re-derive the certificate from its evidence alone and check every stated number.

        ``upper`` must agree with eq. 14 re-evaluated at ``metric``, and with an
        independent evaluation (``independent_check``), to within the rounding bounds of
        both; ``upper_error`` and ``lower_error`` must be at least half of their
        re-derived values (the bounds carry a factor 2 to spare); ``lower`` must be proved
        by the multipliers (to ``rtol``); ``relative_gap`` and ``certified`` must follow
        from these, ``tol`` and ``atol``; ``min_eig_metric``, when stated, must be reproduced to
        ``rtol``. Returns the re-derived certificate;
        a ValueError names the first stated number the evidence does not support."""
        start = time.perf_counter()
        fresh = prove(self.problem, self.metric, self.triplets, self.multipliers,
                      tol=self.tol, atol=self.atol, repair=False, check=False)
        slack = lambda value: rtol * max(1.0, abs(value))  # noqa: E731
        if not abs(fresh.upper - self.upper) <= self.upper_error + fresh.upper_error:
            raise ValueError(f"certificate refused: the metric's objective is {fresh.upper!r} "
                             f"(+-{fresh.upper_error:.3g}), not the stated upper={self.upper!r} "
                             f"(+-{self.upper_error:.3g}).")
        disagreement = independent_check(self.problem, self.metric, self.upper, self.upper_error)
        if disagreement:
            raise ValueError(f"certificate refused: {disagreement}")
        for name in ("upper_error", "lower_error"):
            if not getattr(self, name) >= 0.5 * getattr(fresh, name):
                raise ValueError(f"certificate refused: the stated {name}={getattr(self, name)!r} "
                                 f"is below the rounding bound {getattr(fresh, name)!r}.")
        if fresh.lower < self.lower - slack(self.lower):
            raise ValueError(f"certificate refused: the multipliers prove lower={fresh.lower!r}, "
                             f"less than the stated lower={self.lower!r}.")
        gap = relative_gap(self.upper + self.upper_error, self.lower - self.lower_error)
        if not np.isclose(gap, self.relative_gap, rtol=rtol, atol=0.0):
            raise ValueError(f"certificate refused: upper and lower with their rounding give "
                             f"relative_gap={gap!r}, not the stated {self.relative_gap!r}.")
        proved = gap <= self.tol or proves_zero(self.upper + self.upper_error, self.atol)
        if self.certified != bool(proved and not self.refused):
            raise ValueError(f"certificate refused: certified={self.certified} contradicts "
                             f"relative_gap={gap:.3g}, tol={self.tol:g}, upper={self.upper!r} "
                             f"(+-{self.upper_error:.3g}) and atol={self.atol:g}.")
        stated = self.min_eig_metric
        if stated is not None and not abs(stated - fresh.min_eig_metric) <= slack(fresh.min_eig_metric):
            raise ValueError(f"certificate refused: the metric's smallest eigenvalue is "
                             f"{fresh.min_eig_metric!r}, not the stated min_eig_metric={stated!r}.")
        return replace(fresh, provenance="verified", timings={"verify": time.perf_counter() - start})

    def record(self) -> tuple[dict, dict]:
        """``(arrays, fields)`` of the corpus format (``lmnn_sdp/testing/corpus/README.md``)."""
        p = self.problem
        arrays = {"X": p.X, "y": p.label_codes.astype(np.int64),
                  "targets": p.targets.astype(np.int64), "mu": np.float64(p.mu),
                  "M": self.metric, "triplets": self.triplets.astype(np.int64),
                  "multipliers": self.multipliers}
        fields = {"problem": self.kind, "n": p.n_samples, "d": p.n_features, "k": p.k,
                  "mu": p.mu, "classes": len(p.classes), "triplets": p.n_triplets}
        if self.clusters is not None:
            arrays["clusters"] = self.clusters.astype(np.int64)
            fields["clusters"] = p.n_clusters
        fields.update(upper=self.upper, upper_error=self.upper_error, lower=self.lower,
                      lower_error=self.lower_error, relative_gap=self.relative_gap,
                      certified=self.certified, refused=self.refused, tol=self.tol, atol=self.atol)
        return arrays, fields

    def save(self, path) -> tuple:
        """Write ``PATH.npz`` (problem, metric, evidence) and ``PATH.json`` (the numbers)."""
        return storage.save(path, *self.record())

    @classmethod
    def load(cls, path, fields: dict | None = None) -> Certificate:
        """Read a certificate saved by ``save`` (or a corpus entry, ``fields`` from its
        manifest). The numbers are as stored: call ``verify()`` to check them."""
        start = time.perf_counter()
        arrays, fields = storage.load(path, fields)
        if fields.get("problem") not in KINDS:
            raise ValueError(f"{path}: problem={fields.get('problem')!r} is not one of {KINDS}.")
        problem = LMNNProblem(arrays["X"], arrays["y"], targets=arrays["targets"],
                              mu=float(arrays["mu"]), clusters=arrays.get("clusters"))
        stated = {"n": problem.n_samples, "d": problem.n_features, "k": problem.k,
                  "mu": problem.mu, "classes": len(problem.classes),
                  "triplets": problem.n_triplets}
        if problem.clusters is not None:
            stated["clusters"] = problem.n_clusters
        for name, value in stated.items():
            if fields.get(name) != value:
                raise ValueError(f"{path}: the fields say {name}={fields.get(name)!r} but the "
                                 f"arrays give {value!r}; the certificate is refused.")
        return cls(upper=fields["upper"], upper_error=fields["upper_error"], lower=fields["lower"],
                   lower_error=fields["lower_error"], relative_gap=fields["relative_gap"],
                   certified=fields["certified"], refused=fields["refused"], tol=fields["tol"],
                   atol=fields.get("atol", 0.0),  # formats 3 and 4 had no zero-optimum rule
                   metric=arrays["M"], triplets=arrays["triplets"],
                   multipliers=arrays["multipliers"], problem=problem, provenance="loaded", timings={"load": time.perf_counter() - start})


def prove(problem: LMNNProblem, metric, triplets, multipliers, *, tol: float = 1e-6,
          atol: float = ATOL, repair: bool = True, check: bool = True) -> Certificate:
    """The certificate that ``multipliers`` on ``triplets`` (T, 3) give ``metric``.

    ``metric`` is (d, d), or (C, d, d) for a ``problem`` with clusters (multi-metric LMNN).
    ``upper`` is eq. 14 at ``metric`` evaluated on the centred inputs with its rounding
    bound (``LMNNProblem.evaluate``); the lower bound is proved in the sphered data range
    (``bounds.dual_lower_bound``'s default, its own bases only where the one allowance does
    not prove ``tol``), where ``verify`` re-derives it. When the
    scale into the dual cone leaves the gap above ``tol`` and ``repair`` is True, the
    multipliers lowered by ``bounds.repair_multipliers`` are tried as well, and whichever
    proves more is the certificate's evidence (``verify`` re-derives it with ``repair=False``).
    ``atol`` certifies a zero optimum (``Certificate.atol``). With ``check`` (the default), a
    gap within ``tol`` or an upper bound within ``atol`` is certified only after the
    independent evaluation that ``verify`` makes agrees (``independent_check``); it runs on a
    second thread beside the rest."""
    check_tol(tol)
    check_tol(atol, "atol")
    start = time.perf_counter()
    metric, min_eig = check_candidate_metric(problem, metric)
    triplets = check_triplets(triplets, problem.n_samples)
    multipliers = np.asarray(multipliers, dtype=float)
    with ThreadPoolExecutor(1) as pool:  # the independent evaluation runs beside the rest
        other = pool.submit(problem.evaluate, metric, origin=problem.independent_origin()) if check else None
        upper = problem.evaluate(metric)
        enough = (upper.value + upper.rounding) * (1.0 - tol) + summation(len(triplets) + 2, upper.value)
        bound = dual_lower_bound(problem, triplets, multipliers, enough=enough)
        if repair and bound.alpha < 1.0 and relative_gap(upper.value, bound.lower) > tol:
            scaling_cost = bound.multiplier_sum - bound.lower
            repaired = repair_multipliers(problem, triplets, multipliers, max_decrease=scaling_cost)
            better = dual_lower_bound(problem, triplets, repaired, enough=enough)
            if better.lower > bound.lower:
                multipliers, bound = repaired, better
        keep = multipliers > 0  # zeros prove nothing: the evidence is the positive multipliers
        lower_error = summation(len(triplets) + 2, bound.lower)
        gap = relative_gap(upper.value + upper.rounding, bound.lower - lower_error)
        proved = gap <= tol or proves_zero(upper.value + upper.rounding, atol)
        refused = ""
        if check and proved:
            refused = independent_check(problem, metric, upper.value, upper.rounding, other.result())
    return Certificate(upper=upper.value, upper_error=upper.rounding, lower=bound.lower,
                       lower_error=lower_error, relative_gap=gap,
                       certified=bool(proved and not refused), refused=refused,
                       tol=float(tol), atol=float(atol), metric=metric, triplets=triplets[keep],
                       multipliers=multipliers[keep], problem=problem,
                       dual_scale=bound.alpha, min_eig_metric=min_eig,
                       min_eig_dual=bound.min_eig_dual, singular_clusters=bound.singular_clusters,
                       n_dropped=bound.n_dropped, timings={"prove": time.perf_counter() - start})


def prove_projected(problem: LMNNProblem, metric, triplets, multipliers, *, tol: float = 1e-6) -> Certificate:
    """``prove``, and where the metric's rounding allowance alone keeps it from proving ``tol``,
    ``prove`` again at its PSD projection (eq. 20, per metric): the better certificate.

    A metric computed as ``L^T L`` and lifted to the inputs can be indefinite by a rounding
    (tiny entries beside zero diagonals), and the PSD correction of its rounding bound
    (``core.rounding``) then costs far more than the rounding itself (design note
    docs/design/certificates.md, "The property test over mu, at length")."""
    certificate = prove(problem, metric, triplets, multipliers, tol=tol)
    if certificate.certified or not certificate.upper_error > 0.5 * tol * certificate.upper:
        return certificate
    metric = np.asarray(metric, dtype=float)
    projected = project_psd(metric) if metric.ndim == 2 else np.stack([project_psd(m) for m in metric])
    other = prove(problem, projected, triplets, multipliers, tol=tol)
    return min(certificate, other, key=lambda c: (not c.certified, c.relative_gap))


def proves_zero(upper_with_rounding: float, atol: float) -> bool:
    """An upper bound on eq. 14 (with its rounding) at most ``atol`` proves the optimum within
    ``atol`` of 0, since eq. 14 is non-negative (``Certificate.atol``)."""
    return bool(upper_with_rounding <= atol)


def independent_check(problem: LMNNProblem, metric, upper: float, upper_error: float,
                      other: ObjectiveValue | None = None) -> str:
    """"" when eq. 14 evaluated on the inputs less another origin
    (``LMNNProblem.independent_origin``: every distance rounds differently) agrees with
    ``upper`` to within ``upper_error`` plus its own rounding bound; else why not. ``other``
    is that evaluation when already made (``prove`` makes it beside its own)."""
    if other is None:
        other = problem.evaluate(metric, origin=problem.independent_origin())
    if abs(other.value - upper) <= upper_error + other.rounding:
        return ""
    return (f"an independent evaluation of eq. 14 gives {other.value!r} (+-{other.rounding:.3g}), "
            f"which differs from upper={upper!r} (+-{upper_error:.3g}) by more than their "
            "rounding bounds.")
