"""A final answer whose figure for a thing differs from a tool's figure for it.

A researcher's ``get_financials`` returns ``"revenue_musd": 4.2``, and says so; the
supervisor answers "Q3 revenue was $5.1M". Nothing failed on the way, so without
this rule the free tier guessed the first step; the fault is the answer that put
a figure of its own where a tool had given one (``reflection.hallucinated_fact``).

The rule keeps to what it can read for certain, in a failed run: a final answer
that does not say it could not tell (``invented.py``'s honest words), with a
figure of two digits or more (a unit letter after it allowed: "5.1M") that nothing
before the answering step held, nor one of those rounded, scaled or paired
(``invented.py``'s test), after a word (four letters or more, not a common one)
that a tool's result, which did not fail, also has as the label of another figure
(the nearest name before each): "revenue was $5.1M" against ``"revenue_musd": 4.2``. The finding is the answer's
(for a graph's final state, the model call that wrote the figure).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.invented import figures_before, said_by, unhedged_answer
from agentdebug.detect.misread import value_of
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import RESULT_TYPES, tool_name
from agentdebug.schema import AgentEvent, Finding
from agentdebug.text import flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "figure_contradicted"
TRIED = 20  # figures of the answer looked at, first first
LABEL_SPAN = 40  # characters before a figure its label is read from
# a figure, a unit letter after it allowed ("5.1M", "12k", "3bn")
_FIGURE = re.compile(
    r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?=(?:[kKmMbB]n?)?(?![\w.]\d)(?!\w))"
)
_LABEL = re.compile(r"[a-z]{4,}")
_NAME = re.compile(r"[a-z][a-z_]{3,}")
_COMMON = frozenset(
    [
        "that",
        "this",
        "with",
        "from",
        "were",
        "have",
        "been",
        "about",
        "around",
        "than",
        "there",
        "their",
        "which",
        "what",
        "when",
        "your",
        "will",
        "also",
        "only",
        "over",
        "into",
        "more",
        "less",
        "just",
        "some",
        "each",
        "year",
        "years",
        "total",
    ]
)


def _labels(text: str, at: int) -> set[str]:
    """The label of the figure at ``at``: the nearest name before it, a word of four
    letters or more, not a common one ("revenue" in "revenue was $5.1M"), or a key
    (``"revenue_musd": 4.2``: "revenue", "musd")."""
    names = [
        n for n in _NAME.findall(text[max(0, at - LABEL_SPAN) : at].lower()) if n not in _COMMON
    ]
    return set(_LABEL.findall(names[-1])) - _COMMON if names else set()


def rule_figure_contradicted(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's answer whose figure for a thing no tool gave, one having."""
    trajectory = ctx.trajectory
    found = unhedged_answer(trajectory)
    if found is None:
        return
    at, answer, text, before = found
    events = trajectory.events
    results = [
        e for e in before if e.type in RESULT_TYPES and tool_name(e) and e.id not in ctx.failures
    ]
    if not results:
        return
    earlier = figures_before(trajectory, before)
    said = [(r, flatten(r.output, limit=4000)) for r in results]
    for figure in itertools.islice(_FIGURE.finditer(text), TRIED):
        value = value_of(figure.group())
        if not earlier.new(value):
            continue
        labels = _labels(text, figure.start())
        for result, got in said:
            for other in _FIGURE.finditer(got):
                shared = labels & _labels(got, other.start())
                if shared and value_of(other.group()) != value:
                    yield _finding(events, at, answer, text, figure, result, got, other, shared)
                    return


def _finding(
    events: list[AgentEvent],
    at: int,
    answer: AgentEvent,
    text: str,
    figure: re.Match[str],
    result: AgentEvent,
    got: str,
    other: re.Match[str],
    shared: set[str],
) -> Finding:
    written = _shown(text, figure)
    where = said_by(events, at, answer, figure.group())
    who = where.agent_name or "the agent"
    tool = tool_name(result) or "the tool"
    label = sorted(shared)[0]
    gave = got[max(0, other.start() - 24) : other.end()].strip(" ,{")
    return rule_finding(
        RULE,
        "reflection.hallucinated_fact",
        where,
        f"the final answer gives {written} for {label}, which no tool returned: {tool} at "
        f"step {result.step_index} gave {_shown(got, other)}",
        confidence=0.75,
        evidence=[
            quoted(answer, "output", text[max(0, figure.start() - 60) : figure.end() + 20]),
            quoted(result, "output", gave),
        ],
        metadata={
            "fix": (
                f"At step {where.step_index}, {who}: give {label} as {tool} returned it at step "
                f"{result.step_index} ({shorten(gave, 80)!r}), not {written}, which no tool "
                "returned."
            )
        },
    )


def _shown(text: str, figure: re.Match[str]) -> str:
    """A figure as written, with its currency sign and unit letter ("$5.1M")."""
    start, end = figure.start(), figure.end()
    if start and text[start - 1] in "$€£¥":
        start -= 1
    unit = re.match(r"[kKmMbB]n?(?!\w)|%", text[end : end + 3])
    return text[start : end + (unit.end() if unit else 0)]
