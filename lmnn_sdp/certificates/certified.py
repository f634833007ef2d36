"""The vocabulary every result shares: its numbers are its certificate's (numpy only)."""

from __future__ import annotations

import numpy as np


class CertifiedResult:
    """A solve's result whose ``metric``, ``upper``, ``lower``, ``relative_gap``, ``certified``
    and ``tol`` are read from its ``certificate`` (LMNN, multi-metric LMNN or MMC), so they
    can never disagree with the proof."""

    certificate: object

    @property
    def metric(self) -> np.ndarray:
        return self.certificate.metric

    @property
    def upper(self) -> float:
        return self.certificate.upper

    @property
    def lower(self) -> float:
        return self.certificate.lower

    @property
    def relative_gap(self) -> float:
        return self.certificate.relative_gap

    @property
    def certified(self) -> bool:
        return self.certificate.certified

    @property
    def tol(self) -> float:
        return self.certificate.tol
