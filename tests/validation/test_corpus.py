"""The certified corpus: every stored certificate re-verifies from the stored arrays."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from validation import certified_corpus
from validation.instances import builtin_instances


def test_every_stored_certificate_reverifies():
    checked = certified_corpus.check()
    assert len(checked) >= 25
    failed = [c.name for c in checked if not c.ok]
    assert not failed
    assert max(c.relative_gap for c in checked) <= 1e-6


def test_manifest_documents_every_instance_and_stays_small():
    manifest = certified_corpus.load_manifest()
    assert manifest["format_version"] == 1 and "linear hinge" in manifest["objective"]
    names = {entry["name"] for entry in manifest["instances"]}
    assert names == {instance.name for instance in builtin_instances()}
    for entry in manifest["instances"]:
        data = certified_corpus.load_instance(entry["name"])
        assert data["X"].shape == (entry["n"], entry["d"])
        assert data["targets"].shape == (entry["n"], entry["k"])
        assert data["M"].shape == (entry["d"], entry["d"])
        assert np.all((0 <= data["multipliers"]) & (data["multipliers"] <= entry["mu"]))
        assert entry["lower_bound"] <= entry["optimum"]
    size = sum(p.stat().st_size for p in certified_corpus.CORPUS_DIR.iterdir())
    assert size < 5 * 2**20


def test_a_tampered_metric_fails_the_check(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(certified_corpus.CORPUS_DIR, corpus)
    name = "iris-n150-k3-mu0.5"
    data = certified_corpus.load_instance(name, corpus)
    data["M"] = 1.01 * data["M"]
    np.savez_compressed(corpus / f"{name}.npz", **data)
    verdict = {c.name: c.ok for c in certified_corpus.check(corpus)}
    assert verdict[name] is False and sum(verdict.values()) == len(verdict) - 1


def test_a_tampered_bound_fails_the_check(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(certified_corpus.CORPUS_DIR, corpus)
    manifest = json.loads((corpus / "manifest.json").read_text())
    manifest["instances"][0]["lower_bound"] *= 1.001  # claims more than the multipliers prove
    (corpus / "manifest.json").write_text(json.dumps(manifest))
    assert not certified_corpus.check(corpus)[0].ok


def test_build_and_check_round_trip(tmp_path):
    small = [i for i in builtin_instances() if i.name.startswith(("blobs-n60", "zebra-n80-k1"))]
    manifest = certified_corpus.build(tmp_path, small, progress=False)
    assert len(manifest["instances"]) == 3
    assert all(c.ok for c in certified_corpus.check(tmp_path))


def test_missing_corpus_names_the_build_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="corpus build"):
        certified_corpus.check(tmp_path)
