"""A step that took one record of a list where the failure names another of it.

A sourcing graph's ``rank`` node sorts the scored bids ascending and awards the
first: the lowest score wins, and the purchase order goes to the worst bidder. A
CRM agent searches contacts, gets two Jordan Lees and sends the quote to the one at
Acme Freight when the user asked for Acme Corp. A payroll model reads a table of
minimum wages and copies the state's rate into the city's row. Each time the run
fails far from the pick ("the award went to Kessler; the evaluation has Nordmann on
top", "Jordan Lee at Acme Corp never got the quote", "staff still paid below
$20.76"), every step after it worked faithfully on the record it was handed, and
without this rule the free tier blamed the last of them.

The rule keeps to what it can read for certain, in a failed run: a list of records
(two to ``MOST_RECORDS`` mappings sharing at least two plain fields, also as JSON
text, or the rows of a Markdown table in a text; not a list of chat messages) that
a step held (the run's input, a tool's result, a node's update, a prompt), and in
one field the records' *marks*: values no other record of the list holds in any
field (a text of three characters or more with a letter, compared without case and
as a whole word; a number other than 0 to 9). The failure (its reason, or the
reference answer) names a mark of a record ``wanted`` (a number, or a text as the
record writes it, its case too: "at the airport" does not name the "Airport Inn").
A later step (a model's reply whose prompt held the marks of more records in that
field than it wrote; or a node's update made by its own code, not a model, whose
recorded input, if any, held more) is the pick when its output (of
``PICK_READ`` characters at most: a pick writes a record or a few, not a document;
numbers read as whole words, not the 12 of "CUP-12-SL"; a mapping's keys read too: a
merge keyed by vendor, ``{"OfficeHub": 3.1}``, took OfficeHub) holds the marks of one
record or a few in the field, ``took``, each a text, a number of three significant
digits or more, or held with another of its record's marks (not a 30 held by
chance), and not ``wanted``'s, and does not hold every record by a text field two
or more of them are marked in (the list carried on); and
either the failure names ``wanted``'s very mark in that field, or the output holds
no mark of ``wanted`` at all (a model that wrote the city's name with the state's
rate picked the wrong row's rate). No step between the list and the pick, nor after
it, took ``wanted``; and no step after it took another single record (steps that
take one record each in turn are a loop over the list, not a pick). The first such
pick is blamed: a node's code (``reflection.flawed_reasoning``: a sort's order, a
key, a match), a model's reply on a tool's result (``observation.output_misread``)
or on anything else (``reflection.flawed_reasoning``); with confidence 0.55, or 0.45
when the failure names a record it took too (it may say that one was right: "the
award to Nordmann was right, but Kessler was never told", which reads the same).

:func:`picked` is the reading, once per run: :mod:`.coded` and :mod:`.lost` leave
the picked record's values, and the wanted one's, to this rule.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from agentdebug.detect import records as rec
from agentdebug.detect.node_runs import MODEL_TYPES, NodeRuns
from agentdebug.detect.records import (
    MOST_LISTS,
    NOTHING,
    Mark,
    Text,
    cell,
    has,
    holds,
    label,
    leaves,
    strong,
)
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.textsorted import sorted_before
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Finding, OutcomeStatus

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

log = logging.getLogger("agentdebug.detect")

RULE = "wrong_record_picked"
LOOKAHEAD = 400  # events after a list that a pick is looked for in
BUDGET = 400_000  # marks looked for in a run's events, in all (then the rule gives up)
PICK_READ = 20_000  # characters of a step's output read for a pick
_FROM_TOOLS = frozenset({EventType.TOOL_RESULT, EventType.MEMORY_READ})


@dataclass(frozen=True)
class Pick:
    """The step that took ``took`` of a list where the failure names ``wanted``."""

    at: int  # the pick's index in the run's events
    source: int  # where the list was first held
    field: str  # the field the pick took the record's value of
    took: dict[str, Mark]  # the records' marks, by field
    wanted: dict[str, Mark]
    took_shown: dict[str, str]  # their values as the list writes them
    wanted_shown: dict[str, str]
    named: str  # the field of the wanted record's mark the failure names
    records: int
    others: tuple[str, ...]  # the other records it took, if it took several
    marked: frozenset[Mark]  # the marks of every record it took, and the wanted one's
    also_named: bool  # the failure names a record it took too (what went wrong, or not)

    def explains(self, value: str) -> bool:
        """Whether ``value``, as a failure writes it, is a mark of a record taken or
        of the wanted one."""
        return cell(value) in self.marked


def rule_wrong_record_picked(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's step that took one record of a list, where the failure names
    another of the same list."""
    pick = picked(ctx)
    if pick is not None and not sorted_before(ctx, pick.at):  # (took a mis-sorted list's top)
        yield _finding(ctx.trajectory, pick)


