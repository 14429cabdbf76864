"""A number a step read out of a text wrongly: "$1,250.00" parsed as 1.0.

An expense pipeline's ``parse_amounts`` node reads each line's printed amount with
a regex that stops at the thousands separator: the hotel's "$1,250.00" becomes
``amount_usd: 1.0``, the claim falls under the approval threshold, no manager
sees it, and the employee is paid a dollar. The run fails far from the parse ("the
folio alone was $1,250"), and every step after it worked faithfully on 1.0.

The rule keeps to what it can read for certain, in a failed run: a record (a
mapping) of a step's update that holds a text field with one number written with
separators ("$1,250.00", "1.250,00 €", "12 500") and, under a key that shares a
word with it (``amount`` and ``amount_usd``, ``price`` and ``price_value``), a
number that is a misreading of it (the digits before its first separator, 1; or
that separator read as a decimal point, 1.25), not its value; where the failure
names the value the text means (1,250) or an identifier of the record (its id).
The first such step is blamed: its code (``reflection.flawed_reasoning``), or its
model (``observation.output_misread``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentdebug.detect.lost import decimal_of, failure_values
from agentdebug.detect.node_runs import NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding
from agentdebug.text import compact_json

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "number_misparsed"
BUDGET = 20_000  # records of a run read
_DEPTH = 8  # levels of a payload looked into
# words a key adds for the form a quantity is in, not for another quantity
_MARKERS = frozenset(
    {"usd", "eur", "gbp", "jpy", "chf", "cad", "aud", "value", "num", "number", "parsed",
     "float", "decimal", "text", "raw", "str", "string", "display", "printed", "formatted",
     "as", "in"}
)  # fmt: skip
# a number written with separators: "1,250.00", "1.250,00", "12 500", "1'250"
_WRITTEN = re.compile(
    r"(?<![\d.,])(\d{1,3})((?:[,. '\u00a0\u202f]\d{3})+)([.,]\d{1,2})?(?![\d]|[.,]\d)"
)
_WORD = re.compile(r"[a-z]+")


def rule_number_misparsed(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's number a step read out of a text wrongly."""
    finding = misparsed(ctx)
    if finding is not None:
        yield finding


def misparsed(ctx: RuleContext) -> Finding | None:
    """The finding, read once per run: :mod:`.coded` and :mod:`.lost` leave to it
    what followed from the misreading (a total of the misread amounts, the amount
    the text meant, which no step after it held)."""
    return ctx.once(RULE, lambda: next(_misparsed(ctx), None))


def _misparsed(ctx: RuleContext) -> Iterator[Finding]:
    run = ctx.trajectory
    values = failure_values(run)  # (empty unless the run failed)
    named = {d for v, _ in values if v[:1].isdigit() and (d := decimal_of(v)) is not None}
    if not named:
        return
    runs = NodeRuns(run.events)
    budget = [BUDGET]  # (records read in the whole run)
    for i, e in enumerate(run.events):
        if e.type is not EventType.AGENT_END or not runs.started(e, i):
            continue
        for record in _records(e.output, budget):
            found = _misread(record, named)
            if found is not None:
                model = not runs.plain_until(e, i)
                yield _finding(e, model, *found)
                return


def _records(value: Any, budget: list[int], depth: int = 0) -> Iterator[dict[str, Any]]:
    """The mappings a payload holds, itself included (``budget``: how many more)."""
    if depth > _DEPTH:
        return
    if isinstance(value, dict):
        budget[0] -= 1
        if budget[0] < 0:
            return
        yield value
        for v in value.values():
            if isinstance(v, dict | list):
                yield from _records(v, budget, depth + 1)
    elif isinstance(value, list):
        for v in value:
            if budget[0] <= 0:
                return
            if isinstance(v, dict | list):
                yield from _records(v, budget, depth + 1)


