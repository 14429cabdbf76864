"""A model that gives the same reply again after its input changed: feedback unheeded.

A writer-critic loop (LangGraph's reflection pattern) fails when the writer's model
re-emits its draft word for word after the critic asked for a change: the loop runs
until its step limit, and each agent's repetition looks alike to a rule that only
counts repeats. What tells them apart is the input: the critic saw the same draft
each time and answered it the same way, which is consistent; the writer saw a new
critique and answered as before, which is the fault (``reflection.no_adaptation``).

The rule keeps to a failed run, a reply of text (not a tool call: a call repeated
after a result is the repeated-action rule's) of at least ``MIN_REPLY`` characters,
equal to the same agent's previous reply, while what the model was given (the
messages' text) differs from what it was given then by at least ``MIN_NEW``
characters that are not its own earlier replies (a supervisor's "next: researcher"
and the worker's own findings coming back are nothing to act on). The first such
reply is found.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "reply_unchanged"
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL})
MIN_REPLY = 30  # characters: a short label ("approve", "route: search") may well repeat
MIN_NEW = 24  # characters of new input for it to be something to act on


def _text(value: Any) -> str:
    """The text of messages (their contents, without ids or roles), or of a value."""
    if isinstance(value, dict) and "content" in value:
        return flatten(value.get("content"), limit=8000)
    if isinstance(value, list):
        return "\n".join(_text(item) for item in value)
    return flatten(value, limit=8000)


def _reply(event: AgentEvent) -> str | None:
    """A model reply's text, when it is text alone (no tool calls)."""
    out = event.output
    if isinstance(out, dict) and (out.get("tool_calls") or out.get("invalid_tool_calls")):
        return None
    return _text(out).strip()


def _new_lines(now: str, before: str) -> list[str]:
    """The lines of ``now`` that ``before`` does not hold (what changed)."""
    seen = {line.strip() for line in before.splitlines()}
    return [line.strip() for line in now.splitlines() if line.strip() and line.strip() not in seen]


def rule_reply_unchanged(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's model reply equal to its agent's previous one, given new input."""
    if ctx.trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return
    last: dict[str, AgentEvent] = {}
    own: dict[str, str] = {}  # agent -> what its model said so far
    for event in ctx.trajectory.events:
        if event.type not in _MODEL or event.error is not None:
            continue
        agent = event.agent_name
        if not agent:
            continue
        before = last.get(agent)
        last[agent] = event
        said = _reply(event)
        earlier = own.get(agent, "")
        own[agent] = f"{earlier}\n{_text(event.output)}"
        if before is None or said is None or len(said) < MIN_REPLY or said != _reply(before):
            continue
        given, given_before = _text(event.input).strip(), _text(before.input).strip()
        if given == given_before:
            continue  # (the same input answered the same way: consistent)
        # (what it was not given before, nor had said itself, in any earlier reply: its
        # replies come back in a chat's history)
        changed = [
            line  # (a line quoting its own reply, "Previous: <draft>", is no news either)
            for line in _new_lines(given, f"{given_before}\n{earlier}")
            if said not in line
        ]
        if sum(len(line) for line in changed) < MIN_NEW:
            continue  # (a routing label, "next: researcher": nothing to act on)
        new = changed[0]
        yield rule_finding(
            RULE,
            "reflection.no_adaptation",
            event,
            f"{agent}'s model gave the same reply at step {event.step_index} as at step "
            f"{before.step_index}, though what it was given had changed (now: "
            f"{shorten(new, 100)!r})",
            confidence=0.75,
            evidence=[
                quoted(event, "output", said[:300]),
                quoted(event, "input", new[:300]),
            ],
            metadata={
                "fix": (
                    f"At step {event.step_index}, {agent}: the reply repeated the one at step "
                    f"{before.step_index} word for word, though the input had changed "
                    f"({shorten(new, 160)!r}). Act on what changed: revise the reply to "
                    "address it, or say why it cannot be done."
                )
            },
        )
        return
