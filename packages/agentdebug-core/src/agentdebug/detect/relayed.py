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
records: a tool's result holding a list of two or more records (``records.lists``),
some of which the reason names by a value no other record of the list has, with a
capital or a digit in it (a name, an identifier; not a status), not one the run's
goal gives, nor one the reason gives as the wanted one ("should have been",
"instead of", "only", "supposed to" just before it; "should never have gone to X"
and "not only ... but also X" are not), nor one something did not happen to
("X never got the notice"); whose records did not say which to leave out (no field
of theirs, other than what names them or an id, whose values for the named ones
and for the others differ while the goal or the failure gives one of them: "every
ACTIVE customer", ``"status": "cancelled"``); and a later turn of tool calls (an
agent's calls at one step, as a model's parallel calls are) whose arguments hold
every record of that list, by a field that tells them apart (an id, or the
names), that gave nothing of its own the failure names (a value the turn gave
every record, such as one record's window for all of them, a channel, a
passenger's name), and after which no turn took some of them and not the rest (a
choice, after prices looked up for all): the run made no choice among them, so
what the failure names came from the lookup as it was (its filter, the fields it
matched on or computed, its data). The first such list is blamed
(``observation.poor_retrieval``). A record per call over several turns is not
read as the list passed on whole.
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
_AFTER = 30  # characters after it read for a negation ("X never got the notice")
_WANTED = re.compile(
    r"(?i)\b(?:expected|should(?: have)?(?: been)?|instead of|rather than|only|correct|"
    r"wanted|needed|meant|supposed to|must)\b"
)
# a word of wanting negated: "should never have gone to X", "not only ... but also X"
_UNWANTED = re.compile(r"(?i)\b(?:should(?: have)?|must)\s+(?:never|not)\b|\bnot only\b")
_NEGATED = re.compile(r"(?i)\b(?:never|not|no|without|missing)\b|n't\b")
_CLAUSE_END = re.compile(r"[.;:!?]|\bbut\b")


def rule_listed_records_relayed(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's first tool result whose list of records, some of them named
    by the failure, a model then passed on whole."""
    run = ctx.trajectory
    reason = run.outcome.reason or ""
    if run.outcome.status is not OutcomeStatus.FAILURE or not reason:
        return
    low, goal = reason.lower(), (run.goal or "").lower()
    events = run.events
    turns: list[tuple[int, str, list[str]]] | None = None
    for i, event in enumerate(events):
        if event.type is not EventType.TOOL_RESULT:
            continue
        for records in lists(event.output):
            named = _named(records, low, goal)
            if not named or _told_apart(records, named, low, goal):
                continue
            if turns is None:
                turns = _turns(events)
            keys = _identifying(records)
            later = [(j, args, leaves) for j, args, leaves in turns if j > i]
            passed = next(
                (
                    (j, leaves, ids)
                    for j, args, leaves in later
                    for ids in keys
                    if all(_holds(args, v) for v in ids)
                ),
                None,
            )
            if passed is None:
                continue
            at, leaves, ids = passed
            chose = any(  # (a later turn that took some of them and not the rest)
                j > at and any(_some_not_all(args, held) for held in keys) for j, args, _ in later
            )
            # (what the turn gave besides the records it passed on: its own choices,
            # one record's window given to every record among them)
            passed_on = {v.lower() for v in ids}
            own = [v for v in leaves if v.lower() not in passed_on]
            if chose or any(_said(v.lower(), low) for v in own):
                continue  # (a choice of the model's, or a value of its own the failure names)
            yield _finding(event, events[at], named, len(records))
            return


def _turns(events: list[AgentEvent]) -> list[tuple[int, str, list[str]]]:
    """The tool calls of each turn (an agent's calls at one step, as a model's
    parallel calls are): where the first is, their arguments joined, their leaves."""
    by_turn: dict[tuple[str | None, int], tuple[int, list[str], list[str]]] = {}
    for j, e in enumerate(events):
        if e.type is not EventType.TOOL_CALL:
            continue
        _, texts, leaves = by_turn.setdefault((e.agent_name, e.step_index), (j, [], []))
        texts.append(compact_json(e.input))
        leaves.extend(_leaves(e.input))
    return sorted((at, " ".join(t), lv) for at, t, lv in by_turn.values())


def _leaves(value: Any, depth: int = 0) -> list[str]:
    """The text values of a call's arguments (a model's own words and choices)."""
    if depth > 6:
        return []
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v, depth + 1)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _leaves(v, depth + 1)]
    text = str(value) if isinstance(value, str) else ""
    return [text] if len(text) >= 3 and any(c.isalpha() for c in text) else []


def _said(value: str, reason: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", reason) is not None


def _named(records: list[dict[str, Any]], reason: str, goal: str) -> list[str]:
    """The values the reason names records of the list by (a name or an identifier
    one record has: a capital or a digit in it), not as wanted ones, nor as ones
    something did not happen to ("X never got it"), nor ones of the run's goal."""
    found: list[str] = []
    for field in records[0]:
        values = [str(r[field]) for r in records]
        if len(set(values)) != len(values):
            continue  # (a field records share: a role, a status, a street)
        for value in values:
            low = value.lower()
            if (
                len(low) < MIN_VALUE
                or not any(c.isupper() or c.isdigit() for c in value)
                or not any(c.isalpha() for c in low)
                or low in goal
            ):
                continue
            m = re.search(rf"(?<!\w){re.escape(low)}(?!\w)", reason)
            if m is None:
                continue
            before = reason[max(0, m.start() - _BEFORE) : m.start()]
            if _WANTED.search(before) and not _UNWANTED.search(before):
                continue
            after = _CLAUSE_END.split(reason[m.end() : m.end() + _AFTER], maxsplit=1)[0]
            if _NEGATED.search(after):
                continue
            if value not in found:
                found.append(value)
    return found


def _told_apart(records: list[dict[str, Any]], named: list[str], reason: str, goal: str) -> bool:
    """Whether the records said which of them to leave out: a field of theirs whose
    values of the named records and of the others differ, one of which the goal or
    the failure gives ("every ACTIVE subscriber"; "status": "cancelled")."""
    marked = [any(str(v) in named for v in r.values()) for r in records]
    if all(marked):
        return False
    for field in records[0]:
        values = [str(r[field]) for r in records]
        if any(v in named for v in values) or (
            len(set(values)) == len(values) and all(any(c.isdigit() for c in v) for v in values)
        ):
            continue  # (what names them, or an id: not a mark of what they are)
        inside = {v.lower() for v, m in zip(values, marked, strict=True) if m}
        outside = {v.lower() for v, m in zip(values, marked, strict=True) if not m}
        if inside & outside:
            continue
        if any(_said(v, goal) or _said(v, reason) for v in inside | outside if len(v) >= 3):
            return True
    return False


def _identifying(records: list[dict[str, Any]]) -> list[list[str]]:
    """The values that tell the records apart, by field (an id, a name): each a
    field's whose values all differ."""
    return [
        values
        for field in records[0]
        if len(set(values := [str(r[field]) for r in records])) == len(values)
        and all(len(v) >= 2 and any(c.isalnum() for c in v) for v in values)
    ]


def _holds(args: str, value: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", args) is not None


def _some_not_all(args: str, values: list[str]) -> bool:
    held = sum(_holds(args, v) for v in values)
    return 0 < held < len(values)


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
