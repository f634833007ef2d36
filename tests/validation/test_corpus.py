"""The certified corpus: every stored certificate of every kind re-verifies from the stored
arrays, and tampering with a stored metric, multiplier or bound is caught."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import numpy as np
import pytest

from validation import certified_corpus
from validation.corpus_mmc import mmc_instances
from validation.corpus_multi_metric import mm_instances
from validation.instances import builtin_instances

ONE_OF_EACH = ["iris-n150-k3-mu0.5", "mm-iris-n90-k3-mu0.5-c3", "mmc-iris-n150",
               "mmc-diagonal-wine-n100"]


def test_every_stored_certificate_of_every_kind_reverifies():
    checked = certified_corpus.check()
    kinds = Counter(c.problem for c in checked)
    assert kinds["lmnn"] >= 25 and kinds["multi-metric-lmnn"] >= 4
    assert kinds["mmc"] >= 2 and kinds["mmc-diagonal"] >= 2
    assert not [c.name for c in checked if not c.ok]
    assert max(c.relative_gap for c in checked) <= 1e-6


def test_maximisations_are_bounded_from_above():
    for c in certified_corpus.check():
        if c.problem.startswith("mmc"):
            assert c.objective <= c.bound == pytest.approx(c.objective, rel=1e-6)
        else:
            assert c.bound <= c.objective == pytest.approx(c.bound, rel=1e-6)


def test_manifest_documents_every_instance_and_stays_small():
    manifest = certified_corpus.load_manifest()
    assert manifest["format_version"] == 2 and "linear hinge" in manifest["objectives"]["lmnn"]
    assert set(manifest["objectives"]) == {"lmnn", "multi-metric-lmnn", "mmc", "mmc-diagonal"}
    names = [entry["name"] for entry in manifest["instances"]]
    assert names == [instance.name for instance in certified_corpus.corpus_instances()]
    for entry in manifest["instances"]:
        data = certified_corpus.load_instance(entry["name"])
        n, d = entry["n"], entry["d"]
        assert data["X"].shape == (n, d) and data["y"].shape == (n,)
        if entry["problem"].startswith("mmc"):
            assert data["M"].shape == (d, d) and data["tangents"].shape == (entry["dissimilar"],)
            assert data["similar"].shape == (entry["similar"], 2) and data["multiplier"].shape == ()
            assert entry["optimum"] <= entry["upper_bound"]
            continue
        metrics = (entry["clusters"], d, d) if entry["problem"] == "multi-metric-lmnn" else (d, d)
        assert data["M"].shape == metrics and data["targets"].shape == (n, entry["k"])
        assert np.all((0 <= data["multipliers"]) & (data["multipliers"] <= entry["mu"]))
        assert entry["lower_bound"] <= entry["optimum"]
    size = sum(p.stat().st_size for p in certified_corpus.CORPUS_DIR.iterdir())
    assert size < 5 * 2**20


def tampered_copy(tmp_path, name: str, key: str, change) -> dict:
    """Copy the corpus, apply ``change`` to array ``key`` of ``name``; the check's verdicts."""
    corpus = tmp_path / "corpus"
    shutil.copytree(certified_corpus.CORPUS_DIR, corpus)
    data = certified_corpus.load_instance(name, corpus)
    data[key] = change(data[key].copy())
    np.savez_compressed(corpus / f"{name}.npz", **data)
    return {c.name: c.ok for c in certified_corpus.check(corpus)}


def raise_largest_diagonal_entry(M: np.ndarray) -> np.ndarray:
    first = M if M.ndim == 2 else M[0]  # a view: the first metric of a multi-metric entry
    k = np.argmax(np.diag(first))
    first[k, k] *= 1.01
    return M


@pytest.mark.parametrize("name", ONE_OF_EACH)
def test_a_tampered_metric_fails_the_check(tmp_path, name):
    verdict = tampered_copy(tmp_path, name, "M", raise_largest_diagonal_entry)
    assert verdict[name] is False and sum(verdict.values()) == len(verdict) - 1


@pytest.mark.parametrize("name,key,factor", [
    ("iris-n150-k3-mu0.5", "multipliers", 0.99),  # proves less than the manifest claims
    ("mm-iris-n90-k3-mu0.5-c3", "multipliers", 0.99),
    ("mmc-iris-n150", "multiplier", 1 - 1e-6),  # lambda Sigma - G_s no longer PSD
    ("mmc-diagonal-wine-n100", "multiplier", 1 - 1e-6),
    ("mmc-wine-n100", "tangents", 1 - 1e-6),  # G_s grows past lambda Sigma
    ("mmc-diagonal-iris-n150", "multiplier", 1.001),  # a weaker bound than the manifest's
])
def test_a_tampered_certificate_fails_the_check(tmp_path, name, key, factor):
    verdict = tampered_copy(tmp_path, name, key, lambda a: factor * a)
    assert verdict[name] is False and sum(verdict.values()) == len(verdict) - 1


@pytest.mark.parametrize("problem,key,factor", [("lmnn", "lower_bound", 1.001),
                                                ("mmc", "upper_bound", 0.999)])
def test_a_tampered_bound_fails_the_check(tmp_path, problem, key, factor):
    corpus = tmp_path / "corpus"
    shutil.copytree(certified_corpus.CORPUS_DIR, corpus)
    manifest = json.loads((corpus / "manifest.json").read_text())
    index = [entry["problem"] for entry in manifest["instances"]].index(problem)
    manifest["instances"][index][key] *= factor  # claims more than the certificate proves
    (corpus / "manifest.json").write_text(json.dumps(manifest))
    assert [c.ok for c in certified_corpus.check(corpus)].index(False) == index


def test_build_and_check_round_trip(tmp_path):
    small = [i for i in builtin_instances() if i.name.startswith(("blobs-n60", "zebra-n80-k1"))]
    small += [i for i in mm_instances() + mmc_instances()
              if i.name in ("mm-circles-n18-k2-mu0.5-c3", "mmc-diagonal-iris-n150")]
    manifest = certified_corpus.build(tmp_path, small, progress=False)
    assert [e["problem"] for e in manifest["instances"]] == ["lmnn"] * 3 + ["multi-metric-lmnn",
                                                                           "mmc-diagonal"]
    assert set(manifest["objectives"]) == {"lmnn", "multi-metric-lmnn", "mmc-diagonal"}
    assert all(c.ok for c in certified_corpus.check(tmp_path))


def test_missing_corpus_names_the_build_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="corpus build"):
        certified_corpus.check(tmp_path)
