"""A JSON Lines run file given as ``--store`` is refused in one line, untouched;
a JSON Lines store (new, torn, pruned) still opens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentdebug.errors import StoreError
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType
from agentdebug.store import JSONLStore, open_store
from conftest import EXAMPLES, run_cli

EXAMPLE = str(EXAMPLES / "failed_booking.json")
TRACE = "5b8efff798038103d269b633813fc60c"


def _trajectory(run_id: str) -> AgentTrajectory:
    events = [
        AgentEvent(id="e0", type=EventType.USER_INPUT, step_index=0, input="go"),
        AgentEvent(id="e1", type=EventType.FINAL_ANSWER, step_index=1, output="done"),
    ]
    return AgentTrajectory(id=run_id, goal="go", events=events)


def _otlp_line(span_id: str) -> dict[str, Any]:
    span = {"traceId": TRACE, "spanId": span_id, "name": "agent"}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


RUN_FILES = {
    "agentdebug events": [{"type": "user.input", "input": "go"}, {"type": "final_answer"}],
    "agentdebug trajectories": [
        json.loads(_trajectory("a").model_dump_json()),
        json.loads(_trajectory("b").model_dump_json()),
    ],
    "OTLP spans": [_otlp_line("a000000000000001"), _otlp_line("a000000000000002")],
    "Phoenix spans": [{"name": "agent", "context": {"trace_id": TRACE, "span_id": "s1"}}],
    "chat messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
}


@pytest.mark.parametrize("what", sorted(RUN_FILES))
def test_a_run_file_given_as_the_store_is_refused_in_one_line(tmp_path: Path, what: str) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in RUN_FILES[what]) + "\n")
    before = path.read_bytes()
    for command in (["list"], ["show", "a"], ["ingest", EXAMPLE]):
        result = run_cli("--store", str(path), *command)
        assert result.returncode == 1, result.stderr
        # before: a warning per line ("line 1 skipped ('kind')"), then "no runs match"
        assert result.stderr.strip() == (
            f"error: {path} is a run file ({what}), not a store: import it with "
            f"`agentdebug ingest {path}` or diagnose it with `agentdebug diagnose {path}`; "
            "--store takes a folder (SQLite inside), a .db, .sqlite or .sqlite3 file, or a "
            ".jsonl store (a new file, or one agentdebug wrote)"
        )
    assert path.read_bytes() == before  # nothing of the store was appended to the user's file
    # what the error says to do works
    assert run_cli("diagnose", "--no-store", str(path)).returncode == 0


def test_a_jsonl_file_of_something_else_is_not_taken_for_a_store(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"note": "call Bob"}\n{"note": "buy milk"}\n')
    result = run_cli("--store", str(path), "list")
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"error: {path} is not a store (its first line is an object with 'note', not a "
        "store record): import it with"
    )
    assert "Traceback" not in result.stderr and "WARNING" not in result.stderr


def test_from_python_a_run_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_text(_trajectory("a").model_dump_json() + "\n")
    before = path.read_bytes()
    with pytest.raises(StoreError, match="is a run file \\(agentdebug trajectories\\)"):
        open_store(path)
    assert path.read_bytes() == before


def test_a_jsonl_store_still_opens_new_torn_and_pruned(tmp_path: Path) -> None:
    store_path = tmp_path / "store.jsonl"
    assert run_cli("--store", str(store_path), "ingest", EXAMPLE).returncode == 0
    listed = run_cli("--store", str(store_path), "list")
    assert listed.returncode == 0 and "example-failed-booking" in listed.stdout
    assert "WARNING" not in listed.stderr

    torn = tmp_path / "torn.jsonl"  # a process killed in its first write
    torn.write_bytes(b'{"kind":"run","hea')
    store = JSONLStore(torn)
    store.save_trajectory(_trajectory("after-the-tear"))
    store.close()
    assert [s.id for s in JSONLStore(torn).list_runs()] == ["after-the-tear"]

    pruned = tmp_path / "pruned.jsonl"  # a prune's file starts with a line of its own
    store = JSONLStore(pruned)
    for run_id in ("gone", "kept"):
        store.save_trajectory(_trajectory(run_id))
    assert store.delete_runs(["gone"]) == 1
    store.close()
    assert pruned.read_bytes().startswith(b'{"kind":"generation"')
    assert [s.id for s in JSONLStore(pruned).list_runs()] == ["kept"]

    written_elsewhere = tmp_path / "spaced.jsonl"  # a store record with its keys in another order
    written_elsewhere.write_text(
        json.dumps({"header": json.loads(_trajectory("x").model_dump_json()), "kind": "run"}) + "\n"
    )
    assert [s.id for s in JSONLStore(written_elsewhere).list_runs()] == ["x"]
