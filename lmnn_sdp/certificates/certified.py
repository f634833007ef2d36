"""The vocabulary every result shares: its numbers are its certificate's (numpy only)."""

from __future__ import annotations

import numpy as np

from lmnn_sdp.status import Stopped


class CertifiedResult(Stopped):
    """A solve's result whose ``metric``, ``upper``, ``lower``, ``relative_gap``, ``certified``
    and ``tol`` are read from its ``certificate`` (LMNN, multi-metric LMNN or MMC), so they
    can never disagree with the proof."""

    certificate: object

    @property
    def metric(self) -> np.ndarray:
        """The certified metric: (d, d), or (C, d, d) for multi-metric LMNN."""
        return self.certificate.metric

    @property
    def upper(self) -> float:
        """The certificate's upper bound: the objective at ``metric`` for LMNN, a bound on the
        optimum for MMC (a maximisation)."""
        return self.certificate.upper

    @property
    def lower(self) -> float:
        """The certificate's lower bound: a rigorous bound on the optimum for LMNN, the
        objective at ``metric`` for MMC."""
        return self.certificate.lower

    @property
    def relative_gap(self) -> float:
        """The certificate's gap between its bounds, relative (absolute for Xing's diagonal
        problem); no rounding can undercut it."""
        return self.certificate.relative_gap

    @property
    def certified(self) -> bool:
        """Whether the certificate proves ``relative_gap <= tol``, from its own bounds."""
        return self.certificate.certified

    @property
    def tol(self) -> float:
        """The relative gap up to which the answer counts as certified."""
        return self.certificate.tol


class CertifiedMMCResult(CertifiedResult):
    """A result of MMC (Xing et al. 2002) or Xing's diagonal problem, whose ``objective`` and
    ``sense`` are also its certificate's (``lmnn_sdp.MMCCertificate``)."""

    @property
    def objective(self) -> float:
        """The certificate's objective at ``metric``: ``f(A)`` (MMC) or ``g(a)`` (Xing)."""
        return self.certificate.objective

    @property
    def sense(self) -> str:
        """``"maximize"`` (MMC) or ``"minimize"`` (Xing's diagonal problem)."""
        return self.certificate.sense
