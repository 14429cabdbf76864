"""Importing many files at once: ids that clash, traces split across files,
files passed over, one bad record among good ones, events out of order."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from agentdebug.io import builtin_importers, import_file, import_paths, ingest_paths
from agentdebug.store import open_store
from conftest import run_cli

IMPORTERS = builtin_importers()


def _conversation(question: str) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": question},
            {"role": "assistant", "content": f"answer to {question}"},
        ]
    }


def _per_run_folders(root: Path) -> tuple[Path, Path]:
    """Two runs' folders, each with a file of the same name (a common layout)."""
    first, second = root / "run1", root / "run2"
    for folder, question in ((first, "weather in Paris?"), (second, "flights to Denver?")):
        folder.mkdir(parents=True)
        (folder / "conversation.json").write_text(json.dumps(_conversation(question)))
    return first, second


def _goals(runs: list[Any]) -> dict[str, str | None]:
    return {r.trajectory.id: r.trajectory.goal for r in runs}


def test_files_of_the_same_name_keep_both_runs(tmp_path: Path) -> None:
    _per_run_folders(tmp_path / "in")
    batch = import_paths([tmp_path / "in"], importers=IMPORTERS)
    goals = _goals(batch.runs)
    assert len(goals) == 2, goals  # before: the second replaced the first, without a word
    assert sorted(g or "" for g in goals.values()) == ["flights to Denver?", "weather in Paris?"]
    assert goals["messages-conversation"] == "weather in Paris?"  # the first keeps its id
    (note,) = batch.notes
    assert "run2/conversation.json" in note and "run1/conversation.json" in note


@pytest.mark.parametrize("store_name", ["agentdebug.db", "runs.jsonl"])
def test_a_store_keeps_runs_of_the_same_id_from_different_files(
    tmp_path: Path, store_name: str
) -> None:
    first, second = _per_run_folders(tmp_path / "in")
    store = open_store(tmp_path / store_name)
    try:
        assert ingest_paths([first], store, importers=IMPORTERS).imported == 1
        later = ingest_paths([second], store, importers=IMPORTERS)
        assert later.imported == 1
        assert "a run in the store imported from" in later.notes[0]
        for _ in range(2):  # the same files again: their runs are replaced, not added
            ingest_paths([tmp_path / "in"], store, importers=IMPORTERS)
        runs = store.list_runs()
        assert sorted(r.goal or "" for r in runs) == ["flights to Denver?", "weather in Paris?"]
        assert {r.imported_from for r in runs} == {
            str((first / "conversation.json").resolve()),
            str((second / "conversation.json").resolve()),
        }
    finally:
        store.close()


def _span(span_id: str, parent: str | None, name: str, kind: str, **attrs: str) -> dict[str, Any]:
    start = 1_700_000_000_000_000_000 + int(span_id[-2:], 16) * 1_000_000_000
    attributes = [{"key": "openinference.span.kind", "value": {"stringValue": kind}}]
    attributes += [
        {"key": k.replace("_", "."), "value": {"stringValue": v}} for k, v in attrs.items()
    ]
    span: dict[str, Any] = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 500_000_000),
        "attributes": attributes,
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def _export(*spans: dict[str, Any]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}) + "\n"


def test_a_trace_split_across_rotated_files_is_one_run(tmp_path: Path) -> None:
    root = "aaaaaaaaaaaaaa01"
    agent = _span(root, None, "travel agent", "AGENT", input_value="Book BOS to DEN")
    tool = _span("aaaaaaaaaaaaaa02", root, "search_fares", "TOOL", tool_name="search_fares")
    llm = _span("aaaaaaaaaaaaaa03", root, "ChatCompletion", "LLM", llm_model_name="gpt-4o")
    folder = tmp_path / "traces"
    folder.mkdir()
    # A collector's file exporter rotated its file mid-trace: the children came first.
    (folder / "traces-1.jsonl").write_text(_export(tool))
    (folder / "traces-2.jsonl").write_text(_export(llm) + _export(agent))

    batch = import_paths([folder], importers=IMPORTERS)
    assert batch.ok, batch.failures
    (run,) = batch.runs
    trajectory = run.trajectory
    assert len(trajectory.events) == 3  # before: only the last file's two spans
    assert {e.agent_name for e in trajectory.events} >= {"travel agent"}
    assert trajectory.metadata["imported_files"] == [
        str((folder / f"traces-{i}.jsonl").resolve()) for i in (1, 2)
    ]
    assert "joined from 2 files" in batch.notes[0]
    # Each file alone still imports as it is.
    assert len(import_file(folder / "traces-1.jsonl")[0].trajectory.events) == 1


