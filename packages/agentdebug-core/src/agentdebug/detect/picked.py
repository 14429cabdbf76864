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
numbers read as whole words, not the 12 of "CUP-12-SL") holds the marks of one
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
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import orjson

from agentdebug.detect.node_runs import MODEL_TYPES, NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Finding, OutcomeStatus

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

log = logging.getLogger("agentdebug.detect")

RULE = "wrong_record_picked"
MOST_RECORDS = 200  # records of a list read (a longer list is not read)
MOST_LISTS = 40  # lists a run's events are read for
LOOKAHEAD = 400  # events after a list that a pick is looked for in
BUDGET = 400_000  # marks looked for in a run's events, in all (then the rule gives up)
PICK_READ = 20_000  # characters of a step's output read for a pick
_READ = 200_000  # characters of a payload read
_DEPTH = 8  # levels of a payload walked for lists
# (not the digits inside an identifier: "CUP-12-SL" holds no 12)
_NUMBER = re.compile(
    r"(?<![\w.-])-?\d[\d,]*(?:\.\d+)?(?![\w-])|(?<=\s)-\d[\d,]*(?:\.\d+)?(?![\w-])"
)
_CELL_NUMBER = re.compile(r"[$€£]?\s?(-?\d[\d,]*(?:\.\d+)?)\s?%?")
_RULER = re.compile(r"[\s|:-]+")  # a Markdown table's line under its header
_FROM_TOOLS = frozenset({EventType.TOOL_RESULT, EventType.MEMORY_READ})

Mark = Decimal | str  # a number, or a text as lowered


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
        return _cell(value) in self.marked


