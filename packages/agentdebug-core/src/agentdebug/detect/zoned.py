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
``PER_EVENT`` of an event) that a step (a model's reply, a tool call's arguments, a
tool's result, a node's update made by its own code) wrote first, at another
instant than every timestamp the run held before it, and that is a timestamp held
before written with another offset: its clock digits kept and its offset changed
(``replace`` for ``astimezone``), or, from a UTC time, its offset added the wrong
way; two such timestamps or more, made from two or more held before (one time that
shows another zone's clock digits is chance: a calendar's 15:00 local meeting
beside a request's 15:00Z, a local day's midnight beside a UTC trigger's). A step
whose timestamps include one converted right (the same instant as one held before)
converts, and is not blamed. The first such step is blamed: a model
(``observation.output_misread``), or a node's or a tool's code
(``reflection.flawed_reasoning``). A time written without its offset ("7:30 PM",
a naive ``2024-04-14T19:00:00``) is not read: its zone cannot be told.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from agentdebug.detect.node_runs import MODEL_TYPES, NodeRuns, written, written_field
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "time_zone_relabelled"
MOST_TIMES = 50_000  # timestamps of a run read (then the rule gives up)
PER_EVENT = 2_000  # timestamps of one event read (the first ones)
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
    r"\b(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day|s|\.)?\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug"
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
    held = _Held()
    count = 0
    for i, event in enumerate(events):
        stamps = _stamps(flatten(written(event), _READ))[:PER_EVENT]
        count += len(stamps)
        if count > MOST_TIMES:
            return
        new = [(text, when) for text, when in stamps if text not in held.texts]
        if new and event.type in _WRITERS and runs.wrote(event, i):
            slip = held.slipped(new)
            if slip is not None:
                yield _finding(events, i, slip)
                return
        held.add(stamps)


class _Held:
    """The timestamps the run wrote before: as written, their instants, and by their
    clock digits (what a relabel keeps)."""

    def __init__(self) -> None:
        self.texts: set[str] = set()
        self.instants: set[datetime] = set()
        self.walls: dict[datetime, list[tuple[str, timedelta]]] = {}

    def add(self, stamps: list[tuple[str, datetime]]) -> None:
        for text, when in stamps:
            if text in self.texts:
                continue
            self.texts.add(text)
            self.instants.add(when)
            wall = when.replace(tzinfo=None)
            self.walls.setdefault(wall, []).append((text, when.utcoffset() or _ZERO))

    def slipped(self, new: list[tuple[str, datetime]]) -> tuple[str, str, str] | None:
        """(the first timestamp written, the one it was made from, how) when two or
        more of the step's new timestamps were made from two or more held before, each
        relabelled, or each shifted the wrong way from UTC, and none converted right
        (a time that happens to show another zone's clock digits, a calendar's 15:00
        local beside a request's 15:00Z, or a local day's midnight beside a UTC
        trigger's, is one, not a step's way of converting)."""
        found: dict[str, list[tuple[str, str]]] = {"relabelled": [], "shifted": []}
        for text, when in new:
            if when in self.instants:
                return None  # (a conversion done right: this step converts)
            offset = when.utcoffset() or _ZERO
            wall = when.replace(tzinfo=None)
            source = next((t for t, o in self.walls.get(wall, ()) if o != offset), None)
            if source is not None:
                found["relabelled"].append((text, source))
                continue
            try:
                utc = wall + offset  # (the UTC clock a wrong-way shift started from)
            except OverflowError:  # (year 1 or 9999: a sentinel, not a time)
                continue
            source = next((t for t, o in self.walls.get(utc, ()) if o == _ZERO), None)
            if source is not None and offset != _ZERO:
                found["shifted"].append((text, source))
        for how, pairs in found.items():
            if len({source for _, source in pairs}) >= 2:
                return pairs[0][0], pairs[0][1], how
        return None


def _finding(events: list[AgentEvent], at: int, slip: tuple[str, str, str]) -> Finding:
    event = events[at]
    wrote, source, how = slip
    step = event.step_index
    who = event.agent_name or f"step {step}"
    model = event.type in MODEL_TYPES
    field = written_field(event)
    source_at = next((e for e in events[:at] if source in flatten(written(e), _READ)), event)
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
        evidence=[quoted(event, field, wrote), quoted(source_at, written_field(source_at), source)],
        metadata={"fix": fix, "value": wrote, "wanted": source},
    )
