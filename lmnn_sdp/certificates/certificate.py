"""Certificates of LMNN and multi-metric LMNN: bounds, the evidence that proves them, a file.

A ``Certificate`` states ``upper`` (eq. 14, or sec. 5.2's objective, at the metric),
``lower`` (a rigorous lower bound on the optimum, ``bounds.dual_lower_bound``),
``relative_gap`` and ``certified`` (``relative_gap <= tol``), and carries what
proves them: the problem, the metric(s), the triplets and their multipliers.
``verify()`` re-derives both bounds from that evidence alone, numpy and scipy
only, and refuses any stored number the evidence does not reproduce;
``save``/``load`` write and read it in the corpus format (``storage``), so a
certificate can travel with a paper and anyone can re-check it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from lmnn_sdp.certificates import storage
from lmnn_sdp.certificates.bounds import (check_candidate_metric, dual_lower_bound, relative_gap,
                                          repair_multipliers)
from lmnn_sdp.core.problem import LMNNProblem, check_clusters, check_triplets
from lmnn_sdp.core.space import ReducedSpace

KINDS = ("lmnn", "multi-metric-lmnn")


@dataclass(frozen=True, eq=False, repr=False)
class Certificate:
    """Bounds on the LMNN optimum proved for one metric, with their evidence.

    Attributes
    ----------
    upper, lower, relative_gap : float
        ``eps(metric)``, a rigorous lower bound on the optimum, ``(upper - lower) / upper``.
    certified : bool
        ``relative_gap <= tol``.
    tol : float
    metric : ndarray of shape (d, d), or (C, d, d) with ``clusters``
    triplets : ndarray of int, shape (T, 3)
    multipliers : ndarray of shape (T,)
        The evidence: ``dual_lower_bound(problem, triplets, multipliers)`` proves ``lower``.
    problem : LMNNProblem
    clusters : ndarray of int, shape (n,), or None
        Cluster of each point for multi-metric LMNN (eq. 16); None for LMNN.
    dual_scale : float
        ``alpha``, the scale that put the multipliers into the dual cone (with clusters, the
        smallest of the clusters' scales, ``bounds.dual_lower_bound``).
    min_eig_metric, min_eig_dual : float
        Smallest eigenvalue of the metric(s) as given and of the scaled ``Z_c``.
    n_free : int
        Multipliers left free in the complementary-slackness SDP (0 if given).
    singular_clusters : tuple, n_dropped : int
        Clusters with a singular pull matrix and the impostor multipliers dropped for them.
    status : {"computed", "loaded", "verified"}
        Where the numbers come from: proved here, read from a file (not yet checked), or
        re-derived by ``verify``.
    timings : dict of str to float
        Seconds spent proving (``prove``), loading (``load``) or verifying (``verify``).
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
    clusters: np.ndarray | None = None
    dual_scale: float = 1.0
    min_eig_metric: float = 0.0
    min_eig_dual: float = 0.0
    n_free: int = 0
    singular_clusters: tuple = ()
    n_dropped: int = 0
    status: str = "computed"
    timings: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return "lmnn" if self.clusters is None else "multi-metric-lmnn"

    @property
    def n_multipliers(self) -> int:
        return len(self.triplets)

    def __repr__(self) -> str:
        verdict = "certified" if self.certified else "NOT certified"
        singular = f", singular_clusters={self.singular_clusters}" if self.singular_clusters else ""
        return (f"Certificate({self.kind}, {verdict}: upper={self.upper:.10g}, "
                f"lower={self.lower:.10g}, relative_gap={self.relative_gap:.3g}, tol={self.tol:g}, "
                f"alpha={self.dual_scale:.6g}, multipliers={self.n_multipliers}{singular}, "
                f"status={self.status!r})")

    def verify(self, rtol: float = 1e-9) -> Certificate:
        """Re-derive the certificate from its evidence alone and check every stated number.

        Returns the re-derived certificate; a ValueError names the first number the
        evidence does not reproduce (``upper`` beyond ``rtol``), does not prove
        (``lower``), or that contradicts the others (``relative_gap``, ``certified``)."""
        start = time.perf_counter()
        fresh = prove(self.problem, self.metric, self.triplets, self.multipliers,
                      clusters=self.clusters, tol=self.tol, repair=False)
        slack = lambda value: rtol * max(1.0, abs(value))  # noqa: E731
        if abs(fresh.upper - self.upper) > slack(self.upper):
            raise ValueError(f"certificate refused: the metric's objective is {fresh.upper!r}, "
                             f"not the stated upper={self.upper!r}.")
        if fresh.lower < self.lower - slack(self.lower):
            raise ValueError(f"certificate refused: the multipliers prove lower={fresh.lower!r}, "
                             f"less than the stated lower={self.lower!r}.")
        gap = relative_gap(self.upper, self.lower)
        if not np.isclose(gap, self.relative_gap, rtol=rtol, atol=0.0):
            raise ValueError(f"certificate refused: upper and lower give relative_gap={gap!r}, "
                             f"not the stated {self.relative_gap!r}.")
        if self.certified != bool(gap <= self.tol):
            raise ValueError(f"certificate refused: certified={self.certified} contradicts "
                             f"relative_gap={gap:.3g} and tol={self.tol:g}.")
        return replace(fresh, status="verified", timings={"verify": time.perf_counter() - start})

    def record(self) -> tuple[dict, dict]:
        """``(arrays, fields)`` of the corpus format (``validation/corpus/README.md``);
        triplets with multiplier 0 are left out, since they prove nothing."""
        p = self.problem
        keep = self.multipliers > 0
        arrays = {"X": p.X, "y": p.label_codes.astype(np.int64),
                  "targets": p.targets.astype(np.int64), "mu": np.float64(p.mu),
                  "M": self.metric, "triplets": self.triplets[keep].astype(np.int64),
                  "multipliers": self.multipliers[keep]}
        fields = {"problem": self.kind, "n": p.n_samples, "d": p.n_features, "k": p.k,
                  "mu": p.mu, "classes": len(p.classes), "triplets": p.n_triplets}
        if self.clusters is not None:
            arrays["clusters"] = self.clusters.astype(np.int64)
            fields["clusters"] = int(self.clusters.max()) + 1
        fields.update(upper=self.upper, lower=self.lower, relative_gap=self.relative_gap,
                      certified=self.certified, tol=self.tol, dual_scale=self.dual_scale,
                      min_eig_metric=self.min_eig_metric, min_eig_dual=self.min_eig_dual,
                      n_free=self.n_free)
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
                              mu=float(arrays["mu"]))
        clusters = arrays.get("clusters")
        stated = {"n": problem.n_samples, "d": problem.n_features, "k": problem.k,
                  "mu": problem.mu, "classes": len(problem.classes),
                  "triplets": problem.n_triplets}
        if clusters is not None:
            stated["clusters"] = int(clusters.max()) + 1
        for name, value in stated.items():
            if fields.get(name) != value:
                raise ValueError(f"{path}: the fields say {name}={fields.get(name)!r} but the "
                                 f"arrays give {value!r}; the certificate is refused.")
        return cls(upper=fields["upper"], lower=fields["lower"],
                   relative_gap=fields["relative_gap"], certified=fields["certified"],
                   tol=fields["tol"], metric=arrays["M"], triplets=arrays["triplets"],
                   multipliers=arrays["multipliers"], problem=problem, clusters=clusters,
                   dual_scale=fields["dual_scale"], min_eig_metric=fields["min_eig_metric"],
                   min_eig_dual=fields["min_eig_dual"], n_free=fields["n_free"], status="loaded",
                   timings={"load": time.perf_counter() - start})