def picked(ctx: RuleContext) -> Pick | None:
    """The pick, read once per run (:mod:`.coded` and :mod:`.lost` defer to it; a
    fault of this reading costs them nothing: it is logged, and there is no pick)."""
    return ctx.once(RULE, lambda: _safely(ctx.trajectory))


def _safely(run: AgentTrajectory) -> Pick | None:
    try:
        return _picked(run)
    except Exception:
        log.exception("agentdebug: rule %s failed on run %s", RULE, run.id)
        return None


class _Held:
    """What an event's input and output hold, read when first asked: an output
    longer than ``PICK_READ`` characters is read as holding nothing (a pick writes
    a record or a few, not a document)."""

    def __init__(self, events: list[AgentEvent]) -> None:
        self._events = events
        self._read: dict[tuple[int, bool], Text] = {}
        self.budget = BUDGET  # marks left to look for

    def spend(self, marks: int) -> bool:
        """Count ``marks`` looked for; False once the run's budget is spent."""
        self.budget -= marks
        return self.budget >= 0

    def get(self, at: int, output: bool = True) -> Text:
        key = (at, output)
        found = self._read.get(key)
        if found is None:
            event = self._events[at]
            text = leaves(event.output if output else event.input, keys=True)
            found = NOTHING if output and len(text) > PICK_READ else Text(text.casefold())
            self._read[key] = found
        return found


def _picked(run: AgentTrajectory) -> Pick | None:
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return None
    reason = f"{run.outcome.reason or ''} {run.reference_answer or ''}"
    said = Text(reason)  # (as written: a record's text is named with its case)
    events = run.events
    runs = NodeRuns(events)
    held = _Held(events)
    seen: set[bytes] = set()
    read = 0
    for i, event in enumerate(events):
        for output, payload in ((False, event.input), (True, event.output)):
            for records in rec.lists(payload):
                key = rec.key(records)
                if key in seen:
                    continue
                seen.add(key)
                read += 1
                if read > MOST_LISTS:
                    return None
                marks = rec.marks(records)
                shown = [{f: " ".join(str(v).split()) for f, v in rec.items()} for rec in records]
                # (the failure names a record by a mark of it, a text as the record writes it)
                named = [
                    {f for f, m in own.items() if _says(said, m, shown[r][f])}
                    for r, own in enumerate(marks)
                ]
                if not any(named):
                    continue
                # (a model's prompt holds a list its reply then picks from)
                start = i + 1 if output or event.type not in MODEL_TYPES else i
                pick = _Scan(events, runs, held, marks).first_pick(named, start)
                if pick is not None:
                    at, field, took, wanted = pick
                    by = field if field in named[wanted] else sorted(named[wanted])[0]
                    first, *rest = took
                    return Pick(
                        at, i, field, marks[first], marks[wanted], shown[first], shown[wanted],
                        by, len(records), tuple(label(marks[r], shown[r], field) for r in rest),
                        frozenset(m for r in (*took, wanted) for m in marks[r].values()),
                        any(named[r] for r in took),
                    )  # fmt: skip
    return None


