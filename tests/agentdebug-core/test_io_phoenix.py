"""Arize Phoenix span exports: one span per JSON line, nested attributes, one run per trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.io import import_file
from agentdebug.io.detect import detect_importer
from agentdebug.io.phoenix import PhoenixImporter
from agentdebug.io.source import read_source
from agentdebug.schema import EventType

FIXTURES = Path(__file__).parent / "fixtures" / "io"
TRACE = "5b8efff798038103d269b633813fc60c"


def _span(span_id: str, trace: str = TRACE, **fields: Any) -> dict[str, Any]:
    return {
        "name": "step",
        "context": {"trace_id": trace, "span_id": span_id},
        "parent_id": None,
        "span_kind": "CHAIN",
        "start_time": "2026-12-01T10:00:00Z",
        "end_time": "2026-12-01T10:00:01Z",
        "status_code": "OK",
        "attributes": {},
        "events": [],
        **fields,
    }


def _write(tmp_path: Path, spans: list[dict[str, Any]]) -> Path:
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in spans) + "\n")
    return path


def test_phoenix_spans_are_detected_before_agentdebug_events() -> None:
    from agentdebug.io import builtin_importers

    source = read_source(FIXTURES / "phoenix_spans.jsonl")
    assert detect_importer(source, builtin_importers()).name == "phoenix"


def test_spans_become_events_with_parents_kinds_attributes_and_errors() -> None:
    (run,) = import_file(FIXTURES / "phoenix_spans.jsonl")
    t = run.trajectory
    assert t.id == TRACE and t.goal == "Book a nonstop flight BOS to DEN"
    agent, llm, tool, final = t.events
    assert agent.type is EventType.AGENT_START and agent.agent_name == "TravelAgent"
    assert llm.type is EventType.LLM_CALL and llm.metadata["model"] == "gpt-4o"
    assert llm.parent_id == agent.id and llm.duration_ms == 1000.0
    assert tool.type is EventType.TOOL_CALL and tool.metadata["tool_name"] == "search_fares"
    assert tool.error is not None and tool.error.type == "ValidationError"
    assert final.type is EventType.FINAL_ANSWER and final.output == "Your flight is booked!"
    assert final.parent_id == agent.id


def test_the_agents_claim_after_a_failed_tool_is_premature_success() -> None:
    (run,) = import_file(FIXTURES / "phoenix_spans.jsonl")
    modes = {f.mode_id for f in RulePack().detect(run.trajectory)}
    assert "verification.premature_success" in modes


def test_one_run_per_trace_and_a_bad_span_skips_only_its_trace(tmp_path: Path) -> None:
    other = "0af7651916cd43dd8448eb211c80319c"
    path = _write(
        tmp_path,
        [
            _span("a000000000000001"),
            _span("b000000000000001", trace=other),
            _span("b000000000000002", trace=other, start_time="yesterday"),
        ],
    )
    with pytest.raises(RecordsSkipped) as info:
        import_file(path, importers=[PhoenixImporter()])
    assert [r.trajectory.id for r in info.value.runs] == [TRACE]
    first = info.value.errors[0]
    assert "spans.jsonl, line 3, field 'start_time'" in str(first)  # (JSON Lines: the line)
    assert "'yesterday'" in str(first)
    assert other in str(info.value.errors[1])


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"events": "boom"}, "events", "expected a list of span events"),
        ({"status_code": 2}, "status_code", "expected a string"),
        ({"status_code": "BAD"}, "status_code", "expected OK, ERROR or UNSET"),
        ({"attributes": [1]}, "attributes", "expected an object"),
        ({"context": {"trace_id": TRACE}}, "context.span_id", "missing"),
    ],
)
def test_wrong_typed_fields_name_record_and_field(
    tmp_path: Path, fields: dict[str, Any], field: str, words: str
) -> None:
    path = _write(tmp_path, [_span("a000000000000001"), _span("a000000000000002", **fields)])
    with pytest.raises(InputError) as info:
        import_file(path, importers=[PhoenixImporter()])
    errors = info.value.errors if isinstance(info.value, RecordsSkipped) else [info.value]
    assert f"spans.jsonl, line 2, field '{field}': {words}" in str(errors[0])


def test_flat_dataframe_columns_read_like_nested_objects(tmp_path: Path) -> None:
    row = {
        "name": "ChatCompletion",
        "context.trace_id": TRACE,
        "context.span_id": "a000000000000001",
        "span_kind": "LLM",
        "attributes.llm.model_name": "gpt-4o",
        "attributes.output.value": "hi",
    }
    (run,) = import_file(_write(tmp_path, [row]))
    (event,) = run.trajectory.events
    assert event.type is EventType.LLM_CALL and event.metadata["model"] == "gpt-4o"
    assert event.output == "hi"
