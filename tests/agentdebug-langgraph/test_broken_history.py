"""A tool that raised in the prebuilt agent's tools node (its default lets the
error through) leaves its call unanswered on the thread, and every later turn
fails at its first model call: the diagnosis of such a turn names the call and
the earlier run that asked for it, and the closed loop plans no rerun, which
would meet the same history."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.detect.unanswered import NO_RERUN
from agentdebug.rerun import closed_loop
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_graphs import ToolBindingFake, call, weather

INVALID = "do not have a corresponding ToolMessage"


def chat_agent() -> Any:
    model = ToolBindingFake(
        messages=iter([call("weather", {"city": "Atlantis"}, "call_7"), AIMessage("Sunny.")])
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(model, [weather], checkpointer=InMemorySaver())


def turns(dbg: AgentDebug, asynchronous: bool) -> tuple[Any, AgentDebugCallback, BaseException]:
    """Turn 1's tool raises (no city 'Atlantis'); turn 2, another question, fails
    on the history turn 1 left."""
    agent, cb = chat_agent(), AgentDebugCallback(dbg)
    config: Any = {"configurable": {"thread_id": "chat"}, "callbacks": [cb]}

    def turn(question: str) -> Any:
        asked = {"messages": [HumanMessage(question)]}
        if asynchronous:
            return asyncio.run(agent.ainvoke(asked, config))
        return agent.invoke(asked, config)

    with pytest.raises(KeyError):
        turn("Weather in Atlantis?")
    with pytest.raises(ValueError, match=INVALID) as raised:
        turn("And in Paris?")
    return agent, cb, raised.value


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_a_turn_on_a_broken_history_names_the_run_that_left_the_call(
    dbg: AgentDebug, asynchronous: bool
) -> None:
    agent, cb, error = turns(dbg, asynchronous)
    first, second = cb.run_ids
    run = cb.trajectory(second)
    (met,) = [e for e in run.events if e.type is EventType.ERROR and INVALID in str(e.error)]
    assert met.metadata["unanswered_calls"] == ["call_7"]
    asked = met.metadata["asked_in"]
    assert (asked["run"], asked["call"]["name"], asked["step"]) == (first, "weather", 1)
    assert "Atlantis" in asked["tool_error"]
    # the note on the exception says what happened, not "agent raised ValueError"
    (note,) = [n for n in getattr(error, "__notes__", []) if "agentdebug diagnosis" in n]
    assert f"the conversation holds weather (call_7), asked by agent at step 1 of run {first}" in (
        note
    )
    (report,) = [r for r in cb.reports if r.trajectory_id == second] or cb.wait_for_reports(10)
    assert report.fix is not None and "replace the message that asked for call_7" in (
        report.fix.directive
    )
    # no rerun of turn 2 can change the history it started from
    result = closed_loop(
        run, debugger=dbg, executor=LangGraphRerunExecutor(agent, debugger=dbg), report=report
    )
    assert (result.status, result.detail) == ("no_plan", NO_RERUN)
    assert not result.attempts[-1].branch_id


def test_the_run_that_asked_is_named_after_many_failed_turns(dbg: AgentDebug) -> None:
    """Each turn after the broken one fails too, and is a run of its own: the 23rd
    still names the run that asked (found through the turns before it that met the
    same call; before, only the latest 20 runs were read, so it was lost)."""
    agent, cb, _ = turns(dbg, asynchronous=False)
    config: Any = {"configurable": {"thread_id": "chat"}, "callbacks": [cb]}
    for i in range(22):
        with pytest.raises(ValueError, match=INVALID):
            agent.invoke({"messages": [HumanMessage(f"question {i}")]}, config)
    first, last = cb.run_ids[0], cb.run_ids[-1]
    (met,) = [e for e in cb.trajectory(last).events if e.metadata.get("unanswered_calls")]
    assert met.metadata["asked_in"]["run"] == first
