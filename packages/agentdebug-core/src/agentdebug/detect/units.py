"""A model that copied a tool's figure with another unit of the same kind.

A spec sheet says "Max rated load: 450 lb"; the extracting model writes
``{"max_load_kg": 450}``, and the answer tells the user a 300 kg load is safe.
Nothing contradicts the figure (it is the tool's), so the figure rules pass it; the
unit is what was misread (``observation.output_misread``).

A receipt says "Total JPY 18,400"; the extracting model writes ``{"amount": 18400,
"currency": "USD"}``, and the claim is rejected as 16,928 EUR. The currency is what
was misread, the same way.

The rule keeps to what it can read for certain, in a failed run: a model's output
gives a figure with a unit (written after it, "450 kg"; named by the key it is
under, ``max_load_kg``; or by a sibling key of its object, ``{"weight": 450, "unit":
"kg"}``, ``{"amount": 18400, "currency": "USD"}``) while a source before it (the
user's input, a tool's call or result, a retrieval) gives the very same figure with
another unit of the same kind (mass, length, distance, volume, temperature, speed,
currency: an ISO code in capitals, "JPY 18,400", "18,400 JPY", or "$", "€", "£"
before the figure; "¥" says no one currency) that does not convert to it one to
one, and no source gives that figure in the model's unit. The first model call
that wrote it is blamed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import RESULT_TYPES
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json, flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "unit_swapped"
_READ = 20000  # characters of an event read
SIBLING_KEYS = 20_000  # keys of a payload read for a unit named beside a figure
# unit -> (kind, its size in the kind's base unit; temperatures by name)
_UNITS: dict[str, tuple[str, float]] = {}
for _names, _kind, _size in (
    ("kg|kgs|kilogram|kilograms|kilo|kilos", "mass", 1.0),
    ("g|gram|grams", "mass", 1e-3),
    ("lb|lbs|pound|pounds", "mass", 0.45359237),
    ("oz|ounce|ounces", "mass", 0.028349523),
    ("km|kms|kilometre|kilometres|kilometer|kilometers", "length", 1000.0),
    ("mi|mile|miles", "length", 1609.344),
    ("m|metre|metres|meter|meters", "length", 1.0),
    ("ft|feet|foot", "length", 0.3048),
    ("cm|centimetre|centimetres|centimeter|centimeters", "length", 0.01),
    ("inch|inches", "length", 0.0254),
    ("l|litre|litres|liter|liters", "volume", 1.0),
    ("gal|gallon|gallons", "volume", 3.785411784),
    ("°c|° c|℃|celsius|degrees celsius|degree celsius", "temperature", 1.0),
    ("°f|° f|℉|fahrenheit|degrees fahrenheit|degree fahrenheit", "temperature", 2.0),
    ("kph|km/h|kmh", "speed", 1.0),
    ("mph", "speed", 1.609344),
):
    for _name in _names.split("|"):
        _UNITS[_name] = (_kind, _size)
_ALTERNATION = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
# currencies: a kind whose units do not convert by a fixed size (each its own "size")
_CODES = [
    "USD",
    "EUR",
    "GBP",
    "JPY",
    "CHF",
    "CAD",
    "AUD",
    "NZD",
    "CNY",
    "HKD",
    "SGD",
    "INR",
    "KRW",
    "SEK",
    "NOK",
    "DKK",
    "PLN",
    "CZK",
    "HUF",
    "MXN",
    "BRL",
    "ZAR",
    "TRY",
    "ILS",
    "AED",
    "THB",
]
for _i, _code in enumerate(_CODES):
    _UNITS[_code.lower()] = ("currency", float(_i + 1))
_SIGNS = {"$": "usd", "€": "eur", "£": "gbp"}
_CODE = "|".join(_CODES)
_NUMBER = r"([-\u2212]?)(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
# "450 lb", "450lb", "a 450-lb hoist", "1,200 kg", "-10 °F", "40 degrees Fahrenheit";
# not "450 lb" inside "450 lbs-ft" or a word
_WRITTEN = re.compile(
    rf"(?<![\w.,]){_NUMBER}[ \u00a0-]?({_ALTERNATION})(?![\w/-])", re.I
)  # (one space: a dict's values, read one a line, are not "450\nkg")
# a key naming its unit: "max_load_kg": 450, maxLoadKg: 450, "weight (lb)": 450 (a
# key's own letters, "total", name no unit: the unit follows "_", " (" or a capital);
# a key starts where a word does, and is not longer than keys are
_KEYED = re.compile(
    r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]{0,30}?(?:_[A-Za-z0-9]{1,20}?){0,6}?"
    rf"(?:_|\s\(|(?<=[a-z])(?=[A-Z]))((?i:{_ALTERNATION}))\)?[\"']?\s*[:=]\s*[\"']?"
    rf"{_NUMBER}(?![\d.])"
)
# money: "JPY 18,400", "$180", "18,400 JPY", "250 €" (codes in capitals: "try" is a word)
_MONEY = re.compile(
    rf"(?<![\w.,])(?:({_CODE})[ \u00a0]?|([$€£])[ \u00a0]?){_NUMBER}"
    rf"(?!\d|[.,]\d|[ \u00a0]?(?:{_CODE})\b)"  # ("$180 CAD": its code says, below)
    rf"|(?<![\w.,]){_NUMBER}[ \u00a0]?({_CODE}|€)(?![\w])"
)
# money in a key's name: "price_usd": 180, "totalEur": 180
_MONEY_KEYED = re.compile(
    r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]{0,30}?(?:_[A-Za-z0-9]{1,20}?){0,6}?"
    rf"(?:_|(?<=[a-z])(?=[A-Z]))((?i:{_CODE}))[\"']?\s*[:=]\s*[\"']?{_NUMBER}(?!\d|[.,]\d)"
)
# a key naming its object's unit, and the keys a unit is said of beside it
_UNIT_KEY = re.compile(r"^(?:unit|units|uom|currency|currency_?code|ccy)$", re.I)
_UNIT_ANY = re.compile(r"(?:unit|units|uom|currency|ccy)(?:_?code)?$", re.I)  # (base_currency)
_MONEY_KEYS = re.compile(
    r"amount|total|price|cost|fee|sum|tax|balance|charge|paid|due|refund|net|gross|"
    r"salary|budget|fare|rate|value|spend|payment|deposit|discount",
    re.I,
)
_MEASURE_KEYS = re.compile(
    r"weight|mass|load|length|height|width|depth|distance|range|volume|capacity|"
    r"temp|speed|size|value|amount|reading|limit|max|min",
    re.I,
)
_NUMBER_TEXT = re.compile(_NUMBER)
_DIGITS = re.compile(r"\d[\d,.]*")  # (where a figure may be: a number's digits)
_KEY_NUMBER = re.compile(r"[:=]\s*[\"']?[-\u2212]?\d")  # (a key's value that is a number)
_QUOTES = re.compile("[\"']")
_SOURCES = frozenset(
    {EventType.USER_INPUT, EventType.TOOL_CALL, EventType.MEMORY_READ, *RESULT_TYPES}
    | {EventType.AGENT_START, EventType.AGENT_END}  # (a node that read it, in its update)
)
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL})


class _Figure(NamedTuple):
    value: float
    unit: str
    written: str  # as said in a message
    quote: str = ""  # as the text holds it, for the evidence (``written`` when empty)


def _segments(text: str, anchor: re.Pattern[str], before: int, after: int) -> list[list[int]]:
    """The stretches of ``text`` around each match of ``anchor`` (``before`` and
    ``after`` characters more), merged: the figure patterns open with a look-behind,
    which the regex engine tries at every character, so they are run only where a
    number (or a key's number) is."""
    spans: list[list[int]] = []
    for m in anchor.finditer(text):
        start, end = max(0, m.start() - before), m.end() + after
        if spans and start <= spans[-1][1]:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    return spans


def _found(pattern: re.Pattern[str], text: str, spans: list[list[int]]) -> Iterator[re.Match[str]]:
    for start, end in spans:  # (a look-behind sees before ``start``)
        yield from pattern.finditer(text, start, min(end, len(text)))


def _figures(text: str) -> Iterator[_Figure]:
    """Each figure of ``text`` with a unit: its value, the unit, and as written (twice:
    as said and as quoted)."""
    near = _segments(text, _DIGITS, 8, 48)  # (a code or a sign before; a unit after)
    keyed = _segments(text, _KEY_NUMBER, 220, 48)  # (a key's name before, up to 220)
    for m in _found(_WRITTEN, text, near):
        yield _Figure(_value(m.group(1), m.group(2)), m.group(3).lower(), m.group(0))
    for m in _found(_KEYED, text, keyed):
        yield _Figure(_value(m.group(2), m.group(3)), m.group(1).lower(), _unquoted(m))
    for m in _found(_MONEY, text, near):
        if m.group(3) is not None:  # (the currency before the figure)
            unit = m.group(1).lower() if m.group(1) else _SIGNS[m.group(2)]
            yield _Figure(_value(m.group(3), m.group(4)), unit, m.group(0))
        else:
            unit = "eur" if m.group(7) == "€" else m.group(7).lower()
            yield _Figure(_value(m.group(5), m.group(6)), unit, m.group(0))
    for m in _found(_MONEY_KEYED, text, keyed):
        yield _Figure(_value(m.group(2), m.group(3)), m.group(1).lower(), _unquoted(m))


def _unquoted(m: re.Match[str]) -> str:
    return _QUOTES.sub("", m.group(0))


def _sibling_figures(
    value: Any, depth: int = 0, budget: list[int] | None = None
) -> Iterator[_Figure]:
    """Figures whose unit a sibling key names: ``{"amount": 18400, "currency": "USD"}``
    (in an object, or in a JSON text of one, as a model's reply gives it, also in a
    ```json fence or after a sentence). Only the keys a unit is said of (money:
    ``amount``, ``total``, ``price``...; a measure: ``weight``, ``length``...), not a
    count or an id beside them (``nights``, ``order_id``); an object naming more
    than one unit (``base_currency`` and ``currency``) is not read. At most
    ``SIBLING_KEYS`` keys of a payload are read (a 500 x 500 mapping is 250,000)."""
    if budget is None:
        budget = [SIBLING_KEYS]
    if depth > 6 or budget[0] <= 0:
        return
    if isinstance(value, str):
        data = _json_in(value)
        if data is not None:
            yield from _sibling_figures(data, depth + 1, budget)
        return
    if isinstance(value, list):
        for item in value[:200]:
            yield from _sibling_figures(item, depth + 1, budget)
        return
    if not isinstance(value, dict):
        return
    if len(value) > budget[0]:
        budget[0] = 0
        return
    budget[0] -= len(value)
    named = [
        (k, v.strip())
        for k, v in value.items()
        if isinstance(k, str) and _UNIT_KEY.search(k) and isinstance(v, str)
    ]
    units_named = sum(1 for k in value if isinstance(k, str) and _UNIT_ANY.search(k))
    unit = named[0][1].lower() if len(named) == 1 and units_named == 1 else None
    said = _MONEY_KEYS if unit in _UNITS and _UNITS[unit][0] == "currency" else _MEASURE_KEYS
    for key, item in value.items():
        figure = _number(item) if unit in _UNITS and isinstance(key, str) else None
        if figure is not None and said.search(key):
            k, v = named[0]  # (the pair as JSON writes it: the evidence's quote)
            quote = f"{orjson.dumps(k).decode()}: {orjson.dumps(v).decode()}"
            yield _Figure(figure, str(unit), f"{key}: {figure:g}, {k}: {v}", quote)
        elif isinstance(item, (dict, list, str)):
            yield from _sibling_figures(item, depth + 1, budget)


def _json_in(text: str) -> Any:
    """The JSON object or list a text holds: the whole of it, or from its first "{"
    (or "[") to its last "}" (a reply's ```json fence, a sentence before it)."""
    text = text.strip()
    if len(text) > _READ:
        return None
    start = next((i for i, c in enumerate(text[:2000]) if c in "{["), None)
    if start is None:
        return None
    end = text.rfind("}" if text[start] == "{" else "]")
    if end < start:
        return None
    try:
        return orjson.loads(text[start : end + 1])
    except orjson.JSONDecodeError:
        return None


def _number(item: Any) -> float | None:
    """A figure: a finite number, or a text that is one ("18400", "18,400.00")."""
    if isinstance(item, bool):
        return None
    if isinstance(item, str):
        found = _NUMBER_TEXT.fullmatch(item.strip())
        return _value(found.group(1), found.group(2)) if found else None
    if isinstance(item, int) and abs(item) < 10**15:
        return float(item)
    if isinstance(item, float) and math.isfinite(item):
        return item
    return None


def _value(sign: str, digits: str) -> float:
    number = float(digits.replace(",", ""))
    return -number if sign else number


def _read(value: Any) -> str:
    """An event's field as text, and as JSON with its keys (a tool call's arguments,
    a structured output: ``{"max_load_kg": 450}``)."""
    if value is None or isinstance(value, str):
        return value or ""
    return f"{flatten(value, _READ)}\n{compact_json(value)[:_READ]}"


def _all_figures(*fields: Any) -> Iterator[_Figure]:
    for field in fields:
        yield from _figures(_read(field))
        yield from _sibling_figures(field)


def _converted(value: float, theirs: str, ours: str) -> float:
    """``value`` in the unit ``theirs``, in the unit ``ours`` (of the same kind)."""
    kind, size = _UNITS[theirs]
    if kind == "currency":  # (no fixed rate: no figure is its conversion)
        return float("nan")
    if kind == "temperature":
        return (value - 32) / 1.8 if size == 2.0 else value * 1.8 + 32
    return value * size / _UNITS[ours][1]


def rule_unit_swapped(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's model output giving a source's figure in another unit of its kind."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    # value -> unit -> the first source that gave it so
    held: dict[float, dict[str, tuple[AgentEvent, str, str]]] = {}
    for event in run.events:
        if event.type in _SOURCES:
            for value, unit, written, quote in _all_figures(event.input, event.output):
                held.setdefault(value, {}).setdefault(unit, (event, written, quote or written))
            continue
        if event.type not in _MODEL or not held:
            continue
        said = list(_all_figures(event.output))
        own = {(value, _UNITS[unit]) for value, unit, _, _ in said}
        for value, unit, written, quote in said:
            quote = quote or written
            units = held.get(value)
            if units is None or abs(value) <= 1:  # (1 kg and 1 lb meet by chance)
                continue
            kind, size = _UNITS[unit]
            if any(_UNITS[u] == (kind, size) for u in units):
                continue  # a source gives it in this unit (or a name of it)
            for theirs, (origin, given, given_quote) in units.items():
                if _UNITS[theirs][0] != kind or (value, _UNITS[theirs]) in own:
                    continue  # another kind; or the model said it in theirs too: converted
                if abs(_converted(value, theirs, unit) - value) < 1e-9:  # (nan: never)
                    continue  # (-40 °F is -40 °C)
                yield _finding(
                    event, (written, quote), origin, (given, given_quote), value, theirs, unit
                )
                return


def _finding(
    event: AgentEvent,
    wrote: tuple[str, str],
    source: AgentEvent,
    source_said: tuple[str, str],
    value: float,
    theirs: str,
    ours: str,
) -> Finding:
    agent = event.agent_name or "the model"
    written, quote = wrote
    said, said_quote = source_said
    by = source.agent_name or source.type.value
    figure = f"{value:g}"
    if _UNITS[theirs][0] == "currency":  # (no fixed rate to convert by)
        theirs, ours = theirs.upper(), ours.upper()
        swapped = f"the currency swapped ({figure} {theirs} is not {figure} {ours})"
        fix = f"keep its currency, or convert it at the day's rate, instead of writing {written!r}"
    else:
        converted = _converted(value, theirs, ours)
        swapped = f"the unit swapped ({figure} {theirs} is {converted:.4g} {ours})"
        fix = f"convert it ({figure} {theirs} = {converted:.4g} {ours}) instead of writing {written!r}"
    return rule_finding(
        RULE,
        "observation.output_misread",
        event,
        f"{agent} wrote {written!r} where {by} gave {said!r} at step {source.step_index}: "
        f"the figure copied, {swapped}",
        confidence=0.7,
        evidence=[quoted(source, "output", said_quote), quoted(event, "output", quote)],
        metadata={
            "fix": f"At step {event.step_index}, {agent}: {by} gave {said!r}, in {theirs}; {fix}."
        },
    )
