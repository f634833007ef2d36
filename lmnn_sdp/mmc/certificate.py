r"""Certificates of MMC: a feasible value, a rigorous bound, and the evidence that proves them.

An ``MMCCertificate`` rests on numbers of the maximisation (MMC) (over diagonal metrics
for (XING)) of ``lmnn_sdp.mmc.problem`` at a metric ``M`` with ``<M, Sigma> = 1``:

- ``value``: ``f(M) / sqrt(<M, Sigma>)``, the value of ``M``'s exactly feasible rescaling;
- ``feasible_value``: ``value`` less the rounding of ``M``'s entries (``evaluate``);
- ``bound``: ``sum(tangents) / 2 + multiplier``, an upper bound on the optimum by weak
  duality (``lmnn_sdp.mmc.bound``, (WD)) once the multiplier is proved.

It speaks the library's vocabulary for the problem it certifies. (MMC) is a
maximisation: ``objective = value``, ``lower = feasible_value``, ``upper = bound``,
``relative_gap = (upper - lower) / upper``. (XING) is a minimisation of ``g`` at the
metric ``a = M / 2``, the best rescaling of ``M`` (XING-MMC): ``objective =
1/2 + log(2)/2 - log(value)`` (which is ``g(M / 2)``), ``upper`` the same at
``feasible_value``, ``lower = 1/2 + log(2)/2 - log(bound)``, and ``relative_gap =
upper - lower = log(bound / feasible_value)``, the maximisation's relative gap in log
scale. ``certified`` is ``relative_gap <= tol``.

The evidence is the problem (``X``, the index pairs, the labels when the pairs came
from them), ``M``, the tangent points (P,) and the multiplier. Implicit label pairs
(``mmc_problem(..., implicit=True)``; letters has 1.2e8) keep no pairs and no tangents:
their tangents follow from ``M`` by a ``TangentRule`` (a floor and a scale,
``lmnn_sdp.mmc.bound``). ``verify()`` re-derives the numbers from the evidence (numpy,
and the numba kernels of ``lmnn_sdp.mmc.compiled`` for implicit pairs) and refuses any
stated number it does not reproduce or prove; ``save``/``load`` write and read the
corpus format (``lmnn_sdp.certificates.storage``: arrays ``X``, ``y`` when known,
``similar``, ``dissimilar``, ``M``, ``tangents``, ``multiplier``, or for implicit pairs
``X``, ``y``, ``M``, ``tangent_floor``, ``tangent_scale``, ``multiplier``; fields
``problem``, ``n``, ``d``, ``classes``, ``similar``, ``dissimilar`` (pair counts),
``value``, ``bound``, ``relative_gap``, ``certified``, ``tol``, and ``pairs = "labels"``
for implicit pairs).

Rounding. ``bound`` carries the allowance of ``lmnn_sdp.mmc.bound``. Distances of
explicit pairs are evaluated in twice the working precision (``accurate_distances``;
implicit pairs: in plain floating point with a bound on its error,
``lmnn_sdp.mmc.pairs``): the optimal metric
nearly cancels on every similar pair, and in plain floating point ``u^T M u`` loses up
to nine digits when features differ in scale by 1e5. What remains is the float ``M``
itself, PSD and scaled only up to the rounding of its entries; ``feasible_value``
charges that rounding against the value, to first order.

Design note: docs/design/mmc.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from lmnn_sdp.certificates import storage
from lmnn_sdp.certificates.bounds import relative_gap as _relative_gap
from lmnn_sdp.certificates.bounds import significant
from lmnn_sdp.core.checks import check_tol
from lmnn_sdp.mmc import pairs
from lmnn_sdp.mmc.bound import (
    IMPLICIT_FLOORS,
    TangentRule,
    Whitening,
    best_rule,
    best_tangents,
    check_rule,
    covering_multiplier,
    rule_bound,
    smallest_multiplier,
    weak_duality_bound,
    whiten,
)
from lmnn_sdp.mmc.problem import (
    LOG_HALF,
    MMCProblem,
    accurate_distances,
    check_metric,
    mmc_problem,
    psd_part,
)

KINDS = ("mmc", "mmc-diagonal")
_REQUIRED = ("problem", "n", "d", "classes", "similar", "dissimilar", "value", "bound",
             "relative_gap", "certified", "tol")


@dataclass(frozen=True, eq=False, repr=False)
class MMCCertificate:
    """A feasible MMC metric with a rigorous bound on the optimum, and their evidence.

    Attributes
    ----------
    problem : MMCProblem
        ``X`` (n, d), ``similar`` (S, 2), ``dissimilar`` (P, 2), ``diagonal``, ``y``
        (no pairs when they are implicit).
    M : ndarray of shape (d, d)
        PSD (diagonal for (XING)) with ``<M, Sigma> = 1``: the array ``M`` of the files.
    tangents : ndarray of shape (P,), or TangentRule
        Tangent points ``s_p > 0``, one per dissimilar pair; for implicit pairs the rule
        that derives them from ``M``.
    multiplier : float
        ``lambda`` with ``lambda Sigma - G_s`` PSD (diagonal: on the diagonal).
    value, bound : float
        ``f(M) / sqrt(<M, Sigma>)`` and ``sum(tangents) / 2 + multiplier``, the files'
        ``value`` and ``bound``.
    feasible_value : float
        ``value`` less the rounding of ``M``'s entries (``evaluate``), derived from
        ``X`` and ``M``.
    relative_gap : float
        ``(upper - lower) / upper`` (MMC) or ``upper - lower`` (XING).
    certified : bool
        ``relative_gap <= tol``.
    tol : float
    min_eigenvalue : float
        Smallest eigenvalue of the candidate metric before its PSD part was taken.
    provenance : {"computed", "loaded", "verified"}
        Derived here, read from a file (stated, not yet checked), or re-derived by ``verify``.
    timings : dict of str to float
        Seconds spent: ``certify``, ``load`` or ``verify``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import solve_mmc
    >>> X, y = load_iris(return_X_y=True)
    >>> cert = solve_mmc(X[::5], y[::5]).certificate
    >>> cert.kind, cert.certified, cert.provenance
    ('mmc', True, 'computed')
    >>> cert.verify().provenance
    'verified'
    """

    problem: MMCProblem
    M: np.ndarray
    tangents: np.ndarray | TangentRule
    multiplier: float
    value: float
    bound: float
    feasible_value: float
    relative_gap: float
    certified: bool
    tol: float
    min_eigenvalue: float
    provenance: str = "computed"
    timings: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """``"mmc"`` or ``"mmc-diagonal"``."""
        return self.problem.kind

    @property
    def diagonal(self) -> bool:
        """Whether this is Xing's diagonal problem."""
        return self.problem.diagonal

    @property
    def sense(self) -> str:
        """``"maximize"`` (MMC) or ``"minimize"`` (XING)."""
        return "minimize" if self.diagonal else "maximize"

    @property
    def metric(self) -> np.ndarray:
        """The metric the objective speaks of: ``M`` (MMC) or ``a = M / 2`` (XING), (d, d)."""
        return self.M / 2 if self.diagonal else self.M

    @property
    def objective(self) -> float:
        """``f(metric)`` (MMC) or ``g(metric)`` (XING)."""
        return self._sides()[0]

    @property
    def upper(self) -> float:
        """The upper side: the bound (MMC, maximised) or the objective (Xing, minimised)."""
        return self._sides()[1]

    @property
    def lower(self) -> float:
        """The lower side: the objective (MMC, maximised) or the bound (Xing, minimised)."""
        return self._sides()[2]

    def _sides(self) -> tuple[float, float, float]:
        return _sides(self.value, self.feasible_value, self.bound, self.diagonal)

    def summary(self) -> str:
        """One line: verdict, kind, objective, bounds, gap, tolerance."""
        verdict = "certified" if self.certified else "NOT certified"
        kind = "diagonal" if self.diagonal else "full"
        return (f"{verdict}, {kind}: objective={self.objective:.10g}, upper={self.upper:.10g}, "
                f"lower={self.lower:.10g}, relative_gap={significant(self.relative_gap)}, tol={self.tol:g}")

    def __repr__(self) -> str:
        return f"MMCCertificate({self.summary()}, provenance={self.provenance!r})"

    def verify(self, rtol: float = 1e-9) -> MMCCertificate:
        """Re-derive the certificate from its evidence alone and check every stated number.

        ``value`` must be reproduced to ``rtol`` (relative), ``bound`` must be proved
        (the re-derived bound at most ``rtol`` above it), ``relative_gap`` must follow
        from ``bound`` and ``feasible_value``, and ``certified`` from the gap and ``tol``.
        Returns the re-derived certificate (provenance ``"verified"``); a ValueError names the
        first stated number the evidence does not support, or the part of the evidence
        that fails its role (``M`` infeasible, ``tangents`` not positive, ``multiplier``
        too small)."""
        start = time.perf_counter()
        fresh = prove(self.problem, self.M, self.tangents, self.multiplier, tol=self.tol)
        slack = lambda number: rtol * max(1.0, abs(number))  # noqa: E731
        if not abs(fresh.value - self.value) <= slack(self.value):
            raise ValueError(f"certificate refused: the metric's objective f(M) is "
                             f"{fresh.value!r}, not the stated value={self.value!r}.")
        if not fresh.bound <= self.bound + slack(self.bound):
            raise ValueError(f"certificate refused: the tangents and multiplier prove "
                             f"bound={fresh.bound!r}, not the stated {self.bound!r}.")
        gap = _gap(self.feasible_value, self.bound, self.diagonal)
        if not np.isclose(gap, self.relative_gap, rtol=rtol, atol=0.0):
            raise ValueError(f"certificate refused: the bound and the metric give "
                             f"relative_gap={gap!r}, not the stated {self.relative_gap!r}.")
        if self.certified != bool(gap <= self.tol):
            raise ValueError(f"certificate refused: certified={self.certified} contradicts "
                             f"relative_gap={gap:.3g} and tol={self.tol:g}.")
        return replace(fresh, provenance="verified",
                       timings={"verify": time.perf_counter() - start})

    def record(self) -> tuple[dict, dict]:
        """``(arrays, fields)`` of the corpus format (module docstring)."""
        p = self.problem
        arrays = {"X": p.X, "M": self.M, "multiplier": np.float64(self.multiplier)}
        if p.y is not None:
            arrays["y"] = p.y
        if p.implicit:
            arrays.update(tangent_floor=np.float64(self.tangents.floor),
                          tangent_scale=np.float64(self.tangents.scale))
        else:
            arrays.update(similar=p.similar, dissimilar=p.dissimilar, tangents=self.tangents)
        fields = {"problem": self.kind, **_sizes(p), "value": self.value,
                  "bound": self.bound, "relative_gap": self.relative_gap,
                  "certified": self.certified, "tol": self.tol}
        if p.implicit:
            fields["pairs"] = "labels"
        return arrays, fields

    def save(self, path) -> tuple:
        """Write ``PATH.npz`` (data, metric, evidence) and ``PATH.json`` (the numbers)."""
        return storage.save(path, *self.record())

    @classmethod
    def load(cls, path, fields: dict | None = None) -> MMCCertificate:
        """Read a certificate saved by ``save`` (``fields`` replaces ``PATH.json``, e.g. a
        corpus manifest entry). The numbers are as stated: call ``verify()`` to check them.

        A ValueError when the files fail their digest, a field or array is missing, or
        the stated sizes or pairs disagree with the arrays."""
        start = time.perf_counter()
        arrays, fields = storage.load(path, fields)
        missing = [name for name in _REQUIRED if name not in fields]
        if missing:
            raise ValueError(f"{path}: the fields lack {missing}; not an MMC certificate.")
        if fields["problem"] not in KINDS:
            raise ValueError(f"{path}: problem={fields['problem']!r} is not one of {KINDS}.")
        implicit = fields.get("pairs") == "labels"
        problem = _stored_problem(arrays, fields["problem"] == "mmc-diagonal", implicit, path)
        for name, value in _sizes(problem).items():
            if fields[name] != value:
                raise ValueError(f"{path}: the fields say {name}={fields[name]!r} but the "
                                 f"arrays give {value!r}; the certificate is refused.")
        M = check_metric(arrays["M"], problem.X.shape[1], problem.diagonal, name="M")
        tangents = (TangentRule(float(arrays["tangent_floor"]), float(arrays["tangent_scale"]))
                    if implicit else arrays["tangents"])
        return cls(problem=problem, M=M, tangents=tangents,
                   multiplier=float(arrays["multiplier"]), value=fields["value"],
                   bound=fields["bound"],
                   feasible_value=evaluate(problem, M).feasible_value,
                   relative_gap=fields["relative_gap"], certified=fields["certified"],
                   tol=fields["tol"], min_eigenvalue=_smallest_eigenvalue(M),
                   provenance="loaded", timings={"load": time.perf_counter() - start})


