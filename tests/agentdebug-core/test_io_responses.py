"""Chat logs as other APIs save them: the OpenAI Responses API's items, and an
Anthropic response saved beside its request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.io import import_file
from agentdebug.schema import AgentTrajectory, EventType


def _write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc, indent=2))
    return path


def _load(path: Path) -> AgentTrajectory:
    (run,) = import_file(path)
    return run.trajectory


_ITEMS = [
    {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 18}'},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "18°C in Paris.", "annotations": []}],
    },
]


def test_responses_api_items_are_tool_calls_linked_to_their_outputs(tmp_path: Path) -> None:
    # Before: refused ("record 0, field '[0].type': Field required"), read as events.
    t = _load(_write(tmp_path / "conversation.json", _ITEMS))
    assert [(e.type, e.step_index) for e in t.events] == [
        (EventType.USER_INPUT, 0),
        (EventType.TOOL_CALL, 1),
        (EventType.TOOL_RESULT, 2),
        (EventType.FINAL_ANSWER, 3),
    ]
    _, call, result, answer = t.events
    assert t.goal == "Weather in Paris?"
    assert call.input == {"city": "Paris"}
    assert call.metadata["tool_name"] == "get_weather"
    assert call.metadata["tool_call_id"] == "call_1"
    assert result.parent_id == call.id and result.output == '{"temp": 18}'
    assert t.outcome.final_answer == "18°C in Paris."
    assert "type" not in answer.metadata.get("fields", {})


def test_a_responses_request_saved_with_its_response(tmp_path: Path) -> None:
    # Before: "no importer recognises this file".
    doc = {
        "request": {
            "model": "o4-mini",
            "instructions": "Answer briefly.",
            "input": "Find the latest Python release",
        },
        "response": {
            "id": "resp_1",
            "object": "response",
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "output": [
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": "Search the web first."}],
                },
                {
                    "type": "web_search_call",
                    "id": "ws_1",
                    "status": "completed",
                    "action": {"type": "search", "query": "latest python release"},
                },
                {
                    "type": "mcp_call",
                    "id": "mcp_1",
                    "name": "lookup_docs",
                    "arguments": '{"q": "python"}',
                    "server_label": "docs",
                    "error": "server unavailable",
                },
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Python 3.14."}],
                },
            ],
        },
    }
    t = _load(_write(tmp_path / "exchange.json", doc))
    assert t.goal == "Find the latest Python release"
    assert t.metadata["system_prompt"] == "Answer briefly."
    assert [e.type for e in t.events] == [
        EventType.USER_INPUT,
        EventType.REASONING,
        EventType.TOOL_CALL,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.FINAL_ANSWER,
    ]
    _, thought, search, lookup, failed, _ = t.events
    assert thought.output == "Search the web first."
    assert search.metadata["tool_name"] == "web_search"
    assert search.input == {"action": {"type": "search", "query": "latest python release"}}
    assert lookup.input == {"q": "python"}
    assert failed.parent_id == lookup.id
    assert failed.error is not None and failed.error.message == "server unavailable"
    assert t.outcome.final_answer == "Python 3.14."
    assert t.metadata["fields"]["response"]["usage"] == {"input_tokens": 10, "output_tokens": 5}


def test_responses_items_that_cannot_be_read_are_named(tmp_path: Path) -> None:
    unknown = _write(tmp_path / "unknown.json", [*_ITEMS[:3], {"type": "item_reference"}])
    with pytest.raises(InputError) as caught:
        import_file(unknown)
    assert caught.value.record == 3 and caught.value.field == "[3].type"
    assert "unknown Responses item type 'item_reference'" in str(caught.value)

    no_id = {k: v for k, v in _ITEMS[1].items() if k != "call_id"}
    missing = _write(tmp_path / "missing.json", [_ITEMS[0], no_id])
    with pytest.raises(InputError) as caught:
        import_file(missing)
    assert caught.value.field == "[1].call_id" and "missing" in str(caught.value)

    bad_output = {"type": "function_call_output", "call_id": "call_1", "output": 42}
    wrong = _write(tmp_path / "wrong.json", [*_ITEMS[:2], bad_output])
    with pytest.raises(InputError) as caught:
        import_file(wrong)
    assert caught.value.field == "[2].output"  # (the item's own field, not the message's)


def test_json_lines_of_responses_conversations_are_one_run_each(tmp_path: Path) -> None:
    lines = [
        {"input": "q1", "output": [_ITEMS[3]]},
        {"input": [_ITEMS[0], {**_ITEMS[1], "call_id": 7}]},
        {"input": "q3", "output": [_ITEMS[3]]},
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(RecordsSkipped) as caught:
        import_file(path)
    assert "line 2" in str(caught.value) and "input[1].call_id" in str(caught.value)
    runs = caught.value.runs
    assert [r.trajectory.goal for r in runs] == ["q1", "q3"]


def test_an_anthropic_response_saved_with_its_request_is_the_final_answer(tmp_path: Path) -> None:
    # Before: the response was dropped without a word and the run had no answer.
    doc = {
        "request": {
            "model": "claude-sonnet-4",
            "messages": [{"role": "user", "content": "Say hello"}],
        },
        "response": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "Hello!"}],
            "stop_reason": "end_turn",
        },
    }
    t = _load(_write(tmp_path / "anthropic.json", doc))
    assert [e.type for e in t.events] == [EventType.USER_INPUT, EventType.FINAL_ANSWER]
    assert t.outcome.final_answer == "Hello!"
    assert t.events[-1].metadata["fields"]["stop_reason"] == "end_turn"


def test_a_response_that_used_an_mcp_server_and_a_computer_imports_whole(
    tmp_path: Path,
) -> None:
    """As the API writes them: an MCP call comes after the server's list of tools,
    and may wait for the caller's approval; a computer call's output is a
    screenshot. Before: refused ("unknown Responses item type 'mcp_list_tools'",
    "unknown content part type 'computer_screenshot'")."""
    items = [
        {"role": "user", "content": "Roll 2d4, then look at the screen."},
        {
            "type": "mcp_list_tools",
            "id": "mcpl_1",
            "server_label": "dice",
            "tools": [{"name": "roll", "input_schema": {"type": "object"}}],
        },
        {
            "type": "mcp_approval_request",
            "id": "mcpr_1",
            "server_label": "dice",
            "name": "roll",
            "arguments": '{"diceRollExpression": "2d4"}',
        },
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "server_label": "dice",
            "name": "roll",
            "arguments": '{"diceRollExpression": "2d4"}',
            "output": "5",
            "error": None,
        },
        {
            "type": "computer_call",
            "id": "cu_1",
            "call_id": "call_cu",
            "action": {"type": "screenshot"},
            "status": "completed",
        },
        {
            "type": "computer_call_output",
            "call_id": "call_cu",
            "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVB"},
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": "You rolled 5; the screen shows a desktop."}
            ],
        },
    ]
    t = _load(_write(tmp_path / "conversation.json", items))
    calls = [e for e in t.events if e.type is EventType.TOOL_CALL]
    assert [c.metadata["tool_name"] for c in calls] == [
        "mcp_list_tools",
        "roll",
        "roll",
        "computer",
    ]
    results = {e.parent_id: e for e in t.events if e.type is EventType.TOOL_RESULT}
    listed, asked, rolled, looked = calls
    assert "roll" in str(results[listed.id].output)  # the tools the server offered
    assert results[asked.id].output == "approved"  # the caller's answer to the request
    assert results[rolled.id].output == "5"
    screenshot = results[looked.id]  # the screenshot, kept as the call's result
    assert "computer_screenshot" in json.dumps(screenshot.metadata)
    assert t.outcome.final_answer == "You rolled 5; the screen shows a desktop."
