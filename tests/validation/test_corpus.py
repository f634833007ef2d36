"""The certified corpus: every stored certificate of every kind re-verifies with its own
``verify()``, and tampering with any stored number is caught."""

from __future__ import annotations

import functools
import json
import shutil
from collections import Counter

import numpy as np
import pytest

from validation import corpus

ONE_OF_EACH = ["iris-n150-k3-mu0.5", "mm-iris-n90-k3-mu0.5-c3", "mmc-iris-n150",
               "mmc-diagonal-wine-n100"]


@functools.cache
def instances() -> tuple:
    """``corpus.corpus_instances()``, built once for this module (0.5 s or more each time)."""
    return tuple(corpus.corpus_instances())


def test_every_stored_certificate_of_every_kind_reverifies():
    checked = corpus.check()
    kinds = Counter(c.problem for c in checked)
    assert kinds["lmnn"] >= 25 and kinds["multi-metric-lmnn"] >= 4
    assert kinds["mmc"] >= 2 and kinds["mmc-diagonal"] >= 2
    assert not [(c.name, c.error) for c in checked if not c.ok]
    assert max(c.relative_gap for c in checked) <= 1e-6
    assert all(c.lower <= c.upper for c in checked)


def test_manifest_documents_every_instance_and_stays_small():
    manifest = corpus.load_manifest()
    assert manifest["format_version"] == 5 and "linear hinge" in manifest["objectives"]["lmnn"]
    assert set(manifest["objectives"]) == {"lmnn", "multi-metric-lmnn", "mmc", "mmc-diagonal"}
    names = [entry["name"] for entry in manifest["instances"]]
    assert names == [instance.name for instance in instances()]
    for entry in manifest["instances"]:
        fields = json.loads((corpus.CORPUS_DIR / f"{entry['name']}.json").read_text())
        assert fields["problem"] == entry["problem"] and fields["certified"]
        with np.load(corpus.CORPUS_DIR / f"{entry['name']}.npz") as data:
            n, d = fields["n"], fields["d"]
            assert data["X"].shape == (n, d) and data["M"].shape[-2:] == (d, d)
    size = sum(p.stat().st_size for p in corpus.CORPUS_DIR.iterdir() if p.suffix != ".py" and p.is_file())
    assert size < 5 * 2**20


def copied_corpus(tmp_path, name: str):
    """A corpus folder of ``name`` alone: its two files and the manifest with its entry only."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    manifest = corpus.load_manifest()
    manifest["instances"] = [entry for entry in manifest["instances"] if entry["name"] == name]
    (folder / corpus.MANIFEST).write_text(json.dumps(manifest))
    for suffix in (".npz", ".json"):
        shutil.copy(corpus.CORPUS_DIR / f"{name}{suffix}", folder)
    return folder


def refused(folder, name: str) -> bool:
    try:
        corpus.load_certificate(name, folder).verify()
    except ValueError:
        return True
    return False


@pytest.mark.parametrize("name", ONE_OF_EACH)
def test_every_stored_array_and_number_is_tamper_evident(tmp_path, name):
    folder = copied_corpus(tmp_path, name)
    npz, js = folder / f"{name}.npz", folder / f"{name}.json"
    original_npz, original_js = npz.read_bytes(), js.read_text()
    with np.load(npz) as data:
        arrays = {key: data[key] for key in data.files}
    for key, value in arrays.items():
        edited = dict(arrays, **{key: value + (1 if value.dtype.kind == "i" else 1e-6)})
        np.savez_compressed(npz, **edited)
        assert refused(folder, name), key
    npz.write_bytes(original_npz)
    fields = json.loads(original_js)
    for key, value in fields.items():
        if key == "sha256" or isinstance(value, str):
            continue
        edited = dict(fields, **{key: (not value) if isinstance(value, bool) else value * 1.001 + 1e-9})
        js.write_text(json.dumps(edited))
        assert refused(folder, name), key
    js.write_text(original_js)
    assert not refused(folder, name)
    assert [(c.name, c.ok) for c in corpus.check(folder)] == [(name, True)]


def test_build_and_check_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "corpus_instances", lambda: list(instances()))  # which build orders by
    names = ("mmc-diagonal-wine-n100", "mm-circles-n18-k2-mu0.5-c3", "zebra-n80-k1-mu0.2")  # one of each kind
    small = [next(i for i in instances() if i.name == name) for name in names]
    manifest = corpus.build(tmp_path, small, progress=False)
    assert [e["name"] for e in manifest["instances"]] == list(reversed(names))  # in the corpus's order
    assert [e["problem"] for e in manifest["instances"]] == ["lmnn", "multi-metric-lmnn", "mmc-diagonal"]
    assert set(manifest["objectives"]) == {"lmnn", "multi-metric-lmnn", "mmc-diagonal"}
    assert all(c.ok for c in corpus.check(tmp_path))


def test_missing_corpus_names_the_build_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="corpus build"):
        corpus.check(tmp_path)
