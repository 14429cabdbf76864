"""The ready-made text step: model reply in, tool call and observation out."""

from __future__ import annotations

from typing import Any

from agentdebug import AgentDebug, EventType
from agentdebug_react import Message, ReactLoop, text_step


def scripted(*replies: str) -> Any:
    queue = list(replies)

    def model(messages: list[Message]) -> str:
        return queue.pop(0)

    return model


def test_a_text_loop_calls_tools_and_shows_the_model_what_came_back(dbg: AgentDebug) -> None:
    calls: list[Any] = []

    def add(args: Any) -> int:
        calls.append(args)
        return int(args["a"]) + int(args["b"])

    model = scripted(
        'Thought: add them\nAction: add\nAction Input: {"a": 2, "b": 3}',
        "Thought: done\nFinal Answer: 5",
    )
    loop = ReactLoop(text_step(model, {"add": add}), debugger=dbg, success=lambda a: a == "5")
    result = loop.run("2 + 3?")
    assert result.ok is True and calls == [{"a": 2, "b": 3}]
    assert result.messages[1:3] == [
        {
            "role": "assistant",
            "content": 'Thought: add them\nAction: add\nAction Input: {"a": 2, "b": 3}',
        },
        {"role": "user", "content": "Observation: 5"},
    ]
    run = result.trajectory()
    assert run.agents[0].tools == ["add"]
    tool_result = next(e for e in run.events if e.type is EventType.TOOL_RESULT)
    assert tool_result.output == 5 and tool_result.error is None


def test_tool_errors_unknown_tools_and_bad_replies_are_observations(dbg: AgentDebug) -> None:
    def boom(args: Any) -> Any:
        raise ConnectionError("service unavailable")

    model = scripted(
        "Thought: try\nAction: boom\nAction Input: 1",
        "Thought: other\nAction: nope\nAction Input: 1",
        "Action: a\nFinal Answer: b",
        "just musing",
        "Final Answer: gave up",
    )
    loop = ReactLoop(text_step(model, {"boom": boom}), debugger=dbg, auto_diagnose=False)
    result = loop.run("q")
    assert result.answer == "gave up"
    shown = [m["content"] for m in result.messages if m["content"].startswith("Observation:")]
    assert shown[0] == "Observation: Error: ConnectionError: service unavailable"
    assert shown[1].startswith("Observation: Error: unknown tool 'nope' (available tools: boom)")
    assert "could not be parsed" in shown[2] and "line 2: both an Action" in shown[2]
    assert shown[3].startswith("Observation: Error: no Action or Final Answer")
    errors = [e for e in result.trajectory().events if e.error is not None]
    assert [(e.step_index, e.type.value) for e in errors] == [
        (1, "tool.result"),
        (2, "tool.result"),
        (3, "observation"),
        (4, "observation"),
    ]
    assert errors[0].error is not None and errors[0].error.type == "ConnectionError"
    report = dbg.diagnose(result.trajectory())
    assert "action.malformed_tool_call" in report.failure_modes  # the unknown tool
