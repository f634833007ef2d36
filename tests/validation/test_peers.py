"""Peers: their metrics are certified on our objective; a missing library is a clear message."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from validation import peers
from validation.instances import builtin_instances


def small_instance():
    return next(i for i in builtin_instances() if i.name == "blobs-n60-d2-c3-k2-mu0.5")


def test_missing_peer_is_a_row_not_a_traceback(monkeypatch):
    monkeypatch.setitem(sys.modules, "metric_learn", None)  # import fails
    rows = peers.peers_table([small_instance()], ["metric-learn"])
    assert rows[0]["shims"] == peers.NOT_INSTALLED and np.isnan(rows[0]["objective"])


def test_fast_solver_row_is_certified_against_the_optimum():
    row = peers.peers_table([small_instance()], ["lmnn-sdp fast"])[0]
    lower_bound = row["optimum"] * (1 - row["optimum_gap"])
    assert row["objective"] >= lower_bound * (1 - 1e-12)  # nothing beats a certified bound
    assert 0 <= row["gap_to_optimum"] <= 1e-4


@pytest.mark.parametrize("peer", ["pylmnn", "metric-learn"])
def test_installed_peers_get_a_valid_gap(peer):
    try:
        row = peers.peers_table([small_instance()], [peer])[0]
    except peers.PeerMissing:
        pytest.skip(f"{peer} not installed (the peers extra)")
    if row["shims"] == peers.NOT_INSTALLED:
        pytest.skip(f"{peer} not installed (the peers extra)")
    assert row["objective"] >= row["optimum"] * (1 - row["optimum_gap"]) * (1 - 1e-12)
    assert row["gap_to_optimum"] >= 0
