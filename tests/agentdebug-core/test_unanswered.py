"""A model call refused because the conversation holds a tool call no tool
answered (OpenAI's 400, Anthropic's, LangChain's INVALID_CHAT_HISTORY): the
diagnosis says which call, where it was asked and that every later call fails so,
its fix says how to answer and repair, and no rerun is planned for it."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug.detect import RulePack
from agentdebug.detect.signals import CODE_FIX
from agentdebug.detect.unanswered import NO_RERUN, unanswered_ids
from agentdebug.diagnose import diagnose
from agentdebug.schema import AgentTrajectory, EventType, Outcome, OutcomeStatus
from conftest import ev, traj

OPENAI = (
    "Error code: 400 - An assistant message with 'tool_calls' must be followed by tool "
    "messages responding to each 'tool_call_id'. The following tool_call_ids did not have "
    "response messages: call_Ab12"
)
ANTHROPIC = (
    "Error code: 400 - messages.2: `tool_use` ids were found without `tool_result` blocks "
    "immediately after: toolu_01Ab12"
)
LANGCHAIN = (
    "Found AIMessages with tool_calls that do not have a corresponding ToolMessage. Here are "
    "the first few of those tool calls: [{'name': 'get_weather', 'args': {'city': 'Atlantis'}, "
    "'id': 'call_Ab12', 'type': 'tool_call'}]"
)


def refused(error: str, call_id: str, metadata: dict[str, Any] | None = None) -> AgentTrajectory:
    """The agent asks for a tool whose result the app drops; its next model call
    is refused."""
    asked = {"role": "assistant", "tool_calls": [{"id": call_id, "name": "get_weather"}]}
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="weather in Atlantis?"),
        ev(1, EventType.LLM_RESPONSE, "agent", output=asked),
        ev(2, EventType.TOOL_CALL, "agent", input={"city": "Atlantis"}, parent_id="e1"),
        ev(3, EventType.LLM_RESPONSE, "agent", error=error, metadata=metadata or {}),
    )
    return run.model_copy(update={"outcome": Outcome(status=OutcomeStatus.FAILURE)})


@pytest.mark.parametrize(
    ("error", "call_id"),
    [(OPENAI, "call_Ab12"), (ANTHROPIC, "toolu_01Ab12"), (LANGCHAIN, "call_Ab12")],
)
def test_the_refused_history_is_named_with_the_call_and_where_it_was_asked(
    error: str, call_id: str
) -> None:
    report = diagnose(refused(error, call_id))
    assert report.symptom is not None and report.symptom.rule_id == "tool_call_left_unanswered"
    said = report.symptom.message
    assert f"get_weather ({call_id})" in said and "asked by agent at step 1" in said
    assert "every later call on it fails the same way" in said
    assert report.summary.startswith("The failure shows at step 3: agent could not call its model")
    fix = report.fix.directive if report.fix is not None else ""
    assert f"replace the message that asked for {call_id} with one that asks for no tool" in fix
    assert "handle_tool_errors=True" in fix and "the call asked at step 1 was never answered" in fix
    root = report.root_cause
    assert root is not None and root.step_index == 3
    # (asked in this run: a rerun from before the call may go otherwise, so one is planned)
    assert CODE_FIX not in root.metadata


def test_where_an_integration_says_the_call_was_asked_in_an_earlier_run() -> None:
    """A LangGraph thread's earlier turn left the call: the error event says so."""
    asked_in = {
        "run": "r7",
        "step": 1,
        "agent": "agent",
        "event": "e2",
        "call": {"id": "call_7", "name": "get_weather"},
        "tool_error": "ValueError: unknown city 'Atlantis'",
    }
    run = traj(
        ev(0, EventType.USER_INPUT, None, input="and in Paris?"),
        ev(1, EventType.ERROR, "agent", error=LANGCHAIN.replace("call_Ab12", "call_7"),
           metadata={"unanswered_calls": ["call_7"], "asked_in": asked_in}),
    )  # fmt: skip
    (found,) = [f for f in RulePack().detect(run) if f.rule_id == "tool_call_left_unanswered"]
    assert found.metadata[CODE_FIX] == NO_RERUN  # (no step of this run made it: no rerun)
    assert "nothing this step did caused it" in found.metadata["fix"]
    assert found.message == (
        "agent could not call its model: the conversation holds get_weather (call_7), asked "
        "by agent at step 1 of run r7, whose tool raised (ValueError: unknown city "
        "'Atlantis') instead, which no tool message answers, and the model's API refuses "
        "such a history; every later call on it fails the same way"
    )


def test_ids_are_read_from_each_apis_words() -> None:
    assert unanswered_ids(OPENAI) == ["call_Ab12"]
    assert unanswered_ids(ANTHROPIC) == ["toolu_01Ab12"]
    assert unanswered_ids(LANGCHAIN) == ["call_Ab12"]
    # an argument named "id" is no call's id (before: read as the first one)
    by_id = LANGCHAIN.replace("{'city': 'Atlantis'}", "{'id': 'A123', 'tags': [1, 2]}")
    assert unanswered_ids(by_id) == ["call_Ab12"]


def test_another_error_is_not_taken_for_it() -> None:
    run = refused("Error code: 400 - 'tool_choice' is only allowed when 'tools' are given", "x")
    assert not [f for f in RulePack().detect(run) if f.rule_id == "tool_call_left_unanswered"]
