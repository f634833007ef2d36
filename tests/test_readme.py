"""The README's quick start runs as written, as one script."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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
    from validation.records import RESULTS, read_record

    readme = (ROOT / "README.md").read_text()
    _, rows = read_record(RESULTS / "crosscheck.csv")
    assert with_headline(readme, headline(rows)) == readme, "run python -m validation.headline"
    assert readme.index(START) < readme.index(END)
