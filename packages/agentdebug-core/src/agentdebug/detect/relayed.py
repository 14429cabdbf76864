"""A lookup's list of records the model passed on whole, whose records the failure
names.

An outage planner asks ``list_affected_customers("F12")``; the tool matches feeders
with ``startswith("F12")`` and returns eight customers, four of them on F121 and
F125, with nothing in their records to tell them apart. The model queues notices for
all eight, as it should for what it was given, and a later node texts them. The run
fails ("Maple Ridge Dialysis Center and three others were told their power will be
off; it is not being touched"), and without this rule the free tier blamed the
model's turn that queued the notices: the only choice in the run, which chose
nothing. A volunteer roster is the same: ``find_volunteers(role, date)`` maps the
weekday wrong, returns Friday's volunteers for a Saturday, and the model assigns
every one it got.

The rule keeps to what it can read for certain, in a failed run whose reason names
records: a tool's result holding a list of two or more
records (``records.lists``), some of which the reason names by a value no other
record of the list has (a name, an identifier; four characters or more with a
letter; not one the run's goal gives, nor one the reason gives as the wanted one:
"should have been", "instead of", "only" just before it); and a later tool call
whose arguments hold every record of that list, by the identifier that
tells them apart (a field whose values all differ and hold a digit, else one whose
values all differ): the run made no choice among them, so what the failure names
came from the lookup as it was (its filter, the fields it matched on or computed,
its data).
The first such list is blamed (``observation.poor_retrieval``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.records import lists
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "listed_records_relayed"
MIN_VALUE = 4  # characters of a value the reason names a record by
_BEFORE = 40  # characters before a named value read for words giving it as wanted
_WANTED = re.compile(
    r"(?i)\b(?:expected|should(?: have)?(?: been)?|instead of|rather than|only|correct|"
    r"wanted|needed|meant)\b"
)


def rule_listed_records_relayed(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's first tool result whose list of records, some of them named
    by the failure, a model then passed on whole."""
    run = ctx.trajectory
    reason = run.outcome.reason or ""
    if run.outcome.status is not OutcomeStatus.FAILURE or not reason:
        return
    low, goal = reason.lower(), (run.goal or "").lower()
    events = run.events
    calls: list[tuple[int, str]] | None = None  # (position, arguments) of asked calls
    for i, event in enumerate(events):
        if event.type is not EventType.TOOL_RESULT:
            continue
        for records in lists(event.output):
            named = _named(records, low, goal)
            ids = _identifiers(records)
            if not named or ids is None:
                continue
            if calls is None:
                calls = [
                    (j, compact_json(e.input))
                    for j, e in enumerate(events)
                    if e.type is EventType.TOOL_CALL
                ]
            passed = next(
                (j for j, args in calls if j > i and all(_holds(args, v) for v in ids)), None
            )
            if passed is not None:
                yield _finding(event, events[passed], named, len(records))
                return


def _named(records: list[dict[str, Any]], reason: str, goal: str) -> list[str]:
    """The values the reason names records of the list by (one a record, as written
    in it), not as wanted ones, nor ones of the run's goal."""
    found: list[str] = []
    for field in records[0]:
        values = [str(r[field]) for r in records]
        if len(set(values)) != len(values):
            continue  # (a field records share: a role, a status, a street)
        for value in values:
            low = value.lower()
            if len(low) < MIN_VALUE or not any(c.isalpha() for c in low) or low in goal:
                continue
            m = re.search(rf"(?<!\w){re.escape(low)}(?!\w)", reason)
            if m is None or _WANTED.search(reason[max(0, m.start() - _BEFORE) : m.start()]):
                continue
            if value not in found:
                found.append(value)
    return found


def _identifiers(records: list[dict[str, Any]]) -> list[str] | None:
    """The values that tell the records apart: a field's whose values all differ and
    hold a digit (an id), else one's whose values all differ (a name)."""
    fallback = None
    for field in records[0]:
        values = [str(r[field]) for r in records]
        if len(set(values)) != len(values) or any(len(v) < 2 for v in values):
            continue
        if all(any(c.isdigit() for c in v) for v in values):
            return values
        if fallback is None and all(any(c.isalpha() for c in v) for v in values):
            fallback = values
    return fallback


def _holds(args: str, value: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", args) is not None


def _finding(event: AgentEvent, passed: AgentEvent, named: list[str], count: int) -> Finding:
    tool = str(event.metadata.get("tool_name") or "the lookup")
    who = event.agent_name or tool
    step = event.step_index
    shown = ", ".join(map(repr, named[:4])) + (
        f" and {len(named) - 4} more" if len(named) > 4 else ""
    )
    used = str(passed.metadata.get("tool_name") or "a tool")
    fix = (
        f"At step {step}, {who}: {tool} returned {shown} among its {count} records, and "
        "every record it returned was acted on; check how it selects them and what it "
        "returns for them (its filter, the fields it matches on or computes, its data)."
    )
    return rule_finding(
        RULE,
        "observation.poor_retrieval",
        event,
        f"{shown}, which the failure names, came from the result of {tool} at step {step}: "
        f"a list of {count} records passed on whole to {used} at step {passed.step_index}, "
        "none of them chosen over another; what the failure names came from the lookup as "
        "it was",
        confidence=0.5,
        evidence=[quoted(event, "output", named[0])],
        metadata={"fix": fix, "value": named[0], "tool": tool},
    )