def prove(problem: MMCProblem, M, tangents, multiplier, *, tol: float = 1e-6,
          whitening: Whitening | None = None,
          min_eigenvalue: float | None = None) -> MMCCertificate:
    """The certificate that ``tangents`` (P,) (implicit pairs: a ``TangentRule``) and
    ``multiplier`` give the metric ``M`` (d, d).

    ``M`` must be feasible: PSD (diagonal for (XING)) up to rounding, and
    ``<M, Sigma> = 1`` up to the rounding of its entries and the allowance of
    ``lmnn_sdp.mmc.bound``. ``min_eigenvalue`` defaults to that of ``M``.

    Raises
    ------
    ValueError
        Naming ``M``, ``tangents`` or ``multiplier`` when it does not do its part of the proof.
    """
    start = time.perf_counter()
    tol = check_tol(tol)
    whitening = whitening or whiten(problem)
    M = check_metric(M, problem.X.shape[1], problem.diagonal, name="M")
    sums = None
    if problem.implicit:
        tangents = check_rule(tangents)
        dissimilar, sums = pairs.tangent_sums(problem, M, np.array([tangents.floor]))
        evaluation = evaluate(problem, M, dissimilar)
    else:
        tangents = np.asarray(tangents, dtype=float)
        evaluation = evaluate(problem, M)
    if not abs(evaluation.scale - 1.0) <= whitening.allowance + evaluation.scale_rounding:
        raise ValueError(f"certificate refused: M is not scaled to the similar constraint: "
                         f"sum_S D_M = {evaluation.scale!r}, not 1 (certify_mmc rescales "
                         "a candidate).")
    if problem.implicit:
        bound = rule_bound(sums, tangents, multiplier, whitening.W, problem.diagonal,
                           whitening.allowance, whitening.depth)
    else:
        bound = weak_duality_bound(problem.dissimilar_differences @ whitening.W, tangents,
                                   multiplier, problem.diagonal, whitening.allowance)
    gap = _gap(evaluation.feasible_value, bound, problem.diagonal)
    return MMCCertificate(
        problem=problem, M=M, tangents=tangents,
        multiplier=float(multiplier), value=evaluation.value, bound=bound,
        feasible_value=evaluation.feasible_value, relative_gap=gap,
        certified=bool(gap <= tol), tol=tol,
        min_eigenvalue=_smallest_eigenvalue(M) if min_eigenvalue is None else min_eigenvalue,
        timings={"certify": time.perf_counter() - start})


