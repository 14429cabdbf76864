"""OpenTelemetry traces as the SDK and its exporters write them: the GenAI
conventions' messages (as ``parts``, and the older span events), and the
``ConsoleSpanExporter``'s output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentdebug.errors import InputError
from agentdebug.io import import_file, import_paths
from agentdebug.schema import AgentTrajectory, EventType

TRACE = "b14f9383de7f33714ff242cdcd1c772c"
START = 1_700_000_000_000_000_000


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # (OTLP/JSON writes 64-bit integers as text)
    return {"stringValue": value}


def _span(span_id: str, name: str, parent: str | None, at: int, **attrs: Any) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": span_id,
        "name": name,
        "kind": 3,
        "startTimeUnixNano": str(START + at * 1_000_000),
        "endTimeUnixNano": str(START + (at + 1) * 1_000_000),
        "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
        "status": {},
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def _otlp(path: Path, *spans: dict[str, Any]) -> AgentTrajectory:
    scope = {"scope": {"name": "my.agent"}, "spans": list(spans)}
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [scope]}]}) + "\n")
    (run,) = import_file(path)
    return run.trajectory


AGENT = "5e819cb2fda10eee"


def test_genai_messages_written_as_parts_are_read(tmp_path: Path) -> None:
    # Before: every message read as {"role": ..., "content": null}; the text, the
    # tool call and its answer were lost, and the agent's output with them.
    said = [
        {"role": "user", "parts": [{"type": "text", "content": "Book a flight to Paris"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "book", "arguments": {"to": "PAR"}}
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "ok"}]},
    ]
    reply = [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Booked AF123."}],
            "finish_reason": "stop",
        }
    ]
    t = _otlp(
        tmp_path / "traces.jsonl",
        _span(
            AGENT,
            "invoke_agent planner",
            None,
            0,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "planner",
                "gen_ai.input.messages": json.dumps(said[:1]),
                "gen_ai.output.messages": json.dumps(reply),
            },
        ),
        _span(
            "041547a471edcc2e",
            "chat gpt-4o",
            AGENT,
            1,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": json.dumps(said),
                "gen_ai.output.messages": json.dumps(reply),
            },
        ),
    )
    chat = t.events[1]
    assert chat.input == [
        {"role": "user", "content": "Book a flight to Paris"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "name": "book", "arguments": {"to": "PAR"}}],
        },
        {"role": "tool", "content": "ok", "tool_call_id": "c1"},
    ]
    assert chat.type is EventType.FINAL_ANSWER and chat.output == "Booked AF123."
    assert t.goal == "Book a flight to Paris"
    assert t.outcome.final_answer == "Booked AF123."


def test_genai_span_events_are_the_llm_calls_messages(tmp_path: Path) -> None:
    # Before: the call had no input and no output; the messages sat in span_events.
    chat = _span(
        "041547a471edcc2e",
        "chat gpt-4o",
        None,
        0,
        **{"gen_ai.operation.name": "chat", "gen_ai.system": "openai"},
    )
    call = {"id": "c1", "type": "function", "function": {"name": "book", "arguments": "{}"}}
    events = [
        ("gen_ai.system.message", {"content": "You plan trips."}),
        ("gen_ai.user.message", {"content": "Book a flight"}),
        ("gen_ai.choice", {"index": 0, "message": json.dumps({"tool_calls": [call]})}),
        ("gen_ai.choice", {"gen_ai.event.content": json.dumps({"message": {"content": "Hi"}})}),
        ("audit", {"who": "me"}),
    ]
    chat["events"] = [
        {
            "timeUnixNano": str(START),
            "name": name,
            "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
        }
        for name, attrs in events
    ]
    (event,) = _otlp(tmp_path / "trace.json", chat).events
    assert event.input == [
        {"role": "system", "content": "You plan trips."},
        {"role": "user", "content": "Book a flight"},
    ]
    assert event.output == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "name": "book", "arguments": {}}],
        },
        {"role": "assistant", "content": "Hi"},
    ]
    assert [e["name"] for e in event.metadata["span_events"]] == ["audit"]  # the others: read


def _console(span_id: str, name: str, parent: str | None, **more: Any) -> dict[str, Any]:
    """A span as ``ConsoleSpanExporter`` prints it (``ReadableSpan.to_json()``)."""
    return {
        "name": name,
        "context": {"trace_id": f"0x{TRACE}", "span_id": f"0x{span_id}", "trace_state": "[]"},
        "kind": "SpanKind.INTERNAL",
        "parent_id": f"0x{parent}" if parent else None,
        "start_time": "2026-05-04T03:51:19.309091Z",
        "end_time": "2026-05-04T03:51:19.409171Z",
        "status": {"status_code": "UNSET"},
        "attributes": {},
        "events": [],
        "links": [],
        "resource": {"attributes": {"service.name": "travel-agent"}, "schema_url": ""},
        **more,
    }


def test_the_console_span_exporters_output_is_one_run(tmp_path: Path) -> None:
    # Before: "not valid JSON: unexpected content after document at line 19".
    tool = _console(
        "e6bb51d105088ff1",
        "execute_tool search_flights",
        AGENT,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"},
        status={"status_code": "ERROR", "description": "TimeoutError: API timed out"},
        events=[
            {
                "name": "exception",
                "timestamp": "2026-05-04T03:51:19.409000Z",
                "attributes": {
                    "exception.type": "TimeoutError",
                    "exception.message": "API timed out",
                    "exception.stacktrace": "Traceback ...",
                },
            }
        ],
    )
    agent = _console(
        AGENT,
        "invoke_agent planner",
        None,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"},
    )
    path = tmp_path / "console.log"  # the spans as they ended: the child first
    path.write_text("".join(json.dumps(s, indent=4) + "\n" for s in (tool, agent)))
    (run,) = import_file(path)
    t = run.trajectory
    assert t.id == TRACE  # the id OTLP gives the same trace
    assert t.metadata["service_name"] == "travel-agent"
    start, failed = t.events
    assert (start.type, start.agent_name) == (EventType.AGENT_START, "planner")
    assert failed.type is EventType.TOOL_CALL and failed.parent_id == AGENT
    assert failed.metadata["span_kind"] == "INTERNAL"
    assert failed.error is not None
    assert failed.error.message == "TimeoutError: API timed out"
    assert failed.error.type == "TimeoutError"


def test_values_one_after_another_name_the_line_a_broken_one_starts_on(tmp_path: Path) -> None:
    spans = [json.dumps(_console(f"{i:016x}", f"step {i}", None), indent=4) for i in (1, 2)]
    path = tmp_path / "console.json"
    path.write_text(spans[0] + "\n" + spans[1][:-40] + "\n")
    with pytest.raises(InputError) as caught:
        import_file(path)
    assert caught.value.lineno == spans[0].count("\n") + 2
    assert "not valid JSON" in str(caught.value)


def test_a_console_trace_split_across_files_is_one_run_and_a_bad_span_skips_its_trace(
    tmp_path: Path,
) -> None:
    """A process that logs to a new file each day (or a log rotated mid-run) splits a
    trace; before, each file was a run of its own under the same id, the second
    renamed, each holding part of the run."""
    agent = _console(
        AGENT, "invoke_agent planner", None, attributes={"gen_ai.agent.name": "planner"}
    )
    tool = _console(
        "e6bb51d105088ff1",
        "execute_tool search",
        AGENT,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"},
    )
    b_trace = {"trace_id": "0x" + "b" * 32}
    other = _console("1" * 16, "invoke_agent helper", None, attributes={"gen_ai.agent.name": "x"})
    broken = _console("0" * 16, "execute_tool search", "1" * 16)  # (an all-zero span id)
    other["context"] = {**other["context"], **b_trace}
    broken["context"] = {**broken["context"], **b_trace}
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "spans-1.json").write_text(json.dumps(tool, indent=4) + "\n" + json.dumps(other))
    (folder / "spans-2.json").write_text(json.dumps(agent, indent=4) + "\n" + json.dumps(broken))

    batch = import_paths([folder])

    (run,) = batch.runs
    assert run.trajectory.id == TRACE
    assert [e.type for e in run.trajectory.events] == [EventType.AGENT_START, EventType.TOOL_CALL]
    # the child in one file, its parent in the other
    assert run.trajectory.events[1].parent_id == AGENT
    assert any(f"run '{TRACE}' joined from 2 files" in note for note in batch.notes)
    said = [(path.name, why) for path, why in batch.failures]
    assert len(said) == 2
    assert said[0][0] == "spans-2.json" and "'context.span_id': an invalid id" in said[0][1]
    assert said[1][0] == "spans-2.json"
    assert f"trace '{'b' * 32}' not imported: one of its spans could not be read" in said[1][1]


def test_a_bad_span_is_said_of_its_own_file_beside_one_whose_name_begins_the_same(
    tmp_path: Path,
) -> None:
    """Before: an error of spans.jsonl was filed under spans.json, read first."""
    folder = tmp_path / "logs"
    folder.mkdir()
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
    good = _console(AGENT, "invoke_agent planner", None, attributes=agent)
    (folder / "spans.json").write_text(json.dumps(good, indent=4))
    other = _console("1" * 16, "invoke_agent planner", None, attributes=agent)
    bad = _console("0" * 16, "step", "1" * 16)
    for span in (other, bad):  # (plain hex in capitals: read as lowercase)
        span["context"]["trace_id"] = "B" * 32
    (folder / "spans.jsonl").write_text(json.dumps(other) + "\n" + json.dumps(bad) + "\n")

    batch = import_paths([folder])

    assert [run.trajectory.id for run in batch.runs] == [TRACE]
    assert [path.name for path, _ in batch.failures] == ["spans.jsonl", "spans.jsonl"]
    assert "line 2, field 'context.span_id': an invalid id (all zeros)" in batch.failures[0][1]
    assert f"trace '{'b' * 32}' not imported" in batch.failures[1][1]


def test_a_console_span_with_an_all_zero_id_is_named(tmp_path: Path) -> None:
    # Before: an AssertionError, "unexpected" for the batch, naming nothing.
    path = tmp_path / "console.json"
    spans = [_console("1" * 16, "plan", None), _console("0" * 16, "step", "1" * 16)]
    path.write_text("".join(json.dumps(span, indent=4) + "\n" for span in spans))
    with pytest.raises(InputError) as caught:
        import_file(path)
    # the good span is read, the bad one skipped with where and why
    assert "field 'context.span_id': an invalid id (all zeros)" in str(caught.value)


def test_span_events_not_read_for_a_call_whose_input_its_attributes_gave_are_kept(
    tmp_path: Path,
) -> None:
    # Before: the user-message event was taken as read (and dropped from span_events)
    # though the call's input came from its attributes.
    chat = _span(
        "041547a471edcc2e",
        "chat gpt-4o",
        None,
        0,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Book a flight"}]}]
            ),
        },
    )
    chat["events"] = [
        {
            "timeUnixNano": str(START),
            "name": name,
            "attributes": [{"key": k, "value": _value(v)} for k, v in attrs.items()],
        }
        for name, attrs in [
            ("gen_ai.user.message", {"content": "Book a flight, please"}),
            ("gen_ai.choice", {"index": 0, "message": json.dumps({"content": "Booked."})}),
        ]
    ]
    (event,) = _otlp(tmp_path / "trace.json", chat).events
    assert event.input == [{"role": "user", "content": "Book a flight"}]
    assert "Booked." in json.dumps(event.output)
    assert [e["name"] for e in event.metadata["span_events"]] == ["gen_ai.user.message"]


def test_a_trace_whose_agent_span_has_no_input_takes_its_goal_from_the_first_question(
    tmp_path: Path,
) -> None:
    # Before: no goal at all (the run listed and diagnosed as "(no goal)").
    agent = _span(
        AGENT,
        "invoke_agent planner",
        None,
        0,
        **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"},
    )
    chat = _span(
        "041547a471edcc2e",
        "chat gpt-4o",
        AGENT,
        1,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(
                [
                    {"role": "system", "parts": [{"type": "text", "content": "You plan trips."}]},
                    {
                        "role": "user",
                        "parts": [{"type": "text", "content": "Book a flight to Oslo"}],
                    },
                ]
            ),
        },
    )
    t = _otlp(tmp_path / "trace.json", agent, chat)
    assert t.goal == "Book a flight to Oslo"


def test_a_model_answer_cut_at_the_token_limit_keeps_why_it_ended(tmp_path: Path) -> None:
    # Before: read as its text alone, "length" lost: a cut answer looked finished.
    def chat(span_id: str, at: int, finish: str) -> dict[str, Any]:
        said = [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "The fare is"}],
                "finish_reason": finish,
            }
        ]
        return _span(
            span_id,
            "chat gpt-4o",
            None,
            at,
            **{"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(said)},
        )

    cut, done = _otlp(
        tmp_path / "trace.json",
        chat("0000000000000001", 0, "length"),
        chat("0000000000000002", 1, "stop"),
    ).events
    assert cut.output == {"content": "The fare is", "finish_reason": "length"}
    assert done.output == "The fare is"  # (an answer that ended as answers do: its text)


def test_an_answer_with_empty_fields_beside_its_text_is_still_read_as_its_text(
    tmp_path: Path,
) -> None:
    # Review finding: `"tool_calls": []` or a `name` kept the answer a dict.
    said = [
        {
            "role": "assistant",
            "name": "bot",
            "tool_calls": [],
            "finish_reason": "stop",
            "parts": [{"type": "text", "content": "Paris"}],
        }
    ]
    chat = _span(
        "0000000000000001",
        "chat gpt-4o",
        None,
        0,
        **{"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(said)},
    )
    (event,) = _otlp(tmp_path / "trace.json", chat).events
    assert event.output == "Paris"
