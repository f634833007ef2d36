"""A zero optimum is certified by an absolute tolerance, the same on both sides: eq. 14 is
non-negative, so an upper bound (with its rounding) at most ``atol`` proves the optimum within
``atol`` of 0, where no relative gap can."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sklearn.datasets import load_iris

from lmnn_sdp import LMNNProblem, certificates, certify
from lmnn_sdp.certificates.certificate import ATOL


@pytest.fixture(scope="module")
def iris_pull_only():
    X, y = load_iris(return_X_y=True)
    return LMNNProblem(X[::3], y[::3], k=2, mu=0.0)


def test_a_metric_within_atol_of_zero_is_certified_and_verifies(iris_pull_only):
    cert = certify(iris_pull_only, 1e-12 * np.eye(4))  # pull only: eq. 14 = trace(P M) ~ 1e-10
    assert 0 < cert.upper + cert.upper_error <= ATOL and cert.lower == 0.0
    assert cert.relative_gap == 1.0  # no relative gap proves 0 ...
    assert cert.certified and cert.proves_zero and cert.atol == ATOL  # ... the absolute tolerance does
    again = cert.verify()
    assert again.certified and again.atol == ATOL


def test_without_atol_the_same_metric_is_not_certified(iris_pull_only):
    cert = certify(iris_pull_only, 1e-12 * np.eye(4), atol=0.0)
    assert not cert.certified and not cert.proves_zero
    exact_zero = certify(iris_pull_only, np.zeros((4, 4)), atol=0.0)
    assert exact_zero.certified and exact_zero.upper == 0.0  # 0 in float64 is proved by the gap alone


def test_a_metric_above_atol_is_judged_by_its_relative_gap_alone(iris_pull_only):
    cert = certify(iris_pull_only, 1e-3 * np.eye(4))
    assert cert.upper > ATOL and not cert.certified and not cert.proves_zero


def test_verify_refuses_a_certified_claim_that_atol_does_not_support(iris_pull_only):
    cert = certify(iris_pull_only, 1e-12 * np.eye(4))
    with pytest.raises(ValueError, match="atol=0"):
        replace(cert, atol=0.0).verify()
    with pytest.raises(ValueError, match="atol=1e-06"):
        replace(certify(iris_pull_only, 1e-3 * np.eye(4)), certified=True).verify()


@pytest.mark.parametrize("atol", [-1e-6, np.nan, np.inf])
def test_a_bad_atol_is_refused_by_name(iris_pull_only, atol):
    with pytest.raises(ValueError, match="atol must be a finite number >= 0"):
        certify(iris_pull_only, np.eye(4), atol=atol)


def test_atol_travels_with_the_saved_certificate(iris_pull_only, tmp_path):
    cert = certify(iris_pull_only, 1e-12 * np.eye(4), atol=1e-5)
    cert.save(tmp_path / "zero")
    loaded = certificates.load(tmp_path / "zero")
    assert loaded.atol == 1e-5 and loaded.certified
    assert loaded.verify().certified
