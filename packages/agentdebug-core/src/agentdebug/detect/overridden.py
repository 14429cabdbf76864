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
argument (a text or a number of 100 characters or fewer, under a key that names
something of its own, not ``id``, ``name``, ``text``, ``query``...) whose key the
step's own input holds with other values only (its node's input, or its model's
prompt; for a graph node whose start records no input, the state the nodes before
it wrote, every value each key was given, since a reducer may keep them all, as it
keeps parallel branches' results), one of them named by the failure's reason or
reference as a word of its own ("500" is not named by "1500"; "128,000" names
128000) and held by none of the call's arguments. Data given, not decisions made:
a value that was an earlier tool call's argument (in this run, or in a tool call a
message of the input holds: an earlier city asked about, an earlier page, an earlier
recipient, a turn the user has since changed) is not one. The step that made the
call is blamed: the model call that asked for it, else the call itself (a node's
own code). A text holding a JSON object or array (a tool's result, as a ToolNode's
message holds it) is read as its fields: a refund of 179.98 where the charges listed
``"amount": 89.99``, which the failure names, is this. And when the failure names
none of the values given but names a figure the call's own result holds (what the
call made went wrong: a paycheck of $2,496.00 the pay tool computed right from the
hours it was passed), a number the step was given as the key's one number (the
timesheet's ``"overtime_hours": 6.5``) where the call passed another (0) is this
too, with confidence 0.45 instead of 0.55. A number the run's input says (the user
asked for 40 seats) is the user's, not overridden; numbers compare by value (120 is
120.0; a code's leading zero, "02139", is kept).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentdebug.detect.lost import wanted_values
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import tool_name
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten, json_of

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "given_value_overridden"
MOST_CALLS = 200  # tool calls looked at in a run
_LONGEST = 100  # characters of a value compared
_STATE = 2000  # events before a call read for the state its node was given
_STEP = 1000  # events before a call read for the rest of its step
_VISITS = 20_000  # parts of one payload read
_PARSED = 100_000  # characters of a text read as JSON
# keys every object has, whose values name no one thing the step was to keep
_GENERIC = frozenset(
    {"id", "name", "type", "kind", "text", "content", "message", "role", "title"}
    | {"description", "status", "value", "data", "result", "output", "input", "query"}
    | {"q", "prompt", "tool_call_id", "tool", "index"}
)
# where a payload holds tool calls, whose arguments are decisions, not data given
_CALLS = frozenset(
    {"tool_calls", "invalid_tool_calls", "tool_call_chunks", "function_call", "function"}
    | {"args", "arguments", "additional_kwargs"}
)
_GIVERS = frozenset({EventType.AGENT_START, EventType.LLM_RESPONSE, EventType.LLM_CALL})
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL})
_GROUPED = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")  # "128,000" -> "128000"
_FIGURE = re.compile(r"-?\d+(?:\.\d+)?")
_SAID_NUMBER = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w]|[.,]\d)")


def _leaves(value: Any, *, skip: frozenset[str] = frozenset()) -> Iterator[tuple[str, str]]:
    """(key, value as text) of the texts and numbers of a payload, at any depth (the
    key a value is under, an item of a list under the list's; a text holding a JSON
    object or array, a tool's result, read as what it holds), not inside keys in
    ``skip``; at most ``_VISITS`` parts of it read."""
    stack: list[tuple[str, Any, int]] = [("", value, 0)]
    visits = 0
    while stack and visits < _VISITS:
        key, item, depth = stack.pop()
        visits += 1
        if isinstance(item, dict):
            if depth < 12:
                stack.extend(
                    (str(k), v, depth + 1)
                    for k, v in reversed(list(item.items())[:500])
                    if str(k) not in skip
                )
        elif isinstance(item, (list, tuple)):
            if depth < 12:
                stack.extend((key, v, depth + 1) for v in reversed(item[:500]))
        elif isinstance(item, str) and item[:1] in "[{" and depth < 12:
            parsed = json_of(item, _PARSED)  # (a tool's result as a ToolMessage's content)
            if parsed is not None:
                stack.append((key, parsed, depth + 1))
            elif (text := _text(item)) is not None:
                yield key, text
        else:
            text = _text(item)
            if text is not None:
                yield key, text


