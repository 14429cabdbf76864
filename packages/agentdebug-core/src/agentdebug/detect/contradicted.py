"""A final answer whose figure for a thing differs from a tool's figure for it.

A researcher's ``get_financials`` returns ``"revenue_musd": 4.2``, and says so; the
supervisor answers "Q3 revenue was $5.1M". Nothing failed on the way, so without
this rule the free tier guessed the first step; the fault is the answer that put
a figure of its own where a tool had given one (``reflection.hallucinated_fact``).

The rule keeps to what it can read for certain, in a failed run whose final answer
does not say it could not tell (``invented.py``'s honest words):

- a figure of the answer (two digits or more, a unit after it allowed: "$5.1M",
  "4.2 million", "26%") that no source held: the task, a tool's call or result,
  a memory read (written as it is, or scaled, or made of two of them:
  ``invented.py``'s test). What a model wrote before is no source: a node that
  passes a model's figure on is not its author;
- not a year, an id ("order 48213", "#1042"), a part of a phone number or a date,
  nor a figure set against another ("not the $5.1M expected", "than", "forecast");
- labelled (the nearest word before it, four letters or more, not a common one,
  or the noun after it: "$5.1M in revenue") as a figure of a tool's result that
  did not fail: its key (``"revenue_musd": 4.2``, nested keys, camelCase), its
  table column or row, or the word before it in text;
- where no figure so labelled agrees with it: the same, scaled by thousands or
  percent, rounded to the answer's last digit ("$1.2M" for 1,234,567), their sum,
  mean or growth ("up 12.5%");
- and the two name no different period (Q2 against Q3, 2023 against 2024, a
  month, a half, a fiscal year: a record's sibling fields count).

The finding is the first model call that wrote the figure (for a graph's final
state or a node passing it on, the node that did), else the answer's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from agentdebug.detect.invented import CURRENCY, figures_before, said_by, unhedged_answer
from agentdebug.detect.misread import value_of
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import RESULT_TYPES, tool_name
from agentdebug.schema import AgentEvent, EventType, Finding
from agentdebug.text import flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "figure_contradicted"
TRIED = 20  # figures of the answer looked at, first first
LABEL_SPAN = 40  # characters before a figure its label is read from
MARK_SPAN = 80  # characters before a figure (in its sentence) its period is read from
MOST_FIGURES = 2000  # figures of tool results read in a run
PAIRED = 20  # a label's figures tried in pairs (growth)
DEEPEST = 32  # levels deep a tool's JSON is read
_SOURCES = frozenset(
    {EventType.USER_INPUT, EventType.TOOL_CALL, EventType.MEMORY_READ, *RESULT_TYPES}
)
_MODEL = (EventType.LLM_RESPONSE, EventType.LLM_CALL)
# a figure, not a part of a phone number, a date, a range or a version; a unit
# letter after it allowed ("5.1M", "12k", "3bn")
_FIGURE = re.compile(
    r"(?<![\w.#/-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![-/:]\d)"
    r"(?=(?:[kKmMbB]n?)?(?![\w.]\d)(?!\w))"
)
_UNIT = re.compile(
    r"([kKmMbB]n?)(?!\w)|\s?(%|percent\b|per cent\b)"
    r"|\s(thousand|million|mln|mn|billion|bn|trillion)\b",
    re.I,
)
_SCALE = {
    "k": 1e3,
    "thousand": 1e3,
    "m": 1e6,
    "mn": 1e6,
    "mln": 1e6,
    "million": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "billion": 1e9,
    "trillion": 1e12,
}
# a figure restated in other units: thousands, millions, percent; seconds, minutes,
# hours, days; miles and kilometres, pounds and kilograms
_RESTATED: tuple[float, ...] = (1.0, 1e3, 1e6, 1e9, 1e-3, 1e-6, 1e-9, 100.0, 0.01)
_RESTATED += (60.0, 1 / 60, 3600.0, 1 / 3600, 24.0, 1 / 24)
_RESTATED += (1.609344, 1 / 1.609344, 2.20462, 1 / 2.20462)
_NAME = re.compile(r"[A-Za-z][A-Za-z_]{3,}")
_WORD = re.compile(r"[a-z]{4,}")
_CAMEL = re.compile(r"([a-z])([A-Z])")
_AFTER = re.compile(r"\s*(?:in|of)\s+([A-Za-z]{4,})")
# a period a figure is of: a quarter, a half, a (fiscal) year, a month
_MARK = re.compile(
    r"(?<![a-z0-9])(q[1-4]|h[12]|fy\s?'?\d{2,4}|(?:19|20)\d{2}|"
    r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)(?:[a-z]*)(?![0-9])",
    re.I,
)
_ID_BEFORE = re.compile(
    r"(?:#|\b(?:order|orders|id|no|number|invoice|ticket|account|ref|reference|code|zip|"
    r"postcode|phone|tel|version|room|flight|item|sku|case|model)\b\.?\s*[:#]?\s*)$",
    re.I,
)
# a figure set against another: not the answer's own for the thing
_AGAINST = re.compile(
    r"\b(?:not|instead of|rather than|than|versus|vs|expected|expecting|forecast\w*|"
    r"estimat\w*|project\w*|target\w*|guidance|analysts?|consensus|budget\w*|"
    r"previous\w*|prior|last)\b[^.;:]{0,30}$",
    re.I,
)
_COMMON_WORDS = (
    "that this with from were have been about around than there their which what when "
    "your will also only over into more less just some each year years total value values "
    "amount number count data result results item items field approximately roughly nearly "
    "almost estimated reported came stood rose fell reached grew dropped fiscal quarter "
    "month period company name figure figures"
)
_COMMON = frozenset(_COMMON_WORDS.split(" "))


@dataclass(frozen=True)
class _Figure:
    """A figure as a quantity: its value (unit applied), half a unit of its last
    digit (what rounding to it allows), as written, what it is of, and when."""

    value: float
    half: float
    written: str
    digits: str  # its value as written ("5.1"), for the numbers a run held
    at: int  # where it starts in its text
    labels: frozenset[str]
    marks: frozenset[str]
    quote: str

    def but(self, **changes: Any) -> _Figure:
        return dataclasses.replace(self, **changes)


def _words(name: str) -> set[str]:
    """A label's words: camelCase and snake_case split, plurals made singular,
    common and short words gone ("totalRevenues" -> {"revenue"})."""
    words = set()
    for word in _WORD.findall(_CAMEL.sub(r"\1 \2", name).lower()):
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if word not in _COMMON:
            words.add(word)
    return words


def _marks(text: str) -> frozenset[str]:
    """The periods ``text`` names: "q3", "h1", "2024" (FY24 too), "mar"."""
    found = set()
    for m in _MARK.finditer(text):
        mark = m.group(1).lower().replace(" ", "").replace("'", "")
        if mark.startswith("fy"):
            mark = mark[2:] if len(mark) > 4 else "20" + mark[2:]
        found.add(mark[:3] if mark.isalpha() else mark)
    return frozenset(found)


def _figure(
    text: str, m: re.Match[str], labels: set[str], marks: frozenset[str], quote: str = ""
) -> _Figure:
    digits = m.group().replace(",", "")
    unit = _UNIT.match(text, m.end())
    scale = 1.0
    end = m.end()
    if unit:
        scale = _SCALE.get((unit.group(1) or unit.group(3) or "").lower(), 1.0)
        end = unit.end()
    start = m.start() - 1 if m.start() and text[m.start() - 1] in CURRENCY else m.start()
    decimals = len(digits.partition(".")[2])
    return _Figure(
        float(digits) * scale,
        0.5 * 10.0**-decimals * scale,
        text[start:end],
        value_of(digits),
        m.start(),
        frozenset(labels),
        marks,
        quote or text[start:end],
    )


def _year_or_id(text: str, m: re.Match[str]) -> bool:
    """A year (1900-2100, written plain) or an id ("order 48213", "#1042")."""
    digits = m.group()
    if digits.isdigit() and len(digits) == 4 and 1900 <= int(digits) <= 2100:
        return not (m.start() and text[m.start() - 1] in CURRENCY)
    return bool(_ID_BEFORE.search(text[max(0, m.start() - 16) : m.start()]))


def _text_figures(text: str, marks: frozenset[str] = frozenset()) -> Iterator[_Figure]:
    """A text's figures, each with the label before it and the periods of its
    sentence (and ``marks``); a markdown table's, with its column and row."""
    header: list[str] | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and len(cells) > 1:
            if header is None:
                header = cells
            elif not all(set(c) <= set("-: ") for c in cells):
                yield from _row(cells, header, marks)
        else:
            header = None
            yield from _prose(text, offset, offset + len(line), marks)
        offset += len(line)