def test_files_passed_over_are_listed_and_an_empty_folder_fails(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    lines = [json.dumps({"type": "message", "output": "hi"}), json.dumps({"type": "message"})]
    (folder / "traces.ndjson").write_text("\n".join(lines) + "\n")
    (folder / "LICENSE").write_text("MIT")
    (folder / ".hidden.json").write_text("{")
    empty = tmp_path / "empty"
    empty.mkdir()

    batch = import_paths([folder, empty], importers=IMPORTERS)
    assert [r.trajectory.id for r in batch.runs] == ["traces"]  # .ndjson is read
    assert batch.skipped == [folder / "LICENSE"]
    ((path, why),) = batch.failures
    assert path == empty and "no files to import in this folder" in why


def _trajectory_line(run_id: str, step: object) -> str:
    events = [
        {"type": "user.input", "step_index": 0, "input": "go"},
        {"type": "final_answer", "step_index": step, "output": "done"},
    ]
    return json.dumps({"id": run_id, "events": events})


def test_one_bad_run_in_a_file_of_runs_costs_only_itself(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    lines = [_trajectory_line("a", 1), _trajectory_line("b", "bad"), _trajectory_line("c", 1)]
    path.write_text("\n".join(lines) + "\n")
    batch = import_paths([path], importers=IMPORTERS)
    assert [r.trajectory.id for r in batch.runs] == ["a", "c"]  # before: none of them
    ((failed, why),) = batch.failures
    assert failed == path
    assert f"{path}, line 2, field 'events[1].step_index': " in why


def test_the_cli_says_what_it_renamed_joined_and_skipped(tmp_path: Path, home: Path) -> None:
    _per_run_folders(tmp_path / "in")
    bad = tmp_path / "in" / "runs.jsonl"
    bad.write_text(_trajectory_line("a", 1) + "\n" + _trajectory_line("b", "bad") + "\n")
    (tmp_path / "in" / "README.txt").write_text("exported on Monday")
    result = run_cli("ingest", str(tmp_path / "in"))
    assert result.returncode == 1  # a record failed
    assert "imported 3 run(s) from 3 file(s)" in result.stdout
    assert "imported as 'messages-conversation-" in result.stderr
    assert "passed over 1 file(s)" in result.stderr and "README.txt" in result.stderr
    assert "runs.jsonl, line 2, field 'events[1].step_index'" in result.stderr
    assert "importing" not in result.stderr  # no progress line when not on a terminal
    ids = [line.split()[0] for line in run_cli("list").stdout.splitlines()[1:]]
    assert sorted(ids)[0] == "a" and len(ids) == 3


def _event(kind: str, step: int, when: datetime | None, **fields: str) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "step_index": step, **fields}
    if when is not None:
        event["timestamp"] = when.isoformat()
    return event


def test_events_out_of_order_are_put_in_order(tmp_path: Path) -> None:
    t0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    at = [t0 + timedelta(seconds=i) for i in range(4)]
    events = [
        _event("user.input", 0, at[0], input="book"),
        _event("tool.call", 1, at[1], output="search"),
        _event("tool.result", 1, at[2], output="found"),
        _event("final_answer", 2, at[3], output="booked"),
    ]
    timed = tmp_path / "timed.json"
    timed.write_text(json.dumps({"id": "timed", "events": events[::-1]}))
    (run,) = import_file(timed)
    # by timestamp, so the call comes before its result though both are step 1
    assert [e.type.value for e in run.trajectory.events] == [
        "user.input",
        "tool.call",
        "tool.result",
        "final_answer",
    ]
    assert "sorted by timestamp" in run.trajectory.metadata["import_note"]

    untimed = tmp_path / "untimed.json"
    steps = [_event("user.input", 0, None), _event("message", 2, None), _event("message", 1, None)]
    untimed.write_text(json.dumps(steps))
    (run,) = import_file(untimed)
    assert [e.step_index for e in run.trajectory.events] == [0, 1, 2]
    assert "sorted by step" in run.trajectory.metadata["import_note"]


def test_interleaved_steps_in_time_order_are_left_as_they_are(tmp_path: Path) -> None:
    """Parallel branches interleave their steps in an export in recording order."""
    t0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    steps = [0, 2, 1, 3]
    events = [_event("message", s, t0 + timedelta(seconds=i)) for i, s in enumerate(steps)]
    path = tmp_path / "branches.json"
    path.write_text(json.dumps({"id": "branches", "events": events}))
    (run,) = import_file(path)
    assert [e.step_index for e in run.trajectory.events] == steps
    assert "import_note" not in run.trajectory.metadata


def test_importing_again_after_a_part_alone_adds_nothing(tmp_path: Path) -> None:
    """One folder imported alone, then the whole: each file keeps the id it got,
    however many times the whole is imported again."""
    _first, second = _per_run_folders(tmp_path / "in")
    store = open_store(tmp_path / "agentdebug.db")
    try:
        ingest_paths([second], store, importers=IMPORTERS)
        for _ in range(3):
            ingest_paths([tmp_path / "in"], store, importers=IMPORTERS)
        runs = store.list_runs()
        assert sorted(r.goal or "" for r in runs) == ["flights to Denver?", "weather in Paris?"]
        denver = next(r for r in runs if r.goal == "flights to Denver?")
        assert denver.id == "messages-conversation"  # the id it got first
    finally:
        store.close()


def test_runs_repeating_an_id_in_one_file_are_all_kept(tmp_path: Path) -> None:
    path = tmp_path / "conversations.jsonl"
    lines = [{"id": "conv", **_conversation(q)} for q in ("a?", "b?", "c?")]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    batch = import_paths([path], importers=IMPORTERS)
    ids = [r.trajectory.id for r in batch.runs]
    assert len(set(ids)) == 3 and ids[0] == "conv"  # before: one run kept of three
    assert [r.trajectory.goal for r in batch.runs] == ["a?", "b?", "c?"]
    assert all("earlier record of the same file" in note for note in batch.notes)
    assert len(batch.notes) == 2


@pytest.mark.parametrize(
    "doc",
    [
        {
            "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "Paris?"}]},
            "response": {"choices": [{"message": {"role": "assistant", "content": "Sunny."}}]},
        },
        {
            "messages": [{"role": "user", "content": "Paris?"}],
            "response": {"choices": [{"message": {"role": "assistant", "content": "Sunny."}}]},
        },
    ],
)
def test_a_request_saved_beside_its_response_reads_the_reply(
    tmp_path: Path, doc: dict[str, Any]
) -> None:
    path = tmp_path / "exchange.json"
    path.write_text(json.dumps(doc))
    (run,) = import_file(path)  # before: refused, or the reply left in metadata
    last = run.trajectory.events[-1]
    assert last.type.value == "final_answer" and last.output == "Sunny."
