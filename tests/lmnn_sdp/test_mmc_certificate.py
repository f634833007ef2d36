"""Portable MMC certificates: verify() re-derives every number, files round-trip, and
tampering with any stored array or number is refused by load() or verify()."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import load_iris

from lmnn_sdp import MMCCertificate, certify_mmc, label_pairs, solve_mmc
from lmnn_sdp.certificates import storage
from lmnn_sdp.mmc.problem import LOG_HALF
from validation import corpus


@pytest.fixture(scope="module", params=[False, True], ids=["full", "diagonal"])
def iris_certificate(request, iris_mmc) -> MMCCertificate:
    return iris_mmc(diagonal=request.param).certificate


@pytest.fixture(scope="module")
def explicit_pairs_certificate() -> MMCCertificate:
    """Pairs given without labels: no ``y`` is stored and ``classes`` is None."""
    X = np.array([[0.0, 0.0], [1.0, 0.2], [0.0, 1.0], [3.0, 2.0], [2.5, 3.0]])
    return solve_mmc(X, similar=[[0, 1], [0, 2]], dissimilar=[[1, 3], [2, 4], [0, 4]]).certificate


def resaved(tmp_path, certificate: MMCCertificate, array=None, change=None, field=None, value=None):
    """Save ``certificate`` with one array changed by ``change`` or one field set to
    ``value``, and a fresh digest (a forger who also rewrites the sha256); returns the path."""
    arrays, fields = certificate.record()
    if array is not None:
        arrays[array] = change(np.array(arrays[array]))
    if field is not None:
        fields[field] = value
    path = tmp_path / "forged"
    storage.save(path, arrays, fields)
    return path


def refused(path) -> str:
    """The message of the ValueError that load() or verify() raises ('' if none)."""
    try:
        MMCCertificate.load(path).verify()
    except ValueError as err:
        return str(err)
    return ""


# -- verify ---------------------------------------------------------------------
def test_verify_re_derives_a_solved_certificate(iris_certificate):
    cert = iris_certificate
    fresh = cert.verify()
    assert fresh.provenance == "verified" and cert.provenance == "computed"
    assert fresh.value == cert.value and fresh.bound == cert.bound
    assert fresh.relative_gap == cert.relative_gap and fresh.certified
    assert set(fresh.timings) == {"verify"}


def test_verify_re_derives_every_corpus_certificate():
    """The corpus's wine and iris certificates (built by an earlier solver) verify."""
    entries = [e for e in corpus.load_manifest()["instances"]
               if e["problem"].startswith("mmc")]
    assert {e["problem"] for e in entries} == {"mmc", "mmc-diagonal"}
    for entry in entries:
        cert = corpus.load_certificate(entry["name"])
        assert cert.provenance == "loaded" and cert.kind == entry["problem"]
        assert cert.verify().certified and cert.relative_gap <= 1e-8


def test_the_diagonal_certificate_speaks_xings_objective(iris_certificate):
    """(XING): the metric is M / 2 and g = 1/2 + log(2)/2 - log f, minimised."""
    cert = iris_certificate
    if not cert.diagonal:
        assert cert.sense == "maximize" and cert.metric is cert.M
        assert cert.lower <= cert.objective <= cert.upper == cert.bound
        return
    assert cert.sense == "minimize" and np.array_equal(2 * cert.metric, cert.M)
    assert cert.objective == pytest.approx(LOG_HALF - np.log(cert.value), abs=1e-15)
    assert cert.lower == pytest.approx(LOG_HALF - np.log(cert.bound), abs=1e-15)
    assert cert.lower <= cert.objective <= cert.upper
    assert cert.relative_gap == pytest.approx(np.log(cert.bound / cert.feasible_value), abs=1e-15)


def test_a_weak_multiplier_is_refused(iris_certificate):
    weak = replace(iris_certificate, multiplier=iris_certificate.multiplier * (1 - 1e-8))
    with pytest.raises(ValueError, match="multiplier="):
        weak.verify()


@pytest.mark.parametrize("name, factor, message", [
    ("value", 1 + 1e-8, "value"),  # the metric's objective is not reproduced
    ("bound", 1 - 1e-8, "bound="),  # claims more than the evidence proves
    ("bound", 1 + 1e-8, "relative_gap"),  # a weaker bound, but the gap no longer follows
    ("relative_gap", 1.01, "relative_gap"),
])
def test_every_stated_number_is_checked(iris_certificate, name, factor, message):
    forged = replace(iris_certificate, **{name: getattr(iris_certificate, name) * factor})
    with pytest.raises(ValueError, match=message):
        forged.verify()


def test_certified_must_follow_from_the_gap_and_tol(iris_certificate):
    with pytest.raises(ValueError, match="certified=False contradicts"):
        replace(iris_certificate, certified=False).verify()
    with pytest.raises(ValueError, match="certified=True contradicts"):
        replace(iris_certificate, tol=iris_certificate.relative_gap / 2).verify()