def _pairs(value: Any) -> Iterator[tuple[str, str]]:
    """The leaves of a payload under keys that name something of their own, not
    inside its tool calls."""
    return ((k, v) for k, v in _leaves(value, skip=_CALLS) if k and k.lower() not in _GENERIC)


def _text(value: Any) -> str | None:
    """A text or a number as text, when short enough to compare."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    if isinstance(value, int) and abs(value) >= 10**40:
        return None
    text = str(value).strip()
    return text if 0 < len(text) <= _LONGEST else None


def _named(text: str, value: str) -> bool:
    """Whether ``text`` (lowercased, its digit groups joined) names ``value`` as a word
    of its own: "500" is not in "1500", nor "#inc-44" in "#inc-4411"."""
    low = _GROUPED.sub("", value.lower())
    at = text.find(low)
    while at >= 0:
        end = at + len(low)
        if not (at and text[at - 1].isalnum()) and not (end < len(text) and text[end].isalnum()):
            return True
        at = text.find(low, at + 1)
    return False


def rule_given_value_overridden(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's call that took another value than its step was given, when the
    failure names the value given."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    failure = _GROUPED.sub("", f"{run.outcome.reason or ''} {run.reference_answer or ''}".lower())
    if not failure.strip():
        return
    events = run.events
    state = _State(events)
    made = [p for v, p in wanted_values(f"{run.outcome.reason or ''}") if v[:1].isdigit()]
    asked_before: dict[str, set[str]] = {}  # key -> the values earlier calls were given
    calls = 0
    for at, call in enumerate(events):
        if call.type is not EventType.TOOL_CALL:
            continue
        calls += 1
        if calls > MOST_CALLS:
            return
        args = call.input
        asked = list(_pairs(args)) if isinstance(args, dict) else []
        found = _overridden(events, at, asked, failure, asked_before, state) if asked else None
        named = found is not None
        if found is None and asked and _made_named(events, at, made):
            found = _overridden(events, at, asked, None, asked_before, state)
        if found is not None:
            key, value, other, given_by = found
            yield _finding(_decider(events, at), call, key, value, other, given_by, named)
            return
        for key, value in asked:
            asked_before.setdefault(key, set()).add(_same(value))


def _overridden(
    events: list[AgentEvent],
    at: int,
    asked: list[tuple[str, str]],
    failure: str | None,
    asked_before: dict[str, set[str]],
    state: _State,
) -> tuple[str, str, str, AgentEvent] | None:
    """(key, the call's value, the value given, the event that gave it) of the call
    at ``at``, when it took another value than its step was given, one the failure
    names; else None. Without ``failure`` (a call whose result the failure names):
    a number where the step was given one other number under its key."""
    held = {_same(text) for _, text in _leaves(events[at].input)}
    given = _given(events, at, {key for key, _ in asked}, state)
    for key, value in asked:
        values = given.get(key, {})
        if _same(value) in {_same(v) for v in values}:
            continue  # (one of those given, 120 as 120.0 too: a list's item, each in its call)
        if failure is None:  # (one number given, and the call's another)
            figures = [v for v in values if _number(v)]
            if len(figures) != 1 or not _number(value) or _same(value) in state.asked_by_user:
                continue  # (a number the user gave in words: "make it 40 seats")
            values = {figures[0]: values[figures[0]]}
        for other, by in values.items():
            same = _same(other)
            if (
                (len(other) >= 3 or failure is None)
                and same not in held
                and same not in asked_before.get(key, ())
                and (failure is None or _named(failure, other))
            ):
                return key, value, other, by
    return None


def _same(value: str) -> str:
    """A value as compared: a number by its value (120, 120.0 and 120.00 alike), a
    text without case."""
    if _number(value) and not re.match(r"-?0\d", value):  # ("02139" is a code, not 2139)
        try:
            return format(Decimal(value).normalize(), "f")
        except ArithmeticError:
            pass
    return value.lower()


def _number(value: str) -> bool:
    return _FIGURE.fullmatch(value) is not None


def _made_named(events: list[AgentEvent], at: int, made: list[re.Pattern[str]]) -> bool:
    """Whether the result of the call ``events[at]`` holds a figure the failure names
    (what the call made is what went wrong: a paycheck computed from the hours the
    model passed)."""
    if not made:
        return False
    call = events[at]
    link = call.metadata.get("tool_call_id")
    for event in events[at + 1 : at + _STEP]:
        if event.type is EventType.TOOL_RESULT and (
            event.parent_id == call.id or (link and event.metadata.get("tool_call_id") == link)
        ):
            said = flatten(event.output, _PARSED)
            return any(p.search(said) for p in made)
    return False


def _given(
    events: list[AgentEvent], at: int, keys: set[str], state: _State
) -> dict[str, dict[str, AgentEvent]]:
    """What the step of ``events[at]`` was given under ``keys``: its agent's start's
    input and its model calls' prompts at that
    step, before the call. A graph node's start that records no input read the
    state: what the nodes before it wrote there (every value of each key, the latest
    writer's named for it: a reducer may have kept them all, as it keeps parallel
    branches' results)."""
    call = events[at]
    out: dict[str, dict[str, AgentEvent]] = {}
    start: AgentEvent | None = None
    for back in range(at - 1, max(0, at - _STEP) - 1, -1):
        event = events[back]
        if event.agent_name != call.agent_name or event.step_index != call.step_index:
            continue
        if event.type in _GIVERS:
            for key, value in state.pairs(back):
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
        self._pairs: dict[int, list[tuple[str, str]]] = {}
        self._asked_by_user: set[str] | None = None
        self._by_key: dict[str, list[tuple[int, str, AgentEvent]]] | None = None

    def pairs(self, at: int) -> list[tuple[str, str]]:
        """The pairs of the input of the event at ``at``, read once (the calls of one
        step share its prompts)."""
        if at not in self._pairs:
            self._pairs[at] = list(_pairs(self.events[at].input))
        return self._pairs[at]

    @property
    def asked_by_user(self) -> set[str]:
        """The numbers the run's input says, as :func:`_same` writes them."""
        if self._asked_by_user is None:
            said = " ".join(
                flatten(e.input, _PARSED) for e in self.events if e.type is EventType.USER_INPUT
            )
            self._asked_by_user = {_same(n.replace(",", "")) for n in _SAID_NUMBER.findall(said)}
        return self._asked_by_user

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
    for event in reversed(events[max(0, at - _STEP) : at]):
        if event.id == call.parent_id and event.type in _MODEL:
            return event
        if event.agent_name != call.agent_name or event.step_index != call.step_index:
            continue
        if event.type in _MODEL and event.error is None:
            return event
        if event.type is EventType.AGENT_START:
            break
    return call


def _shown(value: str) -> str:
    """A value as the message says it: a number bare, a text quoted."""
    return value if _number(value) else repr(value)


def _finding(
    blamed: AgentEvent,
    call: AgentEvent,
    key: str,
    value: str,
    other: str,
    given_by: AgentEvent,
    named: bool,
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
        f"{agent} called {tool} with {key}={_shown(value)}, though {where} gave "
        f"{key}={_shown(other)}, "
        + ("which the failure names" if named else "and the failure names what the call made"),
        confidence=0.55 if named else 0.45,
        evidence=[quoted(given_by, field, other), quoted(call, "input", value)],
        metadata={
            "fix": (
                f"At step {blamed.step_index}, {agent}: call {tool} with {key}={_shown(other)}, "
                f"the value the step was given, not {_shown(value)}."
            )
        },
    )
