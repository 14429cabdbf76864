"""A figure a step wrote with its decimal point moved: the right digits, ten or a
thousand times off.

A month-end accrual model reads "Hydro-Quebec, CAD 12,480.00" and drafts 1,248.00; an
on-call model reads ``"error_rate": 0.027`` and writes "payments is at 0.27%", under
the 2 % threshold; a latency tool divides microseconds by a million and reports a
860 ms p95 as ``"p95_ms": 0.86``. Each run fails steps later ("the books carried
1,248.00", "payments failed 2.7% of requests and nobody was paged", "p95 around 860
ms and nobody paged"), every step after the slip used the figure faithfully, and
without this rule the free tier blamed one of them, or guessed.

The rule keeps to what it can read for certain, in a failed run: a figure the
failure (its reason, or the reference answer) names, of two significant digits or
more ("12,480.00", "2.7%", "860 ms"), and the first step (a model's reply or tool
call, a tool's result, a node's update made by its own code) that wrote a number
with the same significant digits at another magnitude (times 10 to 10^6, or a tenth
to a millionth), which nothing before it held, and did not write the figure itself.
Either the run held the figure before that step (as written, or for a percentage as
its fraction: "2.7%" is 0.027), so the step was given it; or the run never held it,
and the step wrote the number under the figure's own unit (``p95_ms`` for "860 ms"):
a conversion slip labelled as the right unit. A number of two significant digits
must have a decimal point (0.27, not 27: too common by chance); one under a key of
minor or scaled units (``amount_cents``, ``bps``, ``size_kb``) is a conversion made
on purpose. A model is blamed as ``observation.output_misread``, a node's or a
tool's code as ``reflection.flawed_reasoning``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from agentdebug.detect.node_runs import MODEL_TYPES, NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import json_of

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "figure_scaled"
MOST_FIGURES = 12  # figures of a failure looked for
MOST_NUMBERS = 200_000  # numbers of a run read (then the rule gives up)
_VISITS = 20_000  # parts of one payload read
_WRITERS = frozenset(
    {*MODEL_TYPES, EventType.AGENT_END, EventType.TOOL_CALL, EventType.TOOL_RESULT}
)
# a number as written ("12,480.00", "0.027", "860"), and a unit right after it
_NUMBER = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d]|[.,]\d)"
    r"(?:\s?(%|(?i:ms|s|sec|us|µs|ns|kb|mb|gb|tb|kg|g)\b))?"
)
# keys of numbers kept in minor or scaled units on purpose
_SCALED_KEY = re.compile(
    r"cent|minor|bps|basis|mille|thousand|_k$|kb|mb|gb|kib|mib|gib|micro|milli|nano", re.I
)
_UNITS = frozenset({"ms", "s", "sec", "us", "µs", "ns", "kb", "mb", "gb", "tb", "kg", "g"})


class _Number:
    """A number a payload holds: its value, as written, and the key or unit beside it."""

    __slots__ = ("key", "text", "unit", "value")

    def __init__(self, text: str, value: Decimal, key: str, unit: str) -> None:
        self.text, self.value, self.key, self.unit = text, value, key, unit


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None


def _numbers(payload: Any) -> Iterator[_Number]:
    """The numbers of a payload: its numeric values (under their keys) and the numbers
    its texts write (with the unit after each)."""
    stack: list[tuple[str, Any]] = [("", payload)]
    visits = 0
    while stack and visits < _VISITS:
        key, item = stack.pop()
        visits += 1
        if isinstance(item, dict):
            stack.extend((str(k), v) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((key, v) for v in item)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, (int, float)):
            value = _decimal(repr(item)) if abs(item) < 1e18 else None
            if value is not None:
                yield _Number(repr(item), value, key, "")
        elif isinstance(item, str):
            parsed = json_of(item)
            if parsed is not None:  # (a tool's result as JSON text: its keys too)
                stack.append((key, parsed))
                continue
            for m in _NUMBER.finditer(item[:200_000]):
                value = _decimal(m.group(1))
                if value is not None:
                    yield _Number(m.group(1), value, key, (m.group(2) or "").lower())


def _digits(value: Decimal) -> tuple[tuple[int, ...], int]:
    """(significant digits, exponent) of a non-zero number: 12480.00 is ((1,2,4,8), 1)."""
    _, digits, exponent = value.normalize().as_tuple()
    return (tuple(digits), exponent) if isinstance(exponent, int) else ((), 0)  # (NaN, inf)


def _figures(reason: str) -> list[tuple[_Number, tuple[int, ...]]]:
    """The failure's figures of two significant digits or more."""
    found: list[tuple[_Number, tuple[int, ...]]] = []
    for number in _numbers(reason):
        if number.value == 0:
            continue
        digits, _ = _digits(number.value)
        if len(digits) >= 2 and all(number.value != f.value for f, _ in found):
            found.append((number, digits))
    return found[:MOST_FIGURES]


