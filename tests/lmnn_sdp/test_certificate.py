"""Certificates: bounds checked against brute force and never overstated."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from lmnn_sdp import Certificate, LMNNProblem, certify, solve_lmnn, solve_mm_lmnn
from lmnn_sdp.certificates import bounds, storage
from lmnn_sdp.certificates.bounds import dual_lower_bound, largest_feasible_scale, relative_gap, repair_multipliers
from lmnn_sdp.certificates.certificate import prove


def small_problem(seed: int, n: int = 12, d: int = 3, k: int = 2, mu: float = 0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return LMNNProblem(X, np.arange(n) % 3, k=k, mu=mu)


def brute_dual_matrix(p: LMNNProblem, triplets, lam) -> np.ndarray:
    """Z(lambda) of DESIGN.md by explicit outer products on the raw inputs."""
    C = lambda a, b: np.outer(p.X[a] - p.X[b], p.X[a] - p.X[b])  # noqa: E731
    Z = (1 - p.mu) * sum(C(i, j) for i in range(p.n_samples) for j in p.targets[i])
    return Z - sum(w * (C(i, l) - C(i, j)) for w, (i, j, l) in zip(lam, triplets))


@pytest.fixture(scope="module")
def solved():
    p = small_problem(0)
    return p, solve_lmnn(p, method="full")  # multipliers on every triplet


@pytest.fixture(scope="module")
def certified(solved) -> Certificate:
    """``certify(p, M*)`` at the solved optimum, with the multipliers of complementary slackness."""
    p, result = solved
    return certify(p, result.metric)


def test_scaled_multipliers_are_dual_feasible_and_scale_is_maximal():
    for seed in range(10):
        p = small_problem(seed, mu=[0.2, 0.5, 0.8][seed % 3])
        rng = np.random.default_rng(seed)
        t = p.all_triplets()
        lam = rng.uniform(0, p.mu, size=len(t)) * (rng.uniform(size=len(t)) < 0.3)
        bound = dual_lower_bound(p, t, lam)
        lower, alpha = bound.lower, bound.alpha
        assert lower == pytest.approx(alpha * lam.sum())
        assert np.linalg.eigvalsh(brute_dual_matrix(p, t, alpha * lam))[0] >= -1e-9
        if alpha < 1:  # a slightly larger scale leaves the dual cone
            assert np.linalg.eigvalsh(brute_dual_matrix(p, t, alpha * 1.001 * lam))[0] < 0


def test_lower_bound_never_exceeds_optimum_or_upper_bound(solved):
    p, result = solved
    rng = np.random.default_rng(1)
    t = p.all_triplets()
    for _ in range(30):
        lam = rng.uniform(0, 2 * p.mu, size=len(t)) * (rng.uniform(size=len(t)) < rng.uniform())
        assert dual_lower_bound(p, t, lam).lower <= result.upper * (1 + 1e-9)
        M = result.metric + rng.uniform() * np.diag(rng.uniform(size=3))
        assert certify(p, M).lower <= p.objective(M)


def test_bounds_bracket_over_many_random_instances():
    for seed in range(25):
        p = small_problem(100 + seed, n=9, d=2, k=1 + seed % 2, mu=[0.2, 0.5, 0.8][seed % 3])
        rng = np.random.default_rng(seed)
        L = rng.normal(size=(2, 2))
        cert = certify(p, L.T @ L)
        assert 0 <= cert.lower <= cert.upper
        assert cert.upper == pytest.approx(p.objective(L.T @ L))


def test_certify_closes_gap_at_optimum_and_not_at_identity(solved, certified):
    p, result = solved
    at_optimum = certified
    assert at_optimum.certified and at_optimum.relative_gap <= 1e-6
    at_identity = certify(p, np.eye(3))
    assert not at_identity.certified and at_identity.relative_gap > 0.05
    assert at_identity.lower <= result.upper * (1 + 1e-9)


def test_certificate_from_solver_multipliers(solved):
    p, result = solved
    cert = certify(p, result.metric, triplets=result.triplets, multipliers=result.multipliers)
    assert cert.relative_gap <= 1e-6
    assert cert.n_multipliers == p.n_triplets


def test_multipliers_outside_the_box_are_clipped_not_trusted(solved):
    p, result = solved
    inflated = certify(p, result.metric, triplets=result.triplets, multipliers=10 * result.multipliers)
    assert inflated.lower <= result.upper * (1 + 1e-9)


def test_largest_feasible_scale_closed_form_and_bisection_agree():
    rng = np.random.default_rng(3)
    A = np.diag([1.0, 2.0, 3.0])
    Q = rng.normal(size=(3, 3))
    Q = Q + Q.T
    alpha = largest_feasible_scale(A, Q)
    assert np.linalg.eigvalsh(A - alpha * Q)[0] == pytest.approx(0, abs=1e-10) or alpha == 1
    singular = np.diag([0.0, 2.0, 3.0])
    negative_on_null = np.diag([1.0, 0.0, 0.0])
    assert largest_feasible_scale(singular, -negative_on_null) == 1.0
    assert largest_feasible_scale(singular, negative_on_null) == 0.0


@pytest.mark.parametrize("offset", [1e-9, 0.3])  # found by the fourfold steps; by the bisection
def test_a_feasible_scale_passes_the_check_of_the_matrix_as_the_caller_forms_it(offset):
    """``_cluster_scales`` checks ``Z_c`` as it sums it, not as ``A - alpha Q``: a scale that passes one
    and fails the other by a rounding had sent it through all its sweeps (here the two differ by
    ``offset`` on the diagonal)."""
    rng = np.random.default_rng(5)
    A = np.diag(rng.uniform(1.0, 2.0, 6))
    Q = rng.normal(size=(6, 6))
    Q = Q @ Q.T

    def formed(alpha):
        return A - alpha * Q - offset * np.eye(6)
    plain = bounds._feasible_below(A, Q, 0.0, 1.0)
    assert np.linalg.eigvalsh(formed(plain))[0] < 0  # A - alpha Q's own scale fails the other form
    alpha = bounds._feasible_below(A, Q, 0.0, 1.0, formed)
    assert np.linalg.eigvalsh(formed(alpha))[0] >= 0
    assert 0.0 < alpha < plain
    if offset < 1e-6:
        assert alpha == pytest.approx(plain, rel=1e-6)


def test_relative_gap_definition():
    assert relative_gap(2.0, 1.0) == 0.5
    assert relative_gap(1.0, 1.0 + 1e-12) == 0.0
    assert relative_gap(0.0, 0.0) == 0.0


@pytest.mark.parametrize("M,match", [
    (np.array([[1.0, 0.5, 0], [0, 1, 0], [0, 0, 1]]), "not symmetric"),
    (np.diag([1.0, -0.5, 1.0]), "not positive semidefinite"),
    (np.eye(2), "shape"),
    (np.full((3, 3), np.nan), "NaN"),
])
def test_certify_rejects_bad_metrics(M, match):
    with pytest.raises(ValueError, match=match):
        certify(small_problem(0), M)


def test_certify_rejects_half_a_multiplier_set(solved):
    p, result = solved
    with pytest.raises(ValueError, match="together"):
        certify(p, result.metric, triplets=result.triplets)
    with pytest.raises(ValueError, match="shape"):
        certify(p, result.metric, triplets=result.triplets, multipliers=result.multipliers[:-1])


def test_rounding_level_negative_eigenvalues_are_covered_by_the_rounding_bound():
    p = small_problem(0)
    cert = certify(p, np.diag([1.0, 1.0, -1e-12]))
    assert cert.min_eig_metric == pytest.approx(-1e-12)
    psd = p.objective(np.diag([1.0, 1.0, 0.0]))
    assert abs(cert.upper - psd) <= cert.upper_error < 1e-9 * psd
    cert.verify()


def test_the_box_caps_multipliers_that_the_cone_cannot():
    # Target at 3, impostor at 1: C_il - C_ij = -8 is negative, so Z stays PSD for any
    # multiplier on this triplet and only the box lambda <= mu keeps the bound honest.
    p = LMNNProblem(np.array([[0.0], [3.0], [1.0], [1.1]]), [0, 0, 1, 1], k=1, mu=0.5)
    optimum = solve_lmnn(p).upper
    assert optimum <= 8 * p.mu * (1 + 1e-6)  # eps(0) = mu * (number of triplets), to the solve's tol
    bound = dual_lower_bound(p, np.array([[0, 1, 2]]), np.array([100.0]))
    assert bound.alpha == 1.0 and bound.lower == pytest.approx(p.mu)
    assert bound.lower <= optimum


@pytest.mark.parametrize("change,match", [
    (lambda t, p: np.vstack([t, t[:1]]), "appears twice"),  # mu twice on one triplet
    (lambda t, p: np.vstack([t, [[t[0, 0], t[0, 0] + 1, t[0, 2]]]]), "not a target neighbour"),
    (lambda t, p: np.vstack([t, [[t[0, 0], t[0, 1], t[0, 1]]]]), "no impostor"),
])
def test_multipliers_on_anything_but_distinct_triplets_are_refused(solved, change, match):
    # Each of these, accepted, would let the box [0, mu] be exceeded per real triplet or
    # put a multiplier on a constraint the SDP does not have: the bound could overshoot.
    p, result = solved
    t = result.triplets[result.multipliers > 0]
    bad = change(t, p)
    if match == "not a target neighbour":
        assert bad[-1, 1] not in p.targets[bad[-1, 0]]
    with pytest.raises(ValueError, match=match):
        dual_lower_bound(p, bad, np.full(len(bad), p.mu))


def test_a_duplicated_triplet_could_prove_more_than_the_optimum():
    # Why the check exists: on the 1-D problem above, mu on each of two copies of the
    # one triplet would "prove" 2 mu, above the optimum.
    p = LMNNProblem(np.array([[0.0], [3.0], [1.0], [1.1]]), [0, 0, 1, 1], k=1, mu=0.5)
    optimum = solve_lmnn(p).upper
    t = p.all_triplets()
    both = np.vstack([t, t])
    assert len(both) * p.mu > optimum  # what an unchecked sum would claim
    with pytest.raises(ValueError, match="appears twice"):
        dual_lower_bound(p, both, np.full(len(both), p.mu))


def test_certificate_carries_its_evidence_and_verifies(solved, certified):
    p, result = solved
    cert = certified
    again = cert.verify()
    assert (cert.provenance, again.provenance) == ("computed", "verified") and "verify" in again.timings
    assert again.lower == pytest.approx(cert.lower, rel=1e-12)
    assert again.upper == pytest.approx(p.objective(result.metric), rel=1e-12)
    assert cert.problem is p and cert.metric.shape == (3, 3) and cert.kind == "lmnn"


@pytest.mark.parametrize("field,factor,match", [
    ("upper", 1.001, "objective"), ("lower", 1.001, "prove"),
    ("relative_gap", 2.0, "relative_gap"), ("tol", 1e-6, "contradicts"),
])
def test_verify_refuses_a_number_the_evidence_does_not_support(certified, field, factor, match):
    cert = certified
    if field == "tol":  # stated certified, but the gap is above the stated tol
        cert = dataclasses.replace(cert, tol=cert.relative_gap * 0.5)
    else:
        cert = dataclasses.replace(cert, **{field: getattr(cert, field) * factor})
    with pytest.raises(ValueError, match=match):
        cert.verify()


def test_verify_refuses_weakened_evidence(certified):
    cert = certified
    weaker = dataclasses.replace(cert, multipliers=0.99 * cert.multipliers)
    with pytest.raises(ValueError, match="prove"):
        weaker.verify()


def test_save_load_round_trip_and_tampering(certified, tmp_path):
    cert = certified
    npz, js = cert.save(tmp_path / "iris-mu0.5")  # a dot in the name stays in the name
    assert (npz.name, js.name) == ("iris-mu0.5.npz", "iris-mu0.5.json")
    loaded = Certificate.load(js)
    assert loaded.provenance == "loaded"
    loaded.verify()
    assert (loaded.upper, loaded.lower, loaded.certified) == (cert.upper, cert.lower, cert.certified)
    np.testing.assert_array_equal(loaded.metric, cert.metric)
    # every stored array: an edit is refused on loading
    with np.load(npz) as data:
        arrays = {key: data[key] for key in data.files}
    for key in arrays:
        edited = dict(arrays)
        edited[key] = arrays[key] + (1 if arrays[key].dtype.kind == "i" else 0.01)
        np.savez_compressed(tmp_path / "edited.npz", **edited)
        (tmp_path / "edited.json").write_text(js.read_text())
        with pytest.raises(ValueError, match="digest"):
            Certificate.load(tmp_path / "edited")
    # every stored number: an edit is refused on loading
    fields = json.loads(js.read_text())
    np.savez_compressed(tmp_path / "edited.npz", **arrays)
    for key, value in fields.items():
        if key == "sha256":
            continue
        edited = dict(fields, **{key: not value if isinstance(value, bool) else
                                 value + "x" if isinstance(value, str) else value * 1.01 + 1})
        (tmp_path / "edited.json").write_text(json.dumps(edited))
        with pytest.raises(ValueError, match="digest" if key not in ("format", "format_version") else "format"):
            Certificate.load(tmp_path / "edited")


def test_save_and_load_state_the_same_evidence(solved, tmp_path):
    p, result = solved
    cert = certify(p, result.metric, triplets=result.triplets, multipliers=result.multipliers)
    cert.save(tmp_path / "c")
    loaded = Certificate.load(tmp_path / "c")
    assert loaded.n_multipliers == cert.n_multipliers == len(cert.triplets)
    assert np.all(cert.multipliers > 0)
    assert loaded.verify().n_multipliers == cert.n_multipliers


@pytest.mark.parametrize("field,value,match", [
    ("upper_error", 0.0, "rounding bound"), ("lower_error", 0.0, "rounding bound"),
    ("refused", "the independent evaluation disagreed", "contradicts"),
])
def test_a_forged_digest_does_not_forge_a_rounding_bound(certified, tmp_path, field, value, match):
    cert = certified
    assert cert.certified
    arrays, fields = cert.record()
    fields[field] = value
    storage.save(tmp_path / "forged", arrays, fields)
    with pytest.raises(ValueError, match=match):
        Certificate.load(tmp_path / "forged").verify()


def test_a_forged_digest_does_not_forge_the_proof(solved, tmp_path):
    # Whoever re-computes the digest after raising the bound is caught by verify().
    p, _ = solved
    cert = certify(p, np.eye(3))  # far from the optimum: a gap of several percent
    arrays, fields = cert.record()
    fields["lower"] = fields["upper"]
    fields["relative_gap"] = 0.0
    storage.save(tmp_path / "forged", arrays, fields)
    forged = Certificate.load(tmp_path / "forged")
    with pytest.raises(ValueError, match="prove"):
        forged.verify()


def bumped_optimal_multipliers(seed: int, clusters: bool):
    """The optimal multipliers of a small problem (LMNN or class metrics), three of the zero
    ones raised to 0.05 mu: ``Z`` leaves the dual cone along a few directions."""
    p = small_problem(seed)
    result = solve_mm_lmnn(p, method="full") if clusters else solve_lmnn(p, method="full")
    lam = np.where(result.multipliers < 1e-7, 0.0, result.multipliers)
    rng = np.random.default_rng(seed)
    lam[rng.choice(np.flatnonzero(lam == 0), 3, replace=False)] += 0.05 * p.mu
    return p, (p.label_codes if clusters else None), result, result.triplets, lam


@pytest.mark.parametrize("clusters", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_repair_recovers_most_of_what_the_scale_into_the_cone_loses(seed, clusters):
    p, owner, result, t, lam = bumped_optimal_multipliers(seed, clusters)
    p = p.with_clusters(owner)
    scaled = dual_lower_bound(p, t, lam)
    repaired = repair_multipliers(p, t, lam)
    fixed = dual_lower_bound(p, t, repaired)
    assert scaled.alpha < 0.98  # the bump costs the scaled bound at least 2% (up to 73%)
    assert np.all(repaired <= lam) and np.all(repaired >= 0)
    assert fixed.lower > scaled.lower
    assert (result.upper - fixed.lower) < 0.25 * (result.upper - scaled.lower)
    assert fixed.lower <= result.upper * (1 + 1e-9)  # still a lower bound
    if not clusters:  # Z(alpha lambda) PSD by brute force
        assert np.linalg.eigvalsh(brute_dual_matrix(p, t, fixed.alpha * repaired))[0] >= -1e-9


def test_prove_keeps_the_repaired_multipliers_as_its_evidence():
    p, _, result, t, lam = bumped_optimal_multipliers(0, clusters=False)
    cert = prove(p, result.metric, t, lam, tol=1e-6)
    assert cert.lower > dual_lower_bound(p, t, lam).lower
    given = dict(zip(map(tuple, t.tolist()), lam))
    before = np.array([given[tuple(row)] for row in cert.triplets.tolist()])
    assert np.all(cert.multipliers > 0) and np.all(cert.multipliers <= before)
    assert cert.multipliers.sum() < lam[lam > 0].sum()  # lowered, and zeros left out
    assert cert.verify().lower == pytest.approx(cert.lower, rel=1e-12)


def test_prove_refuses_a_gap_that_the_independent_evaluation_contradicts(solved, monkeypatch):
    """``prove`` makes the independent evaluation of eq. 14 beside its own (on another
    thread) and certifies nothing that it contradicts."""
    p, result = solved
    honest = prove(p, result.metric, result.triplets, result.multipliers, tol=1e-6)
    assert honest.certified and not honest.refused
    evaluate = LMNNProblem.evaluate

    def shifted_elsewhere(self, M, clusters=None, origin=None):
        value = evaluate(self, M, clusters, origin)
        return value if origin is None else dataclasses.replace(value, value=value.value + 1e-3)

    monkeypatch.setattr(LMNNProblem, "evaluate", shifted_elsewhere)
    cert = prove(p, result.metric, result.triplets, result.multipliers, tol=1e-6)
    assert not cert.certified and cert.upper == honest.upper
    assert cert.refused.startswith("an independent evaluation of eq. 14 gives")
