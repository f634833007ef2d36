"""The record of ``validation.benchmarks.peers_through_files``: other libraries' LMNN through the
exported files and ``check-solver``, whose gaps are the Python API's."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from lmnn_sdp.certificates.certificate import ATOL
from lmnn_sdp.testing import corpus_cases
from validation import records
from validation.benchmarks import peers_through_files
from validation.cli import main


def recorded_rows(name: str = "peers-through-files") -> list[dict]:
    return records.read_record(records.RESULTS / f"{name}.csv")[1]


def test_the_record_has_one_row_per_solver_and_lmnn_case_with_the_python_apis_gap():
    ids = [case.id for case in corpus_cases()]
    rows = recorded_rows()
    solvers = list(dict.fromkeys(row["solver"] for row in rows))
    assert [solver.split()[0] for solver in solvers] == list(peers_through_files.SOLVERS)
    for solver in solvers:
        mine = [row for row in rows if row["solver"] == solver]
        assert [row["case"] for row in mine] == ids, solver
        gaps = np.array([float(row["gap"]) for row in mine])
        assert np.all((gaps >= 0) & (gaps <= 1)), solver  # 1: a positive objective where the optimum is 0
        within = gaps <= np.array([float(r["tolerance"]) for r in mine])
        zero = np.array([float(r["objective"]) for r in mine]) <= ATOL  # (with its rounding, in check-solver)
        assert [row["result"] == "pass" for row in mine] == list(within | zero)
        for row in mine:
            assert float(row["api_difference"]) <= peers_through_files.AGREEMENT, row
            assert float(row["gap"]) == pytest.approx(float(row["api_gap"]), rel=1e-9)
            assert row["file"] == row["case"] + peers_through_files.SOLVERS[solver.split()[0]][1]


def test_the_summary_record_summarises_the_rows():
    rows, summary = recorded_rows(), recorded_rows("peers-through-files-summary")
    for line in summary:
        mine = [row for row in rows if row["solver"] == line["solver"]]
        gaps = np.array([float(row["gap"]) for row in mine])
        assert int(line["cases"]) == len(mine) == 33
        assert int(line["within_tolerance"]) == sum(row["result"] == "pass" for row in mine)
        assert float(line["median_gap"]) == pytest.approx(np.median(gaps), rel=1e-12)
        assert float(line["max_api_difference"]) <= peers_through_files.AGREEMENT


@pytest.mark.skipif(importlib.util.find_spec("mlpack") is None, reason="mlpack not installed (the peers extra)")
def test_mlpack_through_the_files_gives_the_python_apis_gaps(tmp_path):
    """check-solver's gap of every metric file mlpack wrote is the Python API's on the same file.
    mlpack's own metrics are not compared with the record's: its L-BFGS ends elsewhere on another
    CPU (iris-n90-k1-mu0.2: eq. 14 33.39 in the record, 29.93 on another machine, mlpack 4.8.0 both)."""
    assert main(["corpus", "export", str(tmp_path / "corpus")]) == 0
    assert peers_through_files.main(["solve", "mlpack", str(tmp_path / "corpus"), str(tmp_path / "mlpack")]) == 0
    status = main(["check-solver", "--corpus", str(tmp_path / "corpus"), "--metrics", str(tmp_path / "mlpack"),
                   "--kind", "lmnn", "--report", str(tmp_path / "check")])
    checked = records.read_record(tmp_path / "check.csv")[1]
    recorded = [row["case"] for row in recorded_rows() if row["solver"].startswith("mlpack ")]
    assert status == 1 and [row["case"] for row in checked] == recorded
    cases = {case.id: case for case in corpus_cases()}
    for line in checked:
        row = peers_through_files.row("mlpack", line, 0.0, cases[line["case"]], tmp_path / "mlpack")
        assert row["api_difference"] <= peers_through_files.AGREEMENT, line["case"]
