"""The certificate format: versioned, described by its JSON Schema, read by later releases."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from lmnn_sdp import Certificate, certificates
from lmnn_sdp.certificates import storage
from lmnn_sdp.certificates.bounds import relative_gap
from lmnn_sdp.testing import corpus_dir

jsonschema = pytest.importorskip("jsonschema")

PREVIOUS = Path(__file__).parents[1] / "data" / "certificate-format-3"
SCHEMA = Path(storage.__file__).with_name("certificate.schema.json")


def schema_validator():
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def corpus_files() -> list[Path]:
    return sorted(p for p in corpus_dir().glob("*.json") if p.name != "manifest.json")


@pytest.mark.parametrize("path", sorted(PREVIOUS.glob("*.json")), ids=lambda p: p.stem)
def test_a_certificate_of_the_previous_format_loads_and_verifies(path):
    fields = json.loads(path.read_text())
    assert fields["format_version"] == 3 and "format" not in fields
    loaded = certificates.load(path)
    verified = loaded.verify()
    assert verified.provenance == "verified" and verified.certified
    # the rounding allowance may have shrunk since (never grown): the same multipliers prove as much
    # or more; LMNN's never more than their sum (its allowance per direction, ``own_basis``)
    assert verified.relative_gap <= fields["relative_gap"] * (1 + 1e-6)
    if isinstance(verified, Certificate):
        assert verified.relative_gap >= relative_gap(verified.upper + verified.upper_error, verified.multipliers.sum())
    else:
        assert verified.relative_gap == pytest.approx(fields["relative_gap"], rel=0.5)
    schema_validator().validate(fields)


def test_every_corpus_file_is_of_the_current_format_and_matches_the_schema():
    validator = schema_validator()
    files = corpus_files()
    assert len(files) == 41
    for path in files:
        fields = json.loads(path.read_text())
        assert (fields["format"], fields["format_version"]) == (storage.FORMAT, storage.FORMAT_VERSION)
        assert fields["written_by"].startswith("lmnn-sdp ")
        validator.validate(fields)


def test_the_schema_rejects_what_a_loader_refuses():
    validator = schema_validator()
    fields = json.loads(corpus_files()[0].read_text())
    for broken in ({k: v for k, v in fields.items() if k != "format"},      # format 4 on must name itself
                   {k: v for k, v in fields.items() if k != "atol"},        # format 5 states its atol
                   {**fields, "atol": -1.0}, {**fields, "format_version": 6}, {**fields, "problem": "nca"},
                   {**fields, "sha256": "not hex"}, {k: v for k, v in fields.items() if k != "lower"}):
        assert not validator.is_valid(broken)


def test_saving_writes_the_current_format_and_round_trips(tmp_path):
    source = corpus_dir() / "iris-n60-k2-mu0.5"
    cert = certificates.load(source).verify()
    npz, js = cert.save(tmp_path / "again")
    fields = json.loads(js.read_text())
    assert fields["format_version"] == storage.FORMAT_VERSION and fields["format"] == storage.FORMAT
    again = certificates.load(tmp_path / "again").verify()
    assert again.lower == cert.lower and np.array_equal(again.metric, cert.metric)


def rewritten(tmp_path, **changes) -> Path:
    """A copy of a previous-format certificate with ``changes`` to its fields and a fresh digest."""
    for path in PREVIOUS.glob("blobs-n60-d2-c3-k2-mu0.5.*"):
        shutil.copy(path, tmp_path / path.name)
    base = tmp_path / "blobs-n60-d2-c3-k2-mu0.5"
    js, npz = tmp_path / (base.name + ".json"), tmp_path / (base.name + ".npz")
    fields = json.loads(js.read_text())
    fields.update(changes)
    fields = {k: v for k, v in fields.items() if v is not None}
    with np.load(npz) as data:
        fields["sha256"] = storage.digest({name: data[name] for name in data.files}, fields)
    js.write_text(json.dumps(fields))
    return base


@pytest.mark.parametrize("changes, match", [
    ({"format_version": 6, "written_by": "lmnn-sdp 9.0"}, r"format 6 was written by a newer lmnn-sdp \(lmnn-sdp 9.0\).*upgrade"),
    ({"format_version": 2}, r"format_version=2 is not a certificate format \(formats 3-5"),
    ({"format_version": "4"}, "format_version='4' is not a certificate format"),
    ({"format_version": 4}, r"format=None is not 'lmnn-sdp certificate'"),
    ({"format_version": 4, "format": "checkpoint"}, "format='checkpoint' is not"),
    ({"format_version": None}, "not a certificate of lmnn-sdp"),
])
def test_a_newer_older_or_foreign_format_is_refused_by_name(tmp_path, changes, match):
    with pytest.raises(ValueError, match=match):
        certificates.load(rewritten(tmp_path, **changes))


def test_a_previous_format_file_stays_checked_by_its_digest(tmp_path):
    base = rewritten(tmp_path)
    certificates.load(base)  # unchanged fields, fresh digest: loads
    js = tmp_path / (base.name + ".json")
    fields = json.loads(js.read_text())
    fields["lower"] *= 1.0001
    js.write_text(json.dumps(fields))
    with pytest.raises(ValueError, match="differ from the digest"):
        certificates.load(base)