@dataclass
class _Scan:
    """One list's records, read against the run's steps from where it was held."""

    events: list[AgentEvent]
    runs: NodeRuns
    held: _Held
    marks: list[dict[str, Mark]]  # each record's marks, by field

    def first_pick(
        self, named: list[set[str]], start: int
    ) -> tuple[int, str, list[int], int] | None:
        """The first step from ``start`` that took some of the records (one, or a
        few), not one the failure names (``named``: the fields of each record's marks
        it names): (where, the field, the records taken, the one wanted)."""
        marks, held = self.marks, self.held
        # (the fields that name a record first, the shortest texts: its id and its
        # supplier before its description, and these before its price)
        fields = sorted({f for own in marks for f in own}, key=lambda f: _naming(marks, f))
        end = min(len(self.events), start + LOOKAHEAD)
        for j in range(start, end):
            given = _given(self.events, self.runs, j)
            if given is None:
                continue
            if not held.spend(len(marks) * len(fields)):
                return None
            out = held.get(j)
            if any(
                len(self.holders(out, f)) == n >= 2
                for f in fields
                if all(isinstance(own.get(f, ""), str) for own in marks)
                for n in [sum(1 for own in marks if f in own)]
            ):
                continue  # (it holds every record by a name: the list carried on)
            for field in fields:
                having = sum(1 for own in marks if field in own)
                took = self.holders(out, field)
                if not 0 < len(took) < having:
                    continue  # (none of them, or the list carried on)
                if given >= 0 and len(self.holders(held.get(given, False), field)) <= len(took):
                    continue  # (it was given what it wrote, a branch its record: not a choice)
                if not all(strong(marks[r][field]) or _held_twice(out, marks[r]) for r in took):
                    continue  # (a small number, 30, held by chance: not a record taken)
                for wanted, by in enumerate(named):  # (``field``: where it took ``took``)
                    if not by or wanted in took or field not in marks[wanted]:
                        continue
                    mine = marks[wanted]
                    if field not in by and any(holds(out, m) for m in mine.values()):
                        continue  # (it wrote the wanted one's values too: no pick in this field)
                    if self.taken(wanted, start, j):
                        continue  # (a step before it took the wanted one: handled there)
                    if self.taken(wanted, j + 1, end):
                        continue  # (a step after it took the wanted one)
                    if len(took) == 1 and self.iterated(field, took[0], j + 1, end):
                        return None  # (steps that took one record each in turn: a loop)
                    return j, field, took, wanted
        return None

    def holders(self, text: Text, field: str) -> list[int]:
        """The records whose mark in ``field`` the text holds."""
        return [r for r, own in enumerate(self.marks) if field in own and holds(text, own[field])]

    def steps(self, start: int, end: int, marks: int) -> Iterator[Text | None]:
        """The outputs of the steps from ``start`` to ``end`` that may pick; None once
        the run's budget is spent (``marks`` looked for in each)."""
        for j in range(start, end):
            if _given(self.events, self.runs, j) is None:
                continue
            if not self.held.spend(marks):
                yield None
                return
            yield self.held.get(j)

    def taken(self, wanted: int, start: int, end: int) -> bool:
        """Whether a step from ``start`` to ``end`` took the wanted record: its mark in
        a field (the pick's, or another: a letter naming the supplier), not every
        record's there, and a strong one (see :func:`strong`)."""
        mine = [(f, m) for f, m in self.marks[wanted].items() if strong(m)]
        having = {f: [own[f] for own in self.marks if f in own] for f, _ in mine}
        for out in self.steps(start, end, len(self.marks) * max(1, len(mine))):
            if out is None:
                return True  # (unread: not blamed)
            for f, mark in mine:
                if holds(out, mark) and not all(holds(out, m) for m in having[f]):
                    return True
        return False

    def iterated(self, field: str, took: int, start: int, end: int) -> bool:
        """Whether a step after the pick took another single record in the field:
        steps that each take the next record (a loop over the list, a turn per item)."""
        for out in self.steps(start, end, len(self.marks)):
            if out is None:
                return True  # (unread: not blamed)
            got = self.holders(out, field)
            if len(got) == 1 and got[0] != took:
                return True
        return False