def _row(cells: list[str], header: list[str], marks: frozenset[str]) -> Iterator[_Figure]:
    row = cells[0]
    for column, cell in zip(header[1:], cells[1:], strict=False):
        for m in _FIGURE.finditer(cell):
            if not _year_or_id(cell, m):
                labels = _words(column) | _words(row)
                when = marks | _marks(column) | _marks(row)
                yield _figure(cell, m, labels, when, f"{row} | {column}: {cell}")


def _prose(text: str, start: int, end: int, marks: frozenset[str]) -> Iterator[_Figure]:
    for m in _FIGURE.finditer(text, start, end):
        if _year_or_id(text, m):
            continue
        window = text[max(start, m.start() - LABEL_SPAN) : m.start()]
        names = [n for n in _NAME.finditer(window) if _words(n.group())]
        labels = _words(names[-1].group()) if names else set()
        unit = _UNIT.match(text, m.end())
        after = _AFTER.match(text, unit.end() if unit else m.end())
        if after:  # "$5.1M in revenue"
            labels |= _words(after.group(1))
        sentence = re.split(r"[.;!?\n]\s", text[max(start, m.start() - MARK_SPAN) : m.start()])[-1]
        fig = _figure(text, m, labels, marks | _marks(sentence))
        if names:  # the tool's own words for it: from its label to the figure
            at = max(start, m.start() - LABEL_SPAN) + names[-1].start()
            fig = fig.but(quote=text[at : m.start()] + fig.written.lstrip(CURRENCY))
        yield fig


