"""``lmnn-sdp corpus export`` and ``lmnn-sdp check-solver``: the corpus as plain files, and
metrics written by another program checked against it as the Python API checks them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from lmnn_sdp import certify_mmc
from lmnn_sdp.testing import assert_mmc_optimal, check_lmnn_solver, corpus_cases
from lmnn_sdp.testing.corpus_cases import KINDS, LMNN_KINDS
from validation import records
from validation.cli import main
from validation.corpus.export import SCHEMA, exported_cases

N_CASES = 41  # 33 LMNN, 4 multi-metric, 2 MMC, 2 diagonal MMC


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("export") / "corpus"
    assert main(["corpus", "export", str(dest)]) == 0
    return dest


def shipped_cases() -> dict:
    return {case.id: case for kind in KINDS for case in corpus_cases(kind)}


def identity_metrics(corpus: Path, out: Path) -> Path:
    """The Euclidean metric for every case ((C, d, d) for a multi-metric one)."""
    out.mkdir()
    for case in exported_cases(corpus):
        np.save(out / f"{case.id}.npy", np.broadcast_to(np.eye(case.X.shape[1]), case.metric.shape).copy())
    return out


def check(corpus: Path, metrics: Path, report: Path, *more: str) -> tuple[int, list[dict]]:
    """``check-solver`` with a report; its exit status and the report's rows."""
    status = main(["check-solver", "--corpus", str(corpus), "--metrics", str(metrics),
                   "--report", str(report), *more])
    return status, records.read_record(report.with_suffix(".csv"))[1]