def prove(problem: LMNNProblem, metric, triplets, multipliers, *, clusters=None,
          tol: float = 1e-6, space: ReducedSpace | None = None, upper: float | None = None,
          n_free: int = 0, repair: bool = True) -> Certificate:
    """The certificate that ``multipliers`` on ``triplets`` (T, 3) give ``metric``.

    ``metric`` is (d, d), or (C, d, d) with ``clusters`` (n,) for multi-metric LMNN.
    ``upper`` is the objective at ``metric`` when already evaluated exactly (the
    fast solver evaluates it in its own coordinates right after an exact search);
    by default it is computed here. ``space`` is passed to ``dual_lower_bound``. When the
    scale into the dual cone leaves the gap above ``tol`` and ``repair`` is True, the
    multipliers lowered by ``bounds.repair_multipliers`` are tried as well, and whichever
    proves more is the certificate's evidence (``verify`` re-derives it with ``repair=False``)."""
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol}.")
    start = time.perf_counter()
    if clusters is not None:
        clusters = check_clusters(problem, clusters)
    metric, min_eig = check_candidate_metric(problem, metric, clusters)
    if upper is None:
        upper = problem.objective(metric, clusters)
    triplets = check_triplets(triplets, problem.n_samples)
    multipliers = np.asarray(multipliers, dtype=float)
    bound = dual_lower_bound(problem, triplets, multipliers, space, clusters)
    if repair and bound.alpha < 1.0 and relative_gap(upper, bound.lower) > tol:
        scaling_cost = bound.multiplier_sum - bound.lower
        repaired = repair_multipliers(problem, triplets, multipliers, space, clusters,
                                      max_decrease=scaling_cost)
        better = dual_lower_bound(problem, triplets, repaired, space, clusters)
        if better.lower > bound.lower:
            multipliers, bound = repaired, better
    gap = relative_gap(upper, bound.lower)
    return Certificate(upper=float(upper), lower=bound.lower, relative_gap=gap,
                       certified=bool(gap <= tol), tol=float(tol), metric=metric,
                       triplets=triplets, multipliers=multipliers, problem=problem,
                       clusters=clusters, dual_scale=bound.alpha, min_eig_metric=min_eig,
                       min_eig_dual=bound.min_eig_dual, n_free=n_free,
                       singular_clusters=bound.singular_clusters, n_dropped=bound.n_dropped,
                       timings={"prove": time.perf_counter() - start})
