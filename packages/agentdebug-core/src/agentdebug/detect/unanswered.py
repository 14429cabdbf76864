"""A model call the model's API (or LangChain) refused because the conversation
holds a tool call no tool answered.

Chat APIs require every tool call of an assistant message to be answered by a tool
message before the next model call: OpenAI's 400 ("An assistant message with
'tool_calls' must be followed by tool messages responding to each
'tool_call_id'"), Anthropic's ("tool_use ids were found without tool_result
blocks"), LangChain's ``INVALID_CHAT_HISTORY`` ("Found AIMessages with tool_calls
that do not have a corresponding ToolMessage"). A tool that raised where nothing
turned its error into a tool message (LangGraph's ``ToolNode`` lets errors through
by default) leaves its call unanswered in the thread's history: the run that asked
fails, and so does every later run on the thread, at its first model call,
whatever it is asked. The step that meets the error did nothing wrong, and a rerun
of it meets the same history: the fix is to answer every call (also one whose tool
raised) and to repair the history. An integration that knows where the call was
asked says so in the error event's metadata (``unanswered_calls``, ``asked_in``:
the run, step, agent, event, and what its tool raised); without it the rule reads
the ids from the error's text and looks for the call in the run itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import CODE_FIX
from agentdebug.schema import AgentEvent, EventType, Finding, Severity
from agentdebug.text import clip, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "tool_call_left_unanswered"
BROKEN_HISTORY = "broken_history"  # a finding's metadata: where the call was asked
# why the closed loop plans no rerun (the root cause's CODE_FIX)
NO_RERUN = (
    "the run failed on its conversation's history, which holds a tool call no tool "
    "answered: a rerun from one of its steps starts from the same history; answer every "
    "tool call and repair the history as the fix says, then run the agent again"
)

UNANSWERED_SIGNS = re.compile(
    r"do not have a corresponding ToolMessage|"
    r"must be followed by tool messages responding to each|"
    r"did not have response messages|"
    r"tool_use`? ids were found without `?tool_result",
    re.I,
)
_IDS = re.compile(r"['\"]id['\"]:\s*['\"]([^'\"]+)['\"]|\b((?:call|toolu|tooluse)_[A-Za-z0-9_-]+)")


def unanswered_ids(text: str) -> list[str]:
    """The tool-call ids an error of :data:`UNANSWERED_SIGNS` names, in order."""
    found = [a or b for a, b in _IDS.findall(text)]
    return list(dict.fromkeys(i for i in found if i))


def rule_tool_call_left_unanswered(ctx: RuleContext) -> Iterator[Finding]:
    """The first error saying the conversation holds an unanswered tool call."""
    met = [e for e in ctx.trajectory.events if e.error and UNANSWERED_SIGNS.search(e.error.message)]
    if not met:
        return
    # the integration's event that says where the call was asked, else the first
    event = next((e for e in met if isinstance(e.metadata.get("unanswered_calls"), list)), met[0])
    assert event.error is not None
    ids = event.metadata.get("unanswered_calls") or unanswered_ids(event.error.message)
    ids = [str(i) for i in ids]
    asked = event.metadata.get("asked_in")
    asked = asked if isinstance(asked, dict) else _asked_here(ctx.trajectory.events, ids)
    yield _finding(event, ids, asked)


def _asked_here(events: list[AgentEvent], ids: list[str]) -> dict[str, Any] | None:
    """Where the run itself asked for one of ``ids`` (a model answer's tool calls)."""
    for event in events:
        calls = event.output.get("tool_calls") if isinstance(event.output, dict) else None
        if event.type is not EventType.LLM_RESPONSE or not isinstance(calls, list):
            continue
        for call in calls:
            if isinstance(call, dict) and call.get("id") in ids:
                return {
                    "event": event.id,
                    "step": event.step_index,
                    "agent": event.agent_name,
                    "call": {"id": call.get("id"), "name": call.get("name")},
                }
    return None


def _finding(event: AgentEvent, ids: list[str], asked: dict[str, Any] | None) -> Finding:
    who = event.agent_name or "the agent"
    call = asked.get("call") if asked else None
    name = call.get("name") if isinstance(call, dict) else None
    named = f"{name} ({ids[0]})" if name else (ids[0] if ids else "a tool call")
    more = f" and {len(ids) - 1} more" if len(ids) > 1 else ""
    where = ""
    if asked:
        run = asked.get("run")
        place = f"step {asked.get('step')}" + (f" of run {run}" if run else "")
        where = f", asked by {asked.get('agent') or 'the agent'} at {place}"
        if asked.get("tool_error"):
            where += f", whose tool raised ({shorten(str(asked['tool_error']), 120)}) instead"
    message = (
        f"{who} could not call its model: the conversation holds {named}{more}{where}, "
        "which no tool message answers, and the model's API refuses such a history; "
        "every later call on it fails the same way"
    )
    first = ids[0] if ids else "<the call's id>"
    fix = (
        f"At step {event.step_index}, {who}: nothing this step did caused it, and a rerun "
        "meets the same history. Answer every tool call, also one whose tool raises "
        "(LangGraph: ToolNode(tools, handle_tool_errors=True); or catch the error and "
        "return a tool message with the call's id), then repair the conversation: add a "
        f"tool message answering {first} (LangGraph: graph.update_state(config, "
        '{"messages": [ToolMessage(content="the tool failed", '
        f'tool_call_id="{first}")]}}, as_node="tools")), or start a new thread.'
    )
    return rule_finding(
        RULE,
        "system.tool_error",
        event,
        message,
        confidence=0.9,
        severity=Severity.CRITICAL,  # (every later run on the thread fails so: said first)
        evidence=[quoted(event, "error", clip(event.error.message if event.error else "", 300))],
        metadata={"fix": fix, CODE_FIX: NO_RERUN, BROKEN_HISTORY: asked or True},
    )
