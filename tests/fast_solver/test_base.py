"""The estimators' shared parts: the one progress table of ``verbose``."""

from __future__ import annotations

from fast_solver._base import ProgressTable


def test_progress_table_prints_a_header_and_aligned_rows(capsys):
    table = ProgressTable("LMNN", [("Stage", 6, "d"), ("Gap", 9, ".2e"), ("Note", 5, "")])
    table.row(3, 0.25, "-")
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["[LMNN]", "[LMNN]  Stage       Gap  Note", "[LMNN] " + "-" * 22,
                     "[LMNN]      3  2.50e-01     -"]