def certify_mmc(X, metric, y=None, similar=None, dissimilar=None,
                diagonal: bool = False, tol: float = 1e-6,
                implicit: bool = False) -> MMCCertificate:
    """Rigorous bounds on the MMC optimum from any candidate metric.

    The candidate's PSD part is rescaled to ``<A, Sigma> = 1`` (MMC) or to
    ``<a, sigma> = 1/2`` (XING), which keeps every distance ratio; the certificate's
    ``metric`` is that rescaling and its value the lower bound of (MMC). The upper
    bound is weak duality (WD) with tangent points at the candidate's own distances
    and the smallest multiplier that proves it (``lmnn_sdp.mmc.bound``), so it is tight
    when the candidate is optimal and loose when it is not. (MMC) is the program of
    Weinberger & Saul (JMLR 2009, sec. 2.3.1), (XING) that of Xing et al. (2002) over
    diagonal metrics; the module docstring defines how bounds and gap are stated for
    each. Numpy and scipy only.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Inputs; finite real numbers.
    metric : array-like of shape (n_features, n_features)
        Symmetric PSD candidate; asymmetry and negative eigenvalues up to 1e-8 of its
        largest entry are rounding (its PSD part is certified). Diagonal when
        ``diagonal``.
    y : array-like of shape (n_samples,), optional
        Labels: all pairs ``i < j``, similar when the labels agree. Give either ``y``
        or both ``similar`` and ``dissimilar``.
    similar : array-like of int of shape (n_similar, 2), optional
        Index pairs of the set ``S``.
    dissimilar : array-like of int of shape (n_dissimilar, 2), optional
        Index pairs of the set ``D``.
    diagonal : bool, default=False
        Certify for (XING) instead of (MMC).
    tol : float, default=1e-6
        ``relative_gap`` up to which the candidate counts as certified; finite, >= 0. For (MMC) the
        relative gap ``(upper - lower) / upper``; with ``diagonal`` (XING) the absolute gap
        ``upper - lower`` of Xing's ``g``, ``log(bound / feasible_value)``: the maximisation's
        relative gap in log scale (``lmnn_sdp.mmc.certificate``).
    implicit : bool, default=False
        With ``y``: never form the label pairs (``mmc_problem``); for large ``n``.

    Returns
    -------
    MMCCertificate
        ``metric``, ``objective``, ``upper``, ``lower``, ``relative_gap``,
        ``certified`` and the evidence; ``verify()`` re-derives them.

    Raises
    ------
    ValueError
        A ``tol`` that is negative or not finite; labels with one class or no
        repeated label; pairs and labels both or neither; bad pairs; every dissimilar
        pair joining identical points; a dissimilar difference outside the span of the
        similar ones (the problem is unbounded); ``metric`` of the wrong shape, not
        finite, not symmetric, not PSD, not diagonal with ``diagonal``, or 0 on every
        similar pair.
    TypeError
        Non-real ``X``, non-integer pairs, or a ``tol`` that is not a real number (``True``, ``"1e-6"``).

    See Also
    --------
    lmnn_sdp.solve_mmc : Find the optimal metric and certify it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from lmnn_sdp import certify_mmc, label_pairs, pair_distances, solve_mmc
    >>> X, y = load_iris(return_X_y=True)
    >>> X, y = X[::5], y[::5]
    >>> cert = certify_mmc(X, np.eye(4), y)
    >>> cert.certified, round(cert.lower, 2), round(cert.upper, 2)
    (False, 85.86, 208.71)
    >>> similar, _ = label_pairs(y)
    >>> round(float(pair_distances(X, similar, cert.metric).sum()), 6)  # rescaled
    1.0

    Any positive multiple of the optimal metric is certified:

    >>> result = solve_mmc(X, y)
    >>> certify_mmc(X, 5 * result.metric, y).certified
    True
    """
    tol = check_tol(tol)
    return certify_metric(mmc_problem(X, y, similar, dissimilar, diagonal, implicit), metric,
                          tol)


