"""A step that sorted records by a number written as text: "9.8" before "10.0".

A dependency triage graph ranks its findings with ``sorted(findings, key=lambda f:
f["cvss"], reverse=True)``, and the scores are strings: "9.8", "9.1", "8.1", ...,
"10.0" last, so log4j's 10.0 gets no ticket this sprint while an 8.1 does. Versions
("2.10.3" under "2.9.12") and counts read from a CSV go the same way. The steps
after the sort took its top items faithfully; the failure ("log4j-core, CVSS 10.0,
didn't get a ticket while a CVSS 8.1 finding did") shows at the end, and without
this rule the free tier blamed the step that took the top three.

The rule keeps to what it can read for certain, in a failed run: a list of three
records or more (as :mod:`.records` reads them) in a step's output (a node's update
made by its own code, a tool's result) whose records all came from earlier in the
run, in an order no list before had them in (a step that passed a list on, or kept
some of it in its order, did not sort it), that sorts one field (its values all
numbers, or texts that read as numbers) as text, ascending or descending, and not as
numbers either way (cheapest first, 8.5, 45, 120, is descending as text too), while
no other field of the records is in order (vendors sorted by name leave their prices
as they fall); and the failure (its
reason, or the reference answer) names, as a word of its own, a value of a record
that sorting as numbers would have put elsewhere. That step is blamed
(``reflection.flawed_reasoning``: compare the numbers as numbers).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect import records as rec
from agentdebug.detect.node_runs import NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "sorted_as_text"
MOST_RECORDS_SEEN = 20_000  # records of a run remembered
MOST_LISTS_SEEN = 5_000  # lists of a run remembered with their order
_NUMERIC = re.compile(r"-?\d+(?:\.\d+)?")
_SORTERS = frozenset({EventType.AGENT_END, EventType.TOOL_RESULT})


def rule_sorted_as_text(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's step that ordered records by a number as text."""
    found = text_sorted(ctx)
    if found is not None:
        yield found[1]


def sorted_before(ctx: RuleContext, at: int) -> bool:
    """Whether a step before the event at ``at`` sorted a list by a number as text: a
    step after it that took the list's first items (:mod:`.picked`, :mod:`.narrowed`)
    took them faithfully, and defers to this rule."""
    found = text_sorted(ctx)
    return found is not None and found[0] < at


def text_sorted(ctx: RuleContext) -> tuple[int, Finding] | None:
    """(where, the finding) of the run's first sort of a number as text; read once."""
    return ctx.once(RULE, lambda: _text_sorted_run(ctx))


def _text_sorted_run(ctx: RuleContext) -> tuple[int, Finding] | None:
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return None
    failure = f"{run.outcome.reason or ''} {run.reference_answer or ''}".casefold()
    if not failure.strip():
        return None
    events = run.events
    runs = NodeRuns(events)
    seen: dict[str, int] = {}  # the records the run held before, as compact JSON
    orders: list[dict[str, int]] = []  # the lists held before: where each record stood
    for i, event in enumerate(events):
        payload = event.input if event.type is EventType.USER_INPUT else event.output
        read = rec.lists(payload)
        lists = [[compact_json(r) for r in records] for records in read]
        if event.type in _SORTERS and runs.wrote(event, i):
            for records, keys in zip(read, lists, strict=True):
                if _reordered(keys, seen, orders):
                    found = _text_sorted(records, failure)
                    if found is not None:
                        return i, _finding(event, *found)
        if len(seen) < MOST_RECORDS_SEEN:
            for keys in lists:
                seen.update(dict.fromkeys(keys, i))
                if len(keys) >= 3 and len(orders) < MOST_LISTS_SEEN:
                    orders.append({k: at for at, k in enumerate(keys)})
    return None


