"""A total a step's code added up right, from rows an earlier step had wrongly dropped.

An ETL graph extracts ten order rows, a ``dedupe`` node keys them on (customer,
region) instead of the order id and keeps seven, an ``aggregate`` node sums each
region's amounts, and a model writes the report. The run fails: "EMEA revenue
reported as 2,050.00 but the ledger shows 6,150.00". The first place the run holds
2,050.00 is ``aggregate``'s update, a step with no model in it, so
:mod:`.coded` would blame its code; but 2,050.00 is exactly the sum of the EMEA
rows ``aggregate`` was given. Its code was right; its rows were not. The step that
dropped the EMEA orders is the fault (``memory.context_loss``: what the run had,
lost on the way).

The rule keeps to what it can check, for the wrong figure :mod:`.coded` found made
by a step's code (and any other wrong figure that step's update holds):

- the failure gives the wanted figure with it, in the same clause or sentence ("...
  reported as 2,050.00 but the ledger shows 6,150.00"), or the run's reference
  answer holds one figure;
- the wrong figure is, to its last written place, the sum of a numeric field of a
  list of records the step had at hand (the latest update of a state key, or the
  run's input, before it), over all of them or over those whose text field is a
  word of the failure's clause ("EMEA");
- the step (``LOOKBACK`` events at most) that wrote that list kept part of a longer
  list of the very same records, an earlier step's update, the run's input or a
  tool's result: every record it kept is one of those, and it kept fewer;
- the records it dropped (of the failure's group; not copies of records it kept,
  which were true duplicates) add up, to the last written place, to the difference
  between the total and the wanted figure (a dedupe that dropped two real EMEA
  orders and a page fetched twice: the two make the 4,100.00 short).

A list the dropper itself was given whole but that an earlier step had narrowed
too is looked through, back to ``HOPS`` steps: the step blamed is the one whose
dropped records make up the difference. A key a reducer merges (the run's
``state_schema``) is not read: its updates are parts (``Send`` branches'), not the
list a step was given. A filter that rightly dropped records whose amounts happen
to make up the difference exactly would be blamed; all of them must, not some. Not read: a total of records a step changed
rather than dropped (a date parsed wrong, an amount rounded), an average or a
count, lists of more than ``MOST_ROWS`` records.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentdebug.detect.coded import _STATES, _WANTED, _named, made_in_code
from agentdebug.detect.lost import decimal_of
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import STATE_SCHEMA
from agentdebug.schema import AgentEvent, EventType, Finding
from agentdebug.text import compact_json, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "total_of_dropped_rows"
LOOKBACK = 200  # events before a list its longer source is looked for in
MOST_ROWS = 5000  # records of a list read (a longer one is not summed)
MOST_GROUPS = 200  # distinct texts of a field tried as the failure's group
HOPS = 4  # narrowings looked through, back from the list the total was made from
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_AMOUNT_TEXT = re.compile(r"(?:Decimal\(')?\s*[$€£]?\s*(-?[\d,]*\d(?:\.\d+)?)\s*(?:'\))?")
_SEGMENT = re.compile(r";|\n|(?<=[^\d\s])\.\s|\.\s(?=[A-Z])")  # clauses: not "2,050.00"
_Rows = list[dict[str, Any]]


def rule_total_of_dropped_rows(ctx: RuleContext) -> Iterator[Finding]:
    """A total right for the records a step was given, wrong because an earlier step
    dropped some."""
    finding = dropped_rows(ctx)
    if finding is not None:
        yield finding


def dropped_rows(ctx: RuleContext) -> Finding | None:
    """The finding, read once per run (:mod:`.coded` leaves the total to it)."""
    return ctx.once(RULE, lambda: _dropped_rows(ctx))


def explains(finding: Finding | None, value: str) -> bool:
    """Whether a finding of this rule (or :mod:`.minor_units`') is about ``value``, a
    figure as :mod:`.coded` reads it ("2050", "2050.5")."""
    if finding is None:
        return False
    words = str(finding.metadata.get("value", "")).lstrip("$€£").split()
    said = decimal_of(words[0]) if words else None
    return said is not None and said == decimal_of(value)


def _dropped_rows(ctx: RuleContext) -> Finding | None:
    made = made_in_code(ctx)
    if made is None or not made.value.figure:
        return None
    run = ctx.trajectory
    events = run.events
    maker = events[made.at]
    if maker.type is not EventType.AGENT_END:
        return None
    held = compact_json(maker.output)
    schema = run.metadata.get(STATE_SCHEMA)
    merged = schema.get("reducers") if isinstance(schema, dict) else None
    at_hand = _lists_before(events, made.at, merged if isinstance(merged, dict) else {})
    if not at_hand:
        return None
    for got, wanted, clause in _pairs(run.outcome.reason or "", run.reference_answer or ""):
        shown = _holds(held, got)
        if shown is None:
            continue
        for key, (rows, w) in at_hand.items():
            for field, group in _sums_to(rows, got, clause):
                found = _dropper(events, w, key, rows, field, group, got, wanted)
                if found is not None:
                    return _finding(maker, shown, key, field, group, got, wanted, *found)
    return None


def _pairs(reason: str, reference: str) -> Iterator[tuple[Decimal, Decimal, str]]:
    """(wrong figure, wanted figure, its clause) pairs the failure gives."""
    clauses = [c for c in _SEGMENT.split(reason) if c.strip()]
    wrongs = 0
    read = [[v for v in _named(clause, "") if v.figure] for clause in clauses]
    for n, (clause, values) in enumerate(zip(clauses, read, strict=True)):
        bad = [v for v in values if v.wrong]
        good = [v for v in values if not v.wrong]
        wrongs += len(bad)
        if len(bad) == 1 and not good and n + 1 < len(read):  # ("... (2,050.00); the
            after = read[n + 1]  # ledger shows 6,150.00": the wanted one in the next)
            if len(after) == 1 and (
                _WANTED.search(clauses[n + 1]) or _STATES.search(clauses[n + 1])
            ):
                good, clause = after, f"{clause} {clauses[n + 1]}"
        if len(bad) == 1 and good:
            got, wanted = decimal_of(bad[0].text), decimal_of(good[0].text)
            if got is not None and wanted is not None and got != wanted:
                yield got, wanted, clause
    answer = [v for v in _named(reference, "") if v.figure]
    wanted = decimal_of(answer[0].text) if len(answer) == 1 else None
    if wrongs == 1 and wanted is not None:  # (the reference answer's one figure)
        for clause in clauses:
            for v in _named(clause, ""):
                got = decimal_of(v.text)
                if v.figure and v.wrong and got is not None and got != wanted:
                    yield got, wanted, clause


def _holds(text: str, value: Decimal) -> str | None:
    """Where a JSON text holds ``value`` as a number (any trailing zeros): as written."""
    for m in _NUMBER.finditer(text):
        if decimal_of(m.group()) == value:
            return m.group()
    return None


def _rows(value: Any) -> _Rows | None:
    if (
        isinstance(value, list)
        and 1 < len(value) <= MOST_ROWS
        and all(isinstance(r, dict) for r in value)
    ):
        return value
    return None


def _lists_before(
    events: list[AgentEvent], at: int, merged: dict[str, Any]
) -> dict[str, tuple[_Rows, int]]:
    """The lists of records the step at ``at`` had at hand: each state key's latest
    value before it (a node's update, the run's input), with where it was written;
    not a key a reducer merges (``merged``: an update of it is a part, a ``Send``
    branch's, not what the step read)."""
    latest: dict[str, tuple[Any, int]] = {}
    for i, e in enumerate(events[:at]):
        payload = e.input if e.type is EventType.USER_INPUT else e.output
        if e.type in (EventType.USER_INPUT, EventType.AGENT_END) and isinstance(payload, dict):
            for key, value in payload.items():
                latest[str(key)] = (value, i)
    return {
        k: (rows, i)
        for k, (v, i) in latest.items()
        if k not in merged and (rows := _rows(v)) is not None
    }


def _amount(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else None
    if isinstance(value, str) and len(value) <= 40:  # ("1,200.00", "$1200", "Decimal('8.5')")
        m = _AMOUNT_TEXT.fullmatch(value.strip())
        if m is not None:
            return decimal_of(m.group(1))
    return None


def _close(total: Decimal, value: Decimal) -> bool:
    """Whether ``total`` written to ``value``'s places is ``value``."""
    exponent = value.as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    return abs(total - value) <= Decimal(5).scaleb(-places - 1)


def _sums_to(
    rows: _Rows, got: Decimal, clause: str
) -> Iterator[tuple[str, tuple[str, str] | None]]:
    """The (numeric field, group) whose sum over ``rows`` is ``got``: a group is a
    text field and its value, a word or words of the failure's clause ("EMEA",
    "North America"). A field is numeric when every record's value of it is a
    number or missing (null), and one is a number."""
    numeric = [
        k
        for k in rows[0]
        if all(r.get(k) is None or _amount(r[k]) is not None for r in rows)
        and any(r.get(k) is not None for r in rows)
    ]
    if not numeric:
        return
    said = f" {_words(clause)} "
    texts: dict[str, set[str]] = {}
    for r in rows:
        for k, v in r.items():
            if (
                isinstance(v, str)
                and k not in numeric
                and len(texts.setdefault(k, set())) < MOST_GROUPS
            ):
                texts[k].add(v)
    groups = sorted(
        (k, v)
        for k, values in texts.items()
        for v in values
        if (words := _words(v)) and f" {words} " in said
    )
    for field in numeric:
        for group in [*groups, None]:
            picked = rows if group is None else [r for r in rows if r.get(group[0]) == group[1]]
            total = sum((_amount(r.get(field)) or Decimal(0) for r in picked), Decimal(0))
            if picked and _close(total, got):
                yield field, group


def _words(text: str) -> str:
    """A text's words, lowered, one space apart."""
    return " ".join(re.findall(r"[\w-]+", text.lower()))


def _key(row: dict[str, Any]) -> str:
    """A record as a comparable text (any keys, any values)."""
    return compact_json(row)


def _dropper(
    events: list[AgentEvent],
    w: int,
    key: str,
    rows: _Rows,
    field: str,
    group: tuple[str, str] | None,
    got: Decimal,
    wanted: Decimal,
) -> tuple[AgentEvent, str, _Rows, _Rows] | None:
    """The step that dropped the records making up the difference: its update, the
    key it wrote, the longer list it kept ``rows`` of, and the records it dropped."""
    for _ in range(HOPS):
        writer = events[w]
        if writer.type is not EventType.AGENT_END:
            return None
        kept = Counter(_key(r) for r in rows)
        source = _source(events, w, kept)
        if source is None:
            return None
        longer, s, longer_key = source
        if len(longer) > len(rows):  # (the same records again: a sort, a copy, looked past)
            dropped = [
                r
                for r in longer
                if _key(r) not in kept  # (not a copy of one it kept: a true duplicate)
                and (group is None or r.get(group[0]) == group[1])
            ]
            gone = sum((_amount(r.get(field)) or Decimal(0) for r in dropped), Decimal(0))
            if dropped and gone and _close(gone, wanted - got):
                return writer, key, longer, dropped
        rows, w, key = longer, s, longer_key
    return None


def _source(events: list[AgentEvent], w: int, kept: Counter[str]) -> tuple[_Rows, int, str] | None:
    """The latest list before ``w`` holding every record of ``kept``, where, and the
    key it is under (empty for a tool's result that is the list itself)."""
    size = sum(kept.values())
    for i in range(w - 1, max(-1, w - 1 - LOOKBACK), -1):
        e = events[i]
        if e.type is EventType.USER_INPUT:
            payloads: Any = e.input
        elif e.type in (EventType.AGENT_END, EventType.TOOL_RESULT):
            payloads = e.output
        else:
            continue
        pairs = payloads.items() if isinstance(payloads, dict) else [("", payloads)]
        for key, value in pairs:
            rows = _rows(value)
            if rows is None or len(rows) < size:
                continue
            have = Counter(_key(r) for r in rows)
            if all(have[k] >= n for k, n in kept.items()):
                return rows, i, str(key)
    return None


def _finding(
    maker: AgentEvent,
    shown: str,
    key: str,
    field: str,
    group: tuple[str, str] | None,
    got: Decimal,
    wanted: Decimal,
    dropper: AgentEvent,
    wrote: str,
    longer: _Rows,
    dropped: _Rows,
) -> Finding:
    agent, step = dropper.agent_name, dropper.step_index
    of = f"the {group[1]} records" if group else "the records"
    listed = "; ".join(shorten(compact_json(r), 120) for r in dropped[:3])
    if len(dropped) > 3:
        listed += f" and {len(dropped) - 3} more"
    fix = (
        f"At step {step}, {agent}: its code dropped records the total needed ({listed}); "
        "check the condition it keeps records by (the key it deduplicates on, the filter) "
        "against them."
    )
    message = (
        f"{shown}, which the failure names, is the sum of {field!r} over {of} of {key!r} "
        f"that {maker.agent_name} was given at step {maker.step_index}: right for what it "
        f"was given. {agent} at step {step} had kept {wrote!r} from a longer list of the "
        f"same records ({len(longer)}) and dropped {of}: {listed}, whose {field!r} add up "
        f"to {_plain(wanted - got)}, the difference between the total and the "
        f"{_plain(wanted)} wanted"
    )
    return rule_finding(
        RULE,
        "memory.context_loss",
        dropper,
        message,
        confidence=0.55,
        evidence=[quoted(dropper, "output", wrote), quoted(maker, "output", shown)],
        metadata={"fix": fix, "value": shown, "dropped": len(dropped)},
    )


def _plain(value: Decimal) -> str:
    return format(value, "f")