def _payload(event: AgentEvent) -> Any:
    return (
        event.input if event.type in (EventType.USER_INPUT, EventType.TOOL_CALL) else (event.output)
    )


def rule_figure_scaled(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's step that wrote a figure the failure names ten-fold off."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    figures = _figures(f"{run.outcome.reason or ''} {run.reference_answer or ''}")
    if not figures:
        return
    events = run.events
    runs = NodeRuns(events)
    ever: set[Decimal] = set()  # every number the run held
    read: list[list[_Number]] = []
    for event in events:
        numbers = list(_numbers(_payload(event)))
        read.append(numbers)
        ever.update(n.value for n in numbers)
        if sum(map(len, read)) > MOST_NUMBERS:
            return
    held: set[Decimal] = set()  # what the run held before the event read
    for i, event in enumerate(events):
        numbers = read[i]
        if event.type in _WRITERS and runs.wrote(event, i):
            slip = _slip(numbers, figures, held, ever)
            if slip is not None:
                yield _finding(event, *slip)
                return
        held.update(n.value for n in numbers)


def _slip(
    numbers: list[_Number],
    figures: list[tuple[_Number, tuple[int, ...]]],
    held: set[Decimal],
    ever: set[Decimal],
) -> tuple[_Number, _Number, bool] | None:
    """(the number written, the failure's figure, whether the run held the figure)."""
    wrote = {n.value for n in numbers}
    for number in numbers:
        if number.value == 0 or number.value in held or _SCALED_KEY.search(number.key):
            continue
        digits, exponent = _digits(number.value)
        for figure, want in figures:
            if digits != want or figure.value in wrote:
                continue  # (another number; or the step wrote the figure too)
            if figure.unit == "%" and figure.value / 100 in wrote:
                continue
            shift = exponent - _digits(figure.value)[1]
            if shift == 0 or abs(shift) > 6 or (len(digits) == 2 and "." not in number.text):
                continue
            given = figure.value in held or (figure.unit == "%" and figure.value / 100 in held)
            if given:
                if figure.unit == "%" and number.value == figure.value / 100:
                    continue  # (the fraction of the percentage: the same figure)
                return number, figure, True
            if figure.value not in ever and figure.unit in _UNITS and _labelled(number, figure):
                return number, figure, False
    return None


def _labelled(number: _Number, figure: _Number) -> bool:
    """Whether a number is written under the figure's unit (``p95_ms``, "0.86 ms")."""
    unit = figure.unit
    return number.unit == unit or bool(re.search(rf"(?:^|_){re.escape(unit)}$", number.key, re.I))


def _finding(event: AgentEvent, number: _Number, figure: _Number, given: bool) -> Finding:
    step = event.step_index
    who = event.agent_name or f"step {step}"
    model = event.type in MODEL_TYPES
    field = "input" if event.type is EventType.TOOL_CALL else "output"
    shown = f"{figure.text}{' ' if figure.unit and figure.unit != '%' else ''}{figure.unit}"
    how = (
        f"the run held {shown}, which the failure names, and it wrote {number.text}: the "
        "same digits, its decimal point moved"
        if given
        else f"the failure names {shown}, which the run never held, and it wrote "
        f"{number.text} under the same unit: the same digits, a conversion off by a power "
        "of ten"
    )
    fix = f"At step {step}, {who}: it wrote {number.text} where the figure is {shown}; " + (
        "read the figure again, with its decimal point (a fraction is not a percentage)."
        if model
        else "check the conversion's factor (seconds, milliseconds and microseconds; "
        "units and thousands)."
    )
    return rule_finding(
        RULE,
        "observation.output_misread" if model else "reflection.flawed_reasoning",
        event,
        f"{who} at step {step}: {how}",
        confidence=0.5,
        evidence=[quoted(event, field, number.text)],
        metadata={"fix": fix, "value": number.text, "wanted": shown},
    )
