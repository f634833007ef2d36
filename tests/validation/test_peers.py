"""Peers: their metrics are certified on our objective; a missing library is a clear message."""

from __future__ import annotations

import functools
import sys

import numpy as np
import pytest

from validation import peers
from validation.instances import builtin_instances


@functools.cache  # the built-in suite takes 0.3 s to build
def small_instance():
    return next(i for i in builtin_instances() if i.name == "zebra-n80-k1-mu0.2")


@pytest.fixture(scope="module")
def table() -> dict:
    """``peers_table`` of every library on the small instance (one certified optimum for all):
    ``{library: row}``."""
    return {row["library"]: row for row in peers.peers_table([small_instance()])}


def test_missing_peer_is_a_row_not_a_traceback(monkeypatch):
    monkeypatch.setitem(sys.modules, "metric_learn", None)  # import fails
    rows = peers.peers_table([small_instance()], ["metric-learn"])
    assert rows[0]["shims"] == peers.NOT_INSTALLED and np.isnan(rows[0]["objective"])


def test_fast_solver_row_is_certified_against_the_optimum(table):
    row = table["lmnn-sdp fast"]
    lower_bound = row["optimum"] * (1 - row["optimum_gap"])
    assert row["objective"] >= lower_bound * (1 - 1e-12)  # nothing beats a certified bound
    assert 0 <= row["gap_to_optimum"] <= 1e-4


@pytest.mark.parametrize("peer", ["pylmnn", "metric-learn", "mlpack"])
def test_installed_peers_get_a_valid_gap(peer, table):
    row = table[peer]
    if row["shims"] == peers.NOT_INSTALLED:
        pytest.skip(f"{peer} not installed (the peers extra)")
    assert row["objective"] >= row["optimum"] * (1 - row["optimum_gap"]) * (1 - 1e-12)
    assert row["gap_to_optimum"] >= 0


def test_missing_mlpack_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlpack", None)  # import fails
    with pytest.raises(peers.PeerMissing, match="mlpack>=4.8"):
        peers.fit_mlpack(small_instance().problem())


def test_mlpack_metric_is_its_transformation_in_our_convention():
    pytest.importorskip("mlpack", reason="mlpack not installed (the peers extra)")
    import mlpack

    problem = small_instance().problem()
    M = peers.fit_mlpack(problem)
    run = mlpack.lmnn(input_=problem.X, labels=problem.label_codes.astype(np.int64), k=problem.k,
                      regularization=problem.mu, optimizer="lbfgs")
    Z = run["transformed_data"]
    a, b = np.triu_indices(len(Z), 1)
    V = problem.X[a] - problem.X[b]
    np.testing.assert_allclose(np.einsum("pd,de,pe->p", V, M, V), np.sum((Z[a] - Z[b]) ** 2, axis=1),
                               rtol=1e-8, atol=1e-8)
    assert np.linalg.norm(M - np.eye(len(M))) > 1e-3  # it learned something


def test_mlpack_starts_where_it_is_told():
    pytest.importorskip("mlpack", reason="mlpack not installed (the peers extra)")
    problem = small_instance().problem()
    L = np.array([[2.0, 5.0], [0.0, 1.0]])  # not symmetric: a transposed start would show
    kept = L.copy()
    # a gradient tolerance no gradient meets: L-BFGS stops before its first step
    M = peers.fit_mlpack(problem, components=L, tolerance=1e12)
    np.testing.assert_allclose(M, L.T @ L, rtol=1e-12)
    np.testing.assert_array_equal(L, kept)  # mlpack overwrote a copy, not ours
    assert not np.allclose(peers.fit_mlpack(problem, components=L), L.T @ L, rtol=1e-3)
