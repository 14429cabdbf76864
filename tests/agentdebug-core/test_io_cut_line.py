"""A JSON Lines file whose last line a logger killed mid-write cut off. A review found
it imported nothing (the whole file refused), and `diagnose FILE` exited 1, where a
bad field on that line cost only its own run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.io import import_file, import_paths
from conftest import run_cli

GOOD = '{"messages":[{"role":"user","content":"Book a table"},{"role":"assistant","content":"Booked."}]}'
CUT = '{"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"he'


def test_a_cut_off_line_costs_only_its_own_run(tmp_path: Path) -> None:
    path = tmp_path / "convs.jsonl"
    path.write_text(f"{GOOD}\n{GOOD.replace('table', 'room')}\n{CUT}\n")
    with pytest.raises(RecordsSkipped) as skipped:
        import_file(path)
    assert len(skipped.value.runs) == 2
    (error,) = skipped.value.errors
    assert str(error).startswith(f"{path}, line 3: not valid JSON")
    said = run_cli("--store", str(tmp_path / "store"), "diagnose", str(path), "--no-store")
    assert said.returncode == 0, said.stderr
    assert "line 3: not valid JSON" in said.stderr and said.stdout.count("Diagnosis of run") == 2


def test_a_file_mostly_not_json_lines_is_still_refused_whole(tmp_path: Path) -> None:
    """Lines that are not JSON among few that are (a pretty-printed document, text)
    are the file's error, not records to skip; and a JSON message that ends in "at"
    is not said twice ("Invalid control character at at line 3")."""
    path = tmp_path / "notes.jsonl"
    path.write_text(f"{GOOD}\nnot json\nnor this\nnor that\n")
    with pytest.raises(InputError) as refused:
        import_file(path)
    assert not isinstance(refused.value, RecordsSkipped)
    assert f"{path}, line 2: not valid JSON" in str(refused.value)
    path.write_text('{"a": 1}\n{"a": "x\ty"}\n')
    with pytest.raises(InputError) as refused:
        import_file(path)
    assert " at at " not in str(refused.value)


def test_a_batch_lists_the_cut_line_of_a_span_export(tmp_path: Path) -> None:
    """A second review: span files read together (Phoenix's, an OTLP collector's)
    dropped a cut-off line without a word, exit 0."""

    def span(sid: str) -> str:
        return json.dumps({
            "name": f"step{sid}", "context": {"trace_id": "5b8efff7", "span_id": sid},
            "parent_id": None if sid == "1" else "1", "span_kind": "CHAIN",
            "start_time": f"2026-12-01T10:00:0{sid}Z", "end_time": f"2026-12-01T10:00:0{sid}Z",
            "status_code": "OK", "attributes": {}, "events": [],
        })  # fmt: skip

    path = tmp_path / "phoenix.jsonl"
    path.write_text("\n".join([span("1"), span("2"), span("3"), span("4")[:60]]) + "\n")
    batch = import_paths([path])
    assert len(batch.runs) == 1
    ((where, said),) = batch.failures
    assert where == path and said.startswith(f"{path}, line 4: not valid JSON")


def test_one_document_over_a_few_lines_of_a_jsonl_file_is_read_whole(tmp_path: Path) -> None:
    """A second review: '{"messages": [', one line, ']}' in a .jsonl file was read
    as one record among two lines set aside, and nothing imported."""
    path = tmp_path / "one.jsonl"
    message = {"role": "user", "content": "Book a table"}
    path.write_text('{"messages": [\n' + json.dumps(message) + "\n]}\n")
    (run,) = import_file(path)
    assert run.trajectory.goal == "Book a table"
