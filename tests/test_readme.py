"""The README's quick start runs as written, as one script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from validation.records import read_record

ROOT = Path(__file__).resolve().parents[1]


def test_the_quick_start_runs_as_a_script(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) == 3
    script = tmp_path / "quick_start.py"
    script.write_text("\n".join(blocks))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[2].startswith("True ")  # the fast solver converged, proved by its certificate
    assert (tmp_path / "iris-euclidean.json").exists()


def test_the_headline_table_is_generated_from_its_record():
    from validation.headline import END, START, headline, with_headline
    from validation.records import RESULTS

    readme = (ROOT / "README.md").read_text()
    _, rows = read_record(RESULTS / "crosscheck.csv")
    assert with_headline(readme, headline(rows)) == readme, "run python -m validation.headline"
    assert readme.index(START) < readme.index(END)


def test_the_readme_table1_is_generated_from_the_export_or_says_there_is_none():
    from validation.headline import section
    from validation.table1 import END, NO_EXPORT, START, exports, readme_text

    readme = (ROOT / "README.md").read_text()
    assert readme_text(readme) == readme, "run python -m validation.table1"
    assert (section(readme, START, END) == NO_EXPORT) != bool(exports())


def test_table1_puts_an_exports_errors_in_a_method_by_data_set_table(tmp_path):
    from validation.experiments import report
    from validation.table1 import NO_EXPORT, START, exports, readme_text, table1

    cases = [("iris", "euclidean", 0, 0.04), ("iris", "euclidean", 1, 0.06), ("iris", "lmnn", 0, 0.02),
             ("wine", "lmnn", 0, 0.1)]
    rows = [{"dataset": d, "split": s, "method": m, "status": "ok", "test_error": e, "train_loo_error": e,
             "fit_seconds": 1.0, "stats": {}, "params": '{"data": {}}', "code_version": "v1",
             "finished_at": "2026-11-26T00:00:00+00:00"} for d, m, s, e in cases]
    rows.append({**rows[-1], "split": 1, "status": "failed"})
    written = report.export_datasets(rows, tmp_path, "table1", command="python -m test")
    assert [path.name for path in written] == ["table1-iris.md", "table1-iris.csv", "table1-iris-tasks.jsonl",
                                               "table1-wine.md", "table1-wine.csv", "table1-wine-tasks.jsonl"]
    assert exports(tmp_path) == [tmp_path / "table1-iris.csv", tmp_path / "table1-wine.csv"]
    exported = [row for path in exports(tmp_path) for row in read_record(path)[1]]
    assert table1(exported).splitlines() == [
        "| method | iris | wine |", "|---|---|---|",
        "| euclidean | 5.00 ± 1.41 (2) [4.87] | - |",  # Table 1: 4.87 iris, 25.0 wine
        "| lmnn | 2.00 (1) [4.37] | 10.00 (1) [8.72] |"]  # wine's failed split is not counted
    text = f"intro\n{START}\n{NO_EXPORT}<!-- end of table1 -->\nrest\n"
    assert readme_text(text, exports(tmp_path)).splitlines()[2:4] == ["| method | iris | wine |", "|---|---|---|"]
    assert readme_text(text, exports(tmp_path / "absent")) == text
