"""A step that read a date written with slashes the other way round: day for month.

A UK supplier's invoice says "Payment due: 07/04/2025" (7 April); an accounts-payable
graph's ``parse_fields`` node parses it with ``%m/%d/%Y`` and writes ``2025-07-04``;
the payment is scheduled for July and the supplier puts the account on stop. A
booking request for "03/04/2025" (3 April, the guest's mother's birthday) is booked
for 4 March. The run fails far from the parse ("was due on 7 April and our notice
says we'll pay on 2025-07-02"), every step after it used the date faithfully, and
without this rule the free tier blamed one of them, or guessed.

The rule keeps to what it can read for certain, in a failed run: a date the run
held written with slashes, dots or dashes whose day and month can be read either way
(both 12 or under, and not equal: "07/04/2025"; the first ``MOST_DATES`` of them),
and a later step (a model's reply, a tool call's arguments, a tool's result, a
node's update made by its own code) that first wrote one reading of it so that it
reads one way only (``2025-07-04``, ``2025/07/04``, "4 July 2025", "July 4th",
"04-JUL-2025"), where the failure (its reason, or the reference answer) names the
other reading so too ("7 April", "7 april", "2025-04-07"), the run had not written
the first reading before the slashed date appeared, and no step after the slashed
date wrote the other reading (a date the run computed rightly, a net-30 due date, or
another row's). That step is blamed: a model (``observation.output_misread``), or a
node's or a tool's code (``reflection.flawed_reasoning``) that read the date in the
wrong order (``%m/%d`` for ``%d/%m``, or the reverse).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.node_runs import MODEL_TYPES, NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "day_month_swapped"
_READ = 200_000  # characters of an event read
_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
# a month's name as a date writes it: capitalised ("April", "APR"), or a whole name
# in lower case ("april"; not "may", the verb, nor a short one, "mar")
_MONTH = (
    "("
    + "|".join(
        f"{n.capitalize()}|{n.upper()}" + (f"|{n}" if len(n) > 4 else "")
        for n in sorted(_MONTHS, key=len, reverse=True)
    )
    + r")\.?"
)
_ORD = r"(?:st|nd|rd|th)?"
# 2025-07-04, 2025/07/04 (a year first reads one way only)
_ISO = re.compile(r"(?<![\d/.-])(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?!\d)")
# 04-JUL-2025, 4-Jul-25 (Oracle's, a spreadsheet's)
_DAY_MON_YEAR = re.compile(rf"(?<![\w-])(\d{{1,2}})-{_MONTH}-(\d{{4}}|\d{{2}})(?![\w-])")
_DAY_MONTH = re.compile(
    rf"(?<![\w.])(\d{{1,2}}){_ORD}(?:\s+of)?\s+{_MONTH}(?:,?\s+(\d{{4}}))?(?![a-z])"
)
_MONTH_DAY = re.compile(
    rf"(?<![\w.])(?<!\d\s){_MONTH}\s+(\d{{1,2}}){_ORD}(?:,?\s+(\d{{4}}))?(?![\w])"
)
_SLASHED = re.compile(r"(?<![\d/.-])(\d{1,2})([/.-])(\d{1,2})\2(\d{4}|\d{2})(?![\d/-])(?!\.\d)")
# steps that write what they read (a tool that parses: its result)
_WRITERS = frozenset(
    {*MODEL_TYPES, EventType.AGENT_END, EventType.TOOL_CALL, EventType.TOOL_RESULT}
)
MOST_DATES = 100  # slashed dates of a run read (the first ones)

Date = tuple[int, int, int | None]  # (month, day, year or None)


def rule_day_month_swapped(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's step that read a slashed date day for month."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    named = _plain_dates(f"{run.outcome.reason or ''} {run.reference_answer or ''}")
    if not named:
        return
    events = run.events
    runs = NodeRuns(events)
    texts = [(flatten(e.input, _READ), flatten(e.output, _READ)) for e in events]
    written = [  # (what the user asked is written by the user)
        _plain_dates(given if e.type is EventType.USER_INPUT else out)
        for e, (given, out) in zip(events, texts, strict=True)
    ]
    seen: set[str] = set()
    before: list[Date] = []  # what the run wrote before the event read
    for i, (given, out) in enumerate(texts):
        for m in (*_SLASHED.finditer(given), *_SLASHED.finditer(out)):
            if m.group() in seen:
                continue
            seen.add(m.group())
            if len(seen) > MOST_DATES:
                return
            readings = _readings(m)
            if readings is None:
                continue
            for read, other in (readings, readings[::-1]):
                if not any(_same(n, other) for n in named):
                    continue  # (the failure does not name the other reading)
                if any(_same(w, read) for w in before):
                    continue  # (the run wrote that date before the slashed one: not read from it)
                at = _first_writer(events, runs, written, read, other, i)
                if at is None or any(
                    _same(d, other) for k in range(i + 1, len(events)) for d in written[k]
                ):
                    continue  # (no step wrote it; or one wrote the wanted reading too)
                yield _finding(events, at, i, m.group(), read, other)
                return
        before.extend(written[i])


def _readings(m: re.Match[str]) -> tuple[Date, Date] | None:
    """A slashed date's two readings, month first and day first; None when only one
    can be meant (a number over 12, or both the same)."""
    a, b, year = int(m.group(1)), int(m.group(3)), int(m.group(4))
    if not (1 <= a <= 12 and 1 <= b <= 12) or a == b:
        return None
    year = year + 2000 if year < 100 else year
    return (a, b, year), (b, a, year)


def _plain_dates(text: str) -> list[Date]:
    """The dates a text writes so that they read only one way: year first (ISO's,
    "2025/07/04"), or with the month's name ("4 July", "July 4th, 2025", "04-JUL-2025")."""
    found: list[Date] = []
    for m in _ISO.finditer(text):
        found.append((int(m.group(3)), int(m.group(4)), int(m.group(1))))
    for m in _DAY_MON_YEAR.finditer(text):
        short = int(m.group(3))
        found.append(
            (_MONTHS[m.group(2).lower()], int(m.group(1)), short + 2000 if short < 100 else short)
        )
    for m in _DAY_MONTH.finditer(text):
        year = int(m.group(3)) if m.group(3) else None
        found.append((_MONTHS[m.group(2).lower()], int(m.group(1)), year))
    for m in _MONTH_DAY.finditer(text):
        year = int(m.group(3)) if m.group(3) else None
        found.append((_MONTHS[m.group(1).lower()], int(m.group(2)), year))
    return [d for d in found if 1 <= d[0] <= 12 and 1 <= d[1] <= 31]


