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
a conversion slip labelled as the right unit (a measurement: not under a setting's
key, ``timeout_ms``, nor a round integer of two significant digits). Not a number under a key of minor or
scaled units (``amount_cents``, ``bps``, ``size_kb``: converted on purpose), nor one
under another unit than the figure's (0.86 seconds for 860 ms), nor one under
another key than the figure was held under (a 10 % tax of a 1,248.00 subtotal:
another quantity made from it); and a number of two significant digits only under
the figure's own unit ("0.27%" for "2.7%", "$420.00" for "$42.00"; a CPU share of
0.27 beside a 2.7 % error rate is chance). A model is blamed as
``observation.output_misread``, a node's or a tool's code as
``reflection.flawed_reasoning``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentdebug.detect.lost import decimal_of
from agentdebug.detect.node_runs import MODEL_TYPES, NodeRuns, written, written_field
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
    r"(?<![\w.,])([$€£¥]\s?)?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d]|[.,]\d)"
    r"(?:\s?(%|(?i:ms|msec|s|sec|secs|seconds|us|µs|ns|min|mins|minutes|h|hrs?|hours"
    r"|kb|mb|gb|tb|kg|g|usd|eur|gbp|cad|chf|jpy|aud)\b))?"
)
# keys of numbers kept in minor or scaled units on purpose
_SCALED_KEY = re.compile(
    r"cent|minor|bps|basis|mille|thousand|_k$|kb|mb|gb|kib|mib|gib|micro|milli|nano", re.I
)
# a unit as a text or a key writes it, by its one name
_UNIT = {
    **dict.fromkeys(("%", "pct", "percent"), "%"),
    **dict.fromkeys(("ms", "msec", "millis", "milliseconds"), "ms"),
    **dict.fromkeys(("s", "sec", "secs", "seconds"), "s"),
    **dict.fromkeys(("us", "µs", "micros", "microseconds"), "us"),
    **dict.fromkeys(("ns", "nanos", "nanoseconds"), "ns"),
    **dict.fromkeys(("min", "mins", "minutes"), "min"),
    **dict.fromkeys(("h", "hr", "hrs", "hours"), "h"),
    **{u: u for u in ("kb", "mb", "gb", "tb", "kg", "g")},
    **dict.fromkeys(("$", "€", "£", "¥", "usd", "eur", "gbp", "cad", "chf", "jpy", "aud"), "¤"),
}
_MEASURES = frozenset({"ms", "s", "us", "ns", "min", "h", "kb", "mb", "gb", "tb", "kg", "g"})
_KEY_PARTS = re.compile(r"[A-Z]?[a-z%µ]+|\d+")


class _Number:
    """A number a payload holds: its value, as written, the key it is under (a text's
    numbers: the text's key, ``in_text``), and its unit (after it in a text, or the
    last word of its key: ``p95_ms``), by its one name."""

    __slots__ = ("in_text", "key", "text", "unit", "value")

    def __init__(self, text: str, value: Decimal, key: str, unit: str, in_text: bool) -> None:
        self.text, self.value, self.key, self.in_text = text, value, key, in_text
        parts = _KEY_PARTS.findall(key)
        named = unit.lower() or (parts[-1].lower() if parts and not in_text else "")
        self.unit = _UNIT.get(named, "")


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
            value = decimal_of(repr(item)) if abs(item) < 1e18 else None
            if value is not None and value.is_finite():
                yield _Number(repr(item), value, key, "", False)
        elif isinstance(item, str):
            parsed = json_of(item)
            if parsed is not None:  # (a tool's result as JSON text: its keys too)
                stack.append((key, parsed))
                continue
            for m in _NUMBER.finditer(item[:200_000]):
                value = decimal_of(m.group(2))
                if value is not None:
                    unit = m.group(3) or (m.group(1) or "").strip()
                    yield _Number(m.group(2), value, key, unit, True)


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
            if len(found) == MOST_FIGURES:
                break
    return found


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
    count = 0
    for event in events:
        numbers = list(_numbers(written(event)))
        read.append(numbers)
        ever.update(n.value for n in numbers)
        count += len(numbers)
        if count > MOST_NUMBERS:
            return
    held: dict[Decimal, set[str]] = {}  # what the run held before, and under which keys
    for i, event in enumerate(events):
        numbers = read[i]
        if event.type in _WRITERS and runs.wrote(event, i):
            slip = _slip(numbers, figures, held, ever)
            if slip is not None:
                yield _finding(event, *slip)
                return
        for n in numbers:
            held.setdefault(n.value, set()).add("" if n.in_text else n.key)


def _slip(
    numbers: list[_Number],
    figures: list[tuple[_Number, tuple[int, ...]]],
    held: dict[Decimal, set[str]],
    ever: set[Decimal],
) -> tuple[_Number, _Number, bool] | None:
    """(the number written, the failure's figure, whether the run held the figure)."""
    wrote = {n.value for n in numbers}
    for number in numbers:
        if number.value == 0 or number.value in held or _SCALED_KEY.search(number.key):
            continue
        digits, exponent = _digits(number.value)
        for figure, want in figures:
            if figure.value in wrote:
                continue  # (the step wrote the figure too)
            if digits != want:
                continue  # (another number)
            percent = figure.unit == "%"
            if percent and figure.value / 100 in wrote:
                continue
            shift = exponent - _digits(figure.value)[1]
            if shift == 0 or abs(shift) > 6:
                continue
            if number.unit and figure.unit and number.unit != figure.unit:
                continue  # (converted to another unit: 860 ms as 0.86 s)
            if len(digits) == 2 and not (number.unit and number.unit == figure.unit):
                continue  # (two digits match by chance, unless under the figure's unit)
            keys = held.get(figure.value) or (held.get(figure.value / 100) if percent else None)
            if keys:
                if percent and number.value == figure.value / 100:
                    continue  # (the fraction of the percentage: the same figure)
                if not number.in_text and "" not in keys and number.key not in keys:
                    continue  # (another quantity made from it: a 10 % tax of a subtotal)
                return number, figure, True
            if (
                figure.value not in ever
                and figure.unit in _MEASURES
                and number.unit == figure.unit
                and _measured(number, digits)
            ):
                return number, figure, False
    return None


# keys of settings, not measurements: a timeout of 2,500 ms is no 250 ms latency slipped
_SETTING = frozenset(
    {"timeout", "interval", "limit", "max", "min", "threshold", "budget", "ttl", "delay"}
    | {"retry", "retries", "backoff", "window", "period", "quota", "cap", "sla", "slo"}
    | {"target", "goal", "default", "config", "maximum", "minimum"}
)


def _measured(number: _Number, digits: tuple[int, ...]) -> bool:
    """Whether a number the run never held the figure of reads as a measurement: not
    under a setting's key, and, of two significant digits, with a fractional part
    (0.86, not a round 2500)."""
    if {w.lower() for w in _KEY_PARTS.findall(number.key)} & _SETTING:
        return False
    return len(digits) > 2 or number.value != number.value.to_integral_value()


def _finding(event: AgentEvent, number: _Number, figure: _Number, given: bool) -> Finding:
    step = event.step_index
    who = event.agent_name or f"step {step}"
    model = event.type in MODEL_TYPES
    field = written_field(event)
    shown = f"{figure.text}{' ' if figure.unit and figure.unit != '%' else ''}{figure.unit}"
    how = (
        f"the run held {shown}, which the failure names, and it wrote {number.text}: the "
        "same digits, its decimal point moved"
        if given
        else f"the failure names {shown}, which the run never held, and it wrote "
        f"{number.text} under the same unit: a conversion off by a power of ten"
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
