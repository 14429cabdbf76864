"""TRAIL: real OpenTelemetry / OpenInference traces of smolagents runs, read as they are."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from agentdebug.errors import InputError
from agentdebug.io import TrailImporter, import_file, import_paths, load_trail_annotations
from agentdebug.schema import AgentTrajectory, EventType
from agentdebug.taxonomy import TRAIL_CATEGORIES
from agentdebug.taxonomy import normalize_trail_category as normalise_category

FIXTURES = Path(__file__).parent / "fixtures" / "io"
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
TRAIL = DATA / "trail" / "gaia"
IMPORTERS = [TrailImporter()]

needs_data = pytest.mark.skipif(
    not (TRAIL / "traces").is_dir(), reason=f"TRAIL data not found at {TRAIL} (../shared/data)"
)

EXPECTED_TYPE = {
    "LLM": EventType.LLM_CALL,
    "TOOL": EventType.TOOL_CALL,
    "AGENT": EventType.AGENT_START,
    "CHAIN": EventType.SPAN,
    None: EventType.SPAN,
}


def _walk(
    spans: list[dict[str, Any]], parent: str | None = None
) -> Iterator[tuple[dict[str, Any], str | None]]:
    for span in spans:
        yield span, parent
        yield from _walk(span.get("child_spans") or [], span["span_id"])


def _load(path: Path) -> AgentTrajectory:
    runs = import_file(path, importers=IMPORTERS)
    assert len(runs) == 1
    assert runs[0].label is None  # annotations are separate files
    return runs[0].trajectory


# -- a small hand-written trace ----------------------------------------------------------


def test_nested_spans_become_events_with_span_ids_and_parents() -> None:
    t = _load(FIXTURES / "trail_small.json")
    assert t.id == "trail-00000000000000000000000000000abc"
    assert t.framework == "smolagents"
    # start-time order
    assert [e.id for e in t.events] == [
        "1000000000000001",
        "1000000000000002",
        "1000000000000003",
        "1000000000000004",
        "1000000000000005",
        "1000000000000006",
        "1000000000000005/end",  # the managed agent's end, with what it gave back
        "1000000000000002/final_answer",  # CodeAgent's output: no final_answer tool call
    ]
    assert [e.step_index for e in t.events] == [0, 1, 2, 3, 4, 5, 5, 6]
    by_id = {e.id: e for e in t.events}
    assert by_id["1000000000000001"].parent_id is None
    assert by_id["1000000000000006"].parent_id == "1000000000000005"
    assert by_id["1000000000000002"].type is EventType.AGENT_START
    assert by_id["1000000000000003"].type is EventType.LLM_CALL
    assert by_id["1000000000000004"].type is EventType.SPAN
    assert by_id["1000000000000004"].metadata["agent_step"] == 1
    assert by_id["1000000000000006"].type is EventType.TOOL_CALL


def test_agent_names_follow_the_nearest_agent_span() -> None:
    t = _load(FIXTURES / "trail_small.json")
    by_id = {e.id: e for e in t.events}
    assert by_id["1000000000000001"].agent_name is None
    assert by_id["1000000000000002"].agent_name == "CodeAgent"
    assert by_id["1000000000000003"].agent_name == "CodeAgent"
    assert by_id["1000000000000005"].agent_name == "search_agent"
    assert by_id["1000000000000006"].agent_name == "search_agent"
    agents = {a.name: a for a in t.agents}
    assert agents["CodeAgent"].tools == ["final_answer"]
    assert agents["search_agent"].role == "Searches the web."


def test_llm_tool_and_error_fields() -> None:
    t = _load(FIXTURES / "trail_small.json")
    by_id = {e.id: e for e in t.events}
    llm = by_id["1000000000000003"]
    assert llm.input == [{"role": "user", "content": "Compute 6 * 7."}]
    assert llm.output == "Thought: 6 * 7 = 41"
    assert llm.metadata["model"] == "o3-mini"
    assert llm.metadata["tokens"] == {"prompt": 10}
    assert llm.duration_ms == 800.0
    tool = by_id["1000000000000006"]
    assert tool.input == {"args": [], "kwargs": {"query": "6 * 7"}}
    assert tool.output == "42"
    assert tool.metadata["tool_name"] == "web_search"
    step = by_id["1000000000000004"]
    assert step.error is not None
    assert step.error.message.startswith("AgentExecutionError: Code execution failed")
    assert step.error.type == "smolagents.utils.AgentExecutionError"
    assert step.error.traceback and step.error.traceback.startswith("Traceback")
    assert by_id["1000000000000001"].duration_ms == 62500.0


def test_goal_outcome_and_the_withheld_answer_key() -> None:
    t = _load(FIXTURES / "trail_small.json")
    assert t.goal == "Compute 6 * 7."
    assert t.outcome.final_answer == "41"
    assert t.reference_answer == "42"
    assert t.metadata["gaia_question"] == "What is 6 * 7?"
    root = t.events[0]
    assert root.input == {"example": {"question": "What is 6 * 7?", "task_id": "t-1"}}
    assert root.metadata["withheld"] == ["Annotator Metadata", "true_answer"]
    dumped = json.dumps([e.model_dump(mode="json") for e in t.events])
    assert '"true_answer":' not in dumped and "Multiply." not in dumped


def test_annotations_tolerate_trailing_commas_and_normalise_categories() -> None:
    label = load_trail_annotations(FIXTURES / "trail_annotations_trailing_comma.json")
    assert label.source == "trail"
    assert label.metadata["repaired"] == "trailing commas removed"
    assert label.metadata["trajectory_id"] == "trail-00000000000000000000000000000abc"
    assert [e["category"] for e in label.errors] == [
        "Context Handling Failures",
        "Tool Selection Errors",
    ]
    assert label.errors[0]["category_raw"] == " Context Handling Failure"
    # commas inside strings are left alone
    assert label.errors[0]["evidence"] == "Thought: 6 * 7 = 41, [sic], }"
    t = _load(FIXTURES / "trail_small.json")
    assert all(t.event(e["location"]) is not None for e in label.errors)


def test_normalise_category_spellings() -> None:
    assert normalise_category("Goal deviation") == "Goal Deviation"
    assert normalise_category("  Context Handling Failure ") == "Context Handling Failures"
    assert normalise_category("Tool Selection") == "Tool Selection Errors"
    assert normalise_category("instruction non-compliance") == "Instruction Non-compliance"
    assert normalise_category("Something New ") == "Something New"


def test_a_broken_annotation_file_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"errors": [{"category": "Goal Deviation", "location": ')
    with pytest.raises(InputError, match="not valid JSON"):
        load_trail_annotations(path)


def test_a_span_without_an_id_names_its_path(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "trail_small.json").read_text())
    del doc["spans"][0]["child_spans"][0]["child_spans"][1]["span_id"]
    doc["spans"][0]["child_spans"][0]["child_spans"][1]["x"] = 1
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field == "spans[0].child_spans[0].child_spans[1].span_id"


def test_an_empty_span_list_has_no_events(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text('{"trace_id": "abc", "spans": []}')
    with pytest.raises(InputError, match="no events"):
        import_file(path, importers=IMPORTERS)


# -- the real benchmark ------------------------------------------------------------------


@needs_data
@pytest.mark.slow
def test_all_traces_import_with_spans_as_events() -> None:
    files = sorted((TRAIL / "traces").glob("*.json"))
    assert len(files) == 72
    start = time.perf_counter()
    batch = import_paths(files, importers=IMPORTERS)
    elapsed = time.perf_counter() - start
    print(f"\nTRAIL: {len(files)} traces in {elapsed:.2f}s")
    assert batch.failures == []
    assert len(batch.runs) == 72
    errors = 0
    for path, run in zip(files, batch.runs, strict=True):
        raw = json.loads(path.read_text())
        t = run.trajectory
        assert t.id == f"trail-{raw['trace_id']}"
        spans = list(_walk(raw["spans"]))
        ends = [e for e in t.events if e.type is EventType.AGENT_END]  # (managed agents')
        assert len(t.events) == len(spans) + len(ends)
        assert [e.step_index for e in t.events if e not in ends] == list(range(len(spans)))
        for end in ends:
            start = t.event(str(end.parent_id))
            assert start is not None and start.type is EventType.AGENT_START
            assert end.id == f"{start.id}/end" and end.output is not None
        stamps = [e.timestamp for e in t.events]
        assert all(a is not None and b is not None and a <= b for a, b in pairwise(stamps))
        for span, parent in spans:
            event = t.event(span["span_id"])
            assert event is not None
            assert event.parent_id == parent  # parents mirror child_spans
            kind = span["span_attributes"].get("openinference.span.kind")
            expected = EXPECTED_TYPE[kind]
            if span["span_name"] == "FinalAnswerTool" and event.agent_name == "CodeAgent":
                expected = EventType.FINAL_ANSWER  # the top agent's answer
            assert event.type is expected, (path.name, span["span_id"])
            assert (event.error is not None) == (span["status_code"] == "Error")
            errors += event.error is not None
        assert t.reference_answer
        dumped = t.model_dump_json()
        assert '"true_answer":' not in dumped and '"Annotator Metadata":' not in dumped
        assert t.goal and t.framework == "smolagents"
    assert errors == 18
    assert elapsed < 30


@needs_data
@pytest.mark.slow
def test_every_annotation_location_is_an_event_id() -> None:
    annotations = sorted((TRAIL / "annotations").glob("*.json"))
    assert len(annotations) == 72
    missing: list[tuple[str, str]] = []
    total = 0
    repaired = []
    for path in annotations:
        label = load_trail_annotations(path)
        if "repaired" in label.metadata:
            repaired.append(path.name)
        t = _load(TRAIL / "traces" / path.name)
        assert label.metadata["trajectory_id"] == t.id
        for error in label.errors:
            total += 1
            assert error["category"] in TRAIL_CATEGORIES, error["category"]
            if t.event(error["location"]) is None:
                missing.append((path.name, error["location"]))
    print(f"\nTRAIL annotations: {total} errors, {len(missing)} locations not found")
    assert total == 267
    assert missing == []
    assert repaired == ["a96c6811716c0473b86a23321db79c34.json"]


def _final_answer_trace(tmp_path: Path) -> Path:
    def span(span_id: str, name: str, kind: str, children: list[Any], **attrs: Any) -> Any:
        return {
            "span_id": span_id,
            "span_name": name,
            "timestamp": f"2025-03-19T16:33:0{span_id[-1]}Z",
            "status_code": "Ok",
            "span_attributes": {"openinference.span.kind": kind, **attrs},
            "child_spans": children,
        }

    answer = '{"args": [], "sanitize_inputs_outputs": false, "kwargs": {"answer": "42"}}'
    managed = span(
        "a000000000000003",
        "ToolCallingAgent.run",
        "AGENT",
        [span("a000000000000004", "FinalAnswerTool", "TOOL", [], **{"tool.name": "final_answer"})],
        **{"smolagents.name": "search_agent"},
    )
    top_answer = span(
        "a000000000000005",
        "FinalAnswerTool",
        "TOOL",
        [],
        **{"tool.name": "final_answer", "input.value": answer},
    )
    root = span(
        "a000000000000001",
        "CodeAgent.run",
        "AGENT",
        [managed, top_answer],
        **{"input.value": '{"task": "6 * 7?"}'},
    )
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"trace_id": "t1", "spans": [root]}))
    return path


def test_the_top_agents_final_answer_tool_is_the_final_answer(tmp_path: Path) -> None:
    t = _load(_final_answer_trace(tmp_path))
    by_id = {e.id: e for e in t.events}
    final = by_id["a000000000000005"]
    assert final.type is EventType.FINAL_ANSWER
    assert final.output == "42"  # FinalAnswerTool logs no output: the answer it was given
    assert final.metadata["tool_name"] == "final_answer"
    # a managed agent's answer goes back to its manager: still a tool call
    assert by_id["a000000000000004"].type is EventType.TOOL_CALL
    assert t.outcome.final_answer == "42"


@pytest.mark.parametrize(
    ("where", "key", "value", "field", "words"),
    [
        (
            "agent",
            "span_attributes",
            {"openinference.span.kind": 5},
            "spans[0].child_spans[0].span_attributes.openinference.span.kind",
            "expected a span kind such as 'AGENT'",
        ),
        ("root", "duration", "slow", "spans[0].duration", "ISO-8601 duration"),
        ("root", "events", "boom", "spans[0].events", "expected a list, got string"),
        ("root", "events", ["boom"], "spans[0].events[0]", "expected a span event object"),
        ("root", "logs", "boom", "spans[0].logs", "expected a list, got string"),
        ("root", "timestamp", "yesterday", "spans[0].timestamp", "ISO-8601 time"),
        ("root", "status_code", "Maybe", "spans[0].status_code", "'Ok', 'Error' or 'Unset'"),
    ],
)
def test_wrong_typed_span_fields_name_the_span_and_field(
    tmp_path: Path, where: str, key: str, value: Any, field: str, words: str
) -> None:
    doc = json.loads((FIXTURES / "trail_small.json").read_text())
    span = doc["spans"][0] if where == "root" else doc["spans"][0]["child_spans"][0]
    if key == "span_attributes":
        span[key].update(value)
    else:
        span[key] = value
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.record == span["span_id"]
    assert info.value.field == field
    assert words in str(info.value) and "trace.json" in str(info.value)
