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

import ast
import re
from collections.abc import Collection, Iterator
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
# OpenAI's and Anthropic's ids, as their errors list them
_IDS = re.compile(r"\b((?:call|toolu|tooluse)_[A-Za-z0-9_-]+)")
# LangChain's: a list of the calls, each a dict whose "id" follows its "args" (which
# may have an "id" of its own: an argument of the call)
_LISTED = re.compile(r"tool calls:\s*(\[)")
_CALL_ID = re.compile(r"""['"]id['"]:\s*['"]([^'"]+)['"],\s*['"]type['"]:\s*['"]tool_call""")


def unanswered_ids(text: str) -> list[str]:
    """The tool-call ids an error of :data:`UNANSWERED_SIGNS` names, in order: the
    calls LangChain lists (read as the list they are), else the ids OpenAI and
    Anthropic name."""
    listed = _LISTED.search(text)
    if listed is not None:
        calls = _literal_list(text, listed.start(1))
        if calls is not None:
            ids = [str(c["id"]) for c in calls if isinstance(c, dict) and c.get("id")]
            if ids:
                return list(dict.fromkeys(ids))
        found = _CALL_ID.findall(text)
        if found:
            return list(dict.fromkeys(found))
    return list(dict.fromkeys(_IDS.findall(text)))


def _literal_list(text: str, start: int) -> list[Any] | None:
    """The Python list literal that starts at ``start``, if it reads as one."""
    end = start
    for _ in range(50):  # (each "]" in turn, until the list closes)
        end = text.find("]", end + 1)
        if end < 0:
            return None
        try:
            value = ast.literal_eval(text[start : end + 1])
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        return value if isinstance(value, list) else None
    return None


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
    asked = asked if isinstance(asked, dict) else asked_here(ctx.trajectory.events, ids)
    yield _finding(event, ids, asked, ctx.trajectory.id)


def asked_here(events: list[AgentEvent], ids: Collection[str]) -> dict[str, Any] | None:
    """Where these events asked for one of ``ids`` (a model answer's tool calls):
    its event, step, agent and the call's id and name."""
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


def _finding(
    event: AgentEvent, ids: list[str], asked: dict[str, Any] | None, run_id: str
) -> Finding:
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
    # asked before this run (or where is not known): no step of this run made it
    before = not asked or asked.get("run") not in (None, run_id)
    fix = (
        f"At step {event.step_index}, {who}: "
        + (
            "nothing this step did caused it, and a rerun meets the same history. "
            if before
            else f"the call asked at step {asked.get('step') if asked else '?'} was never "
            "answered. "
        )
        + "Answer every tool call, also one whose tool raises (LangGraph: ToolNode(tools, "
        "handle_tool_errors=True); or catch the error and return a tool message with the "
        "call's id), then repair the conversation: replace the message that asked for "
        f"{first} with one that asks for no tool, under the same id (LangGraph's "
        "add_messages replaces a message by its id: graph.update_state(config, "
        '{"messages": [AIMessage(id=<its id>, content="<what failed>")]}); a tool message '
        "added now would come after the later messages, which the APIs refuse too), or "
        "start a new thread."
    )
    return rule_finding(
        RULE,
        "system.tool_error",
        event,
        message,
        confidence=0.9,
        severity=Severity.CRITICAL,  # (every later run on the thread fails so: said first)
        evidence=[quoted(event, "error", clip(event.error.message if event.error else "", 300))],
        metadata={
            "fix": fix,
            BROKEN_HISTORY: asked or True,
            **({CODE_FIX: NO_RERUN} if before else {}),  # (else a rerun from before it helps)
        },
    )
