"""A batch of OTLP files (joined across files) holds their spans until all are read,
but not the files' parsed JSON, and hands each run to the store as it is built,
rather than building every run first."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentdebug.io import OtlpImporter, ingest_paths
from agentdebug.schema import AgentTrajectory, GoldLabel
from agentdebug.stages import ImportedRun, Source
from agentdebug.store import JSONLStore


def _export(trace: int, span: int, parent: int | None = None) -> str:
    raw: dict[str, Any] = {
        "traceId": f"{trace:032x}",
        "spanId": f"{span:016x}",
        "name": f"step {span}",
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + span * 1_000_000_000),
        "attributes": [{"key": "output.value", "value": {"stringValue": f"said {span}"}}],
    }
    if parent is not None:
        raw["parentSpanId"] = f"{parent:016x}"
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [raw]}]}]}) + "\n"


def _rotated_files(folder: Path) -> None:
    """Three traces; the first split across the two files, as a rotating exporter writes."""
    folder.mkdir()
    (folder / "traces-1.jsonl").write_text(_export(1, 1) + _export(2, 2))
    (folder / "traces-2.jsonl").write_text(_export(1, 3, parent=1) + _export(3, 4))


class _Watched(OtlpImporter):
    """The OTLP importer, noting what it was given and how far it had built."""

    def __init__(self) -> None:
        self.built = 0
        self.documents: list[Any] = []

    def load_gathered(
        self, items: list[tuple[Source, Any]]
    ) -> Iterator[tuple[ImportedRun, list[Path]]]:
        self.documents = [(s.document, s.records) for s, _ in items]
        for run in super().load_gathered(items):
            self.built += 1
            yield run


def test_each_joined_run_is_stored_as_it_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rotated_files(tmp_path / "in")
    importer = _Watched()
    built_when_saved: list[int] = []
    saved = JSONLStore.save_trajectory

    def save(store: JSONLStore, run: AgentTrajectory, label: GoldLabel | None = None) -> None:
        built_when_saved.append(importer.built)
        saved(store, run, label)

    monkeypatch.setattr(JSONLStore, "save_trajectory", save)
    store = JSONLStore(tmp_path / "store.jsonl")
    batch = ingest_paths([tmp_path / "in"], store, importers=[importer])
    assert batch.ok and batch.imported == 3
    assert any("joined from 2 files" in note for note in batch.notes)
    # before: all three runs were built (and held) before the first was saved: [3, 3, 3]
    assert built_when_saved == [1, 2, 3]
    # the files' parsed JSON was let go once their spans were gathered
    assert importer.documents == [(None, None), (None, None)]
    assert [len(store.load_trajectory(f"{t:032x}").events) for t in (1, 2, 3)] == [2, 1, 1]
