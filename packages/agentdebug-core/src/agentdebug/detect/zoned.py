"""A step that labelled a time with another zone instead of converting it to that zone.

A payroll graph's clock punches are in UTC (``"2024-04-15T00:00:00Z"``, a Sunday
evening shift in Chicago); its ``localize_punches`` node writes
``datetime.fromisoformat(...).replace(tzinfo=ZoneInfo("America/Chicago"))``:
``"2024-04-15T00:00:00-05:00"``, the same clock digits labelled as Chicago time, five
hours later than the punch. The shift is filed on Monday, the weekend premium is not
paid, and the failure shows three nodes later ("his Sunday-evening shift was paid
like a weekday shift"). A reminder service that converts with the offset's sign the
wrong way round (``utc - offset`` for ``utc + offset``) writes 19:30 for 09:30.
Every step after the slip used the time faithfully; without this rule the free tier
guessed.

The rule keeps to what it can read for certain, in a failed run whose reason (or
reference answer) speaks of a time or a day: a timestamp written with its offset
(ISO 8601: ``2024-04-15T00:00:00Z``, ``2024-04-14 19:00-05:00``; the first
``MOST_TIMES`` of the run) that a step (a model's reply, a tool call's arguments, a
tool's result, a node's update made by its own code) wrote first, at another
instant than every timestamp the run held before it, and that is a timestamp held
before written with another offset: its clock digits kept and its offset changed
(``replace`` for ``astimezone``), or, from a UTC time, its offset added the wrong
way. A step whose timestamps include one converted right (the same instant as one
held before) converts, and is not blamed. The first such step is blamed: a model
(``observation.output_misread``), or a node's or a tool's code
(``reflection.flawed_reasoning``). A time written without its offset ("7:30 PM",
a naive ``2024-04-14T19:00:00``) is not read: its zone cannot be told.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from agentdebug.detect.node_runs import MODEL_TYPES, NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "time_zone_relabelled"
MOST_TIMES = 400  # timestamps of a run read (the first ones)
_READ = 200_000  # characters of an event read
_WRITERS = frozenset(
    {*MODEL_TYPES, EventType.AGENT_END, EventType.TOOL_CALL, EventType.TOOL_RESULT}
)
# an ISO 8601 date and time with its offset: "2024-04-15T00:00:00Z", "...-05:00"
_STAMP = re.compile(
    r"(?<![\d-])\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?"
    r"(?:Z|[+-]\d{2}:?\d{2})(?![\d:])"
)
# a failure that speaks of when: a day, a date, a clock time, a part of the day
_WHEN = re.compile(
    r"\b(?:mon|tue|wed|thu|fri|sat|sun)(?:day|s|\.)?\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug"
    r"|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d|\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2}|\b\d{1,2}\s?[ap]\.?m\b"
    r"|\b(?:morning|afternoon|evening|night|midnight|noon|hours?|times?|clock|time\s?zone"
    r"|today|tomorrow|yesterday|weekend|weekday|early|late|shift|day|week)\b",
    re.IGNORECASE,
)
_ZERO = timedelta(0)


def _stamps(text: str) -> list[tuple[str, datetime]]:
    """The timestamps with an offset that a text writes, as written and read."""
    found = []
    for m in _STAMP.finditer(text):
        try:
            when = datetime.fromisoformat(m.group().replace(" ", "T", 1))
        except ValueError:
            continue
        if when.utcoffset() is not None:
            found.append((m.group(), when))
    return found


def rule_time_zone_relabelled(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's step that changed a timestamp's offset without converting it."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    if not _WHEN.search(f"{run.outcome.reason or ''} {run.reference_answer or ''}"):
        return
    events = run.events
    runs = NodeRuns(events)
    held: dict[str, datetime] = {}  # every timestamp the run wrote before, as written
    count = 0
    for i, event in enumerate(events):
        stamps = _stamps(flatten(_written(event), _READ))
        count += len(stamps)
        if count > MOST_TIMES:
            return
        new = [(text, when) for text, when in stamps if text not in held]
        if new and event.type in _WRITERS and runs.wrote(event, i):
            slip = _slipped(new, list(held.items()))
            if slip is not None:
                yield _finding(events, i, slip)
                return
        held.update(stamps)


def _field(event: AgentEvent) -> str:
    """Where an event writes: the user's input and a call's arguments, else its output."""
    return "input" if event.type in (EventType.USER_INPUT, EventType.TOOL_CALL) else "output"


def _written(event: AgentEvent) -> object:
    return event.input if _field(event) == "input" else event.output


def _slipped(
    new: list[tuple[str, datetime]], before: list[tuple[str, datetime]]
) -> tuple[str, str, str] | None:
    """(the timestamp written, the one it was made from, how) when the step's new
    timestamps hold one relabelled or shifted the wrong way, and none converted right."""
    instants = {when for _, when in before}
    found: tuple[str, str, str] | None = None
    for text, when in new:
        if when in instants:
            return None  # (a conversion done right: this step converts)
        offset = when.utcoffset() or _ZERO
        wall = when.replace(tzinfo=None)
        for source, was in before:
            their = was.utcoffset() or _ZERO
            if their == offset:
                continue
            if was.replace(tzinfo=None) == wall:
                found = found or (text, source, "relabelled")
            elif their == _ZERO and was.replace(tzinfo=None) - offset == wall:
                found = found or (text, source, "shifted")
    return found


def _finding(events: list[AgentEvent], at: int, slip: tuple[str, str, str]) -> Finding:
    event = events[at]
    wrote, source, how = slip
    step = event.step_index
    who = event.agent_name or f"step {step}"
    model = event.type in MODEL_TYPES
    field = _field(event)
    source_at = next((e for e in events[:at] if source in flatten(_written(e), _READ)), event)
    if how == "relabelled":
        what = "kept its clock time and changed its offset: the same digits, another instant"
        fix = (
            f"At step {step}, {who}: it wrote {source!r} as {wrote!r}, the same clock time "
            "labelled with another zone; convert it to the zone (astimezone), do not "
            "relabel it (replace(tzinfo=...))."
        )
    else:
        what = "moved it by its offset the wrong way round"
        fix = (
            f"At step {step}, {who}: it wrote {source!r} as {wrote!r}, the offset applied "
            "with the wrong sign; convert it to the zone (astimezone), local = UTC + offset."
        )
    return rule_finding(
        RULE,
        "observation.output_misread" if model else "reflection.flawed_reasoning",
        event,
        f"{who} at step {step} wrote {wrote!r} from {source!r} (held at step "
        f"{source_at.step_index}): it {what}",
        confidence=0.55,
        evidence=[quoted(event, field, wrote), quoted(source_at, _field(source_at), source)],
        metadata={"fix": fix, "value": wrote, "wanted": source},
    )
