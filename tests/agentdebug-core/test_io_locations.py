"""Where an import error points: "line N" of a JSON Lines file (as an editor
numbers it, blank lines counted), "record N" of a JSON document (the index in its
list), and the field inside it, the same way in every format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentdebug.errors import InputError, RecordsSkipped, UnknownFormatError
from agentdebug.io import builtin_importers, import_file
from conftest import run_cli

IMPORTERS = builtin_importers()
TRACE = "5b8efff798038103d269b633813fc60c"


def _error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    error = info.value
    if isinstance(error, RecordsSkipped):
        return str(error.errors[0])
    return str(error)


def test_an_event_list_in_json_lines_names_the_line_an_editor_shows(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"type": "user.input", "output": "hi"}\n'
        "\n"  # a blank line: still a line of the file
        '{"type": "message", "output": "ok"}\n'
        '{"type": "message", "step_index": "x"}\n'
    )
    said = _error(path)
    assert said.startswith(f"{path}, line 4, field 'step_index': ")  # before: "record 3"
    assert "record" not in said


def test_the_same_events_in_a_json_array_name_the_record(tmp_path: Path) -> None:
    path = tmp_path / "events.json"
    events = [{"type": "user.input"}, {"type": "message"}, {"type": "message", "step_index": "x"}]
    path.write_text(json.dumps(events))
    said = _error(path)
    assert said.startswith(f"{path}, record 2, field '[2].step_index': ")
    assert "line" not in said.split(": ", 1)[0]


def test_a_duplicate_event_id_in_json_lines_says_which_line_had_it(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"type": "message", "id": "a"}\n\n{"type": "message", "id": "a"}\n')
    said = _error(path)
    assert said.startswith(f"{path}, line 3, field 'id': duplicate event id 'a' (also line 1)")


def test_a_trajectory_line_names_its_line_and_the_event_inside_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    good = {"id": "a", "events": [{"type": "message"}]}
    bad = {"id": "b", "events": [{"type": "message"}, {"type": "message", "duration_ms": -1}]}
    path.write_text(f"{json.dumps(good)}\n\n{json.dumps(bad)}\n")
    said = _error(path)
    assert said.startswith(f"{path}, line 3, field 'events[1].duration_ms': ")


def test_one_message_a_line_names_the_line_and_the_field_in_it(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n\n{"role": "assistant", "content": 5}\n')
    said = _error(path)
    # before: "record 1, field '[1].content'": neither the line nor the message's index
    assert said.startswith(f"{path}, line 3, field 'content': ")


def test_a_message_array_names_the_record(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "user", "content": 5}]))
    assert _error(path).startswith(f"{path}, record 1, field '[1].content': ")


def test_a_message_list_refused_by_role_names_the_line_in_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n\n{"role": 7, "content": "x"}\n')
    with pytest.raises(UnknownFormatError) as info:
        import_file(path)
    assert "messages: line 3, field 'role': 7 is not a message role" in str(info.value)


def _otlp(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def _otlp_span(span_id: str, **fields: Any) -> dict[str, Any]:
    return {"traceId": TRACE, "spanId": span_id, "name": "step", **fields}


def test_otlp_json_lines_name_the_line_and_the_path_inside_it(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    first = _otlp(_otlp_span("a000000000000001"))
    second = _otlp(_otlp_span("a000000000000002", attributes=[5]))
    path.write_text(f"{json.dumps(first)}\n\n{json.dumps(second)}\n")
    said = _error(path)
    # before: "field '[2].resourceSpans...'", a line number written as an index
    assert said.startswith(
        f"{path}, line 3, record a000000000000002, "
        "field 'resourceSpans[0].scopeSpans[0].spans[0].attributes[0]': "
    )


def test_an_otlp_span_that_fails_later_still_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    kind = [{"key": "openinference.span.kind", "value": {"intValue": "5"}}]
    lines = [
        _otlp(_otlp_span("a000000000000001")),
        _otlp(_otlp_span("a000000000000002", attributes=kind)),
    ]
    path.write_text("\n".join(json.dumps(doc) for doc in lines) + "\n")
    said = _error(path)
    assert said.startswith(f"{path}, line 2, record a000000000000002, field ")
    assert "openinference.span.kind" in said


def _phoenix_span(span_id: str, **fields: Any) -> dict[str, Any]:
    return {"name": "step", "context": {"trace_id": TRACE, "span_id": span_id}, **fields}


def test_phoenix_json_lines_name_the_line_and_an_array_the_record(tmp_path: Path) -> None:
    spans = [_phoenix_span("s1"), _phoenix_span("s2", status_code="BAD")]
    lines = tmp_path / "spans.jsonl"
    lines.write_text("\n\n".join(json.dumps(s) for s in spans) + "\n")
    array = tmp_path / "spans.json"
    array.write_text(json.dumps(spans))
    assert _error(lines).startswith(f"{lines}, line 3, field 'status_code': expected OK")
    assert _error(array).startswith(f"{array}, record 1, field 'status_code': expected OK")


def test_the_cli_prints_the_line_and_exits_non_zero(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"type": "user.input"}\n\n{"type": "telepathy"}\n')
    for command in (("diagnose", str(path)), ("ingest", str(path))):
        result = run_cli(*command)
        assert result.returncode == 1, result.stderr
        assert f"{path}, line 3, field 'type': " in result.stderr
        assert "Traceback" not in result.stderr