def _structured(
    value: Any, path: tuple[str, ...], marks: frozenset[str], depth: int = 0
) -> Iterator[_Figure]:
    """A tool's JSON: each number labelled by its keys, with the periods its keys
    and its record's other fields name ({"quarter": "Q3", "revenue": 4.2}); none
    deeper than ``DEEPEST`` levels."""
    if depth > DEEPEST:
        return
    if isinstance(value, dict):
        here = marks
        for item in value.values():
            if isinstance(item, str) and len(item) <= 40:
                here = here | _marks(item)
            elif isinstance(item, int) and not isinstance(item, bool) and 1900 <= item <= 2100:
                here = here | {str(item)}
        for key, item in value.items():
            yield from _structured(item, (*path, str(key)), here, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _structured(item, path, marks, depth + 1)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value) or (isinstance(value, int) and 1900 <= value <= 2100):
            return
        name = path[-1] if path else ""
        if _ID_BEFORE.search(name.replace("_", " ") + " "):
            return
        text = repr(value) if isinstance(value, float) else str(value)
        labels = set().union(*(_words(p) for p in path)) if path else set()
        when = marks | _marks(" ".join(path).replace("_", " "))
        for m in _FIGURE.finditer(text):
            yield _figure(text, m, labels, when, f"{'.'.join(path)}: {text}")
    elif isinstance(value, str):
        for fig in _text_figures(value, marks):
            if fig.labels or not path:
                yield fig
            else:  # a number written as text: {"revenue": "$4.2M"}
                yield fig.but(labels=frozenset(_words(path[-1])), quote=f"{path[-1]}: {value}")


def _result_figures(output: Any) -> list[_Figure]:
    if isinstance(output, str) and output.lstrip()[:1] in ("{", "["):
        with contextlib.suppress(orjson.JSONDecodeError):
            output = orjson.loads(output)
    if isinstance(output, dict | list):
        return list(itertools.islice(_structured(output, (), frozenset()), MOST_FIGURES))
    return list(itertools.islice(_text_figures(flatten(output, limit=4000)), MOST_FIGURES))


def _agrees(fig: _Figure, value: float, half: float = 0.0) -> bool:
    """``value`` is ``fig``'s figure, scaled or in other units (Celsius and
    Fahrenheit too), and rounded to either's last digit."""
    if any(
        abs(fig.value - value * s) <= fig.half + half * abs(s) + 0.005 * abs(value * s)
        for s in _RESTATED
    ):
        return True
    return any(  # degrees: Celsius to Fahrenheit, and back
        abs(fig.value - got) <= fig.half + half * 1.8 + 0.005 * abs(got)
        for got in (value * 1.8 + 32, (value - 32) / 1.8)
    )


def _made_of(fig: _Figure, same: list[_Figure]) -> bool:
    """``fig`` agrees with one of ``same`` (figures of its label, of any period),
    their sum or mean, or the growth from one to another in percent."""
    if any(_agrees(fig, t.value, t.half) for t in same):
        return True
    total = sum(t.value for t in same)
    if len(same) > 1 and (_agrees(fig, total) or _agrees(fig, total / len(same))):
        return True
    for a, b in itertools.permutations(same[:PAIRED], 2):
        if a.value and _agrees(fig, (b.value - a.value) / abs(a.value) * 100):
            return True
    return False


def _kind(mark: str) -> str:
    return "year" if mark.isdigit() else mark[0] if mark[0] in "qh" and mark[1:].isdigit() else "m"


