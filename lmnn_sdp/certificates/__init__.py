"""Certificates: rigorous bounds, their evidence, and their files (numpy only)."""

from __future__ import annotations

from lmnn_sdp.certificates import storage


def load(path, fields: dict | None = None):
    """Any saved certificate (LMNN, multi-metric LMNN or MMC, by the ``problem`` its
    fields name), not yet verified: call its ``verify()``. ``fields`` replaces
    ``PATH.json`` (a corpus keeps them in its manifest)."""
    fields = fields if fields is not None else storage.read_fields(path)
    if str(fields.get("problem", "")).startswith("mmc"):
        from lmnn_sdp.mmc.certificate import MMCCertificate
        return MMCCertificate.load(path, fields)
    from lmnn_sdp.certificates.certificate import Certificate
    return Certificate.load(path, fields)