def _same(one: Date, other: Date) -> bool:
    """Whether two dates are one (a date without a year matches any year)."""
    return one[:2] == other[:2] and (one[2] is None or other[2] is None or one[2] == other[2])


def _first_writer(
    events: list[AgentEvent],
    runs: NodeRuns,
    written: list[list[Date]],
    read: Date,
    other: Date,
    start: int,
) -> int | None:
    """The first step from ``start`` that wrote ``read`` and not ``other``."""
    for j in range(start, len(events)):
        event = events[j]
        if event.type not in _WRITERS or event.type is EventType.REASONING:
            continue
        if event.type is EventType.AGENT_END and (
            event.agent_name in runs.outer or not runs.plain_until(event, j)
        ):
            continue  # (a model in it wrote first; a node that ran a subgraph echoes it)
        dates = written[j]
        if any(_same(d, read) for d in dates):
            return None if any(_same(d, other) for d in dates) else j
    return None


def _iso(date: Date) -> str:
    month, day, year = date
    return f"{year:04d}-{month:02d}-{day:02d}" if year else f"--{month:02d}-{day:02d}"


def _finding(
    events: list[AgentEvent], at: int, source: int, slashed: str, read: Date, other: Date
) -> Finding:
    event = events[at]
    step = event.step_index
    who = event.agent_name or f"step {step}"
    model = event.type in MODEL_TYPES
    wrong, right = _iso(read), _iso(other)
    fix = (
        f"At step {step}, {who}: it read {slashed!r} as {wrong}, month and day the other "
        f"way round from {right}, the date the run wanted; parse it in the order the "
        "source writes dates (its locale: %d/%m/%Y for day first, %m/%d/%Y for month first)."
    )
    return rule_finding(
        RULE,
        "observation.output_misread" if model else "reflection.flawed_reasoning",
        event,
        f"{slashed!r}, held at step {events[source].step_index}, reads as {right} or as "
        f"{wrong}; the failure names {right}, and {who} at step {step} wrote {wrong}: "
        "it read the day as the month",
        confidence=0.55,
        evidence=[quoted(event, "output", wrong), quoted(events[source], "output", slashed)],
        metadata={"fix": fix, "value": wrong, "wanted": right},
    )
