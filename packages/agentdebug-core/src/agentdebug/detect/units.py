"""A model that copied a tool's figure with another unit of the same kind.

A spec sheet says "Max rated load: 450 lb"; the extracting model writes
``{"max_load_kg": 450}``, and the answer tells the user a 300 kg load is safe.
Nothing contradicts the figure (it is the tool's), so the figure rules pass it; the
unit is what was misread (``observation.output_misread``).

The rule keeps to what it can read for certain, in a failed run: a model's output
gives a figure with a unit (written after it, "450 kg", or named by the key it is
under, ``max_load_kg``) while a source before it (the user's input, a tool's call
or result, a retrieval) gives the very same figure with another unit of the same
kind (mass, length, distance, volume, temperature, speed) that does not convert to
it one to one, and no source gives that figure in the model's unit. The first
model call that wrote it is blamed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import RESULT_TYPES
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "unit_swapped"
_READ = 20000  # characters of an event read
# unit -> (kind, its size in the kind's base unit; temperatures by name)
_UNITS: dict[str, tuple[str, float]] = {}
for _names, _kind, _size in (
    ("kg kgs kilogram kilograms kilo kilos", "mass", 1.0),
    ("g gram grams", "mass", 1e-3),
    ("lb lbs pound pounds", "mass", 0.45359237),
    ("oz ounce ounces", "mass", 0.028349523),
    ("km kms kilometre kilometres kilometer kilometers", "length", 1000.0),
    ("mi mile miles", "length", 1609.344),
    ("m metre metres meter meters", "length", 1.0),
    ("ft feet foot", "length", 0.3048),
    ("cm centimetre centimetres centimeter centimeters", "length", 0.01),
    ("inch inches", "length", 0.0254),
    ("l litre litres liter liters", "volume", 1.0),
    ("gal gallon gallons", "volume", 3.785411784),
    ("°c celsius", "temperature", 1.0),
    ("°f fahrenheit", "temperature", 2.0),
    ("kph km/h kmh", "speed", 1.0),
    ("mph", "speed", 1.609344),
):
    for _name in _names.split(" "):
        _UNITS[_name] = (_kind, _size)
_ALTERNATION = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
# "450 lb", "450lb", "1,200 kg", "98.6 °F"; not "450 lb" inside "450 lbs-ft" or a word
_WRITTEN = re.compile(
    rf"(?<![\w.,])(\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?\s?({_ALTERNATION})(?![\w/-])", re.I
)
# a key naming its unit: "max_load_kg": 450, maxLoadKg: 450, "weight (lb)": 450 (a
# key's own letters, "total", name no unit: the unit follows "_", " (" or a capital)
_KEYED = re.compile(
    rf"[A-Za-z][A-Za-z0-9]*?(?:_[A-Za-z0-9]+?)*?(?:_|\s\(|(?<=[a-z])(?=[A-Z]))"
    rf"((?i:{_ALTERNATION}))\)?[\"']?\s*[:=]\s*[\"']?(\d+(?:\.\d+)?)(?![\d.])"
)
_QUOTES = re.compile("[\"']")
_SOURCES = frozenset(
    {EventType.USER_INPUT, EventType.TOOL_CALL, EventType.MEMORY_READ, *RESULT_TYPES}
)
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL})


def _figures(text: str) -> Iterator[tuple[float, str, str]]:
    """Each figure of ``text`` with a unit: its value, the unit, and as written."""
    for m in _WRITTEN.finditer(text):
        number = m.group(0)[: m.start(2) - m.start(0)].strip()
        yield float(number.replace(",", "")), m.group(2).lower(), m.group(0)
    for m in _KEYED.finditer(text):
        yield float(m.group(2)), m.group(1).lower(), _QUOTES.sub("", m.group(0))


def rule_unit_swapped(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's model output giving a source's figure in another unit of its kind."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    held: dict[tuple[float, str], tuple[AgentEvent, str]] = {}  # (value, unit) -> source
    for event in run.events:
        if event.type in _SOURCES:
            text = f"{flatten(event.input, _READ)}\n{flatten(event.output, _READ)}"
            for value, unit, written in _figures(text):
                held.setdefault((value, unit), (event, written))
            continue
        if event.type not in _MODEL or not held:
            continue
        for value, unit, written in _figures(flatten(event.output, _READ)):
            kind, size = _UNITS[unit]
            if any(_UNITS[u] == (kind, size) for v, u in held if v == value):
                continue  # a source gives it in this unit (or a name of it)
            source = next(
                (
                    (held[(v, u)], u)
                    for v, u in held
                    if v == value and _UNITS[u][0] == kind and _UNITS[u][1] != size
                ),
                None,
            )
            if source is not None:
                (origin, said), theirs = source
                yield _finding(event, written, origin, said, value, theirs, unit)
                return


def _finding(
    event: AgentEvent,
    written: str,
    source: AgentEvent,
    said: str,
    value: float,
    theirs: str,
    ours: str,
) -> Finding:
    agent = event.agent_name or "the model"
    by = source.agent_name or source.type.value
    kind, size = _UNITS[theirs]
    figure = f"{value:g}"
    if kind == "temperature":
        converted = (value - 32) / 1.8 if size == 2.0 else value * 1.8 + 32
    else:
        converted = value * size / _UNITS[ours][1]
    return rule_finding(
        RULE,
        "observation.output_misread",
        event,
        f"{agent} wrote {written!r} where {by} gave {said!r} at step {source.step_index}: "
        f"the figure copied, the unit swapped ({figure} {theirs} is {converted:.4g} {ours})",
        confidence=0.7,
        evidence=[quoted(source, "output", said), quoted(event, "output", written)],
        metadata={
            "fix": (
                f"At step {event.step_index}, {agent}: {by} gave {said!r}, in {theirs}; "
                f"convert it ({figure} {theirs} = {converted:.4g} {ours}) instead of "
                f"writing {written!r}."
            )
        },
    )