def files(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- the export ---------------------------------------------------------------------
def test_the_export_is_the_same_bytes_twice(exported, tmp_path):
    assert main(["corpus", "export", str(tmp_path / "again")]) == 0
    first, second = files(exported), files(tmp_path / "again")
    assert list(first) == list(second) and first == second
    assert len([name for name in first if name.endswith("/case.json")]) == N_CASES
    assert {"README.md", "index.json", "case.schema.json"} <= set(first)


def test_every_case_json_validates_against_the_shipped_schema(exported):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert (exported / "case.schema.json").read_bytes() == SCHEMA.read_bytes()
    documents = [json.loads(path.read_text()) for path in sorted(exported.glob("*/case.json"))]
    for document in documents:
        validator.validate(document)
    wrong = {**documents[0], "objective": {**documents[0]["objective"], "sense": "maximize"}}
    assert not validator.is_valid(wrong)  # LMNN is minimised
    assert {d["kind"] for d in documents} == set(KINDS)


def test_the_export_states_what_the_shipped_corpus_certifies(exported):
    shipped = shipped_cases()
    index = json.loads((exported / "index.json").read_text())
    assert sorted(entry["id"] for entry in index["cases"]) == sorted(shipped)  # in the manifest's order
    for case in exported_cases(exported):
        original = shipped[case.id]
        document = json.loads((exported / case.id / "case.json").read_text())
        assert np.array_equal(case.X, original.X) and np.array_equal(case.metric, original.metric)
        assert np.array_equal(np.loadtxt(exported / case.id / "X.csv", delimiter=",", ndmin=2), original.X)
        if case.kind in LMNN_KINDS:
            assert (case.optimum, case.lower, case.k, case.mu) == (original.optimum, original.lower,
                                                                   original.k, original.mu)
            assert np.array_equal(np.loadtxt(exported / case.id / "targets.csv", delimiter=",", dtype=int,
                                             ndmin=2), original.targets)
            assert document["tolerance"] == {"kind": "relative", "value": 1e-6, "absolute": 1e-6,
                                             "gap": "(objective - bound) / objective"}
        else:
            assert (case.value, case.bound, case.diagonal) == (original.value, original.bound, original.diagonal)
            assert np.array_equal(np.loadtxt(exported / case.id / "dissimilar.csv", delimiter=",", dtype=int),
                                  original.dissimilar)
            assert document["tolerance"]["kind"] == ("absolute" if case.diagonal else "relative")
        assert document["tolerance"]["value"] == original.tolerance


def test_export_refuses_a_folder_that_exists(exported, capsys):
    before = files(exported)
    assert main(["corpus", "export", str(exported)]) == 2
    assert f"argument DEST: {exported} exists" in capsys.readouterr().err.splitlines()[-1]
    assert files(exported) == before


# -- the round trip -------------------------------------------------------------------
def test_the_certified_metrics_pass_every_case(exported, tmp_path, capsys):
    status, rows = check(exported, exported / "optimal", tmp_path / "optimal")
    assert status == 0
    assert len(rows) == N_CASES and {row["result"] for row in rows} == {"pass"}
    assert max(float(row["gap"]) for row in rows) < 1e-7
    assert f"{N_CASES} of {N_CASES} cases pass, 0 fail, 0 missing" in capsys.readouterr().out


def test_the_identity_fails_every_case_with_the_gap_the_python_api_gives(exported, tmp_path):
    status, rows = check(exported, identity_metrics(exported, tmp_path / "identity"), tmp_path / "identity")
    assert status == 1
    assert len(rows) == N_CASES and {row["result"] for row in rows} == {"fail"}
    shipped = shipped_cases()
    for row in rows:
        case, gap = shipped[row["case"]], float(row["gap"])
        assert gap > 1e-2, row
        I = np.broadcast_to(np.eye(case.X.shape[1]), case.metric.shape).copy()
        assert gap == pytest.approx(python_api_gap(case, I), rel=1e-9), row["case"]
        if case.kind not in LMNN_KINDS:  # sum_S D_I > 1: infeasible, whatever its gap
            assert row["reason"].startswith("infeasible: sum_S D_M = "), row


def python_api_gap(case, metric) -> float:
    """The gap of ``metric`` on a shipped case by the public API: ``check_lmnn_solver``'s row, or
    for MMC ``certify_mmc``'s value (the rescaled metric) against the tighter certified bound."""
    if case.kind in LMNN_KINDS:
        fit = (lambda X, y, k, mu, clusters: metric) if case.clusters is not None else (lambda X, y, k, mu: metric)
        return check_lmnn_solver(fit, kind=case.kind, cases=[case]).rows[0]["gap"]
    own = certify_mmc(case.X, metric, y=case.y, diagonal=case.diagonal)
    bound = min(own.bound, case.bound)
    return float(np.log(bound / own.feasible_value)) if case.diagonal else (bound - own.feasible_value) / bound


def test_certified_gaps_agree_with_the_python_api(exported, tmp_path):
    _, rows = check(exported, exported / "optimal", tmp_path / "optimal")
    shipped = shipped_cases()
    for row in rows:
        case = shipped[row["case"]]
        assert float(row["gap"]) == pytest.approx(python_api_gap(case, case.metric), rel=1e-9, abs=1e-15)
    mmc = shipped["mmc-wine-n100"]
    assert_mmc_optimal(mmc.X, mmc.metric, y=mmc.y, excess=False)  # the same verdict


def test_a_missing_metric_is_reported_missing_and_exits_1(exported, tmp_path):
    out = tmp_path / "some"
    out.mkdir()
    for name in ("mmc-iris-n150.npy", "mmc-wine-n100.npy"):
        (out / name).write_bytes((exported / "optimal" / name).read_bytes())
    status, rows = check(exported, out, tmp_path / "some", "--kind", "mmc", "mmc-diagonal")
    assert status == 1
    assert [(row["case"], row["result"]) for row in rows] == [
        ("mmc-iris-n150", "pass"), ("mmc-diagonal-iris-n150", "missing"),
        ("mmc-wine-n100", "pass"), ("mmc-diagonal-wine-n100", "missing")]
    assert rows[1]["reason"].startswith("no metric file: write mmc-diagonal-iris-n150.npy")


@pytest.mark.parametrize("name,content", [
    ("zebra-n80-k1-mu0.2.csv", b"1,0\nnot,a number\n"),
    ("zebra-n80-k1-mu0.2.csv", b"1,0,0\n0,1\n"),
    ("zebra-n80-k1-mu0.2.npy", b"\x93NUMPY garbage"),
    ("zebra-n80-k1-mu0.2.L.npy", None),  # an object array: only pickle could read it
])
def test_a_malformed_metric_file_exits_2_with_one_line_naming_it(exported, tmp_path, capsys, name, content):
    out = tmp_path / "bad"
    out.mkdir()
    if content is None:
        np.save(out / name, np.array([np.eye(2), "text"], dtype=object), allow_pickle=True)
    else:
        (out / name).write_bytes(content)
    assert main(["check-solver", "--corpus", str(exported), "--metrics", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith(f"lmnn-sdp check-solver: malformed file: {out / name}: "), line


def test_two_metric_files_for_one_case_exit_2(exported, tmp_path, capsys):
    out = tmp_path / "two"
    out.mkdir()
    np.save(out / "zebra-n80-k1-mu0.2.npy", np.eye(2))
    np.savetxt(out / "zebra-n80-k1-mu0.2.csv", np.eye(2), delimiter=",")
    assert main(["check-solver", "--corpus", str(exported), "--metrics", str(out)]) == 2
    assert "has 2 metric files (zebra-n80-k1-mu0.2.npy, zebra-n80-k1-mu0.2.csv); keep one" in capsys.readouterr().err


def test_a_map_l_counts_as_its_metric_and_a_wrong_one_fails_with_the_reason(exported, tmp_path, capsys):
    out = tmp_path / "maps"
    out.mkdir()
    M = np.load(exported / "optimal" / "iris-n60-k2-mu0.5.npy")
    w, V = np.linalg.eigh(M)
    np.savetxt(out / "iris-n60-k2-mu0.5.L.csv", (V * np.sqrt(np.maximum(w, 0))).T, delimiter=",", fmt="%.17g")
    np.save(out / "iris-n90-k1-mu0.2.L.npy", np.ones((2, 3)))  # d is 4
    (out / "iris-n60.npy").write_bytes(b"")  # names no case
    status, rows = check(exported, out, tmp_path / "maps", "--kind", "lmnn")
    assert status == 1
    by_case = {row["case"]: row for row in rows}
    assert by_case["iris-n60-k2-mu0.5"]["result"] == "pass"
    assert float(by_case["iris-n60-k2-mu0.5"]["gap"]) < 1e-8
    assert by_case["iris-n90-k1-mu0.2"]["result"] == "fail"
    assert by_case["iris-n90-k1-mu0.2"]["reason"] == "metric refused: L must have shape (r, 4), got (2, 3)"
    assert "ignored, naming no case: iris-n60.npy" in capsys.readouterr().out


def test_a_malformed_corpus_file_exits_2_naming_it(exported, tmp_path, capsys):
    broken = shutil.copytree(exported, tmp_path / "broken")
    (broken / "zebra-n80-k3-mu0.5" / "targets.npy").write_text("not an array")
    assert main(["check-solver", "--corpus", str(broken), "--metrics", str(broken / "optimal")]) == 2
    assert f"malformed file: {broken / 'zebra-n80-k3-mu0.5' / 'targets.npy'}: " in capsys.readouterr().err


# -- a solver in another process, through the files alone -------------------------------
SOLVER = textwrap.dedent('''
    """A stand-in for a solver in another language: reads the exported CSV and JSON files with
    nothing but numpy and json, writes one metric file per case."""
    import json, sys
    from pathlib import Path
    import numpy as np

    corpus, out, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    out.mkdir()
    for entry in json.loads((corpus / "index.json").read_text())["cases"]:
        folder = corpus / entry["id"]
        case = json.loads((folder / "case.json").read_text())
        X = np.loadtxt(folder / "X.csv", delimiter=",", ndmin=2)
        if case["problem"].get("clusters"):  # one metric per cluster: (C, d, d), .npy only
            shape = case["metric"]["shape"]
            metric = np.load(folder / "metric.npy") if mode == "certified" else np.zeros(shape) + np.eye(shape[-1])
            np.save(out / (entry["id"] + ".npy"), metric)
            continue
        if mode == "identity":
            np.savetxt(out / (entry["id"] + ".csv"), np.eye(X.shape[1]), delimiter=",", fmt="%.17g")
            continue
        M = np.loadtxt(folder / "metric.csv", delimiter=",", ndmin=2)
        w, V = np.linalg.eigh(M)  # written as a map L with M = L^T L
        np.savetxt(out / (entry["id"] + ".L.csv"), (V * np.sqrt(np.maximum(w, 0))).T, delimiter=",", fmt="%.17g")
''')


@pytest.mark.slow
@pytest.mark.parametrize("mode,status,result", [("certified", 0, "pass"), ("identity", 1, "fail")])
def test_a_solver_in_another_process_through_the_files(exported, tmp_path, mode, status, result):
    script = tmp_path / "solver.py"
    script.write_text(SOLVER)
    subprocess.run([sys.executable, str(script), str(exported), str(tmp_path / "out"), mode], check=True,
                   cwd=tmp_path, timeout=120)
    checked, rows = check(exported, tmp_path / "out", tmp_path / mode)
    assert checked == status
    assert len(rows) == N_CASES and {row["result"] for row in rows} == {result}