def certify_metric(problem: MMCProblem, metric, tol: float,
                   whitening: Whitening | None = None) -> MMCCertificate:
    """``certify_mmc`` on a checked problem: the candidate's PSD part, scaled to
    ``<M, Sigma> = 1``, with tangents at its roots and the covering multiplier."""
    whitening = whitening or whiten(problem)
    candidate = check_metric(metric, problem.X.shape[1], problem.diagonal)
    psd, min_eigenvalue = psd_part(candidate)
    scale = pairs.similar_sums(problem, psd)[0]
    if not scale > 0:
        raise ValueError("metric gives every similar pair distance 0, so it is 0 on the "
                         "span of the data and no rescaling of it has a positive objective.")
    M = psd / scale
    tangents, lam = (_rule if problem.implicit else _explicit_tangents)(problem, M, whitening)
    multiplier = covering_multiplier(lam, whitening.allowance)
    return prove(problem, M, tangents, multiplier, tol=tol, whitening=whitening,
                 min_eigenvalue=min_eigenvalue)


def _explicit_tangents(problem: MMCProblem, M: np.ndarray,
                       whitening: Whitening) -> tuple[np.ndarray, float]:
    """Tangents (P,) at ``M``'s roots (``best_tangents``) and their ``lambda(s)``."""
    roots = np.sqrt(np.maximum(accurate_distances(problem.dissimilar_differences, M), 0.0))
    Uw = problem.dissimilar_differences @ whitening.W
    tangents = best_tangents(Uw, roots, problem.diagonal)
    return tangents, smallest_multiplier(Uw, tangents, problem.diagonal)


