"""Implicit label pairs of MMC: the blockwise sums against the explicit pairs, and
certificates whose tangents follow from the metric by a rule (lmnn_sdp.mmc.pairs,
lmnn_sdp.mmc.compiled, lmnn_sdp.mmc.bound.TangentRule)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine

from fast_solver import solve_mmc_fast
from lmnn_sdp import MMCCertificate, certify_mmc
from lmnn_sdp.certificates import storage
from lmnn_sdp.mmc import compiled, pairs
from lmnn_sdp.mmc.bound import TangentRule, floor_sums, whiten
from lmnn_sdp.mmc.problem import label_pairs, mmc_problem


def random_instance(seed: int, n: int = 60, d: int = 4, classes: int = 3):
    """Points with duplicates across classes and one feature scaled by 1e3."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    X = rng.normal(size=(n, d)) + y[:, None]
    X[:, 0] *= 1e3
    X[1] = X[0]  # a duplicate, in another class when y[0] != y[1]
    y[:2] = [0, 1]
    return np.round(X, 2), y


def random_psd(seed: int, d: int, rank: int | None = None) -> np.ndarray:
    L = np.random.default_rng(seed).normal(size=(rank or d, d))
    return L.T @ L


def both(X, y, diagonal=False):
    return (mmc_problem(X, y, diagonal=diagonal),
            mmc_problem(X, y, diagonal=diagonal, implicit=True))


@pytest.fixture(scope="module", params=[False, True], ids=["full", "diagonal"])
def iris_pair(request, iris_mmc):
    """(explicit, implicit) certificates of the certified iris metric."""
    X, y = load_iris(return_X_y=True)
    metric = iris_mmc(diagonal=request.param).metric
    return (certify_mmc(X, metric, y, diagonal=request.param),
            certify_mmc(X, metric, y, diagonal=request.param, implicit=True))


# -- the problem ----------------------------------------------------------------
def test_an_implicit_problem_forms_no_pairs_and_counts_them():
    X, y = random_instance(0)
    explicit, implicit = both(X, y)
    assert implicit.implicit and implicit.similar is None and implicit.dissimilar is None
    assert (implicit.n_similar, implicit.n_dissimilar) == (len(explicit.similar),
                                                           len(explicit.dissimilar))
    with pytest.raises(ValueError, match="implicit"):
        implicit.dissimilar_differences


@pytest.mark.parametrize("kwargs, message", [
    ({"y": None, "similar": [[0, 1]], "dissimilar": [[0, 2]]}, "needs labels y"),
    ({"y": [0, 0, 0, 0]}, "no dissimilar pairs"),
    ({"y": [0, 1, 2, 3]}, "no similar pairs"),
])
def test_bad_implicit_problems_raise_clear_errors(kwargs, message):
    X = np.array([[0.0, 0.0], [1.0, 0.5], [2.0, 2.0], [0.5, 3.0]])
    with pytest.raises(ValueError, match=message):
        mmc_problem(X, implicit=True, **kwargs)


def test_nan_and_identical_points_are_refused():
    with pytest.raises(ValueError, match="NaN"):
        mmc_problem([[0.0, np.nan], [1.0, 0.0], [2.0, 1.0]], [0, 0, 1], implicit=True)
    with pytest.raises(ValueError, match="identical points"):
        mmc_problem(np.ones((4, 2)), [0, 0, 1, 1], implicit=True)


def test_layout_chunks_cover_every_pair_once():
    codes = np.random.default_rng(1).integers(0, 4, 300)
    layout = compiled.label_layout(codes)
    assert np.array_equal(codes[layout.order], np.sort(codes))
    for chunks, work in [(layout.dissimilar_chunks, 300 - layout.class_end),
                         (layout.similar_chunks, layout.class_end - np.arange(300) - 1)]:
        assert chunks[0] == 0 and chunks[-1] == 300 and np.all(np.diff(chunks) >= 0)
        per_chunk = np.add.reduceat(np.r_[work, 0], chunks[:-1])[:len(chunks) - 1]
        per_chunk[chunks[:-1] == chunks[1:]] = 0
        assert per_chunk.sum() == work.sum() and per_chunk.max() + len(chunks) - 1 <= layout.depth
    similar, dissimilar = label_pairs(codes)
    assert (300 - layout.class_end).sum() == len(dissimilar)