def rule_wrong_record_picked(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's step that took one record of a list, where the failure names
    another of the same list."""
    pick = picked(ctx)
    if pick is not None:
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


class _Text:
    """A text lowered, and the numbers it writes (read when first asked)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._numbers: frozenset[Decimal] | None = None

    @property
    def numbers(self) -> frozenset[Decimal]:
        if self._numbers is None:
            self._numbers = _numbers(self.text)
        return self._numbers


_NOTHING = _Text("")


class _Held:
    """What an event's input and output hold, read when first asked: an output
    longer than ``PICK_READ`` characters is read as holding nothing (a pick writes
    a record or a few, not a document)."""

    def __init__(self, events: list[AgentEvent]) -> None:
        self._events = events
        self._read: dict[tuple[int, bool], _Text] = {}
        self.budget = BUDGET  # marks left to look for

    def spend(self, marks: int) -> bool:
        """Count ``marks`` looked for; False once the run's budget is spent."""
        self.budget -= marks
        return self.budget >= 0

    def get(self, at: int, output: bool = True) -> _Text:
        key = (at, output)
        found = self._read.get(key)
        if found is None:
            event = self._events[at]
            text = _leaves(event.output if output else event.input)
            found = _NOTHING if output and len(text) > PICK_READ else _Text(text.casefold())
            self._read[key] = found
        return found


def _picked(run: AgentTrajectory) -> Pick | None:
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return None
    reason = f"{run.outcome.reason or ''} {run.reference_answer or ''}"
    said = _Text(reason)  # (as written: a record's text is named with its case)
    events = run.events
    runs = NodeRuns(events)
    held = _Held(events)
    seen: set[bytes] = set()
    lists = 0
    for i, event in enumerate(events):
        for output, payload in ((False, event.input), (True, event.output)):
            for records in _lists(payload):
                key = _key(records)
                if key in seen:
                    continue
                seen.add(key)
                lists += 1
                if lists > MOST_LISTS:
                    return None
                marks = _marks(records)
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
                        by, len(records), tuple(_label(marks[r], shown[r], field) for r in rest),
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
                if not all(_strong(marks[r][field]) or _held_twice(out, marks[r]) for r in took):
                    continue  # (a small number, 30, held by chance: not a record taken)
                for wanted, by in enumerate(named):  # (``field``: where it took ``took``)
                    if not by or wanted in took or field not in marks[wanted]:
                        continue
                    mine = marks[wanted]
                    if field not in by and any(_holds(out, m) for m in mine.values()):
                        continue  # (it wrote the wanted one's values too: no pick in this field)
                    if self.taken(wanted, start, j):
                        continue  # (a step before it took the wanted one: handled there)
                    if self.taken(wanted, j + 1, end):
                        continue  # (a step after it took the wanted one)
                    if len(took) == 1 and self.iterated(field, took[0], j + 1, end):
                        return None  # (steps that took one record each in turn: a loop)
                    return j, field, took, wanted
        return None

    def holders(self, text: _Text, field: str) -> list[int]:
        """The records whose mark in ``field`` the text holds."""
        return [r for r, own in enumerate(self.marks) if field in own and _holds(text, own[field])]

    def steps(self, start: int, end: int, marks: int) -> Iterator[_Text | None]:
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
        record's there, and a strong one (see :func:`_strong`)."""
        mine = [(f, m) for f, m in self.marks[wanted].items() if _strong(m)]
        having = {f: [own[f] for own in self.marks if f in own] for f, _ in mine}
        for out in self.steps(start, end, len(self.marks) * max(1, len(mine))):
            if out is None:
                return True  # (unread: not blamed)
            for f, mark in mine:
                if _holds(out, mark) and not all(_holds(out, m) for m in having[f]):
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


def _strong(mark: Mark) -> bool:
    """A mark that tells a record by itself: a text, or a number of three significant
    digits or more (16.66, 2,400.5; not 30, 0.7)."""
    if isinstance(mark, str):
        return True
    digits = mark.normalize().as_tuple().digits
    return len(digits) >= 3


def _held_twice(held: _Text, marks: dict[str, Mark]) -> bool:
    return sum(1 for m in marks.values() if _holds(held, m)) >= 2


def _says(said: _Text, mark: Mark, written: str) -> bool:
    """Whether the failure names a mark: a number among its numbers, a text as the
    record writes it (its case too: "Airport Inn" is not "at the airport")."""
    if isinstance(mark, Decimal):
        return mark in said.numbers
    return _has(said.text, written)


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


def _key(records: list[dict[str, Any]]) -> bytes:
    """A list's identity, to read each list once (a number orjson cannot write, over
    64 bits, is written as Python does)."""
    try:
        return orjson.dumps(records, option=orjson.OPT_SORT_KEYS, default=str)
    except (TypeError, orjson.JSONEncodeError):
        return repr(records).encode()


# -- reading lists of records -----------------------------------------------------


def _lists(payload: Any) -> list[list[dict[str, Any]]]:
    """The lists of records a payload holds (also in JSON text, or as a Markdown
    table's rows)."""
    found: list[list[dict[str, Any]]] = []
    budget = [20_000]  # values walked

    def walk(value: Any, depth: int) -> None:
        budget[0] -= 1
        if depth > _DEPTH or budget[0] < 0 or len(found) >= MOST_LISTS:
            return
        if isinstance(value, str):
            text = value.strip()
            if len(text) > _READ or len(text) < 8:
                return
            if text[0] in "[{":
                try:
                    parsed = orjson.loads(text)
                except orjson.JSONDecodeError:
                    parsed = None
                if isinstance(parsed, (list, dict)):
                    walk(parsed, depth + 1)
                    return
            if "|" in text:
                rows = _table(text)
                if rows is not None:
                    found.append(rows)
        elif isinstance(value, list):
            records = _records(value)
            if records is not None:
                found.append(records)
                return
            for item in value[:MOST_RECORDS]:
                walk(item, depth + 1)
        elif isinstance(value, dict):
            # (a mapping's values of one shape are not read as records: a user's and an
            # order's, a staging and a production config, share fields by chance)
            for item in list(value.values())[:MOST_RECORDS]:
                walk(item, depth + 1)

    walk(payload, 0)
    return found


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _records(items: list[Any]) -> list[dict[str, Any]] | None:
    """A list's records, in the plain fields they all have (two at least); None for
    a list that is not one of records (nor one of chat messages)."""
    if not 2 <= len(items) <= MOST_RECORDS or not all(isinstance(it, dict) for it in items):
        return None
    shared = [k for k, v in items[0].items() if isinstance(k, str) and _plain(v)]
    shared = [k for k in shared if all(_plain(it.get(k)) for it in items[1:])]
    if len(shared) < 2 or ("role" in shared and "content" in shared):
        return None
    return [{k: it[k] for k in shared} for it in items]


def _table(text: str) -> list[dict[str, Any]] | None:
    """A Markdown table's rows as records (its header's names), two at least."""
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    if len(lines) < 4 or not _RULER.fullmatch(lines[1]):
        return None
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2 : 2 + MOST_RECORDS]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == len(header):
            rows.append(dict(zip(header, cells, strict=True)))
    return rows if len(rows) >= 2 and len(header) >= 2 else None