def _reordered(keys: list[str], seen: dict[str, int], orders: list[dict[str, int]]) -> bool:
    """Whether a list of three records or more, all held before, is in an order no
    list held before had them in (a step that passed a list on, or kept some of it in
    its order, did not sort it)."""
    if len(keys) < 3 or not all(k in seen for k in keys):
        return False  # (a list this step made, not one it ordered)
    for order in orders:
        if all(k in order for k in keys):
            places = [order[k] for k in keys]
            if all(a < b for a, b in itertools.pairwise(places)):
                return False
    return True


def _text_sorted(
    records: list[dict[str, Any]], failure: str
) -> tuple[str, list[str], dict[str, Any]] | None:
    """(the field, its values in the list's order, the record the failure names that
    sorting as numbers puts farthest elsewhere) when the list sorts a numeric field as
    text, and not as numbers either way (cheapest first, 8.5, 45, 120, is descending
    as text too)."""
    for field in records[0]:
        values = [r.get(field) for r in records]
        texts = [_text(v) for v in values]
        if any(t is None for t in texts):
            continue
        shown = [t for t in texts if t is not None]
        numbers = [float(t) for t in shown]
        if _ordered(numbers, True) or _ordered(numbers, False):
            continue  # (sorted as numbers, one way or the other)
        if any(_sorted_by(records, other) for other in records[0] if other != field):
            return None  # (sorted by another field: its order leaves this one as it falls)
        for descending in (False, True):
            if shown != sorted(shown, reverse=descending):
                continue
            right = sorted(range(len(records)), key=lambda k: numbers[k], reverse=descending)
            place = {k: at for at, k in enumerate(right)}
            moved = [k for k in range(len(records)) if numbers[right[k]] != numbers[k]]
            for k in sorted(moved, key=lambda k: -abs(place[k] - k)):  # (the farthest first)
                if _names(failure, records[k]):
                    return field, shown, records[k]
    return None


def _sorted_by(records: list[dict[str, Any]], field: str) -> bool:
    """Whether the records are in the order of ``field``, one way or the other (as
    numbers, or as texts), with two values or more that differ."""
    values = [r.get(field) for r in records]
    if len({repr(v) for v in values}) < 2:
        return False
    texts = [_text(v) for v in values]
    if all(t is not None for t in texts):
        keys: list[Any] = [float(t) for t in texts if t is not None]
    elif all(isinstance(v, str) for v in values):
        keys = [str(v).casefold() for v in values]
    else:
        return False
    return keys == sorted(keys) or keys == sorted(keys, reverse=True)


def _text(value: Any) -> str | None:
    """A number as the record writes it ("10.0", 9.8), or None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        return None
    return text if _NUMERIC.fullmatch(text) else None


def _ordered(numbers: list[float], descending: bool) -> bool:
    pairs = list(itertools.pairwise(numbers))
    return all(a >= b for a, b in pairs) if descending else all(a <= b for a, b in pairs)


def _names(failure: str, record: dict[str, Any]) -> bool:
    """Whether the failure names one of the record's texts (three characters or more,
    as a word of its own)."""
    for value in record.values():
        text = str(value).strip().casefold() if isinstance(value, (str, int, float)) else ""
        if len(text) >= 3 and rec.has(failure, text):
            return True
    return False


def _finding(event: AgentEvent, field: str, order: list[str], record: dict[str, Any]) -> Finding:
    step = event.step_index
    who = event.agent_name or f"step {step}"
    shown = ", ".join(repr(v) for v in order[:8]) + (", ..." if len(order) > 8 else "")
    named = next((str(v) for v in record.values() if isinstance(v, str) and v.strip()), "")
    return rule_finding(
        RULE,
        "reflection.flawed_reasoning",
        event,
        f"{who} at step {step} ordered the records by {field!r} as text ({shown}), not as "
        f"numbers: the record of {named!r} is out of its place",
        confidence=0.55,
        evidence=[quoted(event, "output", order[-1])],
        metadata={
            "fix": (
                f"At step {step}, {who}: sort by {field!r} as a number (float(...)), not as "
                f"text: as text, {order[0]!r} and {order[-1]!r} are in the wrong order."
            ),
            "field": field,
        },
    )