# -- sums against the explicit pairs --------------------------------------------
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("diagonal", [False, True])
def test_sums_over_implicit_pairs_match_the_explicit_ones(seed, diagonal):
    X, y = random_instance(seed)
    explicit, implicit = both(X, y, diagonal)
    M = random_psd(seed, X.shape[1], rank=2)
    if diagonal:
        M = np.diag(np.diag(M))
    R = pairs.similar_factor(implicit)
    V = explicit.similar_differences
    assert np.allclose(R.T @ R, V.T @ V, rtol=1e-12, atol=1e-9 * np.abs(V.T @ V).max())
    sim_e, sim_i = pairs.similar_sums(explicit, M), pairs.similar_sums(implicit, M)
    assert sim_i[0] == pytest.approx(sim_e[0], rel=1e-12)
    assert 0 < sim_i[1] <= 1e-12 * sim_i[0]
    dis_e, dis_i = pairs.dissimilar_sums(explicit, M), pairs.dissimilar_sums(implicit, M)
    assert dis_i.roots == pytest.approx(dis_e.roots, rel=1e-12)
    assert dis_i.largest_root == pytest.approx(dis_e.largest_root, rel=1e-12)
    assert dis_i.low_roots <= dis_i.roots and dis_i.low_roots == pytest.approx(dis_i.roots,
                                                                                rel=1e-6)
    basis = np.linalg.qr(np.random.default_rng(seed).normal(size=(X.shape[1], 2)))[0].T
    assert np.allclose(pairs.dissimilar_extent(implicit, basis),
                       pairs.dissimilar_extent(explicit, basis), rtol=1e-9)


def test_a_metric_with_a_diagonal_spanning_1e10_is_summed_accurately():
    """An eigen-factor of M itself would carry an error eps ||M|| = 1e-16 that is 1e-6 of
    the smallest diagonal entry; the factor of the equilibrated M does not."""
    X, y = random_instance(7)
    explicit, implicit = both(X, y)
    v = np.array([1e-5, 1.0, 0.3, 2.0])
    M = np.outer(v, v) + 1e-18 * np.eye(4)
    exact, exact_rounding = pairs.similar_sums(explicit, M)
    total, rounding = pairs.similar_sums(implicit, M)
    assert abs(total - exact) <= rounding + exact_rounding
    assert total == pytest.approx(exact, rel=1e-13) and rounding <= 1e-12 * total
    cert = certify_mmc(X, M, y, implicit=True)
    assert cert.value == pytest.approx(certify_mmc(X, M, y).value, rel=1e-12)


@pytest.mark.parametrize("diagonal", [False, True])
def test_tangent_sums_at_every_floor_match_a_brute_force_sum(diagonal):
    """G(f) = sum u u^T / (2 max(r, f)) and sum(max(r, f)) for each floor, with a
    rank-one metric that collapses pairs (roots 0 and tiny)."""
    X, y = random_instance(5)
    explicit, implicit = both(X, y, diagonal)
    M = np.diag([0.0, 1.0, 0.0, 2.0]) if diagonal else random_psd(5, X.shape[1], rank=1)
    U = explicit.dissimilar_differences
    roots = np.sqrt(np.maximum(np.einsum("pd,de,pe->p", U, M, U), 0.0))
    floors = np.r_[0.0, np.sort(roots)[[3, 40, 400]], roots.max()]
    sums = pairs.tangent_sums(implicit, M, floors)[1]
    assert sums.counts.sum() == len(U) and sums.counts[0] == np.sum(roots == 0) > 0
    for j, floor in enumerate(floors):
        at = floor_sums(sums, j)
        if floor == 0:
            assert at is None
            continue
        s = np.maximum(roots, floor)
        brute = (U / (2 * s)[:, None]).T @ U
        G, total = at
        assert total == pytest.approx(np.sum(s), rel=1e-9)
        assert np.allclose(G, np.diag(brute) if diagonal else brute, rtol=1e-9,
                           atol=1e-12 * np.abs(brute).max())


def test_summation_depth_is_the_chunk_size_not_the_pair_count():
    X, y = load_iris(return_X_y=True)
    explicit, implicit = both(X, y)
    assert pairs.summation_depth(explicit) == explicit.n_similar + explicit.n_dissimilar
    assert pairs.summation_depth(implicit) == 100 + 150  # a row's 100 partners, 150 chunks
    assert whiten(implicit).allowance < whiten(explicit).allowance