def _rule(problem: MMCProblem, M: np.ndarray, whitening: Whitening) -> tuple[TangentRule, float]:
    """The ``TangentRule`` at ``M`` (``best_rule`` on ``IMPLICIT_FLOORS`` times the largest
    root; floor 1 when every root is 0) and its ``lambda(s)``. Two passes over the pairs;
    ``prove`` sums them once more at the chosen floor, in another order, which the stored
    allowance covers."""
    top = pairs.dissimilar_sums(problem, M).largest_root
    floors = IMPLICIT_FLOORS * top if top > 0 else np.ones(1)
    return best_rule(pairs.tangent_sums(problem, M, floors)[1], whitening.W, problem.diagonal)


@dataclass(frozen=True)
class Evaluation:
    """The maximisation's numbers at a metric ``M``; see ``evaluate``."""

    value: float
    feasible_value: float
    scale: float  # <M, Sigma>
    scale_rounding: float  # its uncertainty from the rounding of M's entries


def evaluate(problem: MMCProblem, M: np.ndarray,
             dissimilar: pairs.DissimilarSums | None = None) -> Evaluation:
    """``f(M) / sqrt(<M, Sigma>)`` for ``M`` (d, d), and the same with every distance moved
    against it by its uncertainty ``e_p`` (``lmnn_sdp.mmc.pairs``; ``dissimilar`` when
    already summed at ``M``).

    ``feasible_value = sum_p sqrt(max(D_p - e_p, 0)) / sqrt(<M, Sigma> + sum_q e_q)``: to
    first order, every metric whose entries are within that rounding of ``M``'s (among
    them the PSD matrix that ``M`` was rounded from) attains at least that."""
    dissimilar = dissimilar or pairs.dissimilar_sums(problem, M)
    scale, scale_rounding = pairs.similar_sums(problem, M)
    return Evaluation(value=dissimilar.roots / float(np.sqrt(scale)),
                      feasible_value=dissimilar.low_roots / float(np.sqrt(scale + scale_rounding)),
                      scale=scale, scale_rounding=scale_rounding)