def _held_twice(held: Text, marks: dict[str, Mark]) -> bool:
    return sum(1 for m in marks.values() if holds(held, m)) >= 2


def _says(said: Text, mark: Mark, written: str) -> bool:
    """Whether the failure names a mark: a number among its numbers, a text as the
    record writes it (its case too: "Airport Inn" is not "at the airport")."""
    if isinstance(mark, Decimal):
        return mark in said.numbers
    return has(said.text, written)


def _naming(marks: list[dict[str, Mark]], field: str) -> tuple[bool, float, str]:
    """How well a field names a record, for sorting (the best first): a text field
    before a number's, a short one before a long one."""
    texts = [len(mark) for own in marks if isinstance(mark := own.get(field), str)]
    return (not texts, sum(texts) / len(texts) if texts else 0.0, field)


def _given(events: list[AgentEvent], runs: NodeRuns, at: int) -> int | None:
    """For a step that may pick: where what it was given is held (its own index for
    a model's prompt, its node's start for a node given an input, -1 for a node
    whose input was not recorded); None for an event that does not pick."""
    event = events[at]
    if event.type in MODEL_TYPES and event.type is not EventType.REASONING:
        return at
    if event.type is EventType.AGENT_END and event.agent_name not in runs.outer:
        if not runs.plain_until(event, at):
            return None  # (a model spoke in it: its reply is the pick)
        start = runs.start_of(event)
        if start is not None and events[start].input is not None:
            return start
        return -1
    return None


def _finding(run: AgentTrajectory, pick: Pick) -> Finding:
    events = run.events
    event, source = events[pick.at], events[pick.source]
    who = event.agent_name or f"step {event.step_index}"
    field = pick.field
    took = label(pick.took, pick.took_shown, field)
    wanted = label(pick.wanted, pick.wanted_shown, field)
    value, right = pick.took_shown[field], pick.wanted_shown[field]
    if event.type in MODEL_TYPES:
        mode = (
            "observation.output_misread"
            if source.type in _FROM_TOOLS
            else "reflection.flawed_reasoning"
        )
        fix = (
            f"At step {event.step_index}, {who}: it took the {field} {value!r} of {took!r} "
            f"where the run wanted {wanted!r} ({right!r}); have it match the record to what "
            "was asked before it uses its values."
        )
    else:
        mode = "reflection.flawed_reasoning"
        fix = (
            f"At step {event.step_index}, {who}: its code took {took!r}"
            f"{' and others' if pick.others else ''} from the list where {wanted!r} was "
            "wanted; check how it chooses (the sort's order, the "
            "key it compares, the match)."
        )
    named = pick.wanted_shown[pick.named]
    about = "" if named == wanted else f", the {pick.named} of {wanted!r}"
    other = f"another, {took!r}" if value == took else f"another, the {field} {value!r} of {took!r}"
    if pick.others:
        every = [repr(t) for t in (took, *pick.others)]
        listed = every[:3] if len(every) > 3 else every[:-1]
        rest = f"{len(every) - 3} more" if len(every) > 3 else every[-1]
        other = f"{len(every)} others ({', '.join(listed)} and {rest})"
    return rule_finding(
        RULE,
        mode,
        event,
        f"The failure names {named!r}{about}, one of {pick.records} records listed at step "
        f"{source.step_index}; {who} at step {event.step_index} took {other}, and no "
        f"step after it took the record of {wanted!r}",
        # (weaker when the failure names a record it took too: it may say that one
        # was right, "the award to Nordmann was right, but Kessler was never told")
        confidence=0.45 if pick.also_named else 0.55,
        evidence=[quoted(event, "output", value), quoted(source, "output", right)],
        metadata={"fix": fix, "value": value, "wanted": right, "field": field},
    )
