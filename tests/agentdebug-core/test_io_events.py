"""agentdebug's own format: trajectories and event lists, with errors that point into the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentdebug.errors import InputError
from agentdebug.io import EventsImporter, import_file
from agentdebug.schema import AgentTrajectory, EventType, OutcomeStatus

FIXTURES = Path(__file__).parent / "fixtures" / "io"
IMPORTERS = [EventsImporter()]


def _load(path: Path) -> AgentTrajectory:
    runs = import_file(path, importers=IMPORTERS)
    assert len(runs) == 1
    return runs[0].trajectory


def test_a_serialized_trajectory_round_trips() -> None:
    t = _load(FIXTURES / "events_trajectory.json")
    assert t.id == "run-7"
    assert t.framework == "my-agent"
    assert [e.id for e in t.events] == ["a", "b", "c", "d"]
    assert t.events[2].error is not None and t.events[2].error.message == "file not found"
    assert t.outcome.status is OutcomeStatus.FAILURE


def test_a_trajectory_dumped_by_the_model_imports_unchanged(tmp_path: Path) -> None:
    original = _load(FIXTURES / "events_trajectory.json")
    path = tmp_path / "dump.json"
    path.write_text(original.model_dump_json())
    assert _load(path) == original


def test_a_list_of_events_gets_ids_and_steps_from_positions() -> None:
    t = _load(FIXTURES / "events_list.json")
    assert t.id == "events_list"
    assert [e.id for e in t.events] == ["e0", "e1", "e2"]
    assert [e.step_index for e in t.events] == [0, 1, 2]
    assert [e.type for e in t.events] == [
        EventType.USER_INPUT,
        EventType.LLM_CALL,
        EventType.FINAL_ANSWER,
    ]


def test_json_lines_of_events_keep_given_steps() -> None:
    t = _load(FIXTURES / "events_lines.jsonl")
    assert [e.step_index for e in t.events] == [0, 4]


def test_json_lines_of_whole_trajectories(tmp_path: Path) -> None:
    one = json.loads((FIXTURES / "events_trajectory.json").read_text())
    two = {"events": [{"type": "message", "output": "x"}]}
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(one) + "\n" + json.dumps(two) + "\n")
    runs = import_file(path, importers=IMPORTERS)
    assert [r.trajectory.id for r in runs] == ["run-7", "runs-2"]


def test_a_step_index_of_the_wrong_type_names_record_and_field() -> None:
    with pytest.raises(InputError) as info:
        import_file(FIXTURES / "events_bad_step.json", importers=IMPORTERS)
    error = info.value
    assert error.record == 2
    assert error.field == "events[2].step_index"
    assert "events_bad_step.json" in str(error)
    assert "'abc'" in str(error)


def test_an_event_without_a_type_names_the_field() -> None:
    with pytest.raises(InputError) as info:
        import_file(FIXTURES / "events_missing_type.json", importers=IMPORTERS)
    assert info.value.record == 1
    assert info.value.field == "[1].type"
    assert "required" in str(info.value).lower()


def test_a_bad_event_in_json_lines_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"type": "message"}\n{"type": "message", "duration_ms": -5}\n')
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert f"{path}, line 2, field 'duration_ms': " in str(info.value)
    assert "record" not in str(info.value)


def test_an_unknown_event_type_and_unknown_fields_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    path.write_text(json.dumps([{"type": "message"}, {"type": "telepathy"}]))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field == "[1].type"
    path.write_text(json.dumps([{"type": "message", "colour": "red"}]))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field == "[0].colour"


def test_duplicate_event_ids_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    path.write_text(json.dumps([{"id": "a", "type": "message"}, {"id": "a", "type": "message"}]))
    with pytest.raises(InputError, match="duplicate event id 'a'") as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field == "[1].id"


def test_a_bad_trajectory_field_is_named(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"id": "x", "events": [{"type": "message"}], "outcome": 3}))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field == "outcome"


def test_an_empty_event_list_is_an_error() -> None:
    with pytest.raises(InputError) as info:
        import_file(FIXTURES / "events_empty.json", importers=IMPORTERS)
    assert "no events" in str(info.value)
    assert info.value.field == "events"


# -- a 50 MB event ------------------------------------------------------------------------

BIG = 50 * 1024 * 1024


def _write_big(path: Path) -> None:
    with path.open("w") as fh:
        fh.write('{"id": "big", "events": [{"type": "user.input", "output": "go"}, ')
        fh.write('{"type": "tool.result", "agent_name": "reader", "output": "')
        fh.write("x" * BIG)
        fh.write('"}]}')


def test_an_event_over_the_limit_is_refused_naming_record_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTDEBUG_MAX_EVENT_BYTES", raising=False)
    path = tmp_path / "big.json"
    _write_big(path)
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    error = info.value
    assert error.record == 1
    assert error.field == "events[1].output"
    assert "52,428,800 bytes" in str(error)
    assert "16,777,216" in str(error)
    assert "AGENTDEBUG_MAX_EVENT_BYTES" in str(error)


def test_an_event_under_a_raised_limit_is_imported_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTDEBUG_MAX_EVENT_BYTES", str(64 * 1024 * 1024))
    path = tmp_path / "big.json"
    _write_big(path)
    t = _load(path)
    output = t.events[1].output
    assert isinstance(output, str) and len(output) == BIG
