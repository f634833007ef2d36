"""Records name their command, code version and machine."""

from __future__ import annotations

import sys

from validation import records


def test_provenance_names_the_command_the_commit_and_the_machine(monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(records.RESULTS.parents[1] / "validation" / "__main__.py"),
                                      "--suite", "builtin"])
    line = records.provenance()
    assert line.startswith("Written by `python -m validation --suite builtin` at commit ")
    assert records.code_version() in line and "cores, Python" in line
    assert records.provenance("lmnn-sdp corpus check").startswith("Written by `lmnn-sdp corpus check`")
