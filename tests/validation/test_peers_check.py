"""metric-learn's and PyLMNN's LMNN through ``check_lmnn_solver``: the worked example of the page
"Test your LMNN solver", the command that writes its record, and the record itself.

The tests that fit a peer are skipped when the ``peers`` extra is not installed.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from lmnn_sdp import LMNNProblem, certify
from lmnn_sdp.certificates.certificate import ATOL
from lmnn_sdp.testing import check_lmnn_solver, corpus_cases
from validation import peers, records
from validation.benchmarks import peers_check

# PyLMNN 1.6.4 passes options to L-BFGS-B that scipy deprecates; not this project's to fix
pytestmark = pytest.mark.filterwarnings("ignore:scipy.optimize. The .disp. and .iprint.:DeprecationWarning")

EXAMPLE_CASES = ("zebra-n80-k1-mu0.2", "duplicates-n30-k2-mu0.5", "rank-deficient-n15-d5-k2-mu0.2",
                 "class-of-k+1-n24-k3-mu0.5", "no-impostors-n24-k3-mu0.5")


def peers_installed() -> bool:
    try:
        peers.import_pylmnn()
        import metric_learn  # noqa: F401
    except (peers.PeerMissing, ImportError):
        return False
    return True


needs_peers = pytest.mark.skipif(not peers_installed(),
                                 reason="metric-learn or PyLMNN not installed (the peers extra)")


def recorded_rows(name: str = "peers-check") -> list[dict]:
    return records.read_record(records.RESULTS / f"{name}.csv")[1]


def example_cases() -> list:
    return [case for case in corpus_cases() if case.id in EXAMPLE_CASES]


@pytest.fixture(scope="module", autouse=True)
def peers_fitted_once():
    """metric-learn and PyLMNN (``validation.peers``' fits, deterministic) fitted once per case
    for this module: the tests below each assert something else of the same fits."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("metric_learn_metric", "pylmnn_metric"):
            patch.setattr(peers, name, once(getattr(peers, name)))
        yield


def once(fit):
    """``fit(X, y, k, mu)``, computed once per ``(X, y, k, mu)``; a copy of the metric each time."""
    metrics = {}

    def fit_once(X, y, k, mu):
        key = (X.tobytes(), X.shape, np.asarray(y).tobytes(), k, mu)
        if key not in metrics:
            metrics[key] = fit(X, y, k, mu)
        return metrics[key].copy()

    return fit_once


@needs_peers
def test_metric_learn_and_pylmnn_through_check_lmnn_solver():
    cases = [case for case in corpus_cases() if case.id in EXAMPLE_CASES]
    for fit in (peers.metric_learn_metric, peers.pylmnn_metric):
        check = check_lmnn_solver(fit, cases=cases)
        print(check)
        assert [row["case"] for row in check.rows] == [case.id for case in cases]
        gaps = np.array(list(check.gaps.values()))
        assert np.all(np.isfinite(gaps)) and np.all((gaps >= 0) & (gaps < 1))
        assert not any(row["passed"] for row in check.rows)  # short of the optimum of eq. 14
        assert all(row["objective"] >= row["lower"] for row in check.rows)


@needs_peers
def test_the_peers_gaps_are_those_of_the_record():
    cases = example_cases()
    recorded = {(row["solver"], row["case"]): float(row["gap"]) for row in recorded_rows()}
    for solver, fit in (("metric-learn", peers.metric_learn_metric), ("pylmnn", peers.pylmnn_metric)):
        check = check_lmnn_solver(fit, cases=cases)
        for case, gap in check.gaps.items():
            assert gap == pytest.approx(recorded[(peers_check.label(solver), case)], rel=1e-3), case


@needs_peers
def test_a_peer_gap_is_the_one_certify_gives_against_the_certified_bound():
    case = next(case for case in corpus_cases() if case.id == "class-of-k+1-n24-k3-mu0.5")
    M = peers.metric_learn_metric(case.X, case.y, case.k, case.mu)
    row = check_lmnn_solver(lambda X, y, k, mu: M, cases=[case]).rows[0]
    certificate = certify(LMNNProblem(case.X, case.y, k=case.k, mu=case.mu, targets=case.targets), M)
    upper = certificate.upper + certificate.upper_error
    assert row["gap"] == pytest.approx((upper - case.lower) / upper, rel=1e-12)
    assert row["objective"] == pytest.approx(certificate.upper, rel=1e-12)
    # the metric's own dual bound proves no more than the corpus's certified one
    assert certificate.lower <= case.optimum
    assert certificate.relative_gap >= row["gap"] - 1e-6
    assert row["gap"] > 1e-4


def test_our_fast_solver_passes_where_the_peers_are_checked():
    check = check_lmnn_solver(lambda X, y, k, mu: peers_check.fast_lmnn(X, y, k, mu).metric_,
                              cases=example_cases())
    assert check.passed, check
    assert max(check.gaps.values()) <= 1e-6


def test_the_record_has_one_row_per_solver_and_corpus_case():
    ids = [case.id for case in corpus_cases()]
    rows = recorded_rows()
    solvers = list(dict.fromkeys(row["solver"] for row in rows))
    assert [s.split()[0] for s in solvers] == list(peers_check.SOLVERS)
    for solver in solvers:
        mine = [row for row in rows if row["solver"] == solver]
        assert [row["case"] for row in mine] == ids, f"{solver}: run python -m validation.benchmarks.peers_check"
        gaps = np.array([float(row["gap"]) for row in mine])
        assert np.all(np.isfinite(gaps)) and np.all((gaps >= 0) & (gaps <= 1)), solver  # 1: optimum 0
        zero = np.array([float(row["objective"]) for row in mine]) <= ATOL  # eq. 14 >= 0: within ATOL
        assert [row["passed"] == "True" for row in mine] == list((gaps <= 1e-6) | zero), solver
    ours = [row for row in rows if row["solver"] == solvers[-1]]
    assert all(row["passed"] == "True" for row in ours)
    assert all(float(row["gap"]) > 1e-6 for row in rows if row["solver"] != solvers[-1])


def test_the_summary_record_summarises_the_rows():
    rows, summary = recorded_rows(), recorded_rows("peers-check-summary")
    assert [row["solver"] for row in summary] == list(dict.fromkeys(row["solver"] for row in rows))
    for line in summary:
        gaps = np.array([float(row["gap"]) for row in rows if row["solver"] == line["solver"]])
        assert int(line["cases"]) == len(gaps)
        assert int(line["within_tolerance"]) == int(np.sum(gaps <= 1e-6))
        assert float(line["median_gap"]) == pytest.approx(np.median(gaps), rel=1e-12)
        assert float(line["max_gap"]) == pytest.approx(gaps.max(), rel=1e-12)


@needs_peers
def test_the_command_writes_both_records(tmp_path, monkeypatch):
    few = [case for case in corpus_cases() if case.id in ("zebra-n80-k1-mu0.2", "no-impostors-n24-k3-mu0.5")]
    monkeypatch.setattr(peers_check, "corpus_cases", lambda tolerance: few)
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    assert peers_check.main(["--record", "demo"]) == 0
    line, rows = records.read_record(tmp_path / "demo.csv")
    assert line.startswith("Written by `python -m validation.benchmarks.peers_check --record demo` ")
    assert [(row["solver"].split()[0], row["case"]) for row in rows] == \
        [(solver, case.id) for solver in peers_check.SOLVERS for case in few]
    assert [row["solver"] for row in records.read_record(tmp_path / "demo-summary.csv")[1]] == \
        [peers_check.label(solver) for solver in peers_check.SOLVERS]


def test_a_missing_peer_stops_the_command_before_it_writes(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "metric_learn", None)  # import fails
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    assert peers_check.main(["--solvers", "metric-learn", "lmnn-sdp-fast", "--record", "demo"]) == 2
    assert "metric-learn is not installed" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