def _compatible(a: frozenset[str], b: frozenset[str]) -> bool:
    """No period of one kind (quarter, half, year, month) that both name differs:
    Q3 and Q2 differ, Q3 and 2024 do not."""
    for kind in {_kind(m) for m in a} & {_kind(m) for m in b}:
        if not {m for m in a if _kind(m) == kind} & {m for m in b if _kind(m) == kind}:
            return False
    return True


def rule_figure_contradicted(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's answer whose figure for a thing no tool gave, one having."""
    trajectory = ctx.trajectory
    found = unhedged_answer(trajectory)
    if found is None:
        return
    at, answer, text, before = found
    results = [
        e for e in before if e.type in RESULT_TYPES and tool_name(e) and e.id not in ctx.failures
    ]
    if not results:
        return
    sources = [e for e in before if e.type in _SOURCES]
    earlier = figures_before(trajectory, sources)
    held: list[_Figure] | None = None  # the sources' figures with their units, when asked
    told: list[tuple[AgentEvent, _Figure]] = []
    for result in results:
        told.extend((result, f) for f in _result_figures(result.output) if f.labels)
        if len(told) >= MOST_FIGURES:
            break
    tried = 0
    for fig in _text_figures(text):
        if tried >= TRIED:
            return
        tried += 1
        if (
            not fig.labels
            or not earlier.new(fig.digits)
            or _AGAINST.search(text[max(0, fig.at - LABEL_SPAN) : fig.at])
        ):
            continue
        labelled = [(r, t) for r, t in told if fig.labels & t.labels]
        same = [(r, t) for r, t in labelled if _compatible(fig.marks, t.marks)]
        if not same or _made_of(fig, [t for _, t in labelled]):
            continue
        if held is None:
            held = _held(trajectory.goal or "", sources)
        if any(abs(fig.value - h.value) <= h.half for h in held):
            continue
        result, other = next(((r, t) for r, t in same if fig.marks & t.marks), same[0])
        yield _finding(trajectory.events, at, answer, text, fig, result, other)
        return


def _held(goal: str, sources: list[AgentEvent]) -> list[_Figure]:
    """The figures the task and the sources held, with their units ("$5.1M")."""
    texts = [goal] + [
        flatten(e.input, limit=4000) + "\n" + flatten(e.output, limit=4000) for e in sources
    ]
    return [f for text in texts for f in _text_figures(text)]


def _origin(events: list[AgentEvent], at: int, answer: AgentEvent, fig: _Figure) -> AgentEvent:
    """The first model call that wrote the figure (a node passing it on did not),
    else where the answer's figure was said (``said_by``)."""
    digits = fig.written.strip(CURRENCY)
    pattern = re.compile(rf"(?<![\w.]){re.escape(digits)}(?![\w.]\d|\d)")
    for event in events[:at]:
        if (
            event.type in _MODEL
            and event.agent_name
            and pattern.search(flatten(event.output, limit=8000))
        ):
            return event
    return said_by(events, at, answer, digits)


def _finding(
    events: list[AgentEvent],
    at: int,
    answer: AgentEvent,
    text: str,
    fig: _Figure,
    result: AgentEvent,
    other: _Figure,
) -> Finding:
    where = _origin(events, at, answer, fig)
    who = where.agent_name or "the agent"
    tool = tool_name(result) or "the tool"
    label = sorted(fig.labels & other.labels)[0]
    start = fig.at
    gave = shorten(other.quote, 80)
    return rule_finding(
        RULE,
        "reflection.hallucinated_fact",
        where,
        f"the final answer gives {fig.written} for {label}, which no tool returned: {tool} "
        f"at step {result.step_index} gave {other.written}",
        confidence=0.75,
        evidence=[
            quoted(answer, "output", text[max(0, start - 60) : start + len(fig.written) + 20]),
            quoted(result, "output", _verbatim(result.output, other) or gave),
        ],
        metadata={
            "fix": (
                f"At step {where.step_index}, {who}: give {label} as {tool} returned it at step "
                f"{result.step_index} ({gave!r}), not {fig.written}, which no tool returned."
            )
        },
    )


def _verbatim(output: Any, fig: _Figure) -> str | None:
    """The tool's own text for its figure, key and all (``"revenue_musd": 4.2``),
    where its output is text that holds it."""
    if not isinstance(output, str):
        return None
    key = fig.quote.partition(": ")[0].rpartition(".")[2]
    digits = re.escape(fig.written.strip(CURRENCY))
    if key:
        found = re.search(rf'{re.escape(key)}"?\s*[:=]\s*"?[{CURRENCY}]?{digits}', output)
        if found:
            return found.group()
    return fig.quote if fig.quote in output else None