def _sides(value: float, feasible_value: float, bound: float,
           diagonal: bool) -> tuple[float, float, float]:
    """``(objective, upper, lower)`` of the certified problem from the maximisation's
    ``value``, ``feasible_value`` and ``bound`` (module docstring; (XING-MMC) diagonal)."""
    if not diagonal:
        return value, bound, feasible_value
    with np.errstate(divide="ignore"):
        return (float(LOG_HALF - np.log(value)), float(LOG_HALF - np.log(feasible_value)),
                float(LOG_HALF - np.log(bound)))


def _gap(feasible_value: float, bound: float, diagonal: bool) -> float:
    """``relative_gap`` from the maximisation's ``feasible_value`` and ``bound``."""
    _, upper, lower = _sides(feasible_value, feasible_value, bound, diagonal)
    return float(max(upper - lower, 0.0)) if diagonal else _relative_gap(upper, lower)


def _sizes(problem: MMCProblem) -> dict:
    """The sizes a file states: ``n``, ``d``, ``classes`` (None without labels), pair counts."""
    n, d = problem.X.shape
    return {"n": n, "d": d, "classes": problem.n_classes,
            "similar": problem.n_similar, "dissimilar": problem.n_dissimilar}


def _stored_problem(arrays: dict, diagonal: bool, implicit: bool, path) -> MMCProblem:
    """The problem of a file's arrays; stored labels must give exactly the stored pairs."""
    names = (("X", "y", "M", "tangent_floor", "tangent_scale", "multiplier") if implicit else
             ("X", "similar", "dissimilar", "M", "tangents", "multiplier"))
    for name in names:
        if name not in arrays:
            raise ValueError(f"{path}: the arrays lack {name!r}; not an MMC certificate.")
    if implicit:
        return mmc_problem(arrays["X"], arrays["y"], diagonal=diagonal, implicit=True)
    if "y" not in arrays:
        return mmc_problem(arrays["X"], similar=arrays["similar"],
                           dissimilar=arrays["dissimilar"], diagonal=diagonal)
    problem = mmc_problem(arrays["X"], arrays["y"], diagonal=diagonal)
    for name in ("similar", "dissimilar"):
        if not np.array_equal(getattr(problem, name), arrays[name]):
            raise ValueError(f"{path}: the stored {name} pairs are not the label pairs of "
                             "the stored y; the certificate is refused.")
    return problem


def _smallest_eigenvalue(M: np.ndarray) -> float:
    return float(np.linalg.eigvalsh((M + M.T) / 2)[0])
