"""Fixtures shared by the tests of ``lmnn_sdp``: ``iris_mmc`` solves MMC on iris once a session."""

from __future__ import annotations

import pytest
from sklearn.datasets import load_iris

from lmnn_sdp import solve_mmc


@pytest.fixture(scope="session")
def iris_mmc():
    """``solve(diagonal)``: ``solve_mmc`` on raw iris, (MMC) or Xing's diagonal problem, each solved
    once a session (a worker's, under ``pytest -n``) for the tests that check different things of it."""
    X, y = load_iris(return_X_y=True)
    solved = {}

    def solve(diagonal: bool):
        if diagonal not in solved:
            solved[diagonal] = solve_mmc(X, y, diagonal=diagonal)
        return solved[diagonal]

    return solve