def _readings(m: re.Match[str]) -> tuple[Decimal, set[Decimal], set[Decimal]]:
    """(what the written number means, read as English writes it; all it may mean;
    its misreadings): "1,250.00" means 1250 and is misread as 1 or 1.25; "1,250"
    may mean 1.25 too (in Europe); "1.250,00" means 1250."""
    head, groups, tail = m.group(1), m.group(2), m.group(3) or ""
    digits = head + re.sub(r"\D", "", groups)
    decimals = tail[1:]
    sep = groups[0]
    means = Decimal(f"{digits}.{decimals}" if decimals else digits)
    may = {means}
    if sep in ",." and len(groups) == 4 and not tail:
        may.add(Decimal(f"{head}.{groups[1:]}"))
    misread = {Decimal(head), Decimal(f"{head}.{groups[1:4]}")}
    return means, may, misread - may


def _words(key: str) -> set[str]:
    """A key's words: ``amount_usd``, ``amountUsd`` and ``Amount USD`` alike."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key)
    return set(_WORD.findall(spaced.lower()))


def _same_quantity(text_key: str, number_key: str) -> bool:
    """Whether two keys name one quantity, the text as printed and the number read
    from it (``amount`` and ``amount_usd``, ``total_text`` and ``total``), not two
    (``room_rate`` and ``room_nights``, ``amount`` and ``amount_k``, ``amount_tax``)."""
    text, number = _words(text_key) - _MARKERS, _words(number_key) - _MARKERS
    return bool(text) and text == number


def _misread(
    record: dict[str, Any], named: set[Decimal]
) -> tuple[str, str, str, Any, Decimal, bool] | None:
    """(text key, the text, number key, the number, what the text means, whether the
    number is its digits before a separator) of a misreading in a record the
    failure is about: it names what the text means or the misread number."""
    texts = [(k, v) for k, v in record.items() if isinstance(k, str) and isinstance(v, str)]
    numbers = [
        (k, v)
        for k, v in record.items()
        if isinstance(k, str)
        and isinstance(v, int | float)
        and not isinstance(v, bool)
        and (isinstance(v, int) or math.isfinite(v))
    ]
    if not texts or not numbers:
        return None
    for tk, text in texts:
        if len(text) > 200:
            continue
        written = list(_WRITTEN.finditer(text))
        if len(written) != 1:
            continue
        means, may, misread = _readings(written[0])
        pairs = [(nk, n, _number(n)) for nk, n in numbers if _same_quantity(tk, nk)]
        if not pairs or any(value in may for _, _, value in pairs):
            continue  # (none of it; or the record holds the right reading too)
        for nk, number, value in pairs:
            if value in misread and (may & named or value in named):
                meant = next((m for m in sorted(may) if m in named), means)
                return tk, text, nk, number, meant, value == Decimal(written[0].group(1))
    return None


def _number(value: int | float) -> Decimal:
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _finding(
    event: AgentEvent,
    model: bool,
    tk: str,
    text: str,
    nk: str,
    number: Any,
    means: Decimal,
    head: bool,
) -> Finding:
    agent, step = event.agent_name, event.step_index
    shown = compact_json(number)
    how = "the digits before its first separator" if head else "a separator read as a decimal point"
    fix = (
        f"At step {step}, {agent}: {tk!r} {text!r} was read as {nk!r} {shown}; read the "
        f"whole number ({format(means, ',f')}): its separators are neither its end nor a "
        "decimal point. Check the other records read the same way."
    )
    return rule_finding(
        RULE,
        "observation.output_misread" if model else "reflection.flawed_reasoning",
        event,
        f"{agent}'s update at step {step} holds {tk!r} {text!r} and, beside it, {nk!r} "
        f"{shown}: the {format(means, ',f')} written there, misread ({how})",
        confidence=0.6,
        evidence=[quoted(event, "output", text)],
        metadata={"fix": fix, "value": shown, "means": str(means)},
    )
