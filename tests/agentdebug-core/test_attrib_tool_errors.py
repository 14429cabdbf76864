"""Tool errors a tool reports as data (a JSON error object, a bare HTTP status
line) are tool errors, and what the run did after one is diagnosed as it is for
an ``Error:`` text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.io import import_file
from agentdebug.schema import AgentTrajectory


def weather_run(tmp_path: Path, tool_text: str) -> AgentTrajectory:
    """A chat export: one tool call, its result, then an answer that invents the data."""
    messages = [
        {"role": "user", "content": "weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "get_weather", "content": tool_text},
        {"role": "assistant", "content": "The weather in Paris is sunny, 22C."},
    ]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"messages": messages}))
    return import_file(path)[0].trajectory


@pytest.mark.parametrize(
    ("tool_text", "mode", "quote"),
    [
        ("503 Service Unavailable", "system.service_unavailable", "503 Service Unavailable"),
        ("HTTP/1.1 404 Not Found", "system.resource_not_found", "HTTP/1.1 404 Not Found"),
        (
            '{"error": "503 Service Unavailable"}',
            "system.service_unavailable",
            "503 Service Unavailable",
        ),
        (
            '{"error": "ValidationError: date must be YYYY-MM-DD"}',
            "action.malformed_tool_call",
            "ValidationError: date must be YYYY-MM-DD",
        ),
        (
            '{"status": "error", "message": "Connection refused"}',
            "system.service_unavailable",
            "Connection refused",
        ),
        (
            '{"error": {"type": "timeout", "message": "upstream took 30s"}}',
            "system.timeout",
            "upstream took 30s",
        ),
        (
            '{"status": 502, "detail": "upstream down"}',
            "system.service_unavailable",
            "upstream down",
        ),
        ('{"status": "failed"}', "system.tool_error", '{"status": "failed"}'),
        ('{"ok": false, "error": "no such city"}', "system.tool_error", "no such city"),
    ],
)
def test_an_error_reported_as_data_is_a_tool_error_and_the_made_up_answer_is_flagged(
    tmp_path: Path, tool_text: str, mode: str, quote: str
) -> None:
    report = diagnose(weather_run(tmp_path, tool_text))
    found = {(f.mode_id, f.step_index) for f in report.findings}
    assert (mode, 2) in found
    assert ("verification.premature_success", 3) in found
    error = next(f for f in report.findings if f.step_index == 2)
    assert error.message.startswith("get_weather failed: ")
    assert (error.evidence[0].quote or "").startswith(quote)
    assert all(e.grounded for f in report.findings for e in f.evidence)
    assert report.root_cause is not None
    assert "NoFailureFound" not in (report.summary or "")


@pytest.mark.parametrize(
    "tool_text",
    [
        '{"errors_count": 0, "temp_c": 22}',
        '{"error": null, "temp_c": 22}',
        '{"error": false, "temp_c": 22}',
        '{"error": "", "temp_c": 22}',
        '{"status": "ok", "message": "sunny"}',
        '{"status": 200, "temp_c": 22}',
        "500 Days of Summer is showing at 22:00",
        "Sunny, 22C. No error reported by the station.",
    ],
)
def test_data_that_merely_mentions_an_error_is_not_one(tmp_path: Path, tool_text: str) -> None:
    report = diagnose(weather_run(tmp_path, tool_text))
    assert report.findings == []


@pytest.mark.parametrize("declared", [True, False])
def test_a_call_of_a_tool_that_does_not_exist_gets_a_fix_naming_the_tools_that_do(
    declared: bool,
) -> None:
    """The model made up a tool name: the fix names the tools the agent has (declared,
    else those that answered in the run), not "match its schema exactly"."""
    from agentdebug.schema import AgentEvent, AgentInfo, EventType, Outcome, OutcomeStatus

    def call(i: int, tool: str, arg: str) -> AgentEvent:
        return AgentEvent(
            id=f"c{i}",
            type=EventType.TOOL_CALL,
            step_index=i,
            agent_name="support",
            metadata={"tool_name": tool},
            input={"query": arg},
        )

    def result(i: int, tool: str, text: str) -> AgentEvent:
        return AgentEvent(
            id=f"r{i}",
            type=EventType.TOOL_RESULT,
            step_index=i,
            agent_name="support",
            parent_id=f"c{i}",
            metadata={"tool_name": tool},
            output=text,
        )

    events = [
        AgentEvent(id="u", type=EventType.USER_INPUT, step_index=0, input="status of order 1234?"),
        call(1, "search_kb", "order 1234"),
        result(1, "search_kb", "Policy: orders ship within 3-5 days."),
        call(2, "lookup_order_status", "1234"),
        result(2, "lookup_order_status", "Error: Unknown tool 'lookup_order_status'"),
        AgentEvent(
            id="f",
            type=EventType.FINAL_ANSWER,
            step_index=3,
            agent_name="support",
            output="Your order has shipped.",
        ),
    ]
    agents = [AgentInfo(name="support", tools=["search_kb", "get_order"])] if declared else []
    t = AgentTrajectory(
        id="t",
        goal="g",
        events=events,
        agents=agents,
        outcome=Outcome(status=OutcomeStatus.FAILURE),
    )
    report = diagnose(t)
    root = report.root_cause
    assert root is not None and (root.step_index, root.mode_id) == (2, "action.malformed_tool_call")
    assert report.fix is not None
    directive = report.fix.directive
    assert "instead of 'lookup_order_status'" in directive
    assert "schema exactly" not in directive
    assert "search_kb" in directive
    assert ("get_order" in directive) is declared
