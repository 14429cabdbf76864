"""OTLP JSON exports: one trajectory per trace id, parents by parentSpanId, GenAI conventions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentdebug.errors import InputError
from agentdebug.io import OtlpImporter, import_file
from agentdebug.io.otlp import any_value, normalise_id
from agentdebug.schema import AgentTrajectory, EventType, OutcomeStatus

FIXTURES = Path(__file__).parent / "fixtures" / "io"
IMPORTERS = [OtlpImporter()]


def _traces() -> dict[str, AgentTrajectory]:
    runs = import_file(FIXTURES / "otlp_two_traces.json", importers=IMPORTERS)
    return {r.trajectory.id: r.trajectory for r in runs}


def test_two_traces_in_one_file_become_two_trajectories() -> None:
    traces = _traces()
    assert set(traces) == {"5b8efff798038103d269b633813fc60c", "0af7651916cd43dd8448eb211c80319c"}
    travel = traces["5b8efff798038103d269b633813fc60c"]
    assert travel.metadata["service_name"] == "travel-agent"
    assert traces["0af7651916cd43dd8448eb211c80319c"].metadata["service_name"] == "support-desk"


def test_events_are_ordered_by_start_time_with_parents_from_parent_span_id() -> None:
    travel = _traces()["5b8efff798038103d269b633813fc60c"]
    assert [e.id for e in travel.events] == [
        "a100000000000001",
        "a200000000000002",
        "a300000000000003",
        "a400000000000004",
    ]
    assert [e.step_index for e in travel.events] == [0, 1, 2, 3]
    assert travel.events[0].parent_id is None
    assert {e.parent_id for e in travel.events[1:]} == {"a100000000000001"}
    assert travel.events[2].duration_ms == 1250.0
    assert travel.events[0].timestamp is not None
    assert travel.events[0].timestamp.isoformat() == "2023-11-14T22:13:20+00:00"


def test_genai_attributes_give_types_agents_messages_and_tokens() -> None:
    travel = _traces()["5b8efff798038103d269b633813fc60c"]
    agent, chat, tool, answer = travel.events
    assert agent.type is EventType.AGENT_START
    assert agent.agent_name == "travel_planner"
    assert [a.name for a in travel.agents] == ["travel_planner"]
    assert travel.agents[0].role == "Plans trips"
    assert chat.type is EventType.LLM_CALL
    assert chat.agent_name == "travel_planner"  # from the enclosing agent span
    assert chat.input == [{"role": "user", "content": "Book a flight from Paris to Oslo on 3 May"}]
    assert chat.output == {
        "content": None,
        "tool_calls": [
            {"id": "call_1", "name": "search_flights", "arguments": {"from": "PAR", "to": "OSL"}}
        ],
    }
    assert chat.metadata["model"] == "gpt-4o"
    assert chat.metadata["span_kind"] == "CLIENT"
    assert tool.type is EventType.TOOL_CALL
    assert tool.input == {"from": "PAR", "to": "OSL"}
    assert tool.metadata["tool_name"] == "search_flights"
    assert tool.metadata["tool_call_id"] == "call_1"
    assert answer.output == "Sorry, I could not find any flights."
    assert answer.metadata["tokens"] == {"prompt": 210, "completion": 18}
    assert travel.goal == "Book a flight from Paris to Oslo on 3 May"
    assert travel.outcome.final_answer == "Sorry, I could not find any flights."
    assert agent.metadata["attributes"]["app.tags"] == ["demo", True]


def test_an_error_status_becomes_the_event_error_with_the_exception() -> None:
    travel = _traces()["5b8efff798038103d269b633813fc60c"]
    tool = travel.event("a300000000000003")
    assert tool is not None and tool.error is not None
    assert tool.error.message == "flights API timed out"
    assert tool.error.type == "TimeoutError"
    assert tool.error.traceback is not None and "tools.py" in tool.error.traceback
    assert "span_events" not in tool.metadata  # the exception event became the error
    others = [e for e in travel.events if e.id != tool.id]
    assert all(e.error is None for e in others)
    assert travel.outcome.status is OutcomeStatus.UNKNOWN  # the agent itself did not fail


def test_openinference_attributes_and_sibling_ties_in_file_order() -> None:
    support = _traces()["0af7651916cd43dd8448eb211c80319c"]
    ids = [e.id for e in support.events]
    # the tool and the LLM span start together: file order (tool first) breaks the tie
    assert ids == [
        "b100000000000001",
        "b200000000000002",
        "b400000000000004",
        "b300000000000003",
        "b500000000000005",
    ]
    root, agent, tool, llm, orphan = support.events
    assert root.type is EventType.SPAN and root.agent_name is None
    assert root.metadata["span_kind"] == "SERVER"
    assert agent.type is EventType.AGENT_START and agent.agent_name == "support_bot"
    assert tool.type is EventType.TOOL_CALL
    assert tool.input == {"order_id": 42}
    assert tool.output == "shipped on 2 May"
    assert tool.agent_name == "support_bot"
    assert llm.type is EventType.LLM_CALL
    assert llm.input == [
        {"role": "system", "content": "You help customers."},
        {"role": "user", "content": "Where is my order 42?"},
    ]
    assert llm.output == "Your order 42 shipped on 2 May."
    assert llm.metadata["tokens"] == {"prompt": 25, "completion": 9}
    assert orphan.parent_id is None
    assert orphan.metadata["missing_parent"] == "ffffffffffffffff"
    assert support.framework == "langchain"
    assert support.goal == "Where is my order 42?"


def test_the_collector_file_exporter_json_lines_are_one_export(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "otlp_two_traces.json").read_text())
    path = tmp_path / "export.jsonl"
    path.write_text(
        "\n".join(json.dumps({"resourceSpans": [rs]}) for rs in doc["resourceSpans"]) + "\n"
    )
    runs = import_file(path, importers=IMPORTERS)
    assert sorted(len(r.trajectory.events) for r in runs) == [4, 5]


def test_a_span_without_a_span_id_names_its_path(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "otlp_two_traces.json").read_text())
    del doc["resourceSpans"][1]["scopeSpans"][0]["spans"][2]["spanId"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field == "resourceSpans[1].scopeSpans[0].spans[2].spanId"
    assert "bad.json" in str(info.value)


@pytest.mark.parametrize("key", ["startTimeUnixNano", "endTimeUnixNano"])
def test_a_bad_span_time_names_its_own_field(tmp_path: Path, key: str) -> None:
    doc = json.loads((FIXTURES / "otlp_two_traces.json").read_text())
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1][key] = "soon"
    path = tmp_path / "bad_time.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field == f"resourceSpans[0].scopeSpans[0].spans[1].{key}"
    assert "got 'soon'" in str(info.value)


def test_duplicate_span_ids_are_refused(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "otlp_two_traces.json").read_text())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[1]["spanId"] = spans[0]["spanId"]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="duplicate span id"):
        import_file(path, importers=IMPORTERS)


def test_an_export_without_spans_has_no_events(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text('{"resourceSpans": []}')
    with pytest.raises(InputError, match="no events"):
        import_file(path, importers=IMPORTERS)


def test_any_value_and_ids() -> None:
    assert any_value({"intValue": "7"}) == 7
    assert any_value({"doubleValue": 0.5}) == 0.5
    assert any_value(
        {"kvlistValue": {"values": [{"key": "a", "value": {"boolValue": False}}]}}
    ) == {"a": False}
    assert normalise_id("5B8EFFF798038103D269B633813FC60C") == "5b8efff798038103d269b633813fc60c"
    assert normalise_id("W47/95gDgQPSabYzgT/GDA==") == "5b8efff798038103d269b633813fc60c"
    assert normalise_id("") is None


def test_a_parent_cycle_is_refused_not_dropped(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "otlp_two_traces.json").read_text())
    spans = doc["resourceSpans"][1]["scopeSpans"][0]["spans"]
    spans[0]["parentSpanId"] = spans[1]["spanId"]  # root's parent is its own child
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="cycle"):
        import_file(path, importers=IMPORTERS)


def test_a_child_that_starts_before_its_parent_still_gets_its_agent(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "otlp_two_traces.json").read_text())
    spans = doc["resourceSpans"][1]["scopeSpans"][0]["spans"]
    spans[2]["startTimeUnixNano"] = "1700000099000000000"  # the tool, before the agent
    path = tmp_path / "skew.json"
    path.write_text(json.dumps(doc))
    support = next(
        r.trajectory
        for r in import_file(path, importers=IMPORTERS)
        if r.trajectory.id.startswith("0af7")
    )
    assert support.events[0].id == "b400000000000004"
    assert support.events[0].agent_name == "support_bot"


def test_ids_written_as_integers_or_0x_hex_keep_the_trace_together(tmp_path: Path) -> None:
    """One span's ids as integers (OpenTelemetry's Python API holds them so), another's
    as ``0x`` hex: the same ids, so one trace with its parent links, not three. A
    128-bit trace id as a JSON number is read back inexactly: named, not guessed at."""
    doc = json.loads((FIXTURES / "otlp_two_traces.json").read_text())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[1]["spanId"] = int(spans[1]["spanId"], 16)
    spans[2]["traceId"] = "0x" + spans[2]["traceId"].upper()
    spans[2]["parentSpanId"] = int(spans[2]["parentSpanId"], 16)
    path = tmp_path / "ints.json"
    path.write_text(json.dumps(doc))
    runs = {r.trajectory.id: r.trajectory for r in import_file(path, importers=IMPORTERS)}
    assert set(runs) == set(_traces())
    travel = runs["5b8efff798038103d269b633813fc60c"]
    assert [(e.id, e.parent_id) for e in travel.events] == [
        (e.id, e.parent_id) for e in _traces()["5b8efff798038103d269b633813fc60c"].events
    ]
    spans[1]["traceId"] = int(spans[1]["traceId"], 16)
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="JSON cannot hold exactly") as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field == "resourceSpans[0].scopeSpans[0].spans[1].traceId"
    assert normalise_id(0x2A, 16) == "000000000000002a" and normalise_id(0) is None
    assert normalise_id("0x2a", 16) == "000000000000002a" and normalise_id("0x00") is None


@pytest.mark.parametrize(
    ("where", "bad", "field", "said"),
    [
        ("span", [["http.method", "GET"]], "spans[1].attributes[0]", "got list"),
        ("span", "http.method=GET", "spans[1].attributes", "got string"),
        ("span", [{"value": {"stringValue": "GET"}}], "spans[1].attributes[0]", "without one"),
        (
            "span",
            [{"key": "m", "value": {"kvlistValue": {"values": [7]}}}],
            "spans[1].attributes[0].value.kvlistValue.values[0]",
            "got number",
        ),
        ("event", [3], "spans[1].events[0].attributes[0]", "got number"),
        ("resource", [None], "resourceSpans[0].resource.attributes[0]", "got null"),
    ],
)
def test_attributes_of_the_wrong_shape_are_named_not_dropped(
    tmp_path: Path, where: str, bad: object, field: str, said: str
) -> None:
    doc = json.loads((FIXTURES / "otlp_two_traces.json").read_text())
    resource = doc["resourceSpans"][0]
    span = resource["scopeSpans"][0]["spans"][1]
    if where == "span":
        span["attributes"] = bad
    elif where == "event":
        span["events"] = [{"name": "retry", "attributes": bad}]
    else:
        resource["resource"]["attributes"] = bad
    path = tmp_path / "bad-attributes.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        import_file(path, importers=IMPORTERS)
    assert info.value.field is not None and info.value.field.endswith(field)
    assert said in str(info.value) and "bad-attributes.json" in str(info.value)
    if where != "resource":
        assert info.value.record == span["spanId"]


def test_the_agents_answer_is_a_final_answer_event_so_completion_rules_run() -> None:
    from agentdebug.detect import RulePack

    (run,) = import_file(FIXTURES / "otlp_premature_success.json", importers=IMPORTERS)
    t = run.trajectory
    last = t.events[-1]
    assert last.type is EventType.FINAL_ANSWER and last.output == "Your flight is booked!"
    assert last.metadata["kind"] == "LLM"  # the model call that gave the agent's answer
    modes = {f.mode_id for f in RulePack().detect(t)}
    assert "verification.premature_success" in modes


def test_the_final_answer_is_the_top_agents_last_reply_only() -> None:
    travel = _traces()["5b8efff798038103d269b633813fc60c"]
    assert [e.type for e in travel.events][-1] is EventType.FINAL_ANSWER
    support = _traces()["0af7651916cd43dd8448eb211c80319c"]  # its agent span has no output
    assert EventType.FINAL_ANSWER not in {e.type for e in support.events}