# -- certificates ---------------------------------------------------------------
def test_implicit_and_explicit_certificates_agree(iris_pair):
    explicit, implicit = iris_pair
    assert isinstance(implicit.tangents, TangentRule) and implicit.tangents.floor == 0.0
    assert implicit.tangents.scale == pytest.approx(1.0, abs=1e-9)
    assert implicit.value == pytest.approx(explicit.value, rel=1e-14)
    assert implicit.feasible_value == pytest.approx(explicit.feasible_value, rel=1e-13)
    assert implicit.bound == pytest.approx(explicit.bound, rel=1e-9)
    assert implicit.certified and explicit.certified and implicit.relative_gap <= 1e-10
    assert implicit.lower <= explicit.upper and explicit.lower <= implicit.upper
    fresh = implicit.verify()
    assert fresh.provenance == "verified" and fresh.bound == implicit.bound


def test_wine_raw_scales_keep_the_implicit_gap_small():
    """Raw wine features differ in scale by 1e4; the weighted slack keeps e_p small. The optimal
    metric is the fast solver's at tol 1e-9 (0.1 s; the exact solve of wine's full SDP takes
    15 s, and its agreement with the fast solver is tests/fast_solver/test_mmc.py's, slow)."""
    X, y = load_wine(return_X_y=True)
    metric = solve_mmc_fast(X, y, tol=1e-9).metric
    implicit = certify_mmc(X, metric, y, implicit=True)
    assert implicit.certified and implicit.relative_gap <= 1e-9
    assert implicit.verify().certified


def test_a_poor_or_collapsing_candidate_gets_a_finite_bound(iris_mmc):
    X, y = load_iris(return_X_y=True)
    reference = certify_mmc(X, iris_mmc(diagonal=False).metric, y, implicit=True)
    z = np.random.default_rng(4).normal(size=4)
    for metric in (np.eye(4), np.outer(z, z), np.diag([0.0, 0.0, 1.0, 0.0])):
        cert = certify_mmc(X, metric, y, implicit=True)
        assert np.isfinite([cert.lower, cert.upper]).all() and not cert.certified
        assert cert.lower <= reference.upper and reference.lower <= cert.upper
        assert cert.verify().bound == cert.bound


@pytest.mark.parametrize("change, message", [
    (lambda c: replace(c, multiplier=c.multiplier * (1 - 1e-8)), "multiplier="),
    (lambda c: replace(c, tangents=TangentRule(c.tangents.floor, c.tangents.scale * 1.001)),
     "bound="),
    (lambda c: replace(c, tangents=TangentRule(c.tangents.floor, c.tangents.scale * 0.999)),
     "multiplier="),
    (lambda c: replace(c, tangents=TangentRule(1e-3, c.tangents.scale)), "bound="),
    (lambda c: replace(c, tangents=TangentRule(-1.0, c.tangents.scale)), "tangent_floor"),
    (lambda c: replace(c, tangents=TangentRule(c.tangents.floor, 0.0)), "tangent_scale"),
    (lambda c: replace(c, M=c.M * 1.01), "not scaled"),
    (lambda c: replace(c, bound=c.bound * (1 - 1e-8)), "bound="),
])
def test_verify_refuses_tampered_evidence(iris_pair, change, message):
    with pytest.raises(ValueError, match=message):
        change(iris_pair[1]).verify()


def test_files_are_small_and_round_trip(tmp_path, iris_pair):
    implicit = iris_pair[1]
    npz, js = implicit.save(tmp_path / "iris")
    arrays, fields = storage.load(npz)
    assert set(arrays) == {"X", "y", "M", "tangent_floor", "tangent_scale", "multiplier"}
    assert fields["pairs"] == "labels" and fields["dissimilar"] == implicit.problem.n_dissimilar
    loaded = MMCCertificate.load(npz)
    assert loaded.problem.implicit and loaded.tangents == implicit.tangents
    assert loaded.verify().summary() == implicit.summary()
    forged = dict(arrays, y=np.r_[1 - arrays["y"][:1], arrays["y"][1:]])
    storage.save(tmp_path / "forged", forged, {k: v for k, v in fields.items()
                                               if k not in ("format_version", "sha256")})
    with pytest.raises(ValueError):
        MMCCertificate.load(tmp_path / "forged").verify()
    fields = json.loads(js.read_text())
    fields["tol"] = implicit.relative_gap / 2
    storage.save(tmp_path / "tol", arrays, {k: v for k, v in fields.items()
                                            if k not in ("format_version", "sha256")})
    with pytest.raises(ValueError, match="certified=True contradicts"):
        MMCCertificate.load(tmp_path / "tol").verify()
