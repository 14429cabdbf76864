"""A step whose tool raised (no try in the step function): the record keeps the
model's decision of that step, not only the exception."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug_react import ReactLoop, Step, StepContext
from pydantic import BaseModel


def get_order(order_id: str) -> str:
    raise ValueError(f"order id must be digits, got {order_id!r}")


def step(ctx: StepContext[Any]) -> Step:
    reply = {"thought": "Try the order tool.", "tool": "get_order", "args": "#1234"}
    ctx.messages.append({"role": "assistant", "content": json.dumps(reply)})
    observation = get_order(reply["args"])  # raises: the Step is never returned
    return Step(thought=reply["thought"], action=reply["tool"], observation=observation)


def test_the_reply_appended_before_the_tool_raised_is_recorded(dbg: AgentDebug) -> None:
    loop: ReactLoop[Any] = ReactLoop(step, debugger=dbg, auto_diagnose=False)
    with loop.capture("Where is order 1234?", state={}) as run, pytest.raises(ValueError):
        run.step()
    events = run.session.trajectory().events
    (reply,) = [e for e in events if e.type is EventType.LLM_RESPONSE]
    (error,) = [e for e in events if e.type is EventType.ERROR]
    assert reply.step_index == error.step_index == 1
    assert reply.output["content"] == json.dumps(
        {"thought": "Try the order tool.", "tool": "get_order", "args": "#1234"}
    )
    assert error.parent_id == reply.id  # the error follows from that decision


class Reply(BaseModel):
    """As the OpenAI SDK's ``choices[0].message``: a pydantic model, appended as it came."""

    role: str = "assistant"
    content: str | None = None
    refusal: str | None = None


def test_a_reply_appended_as_a_pydantic_message_is_recorded_too(dbg: AgentDebug) -> None:
    def sdk_step(ctx: StepContext[Any]) -> Step:
        ctx.messages.append(Reply(content="Calling get_order with #1234."))
        return Step(thought="t", action="get_order", observation=get_order("#1234"))

    loop: ReactLoop[Any] = ReactLoop(sdk_step, debugger=dbg, auto_diagnose=False)
    with loop.capture("Where is order 1234?", state={}) as run, pytest.raises(ValueError):
        run.step()
    events = run.session.trajectory().events
    (reply,) = [e for e in events if e.type is EventType.LLM_RESPONSE]
    assert reply.output == {"role": "assistant", "content": "Calling get_order with #1234."}
    (error,) = [e for e in events if e.type is EventType.ERROR]
    assert error.parent_id == reply.id


def test_a_step_that_raised_before_the_model_replied_records_the_error_alone(
    dbg: AgentDebug,
) -> None:
    def broken(ctx: StepContext[Any]) -> Step:
        raise ConnectionError("model unreachable")

    loop: ReactLoop[Any] = ReactLoop(broken, debugger=dbg, auto_diagnose=False)
    with loop.capture("q", state={}) as run, pytest.raises(ConnectionError):
        run.step()
    types = [e.type for e in run.session.trajectory().events]
    assert EventType.LLM_RESPONSE not in types and EventType.ERROR in types


def test_a_step_that_replaced_the_messages_with_no_list_does_not_break_the_next(
    dbg: AgentDebug,
) -> None:
    def careless(ctx: StepContext[Any]) -> Step:
        if ctx.step == 1:
            ctx.messages = None  # type: ignore[assignment]
            return Step(thought="reset", action="noop", observation="ok")
        return Step(final_answer="done")

    loop: ReactLoop[Any] = ReactLoop(careless, debugger=dbg, auto_diagnose=False)
    assert loop.run("q?", state={}).answer == "done"  # before: TypeError from the capture
