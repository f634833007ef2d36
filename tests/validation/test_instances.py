"""The medium instances on a core install: a data set that cannot be read is skipped, saying why."""

from __future__ import annotations

import sys

from validation import datasets
from validation.instances import medium_instances


def test_mlbench_data_without_rdata_is_skipped_naming_the_extra(monkeypatch, tmp_path):
    mlbench = tmp_path / datasets.SOURCES["mlbench"].data_subdir
    mlbench.mkdir(parents=True)
    for name in ("LetterRecognition", "Satellite", "Ionosphere"):
        (mlbench / f"{name}.rda").write_bytes(b"fetched, but unreadable without rdata")
    monkeypatch.setenv("LMNN_SDP_DATA", str(tmp_path))
    monkeypatch.setattr(datasets, "SYSTEM_ROOT", tmp_path / "no-system-copy")
    monkeypatch.setitem(sys.modules, "rdata", None)  # `import rdata` raises ImportError, as on a core install
    found, skipped = medium_instances()
    assert found == []
    assert [message.split(":")[0] for message in skipped] == [
        "skipped letters", "skipped satellite", "skipped ionosphere", "skipped fashion-mnist"]
    assert all("lmnn-sdp[experiments]" in message for message in skipped[:3])
    assert "data fetch --only fashion-mnist" in skipped[3]
