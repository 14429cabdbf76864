"""A call given another value for a key than its own step was given for that key.

An incident-update flow fetches the incident (``"channel": "#inc-4411"``), has a
model write the update, and a plain node posts it: ``post_message(channel=
"#general", ...)``, a default where the incident's channel was meant. The node had
``channel: #inc-4411`` in its own input, and the failure says the update went to
#general, not #inc-4411. The step that was given the value and called with another
is where it was lost (``memory.context_loss``: something established earlier,
contradicted later); before, the model that wrote the text was guessed, its prompt
having held the channel.

The rule keeps to what it can read for certain, in a failed run: a tool call's
argument (a value of 100 characters or fewer under a key that names something of
its own, not ``id``, ``name``, ``text``, ``query``...) whose key the step's own input
(its node's input, or its model's prompt, the step's other calls' arguments in it
included; for a graph node whose start records no input, the state the nodes
before it wrote, every value each key was given, since a reducer may have added
them up: parallel branches' results) holds with other values only, one that the failure's reason or
reference names and that the call's arguments do not hold anywhere. The step that
made the call is blamed: the model call that asked for it, else the call itself
(a node's own code).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import tool_name
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "given_value_overridden"
MOST_CALLS = 200  # tool calls looked at in a run
_LONGEST = 100  # characters of a value compared
_STATE = 2000  # events before a call read for the state its node was given
# keys every object has, whose values name no one thing the step was to keep
_GENERIC = frozenset(
    {"id", "name", "type", "kind", "text", "content", "message", "role", "title"}
    | {"description", "status", "value", "data", "result", "output", "input", "query"}
    | {"q", "prompt", "args", "arguments", "tool_call_id", "tool", "function"}
)
_GIVERS = frozenset({EventType.AGENT_START, EventType.LLM_RESPONSE, EventType.LLM_CALL})


def _pairs(value: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """(key, value as text) of the scalars of a payload, at any depth."""
    if depth > 12:
        return
    if isinstance(value, dict):
        for k, v in list(value.items())[:500]:
            yield from _pairs(v, str(k), depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value[:500]:
            yield from _pairs(item, key, depth + 1)
    elif key and value is not None and not isinstance(value, bool):
        text = str(value) if not isinstance(value, int) or abs(value) < 10**40 else ""
        if text and len(text) <= _LONGEST and key.lower() not in _GENERIC:
            yield key, text


def rule_given_value_overridden(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's call that took another value than its step was given, when the
    failure names the value given."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    failure = f"{run.outcome.reason or ''} {run.reference_answer or ''}".lower()
    if not failure.strip():
        return
    events = run.events
    calls = [i for i, e in enumerate(events) if e.type is EventType.TOOL_CALL][:MOST_CALLS]
    state = _State(events)
    for at in calls:
        call = events[at]
        args = call.input
        if not isinstance(args, dict):
            continue
        asked = list(_pairs(args))
        if not asked:
            continue
        said = compact_json(args).lower()
        given = _given(events, at, {key for key, _ in asked}, state)
        for key, value in asked:
            values = given.get(key, {})
            if value.lower() in {v.lower() for v in values}:
                continue  # (one of those given: a list's item, each in its call)
            for other in values:
                low = other.lower()
                if len(low) < 3 or low in said or low not in failure:
                    continue
                blamed = _decider(events, at)
                yield _finding(blamed, call, key, value, other, given_by=given[key][other])
                return


def _given(
    events: list[AgentEvent], at: int, keys: set[str], state: _State
) -> dict[str, dict[str, AgentEvent]]:
    """What the step of ``events[at]`` was given under ``keys``: its agent's start's
    input and its model calls' prompts at that step, before the call. A graph node's
    start that records no input read the state: what the nodes before it wrote there
    (every value of each key, the latest writer's named for it: a reducer may have
    kept them all, as it keeps parallel branches' results)."""
    call = events[at]
    out: dict[str, dict[str, AgentEvent]] = {}
    start: AgentEvent | None = None
    for event in reversed(events[max(0, at - 64) : at]):
        if event.agent_name != call.agent_name or event.step_index != call.step_index:
            continue
        if event.type in _GIVERS:
            for key, value in _pairs(event.input):
                if key in keys:
                    out.setdefault(key, {}).setdefault(value, event)
        if event.type is EventType.AGENT_START:
            start = event
            break
    if start is not None and start.input is None:
        for key in keys:
            for value, event in state.before(key, at, call.step_index):
                out.setdefault(key, {}).setdefault(value, event)
    return out


class _State:
    """What the nodes' updates wrote, by key, in the order written; read once, when
    first asked."""

    def __init__(self, events: list[AgentEvent]) -> None:
        self.events = events
        self._by_key: dict[str, list[tuple[int, str, AgentEvent]]] | None = None

    def before(self, key: str, at: int, step: int) -> Iterator[tuple[str, AgentEvent]]:
        """(value, the update that wrote it) of ``key``, written before position
        ``at`` (at most ``_STATE`` events before) by an earlier step, latest first."""
        if self._by_key is None:
            self._by_key = {}
            for i, event in enumerate(self.events):
                if event.type is EventType.AGENT_END:
                    for k, value in _pairs(event.output):
                        self._by_key.setdefault(k, []).append((i, value, event))
        written = self._by_key.get(key, [])
        for i, value, event in reversed(written[: bisect.bisect_left(written, (at,))]):
            if i < at - _STATE:
                break
            if event.step_index < step:
                yield value, event


def _decider(events: list[AgentEvent], at: int) -> AgentEvent:
    """The model call of the step that asked for the call; else the call (code)."""
    call = events[at]
    parent = next((e for e in reversed(events[:at]) if e.id == call.parent_id), None)
    if parent is not None and parent.type in (EventType.LLM_RESPONSE, EventType.LLM_CALL):
        return parent
    for event in reversed(events[max(0, at - 64) : at]):
        if event.agent_name != call.agent_name or event.step_index != call.step_index:
            break
        if event.type in (EventType.LLM_RESPONSE, EventType.LLM_CALL) and event.error is None:
            return event
    return call


def _finding(
    blamed: AgentEvent, call: AgentEvent, key: str, value: str, other: str, *, given_by: AgentEvent
) -> Finding:
    agent = blamed.agent_name or call.agent_name or "the step"
    tool = tool_name(call) or "a tool"
    field = "input"
    if given_by.type is EventType.AGENT_START:
        where = f"its input at step {given_by.step_index}"
    elif given_by.type is EventType.AGENT_END:
        field = "output"
        where = f"the state ({given_by.agent_name}'s update at step {given_by.step_index})"
    else:
        where = f"its prompt at step {given_by.step_index}"
    return rule_finding(
        RULE,
        "memory.context_loss",
        blamed,
        f"{agent} called {tool} with {key}={value!r}, though {where} gave "
        f"{key}={other!r}, which the failure names",
        confidence=0.55,
        evidence=[quoted(given_by, field, other), quoted(call, "input", value)],
        metadata={
            "fix": (
                f"At step {blamed.step_index}, {agent}: call {tool} with the {key} the step "
                f"was given ({other!r}), not {value!r}."
            )
        },
    )