def _cell(value: Any) -> Mark | None:
    """A value as a mark: a number (also written "$16.66", "1,200", "97%"), or a
    text lowered; None for what cannot mark a record (a digit, a short word)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number: Decimal | None = _decimal(str(value))
    elif isinstance(value, str):
        m = _CELL_NUMBER.fullmatch(value.strip())
        number = _decimal(m.group(1)) if m else None
        if number is None:
            text = " ".join(value.split()).casefold()
            return text if 3 <= len(text) <= 200 and any(c.isalpha() for c in text) else None
    else:
        return None
    if number is None or (number == number.to_integral_value() and abs(number) < 10):
        return None
    return number


def _decimal(text: str) -> Decimal | None:
    try:
        number = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _marks(records: list[dict[str, Any]]) -> list[dict[str, Mark]]:
    """Each record's marks by field: its values no other record holds in any field."""
    cells = [{f: _cell(v) for f, v in rec.items()} for rec in records]
    texts = [" | ".join(str(v) for v in rec.values()).casefold() for rec in records]
    numbers = [frozenset(m for m in own.values() if isinstance(m, Decimal)) for own in cells]
    out: list[dict[str, Mark]] = []
    for r, own in enumerate(cells):
        mine: dict[str, Mark] = {}
        for field, mark in own.items():
            if mark is None:
                continue
            if isinstance(mark, Decimal):
                if any(mark in nums for k, nums in enumerate(numbers) if k != r):
                    continue
            elif any(_has(text, mark) for k, text in enumerate(texts) if k != r):
                continue
            mine[field] = mark
        out.append(mine)
    return out


def _label(marks: dict[str, Mark], shown: dict[str, str], field: str) -> str:
    """A record as the finding names it: its shortest text mark as written, else its
    value in ``field``."""
    texts = [f for f, mark in marks.items() if isinstance(mark, str)]
    if texts:
        return shown[min(texts, key=lambda f: len(shown[f]))]
    return f"{field} {shown[field]}"


# -- holding marks ---------------------------------------------------------------


def _leaves(payload: Any) -> str:
    """Every text and number a payload holds, one a line (a tool call's arguments
    too, which :func:`agentdebug.text.flatten` leaves out of a message), up to
    ``_READ`` characters."""
    parts: list[str] = []
    size = 0
    stack = [payload]
    budget = 200_000  # values walked
    while stack and size < _READ and budget > 0:
        budget -= 1
        value = stack.pop()
        if isinstance(value, str):
            parts.append(value)
            size += len(value)
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, (list, tuple)):
            stack.extend(reversed(value))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(str(value))
            size += 8
    return "\n".join(parts)[:_READ]


def _numbers(text: str) -> frozenset[Decimal]:
    found = set()
    for m in _NUMBER.finditer(text):
        number = _decimal(m.group())
        if number is not None:
            found.add(number)
    return frozenset(found)


def _holds(held: _Text, mark: Mark) -> bool:
    return mark in held.numbers if isinstance(mark, Decimal) else _has(held.text, mark)


def _has(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as a whole word (both lowered)."""
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not text[at - 1].isalnum()) and (
            end == len(text) or not text[end].isalnum()
        ):
            return True
        at = text.find(word, at + 1)
    return False


def _finding(run: AgentTrajectory, pick: Pick) -> Finding:
    events = run.events
    event, source = events[pick.at], events[pick.source]
    who = event.agent_name or f"step {event.step_index}"
    field = pick.field
    took = _label(pick.took, pick.took_shown, field)
    wanted = _label(pick.wanted, pick.wanted_shown, field)
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
