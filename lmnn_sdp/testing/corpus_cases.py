"""The certified corpus as test cases (``lmnn_sdp/testing/corpus/``, format in its README.md).

The corpus ships with this package as data files: every instance is a saved certificate
(``NAME.npz`` with the inputs, the certified metric(s) and the dual evidence, ``NAME.json``
with its numbers and a SHA-256 digest) listed in ``manifest.json``. numpy only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from lmnn_sdp import certificates
from lmnn_sdp.certificates.certificate import Certificate
from lmnn_sdp.core.checks import check_tol

if TYPE_CHECKING:
    from lmnn_sdp.mmc.certificate import MMCCertificate

LMNN_KINDS = ("lmnn", "multi-metric-lmnn")
MMC_KINDS = ("mmc", "mmc-diagonal")
KINDS = LMNN_KINDS + MMC_KINDS
MANIFEST = "manifest.json"


def corpus_dir() -> Path:
    """The folder of the certified corpus shipped with ``lmnn_sdp.testing``.

    Returns
    -------
    pathlib.Path
        ``lmnn_sdp/testing/corpus`` of the installed package: ``manifest.json`` and one
        ``NAME.json`` + ``NAME.npz`` pair per instance.

    Examples
    --------
    >>> from lmnn_sdp.testing import corpus_dir
    >>> (corpus_dir() / "manifest.json").is_file()
    True
    """
    return Path(str(files("lmnn_sdp.testing") / "corpus"))


@dataclass(frozen=True, eq=False)
class CorpusCase:
    """One certified instance of the corpus: a problem and its certified optimum.

    ``str(case)`` is its ``id``, so ``pytest.mark.parametrize("case", corpus_cases(), ids=str)``
    names every test after its instance.

    Parameters
    ----------
    id : str
        The instance's name in the corpus (``manifest.json``).
    kind : {"lmnn", "multi-metric-lmnn"}
        The problem: eq. 14, or multi-metric LMNN (sec. 5.2, eq. 16).
    X : ndarray of shape (n_samples, n_features)
        Inputs.
    y : ndarray of int of shape (n_samples,)
        Labels.
    k : int
        Target neighbours per point.
    mu : float
        Weight of the push term (the pull term has ``1 - mu``).
    targets : ndarray of int of shape (n_samples, k)
        Target neighbours (the k nearest same-class points by Euclidean distance, ties
        broken by the smaller index).
    optimum : float
        The objective at the certified metric, plus a bound on its rounding: the optimum
        is at most this.
    lower : float
        The certified lower bound on the optimum, less a bound on its rounding: every
        metric has an objective at least this.
    tolerance : float
        The relative gap ``(eps(M) - lower) / eps(M)`` up to which a solver's metric counts
        as optimal: the ``tolerance`` given to ``corpus_cases``, never below the gap of the
        stored certificate.
    metric : ndarray of shape (n_features, n_features), or (n_clusters, n_features, n_features)
        The certified metric (one per cluster for multi-metric LMNN).
    clusters : ndarray of int of shape (n_samples,) or None
        Cluster of each point for multi-metric LMNN; None for LMNN.
    certificate : Certificate
        The stored certificate (loaded, digest checked; ``certificate.verify()`` re-derives
        its numbers).

    Examples
    --------
    >>> from lmnn_sdp.testing import corpus_cases
    >>> case = corpus_cases()[0]
    >>> str(case), case.X.shape, case.k, case.mu
    ('iris-n150-k3-mu0.5', (150, 4), 3, 0.5)
    >>> bool(case.lower <= case.optimum <= case.lower * (1 + case.tolerance))
    True
    """

    id: str
    kind: str
    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    k: int
    mu: float
    targets: np.ndarray = field(repr=False)
    optimum: float
    lower: float
    tolerance: float
    metric: np.ndarray = field(repr=False)
    clusters: np.ndarray | None = field(repr=False, default=None)
    certificate: Certificate | None = field(repr=False, default=None, compare=False)

    def __str__(self) -> str:
        return self.id


@dataclass(frozen=True, eq=False)
class MMCCase:
    """One certified MMC instance of the corpus: a problem and its certified maximum.

    (MMC) is ``max f(A) = sum_D sqrt(D_A)`` s.t. ``sum_S D_A <= 1``, ``A`` PSD (Xing et al.
    2002; Weinberger & Saul, JMLR 2009, sec. 2.3.1); ``mmc-diagonal`` is the same over
    diagonal ``A``, Xing's problem. ``str(case)`` is its ``id``.

    Parameters
    ----------
    id : str
        The instance's name in the corpus (``manifest.json``).
    kind : {"mmc", "mmc-diagonal"}
        Full or diagonal metrics.
    X : ndarray of shape (n_samples, n_features)
        Inputs.
    y : ndarray of int of shape (n_samples,)
        Labels; the pairs are all pairs ``i < j``, similar when the labels agree.
    similar, dissimilar : ndarray of int of shape (n_pairs, 2)
        The pairs ``S`` and ``D`` (the same as those of ``y``).
    diagonal : bool
        ``kind == "mmc-diagonal"``.
    value : float
        ``f`` at the certified metric, less a bound on its rounding: the maximum is at
        least this.
    bound : float
        The certified upper bound: the maximum is at most this.
    tolerance : float
        The gap ``(bound - f) / bound`` (diagonal: ``log(bound / f)``) up to which a
        solver's metric counts as optimal: the ``tolerance`` given to ``corpus_cases``,
        never below the stored certificate's gap.
    metric : ndarray of shape (n_features, n_features)
        The certified metric, scaled to ``sum_S D = 1``.
    certificate : MMCCertificate
        The stored certificate (loaded, digest checked).

    Examples
    --------
    >>> from lmnn_sdp.testing import corpus_cases
    >>> case = corpus_cases("mmc")[0]
    >>> str(case), case.X.shape, case.diagonal
    ('mmc-iris-n150', (150, 4), False)
    >>> bool(case.value <= case.bound <= case.value * (1 + case.tolerance))
    True
    """

    id: str
    kind: str
    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    similar: np.ndarray = field(repr=False)
    dissimilar: np.ndarray = field(repr=False)
    diagonal: bool
    value: float
    bound: float
    tolerance: float
    metric: np.ndarray = field(repr=False)
    certificate: MMCCertificate | None = field(repr=False, default=None, compare=False)

    def __str__(self) -> str:
        return self.id


def corpus_cases(kind: str = "lmnn", *, tolerance: float = 1e-6,
                 verify: bool = False) -> list[CorpusCase] | list[MMCCase]:
    """The certified corpus as test cases, ready for ``pytest.mark.parametrize``.

    Each case holds a problem (``X``, ``y``, ``k``, ``mu``, ``targets``, and ``clusters`` for
    multi-metric LMNN) and its certified optimum (``metric``, ``optimum``, ``lower``). Every
    file is checked against the SHA-256 digest stored with it on loading.

    Parameters
    ----------
    kind : {"lmnn", "multi-metric-lmnn", "mmc", "mmc-diagonal"}, default="lmnn"
        Which problems: LMNN (eq. 14), multi-metric LMNN (sec. 5.2), or MMC over full or
        diagonal metrics (Xing et al. 2002).
    tolerance : float, default=1e-6
        Relative gap accepted from a solver under test (``CorpusCase.tolerance``); raised
        to the stored certificate's gap where that is larger; finite, >= 0.
    verify : bool, default=False
        Re-derive every certificate from its evidence (``Certificate.verify``) before returning it, as ``lmnn-sdp corpus check`` does.

    Returns
    -------
    list of CorpusCase, or of MMCCase for the MMC kinds
        In the corpus's order; ``str(case)`` is the instance's name, for ``ids=str``.

    Raises
    ------
    ValueError
        An unknown ``kind``, a ``tolerance`` that is negative or not finite, or a stored
        certificate refused (its digest or, with ``verify``, its numbers do not hold).
    TypeError
        A ``tolerance`` that is not a real number (``True``, ``"1e-6"``).

    Examples
    --------
    >>> from lmnn_sdp.testing import corpus_cases
    >>> cases = corpus_cases()
    >>> len(cases), len(corpus_cases("multi-metric-lmnn")), len(corpus_cases("mmc-diagonal"))
    (33, 4, 2)
    >>> case = cases[3]
    >>> case.id, round(case.optimum, 4)
    ('iris-n60-k2-mu0.5', 44.2328)

    In a test suite::

        @pytest.mark.parametrize("case", corpus_cases(), ids=str)
        def test_my_solver(case):
            assert_lmnn_optimal(case.X, case.y, my_solver(case.X, case.y, case.k, case.mu),
                                k=case.k, mu=case.mu, targets=case.targets)
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    check_tol(tolerance, "tolerance")
    directory = corpus_dir()
    manifest = json.loads((directory / MANIFEST).read_text())
    cases = []
    for entry in manifest["instances"]:
        if entry["problem"] != kind:
            continue
        certificate = certificates.load(directory / entry["name"])
        if verify:
            certificate = certificate.verify()
        p = certificate.problem
        if kind in MMC_KINDS:
            cases.append(MMCCase(
                id=entry["name"], kind=kind, X=p.X, y=p.y, similar=p.similar, dissimilar=p.dissimilar,
                diagonal=p.diagonal, value=certificate.feasible_value, bound=certificate.bound,
                tolerance=max(float(tolerance), certificate.relative_gap), metric=certificate.M,
                certificate=certificate))
            continue
        cases.append(CorpusCase(
            id=entry["name"], kind=kind, X=p.X, y=p.y, k=p.k, mu=p.mu, targets=p.targets,
            optimum=certificate.upper + certificate.upper_error,
            lower=certificate.lower - certificate.lower_error,
            tolerance=max(float(tolerance), certificate.relative_gap),
            metric=certificate.metric, clusters=p.clusters, certificate=certificate))
    return cases
