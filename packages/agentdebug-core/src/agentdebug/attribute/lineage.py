"""Error lineage without a model: the decision that wrote a value a later step
failed on (a node's error quoting what another node's model wrote).

Used by the heuristic attributor: a step that raised on a value it was handed is
not where the mistake was made; the decision that first wrote the value is.
"""

from __future__ import annotations

import re

from agentdebug.detect.signals import DECISION_TYPES, QUOTED
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType
from agentdebug.text import flatten


def writer_of(
    trajectory: AgentTrajectory, error: AgentEvent, position: dict[str, int]
) -> tuple[AgentEvent, str] | None:
    """The decision that first wrote a value the error quotes ("could not convert
    string to float: 'forty-two dollars'"), or names last after a colon ("no such
    table: orderz"), with the value: a model's answer or
    message of another agent, at an earlier step, that said it (as a whole word)
    before any event of the run held it (not the run's input, nor a tool's result
    it passed on). The step that raised was handed the value, so its writer is the
    cause. None when there is none. Not a tool call, nor a model reply asking for
    one: a tool's failure on its arguments is the call's (see remedies)."""
    if error.error is None:
        return None
    message = error.error.message
    if "type(s)" in message:  # ("unsupported operand type(s) for +: 'int' and 'str'")
        return None
    values = []
    for match in QUOTED.finditer(message):
        value = (match.group(1) or match.group(2) or "").strip()
        if message[match.end() :].startswith(" object"):  # ("'NoneType' object ...")
            continue
        if len(value) >= 3 and value not in _NOT_VALUES:
            values.append(value)
    named = _NAMED_LAST.search(message)  # ("no such table: orderz", SQLite's, unquoted)
    if named is not None and named.group(1) not in _NOT_VALUES and named.group(1) not in values:
        values.append(named.group(1))
    if not values:
        return None
    events = trajectory.events
    goal = trajectory.goal or ""
    for value in values:
        word = re.compile(rf"(?<!\w){re.escape(value)}(?!\w)")
        if word.search(goal):
            continue
        for event in events[: position[error.id]]:
            held = flatten(event.input, limit=4000) + " " + flatten(event.output, limit=4000)
            if not word.search(held):
                continue
            writes = (
                event.type in DECISION_TYPES
                and event.type is not EventType.TOOL_CALL
                and event.agent_name
                and event.agent_name != error.agent_name
                and event.step_index < error.step_index
                and not (isinstance(event.output, dict) and event.output.get("tool_calls"))
                and word.search(flatten(event.output, limit=4000))
            )
            if writes:
                return event, value
            break  # (the run, a tool or the agent itself held it first: not written here)
    return None


# the one word a message ends on after a colon where what comes before says it names
# a thing that was not there: what it failed on, said unquoted ("no such table:
# orderz", "404 Not Found: /v2/userz"); not a field's value ("status: pending")
_NAMED_LAST = re.compile(
    r"(?i)(?:no such \w+(?: or \w+)?|not found|unknown \w+|does not exist|doesn't exist"
    r"|not exist|invalid \w+|unrecognized \w+|undefined \w+):\s+([A-Za-z_/][\w./-]{2,})\s*$"
)
_NOT_VALUES = frozenset({"None", "none", "null", "True", "False", "true", "false", "nan"})