def test_a_poor_candidate_verifies_as_not_certified():
    X, y = load_iris(return_X_y=True)
    cert = certify_mmc(X, np.eye(4), y)
    assert not cert.certified and not cert.verify().certified


# -- files ----------------------------------------------------------------------
def test_save_load_verify_round_trip(tmp_path, iris_certificate):
    npz, js = iris_certificate.save(tmp_path / "iris")
    fields = json.loads(js.read_text())
    assert fields["problem"] == iris_certificate.kind and fields["classes"] == 3
    assert (fields["value"], fields["bound"]) == (iris_certificate.value,
                                                          iris_certificate.bound)
    loaded = MMCCertificate.load(npz)
    assert loaded.provenance == "loaded" and np.array_equal(loaded.M, iris_certificate.M)
    assert loaded.relative_gap == iris_certificate.relative_gap
    assert loaded.feasible_value == iris_certificate.feasible_value
    assert loaded.verify().summary() == iris_certificate.summary()


def test_round_trip_without_labels(tmp_path, explicit_pairs_certificate):
    _, js = explicit_pairs_certificate.save(tmp_path / "pairs")
    assert json.loads(js.read_text())["classes"] is None
    loaded = MMCCertificate.load(tmp_path / "pairs")
    assert loaded.problem.y is None and loaded.verify().certified


def test_load_takes_the_fields_from_a_manifest(tmp_path, iris_certificate):
    _, js = iris_certificate.save(tmp_path / "iris")
    fields = json.loads(js.read_text())
    js.unlink()
    assert MMCCertificate.load(tmp_path / "iris", fields=fields).verify().certified


@pytest.mark.parametrize("array, change", [
    ("X", lambda X: X + 0.5 * (np.arange(len(X)) == 0)[:, None]),  # moves point 0
    ("y", lambda y: np.r_[1 - y[:1], y[1:]]),
    ("similar", lambda pairs: np.r_[[[0, 149]], pairs[1:]]),
    ("dissimilar", lambda pairs: pairs[::-1]),
    ("M", lambda M: M * 1.01),
    ("M", lambda M: M + 1e-6 * np.abs(M).max() * np.eye(len(M))),
    ("tangents", lambda s: s * np.r_[0.5, np.ones(len(s) - 1)]),  # G_s grows past lambda Sigma
    ("tangents", lambda s: s * 1.001),  # proves a weaker bound than the stated one
    ("multiplier", lambda m: m * (1 - 1e-8)),
    ("multiplier", lambda m: m * (1 + 1e-8)),
])
def test_a_forged_array_is_refused_even_with_a_fresh_digest(tmp_path, iris_certificate,
                                                            array, change):
    assert refused(resaved(tmp_path, iris_certificate, array=array, change=change))


@pytest.mark.parametrize("field, change, message", [
    ("value", lambda v: v * (1 + 1e-8), "value"),
    ("bound", lambda v: v * (1 - 1e-8), "bound="),
    ("bound", lambda v: v * (1 + 1e-8), "relative_gap"),
    ("relative_gap", lambda v: v * 1.001, "relative_gap"),
    ("certified", lambda v: not v, "certified"),
    ("tol", lambda v: v * 1e-6, "certified"),
    ("n", lambda v: v + 1, "n="),
    ("similar", lambda v: v - 1, "similar="),
    ("problem", lambda v: "lmnn", "not one of"),
])
def test_a_forged_number_is_refused_even_with_a_fresh_digest(tmp_path, iris_certificate,
                                                             field, change, message):
    fields = iris_certificate.record()[1]
    path = resaved(tmp_path, iris_certificate, field=field, value=change(fields[field]))
    assert message in refused(path)


def test_a_forged_number_without_a_fresh_digest_is_refused_on_loading(tmp_path, iris_certificate):
    _, js = iris_certificate.save(tmp_path / "iris")
    for key in ("value", "bound", "relative_gap"):
        fields = json.loads(js.read_text())
        fields[key] *= 1 + 1e-12
        (tmp_path / "edited.json").write_text(json.dumps(fields))
        (tmp_path / "edited.npz").write_bytes((tmp_path / "iris.npz").read_bytes())
        assert "digest" in refused(tmp_path / "edited")


@pytest.mark.slow
def test_checking_a_certificate_needs_no_cvxpy():
    path = corpus.CORPUS_DIR / "mmc-iris-n150"
    code = ("import sys; from lmnn_sdp.mmc.certificate import MMCCertificate; "
            f"MMCCertificate.load({str(path)!r}).verify(); "
            "assert 'cvxpy' not in sys.modules, 'cvxpy was imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_stored_pairs_are_the_label_pairs(iris_certificate):
    X, y = load_iris(return_X_y=True)
    similar, dissimilar = label_pairs(y)
    arrays = iris_certificate.record()[0]
    assert np.array_equal(arrays["similar"], similar)
    assert np.array_equal(arrays["dissimilar"], dissimilar)
    assert arrays["y"].dtype == np.int64 and arrays["multiplier"].shape == ()
