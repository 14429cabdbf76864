"""A number the final answer gives with its digits swapped from a tool's result.

A model that reads "$42.00" from a tool and answers "$24.00" has misread the
result (MAST's and TRAIL's output misreading). Without a model, most misreadings
cannot be told from a number the agent computed; one shape can: the answer's
number is made of the same digits as a number a tool returned, in another order,
and appears nowhere before the answering step (not in the task, not in any
result or message). A computed number rarely is a permutation of an input's digits, so the
rule keeps to that shape, in a run that failed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import RESULT_TYPES
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    EventType,
    Finding,
    OutcomeStatus,
)
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

# a number as written: 42, 42.00, 1,240, 3.5 (a sign or a currency before it is not
# part of it; a comma between digits groups them, one before a space ends a clause);
# not digits joined to others by "-", "/" or ":", a part of a date, a time, a range
# or a number such as "555-0142" ("2025-03-14", "15:40", "120-180")
_NUMBER = re.compile(
    r"(?<![\w.])(?<!\d,)(?<!\d[-/:])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w|,\d|\.\d|[-/:]\d)"
)
# any number as written, also a part of a date, a time or a range ("120-180"): what a
# run held, which an answer's number may restate
_ANY_NUMBER = re.compile(r"(?<![\w.])(?<!\d,)(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w|,\d|\.\d)")
QUOTE = 120  # characters of the result quoted around its number


def value_of(text: str) -> str:
    """A number's digits as a value: commas gone, a decimal part's trailing zeros
    gone ("42.00" is "42", "1,240.50" is "1240.5")."""
    plain = text.replace(",", "")
    if "." in plain:
        plain = plain.rstrip("0").rstrip(".")
    return plain


def numbers(text: str) -> dict[str, str]:
    """The quantities in ``text``: value -> as written (the first time)."""
    out: dict[str, str] = {}
    for match in _NUMBER.finditer(text):
        written = match.group()
        if written[0] == "0" and written[1:2].isdigit():
            continue  # (a zero-padded field: "03", "007"; not a quantity)
        out.setdefault(value_of(written), written)
    return out


def held(text: str) -> set[str]:
    """The values of every number ``text`` holds, parts of dates and ranges too:
    what an answer's number may restate without inventing or misreading it."""
    return {value_of(m.group()) for m in _ANY_NUMBER.finditer(text)}


def _swapped(a: str, b: str) -> bool:
    """Two different values of the same digits in another order, with at least two
    distinct digits and the decimal point (if any) in the same place."""
    if a == b or len(a) != len(b) or a.find(".") != b.find("."):
        return False
    digits = a.replace(".", "")
    if len(set(digits)) < 2 or len(digits) < 2:
        return False
    return sorted(digits) == sorted(b.replace(".", ""))


def failed_answer(trajectory: AgentTrajectory) -> tuple[int, AgentEvent] | None:
    """A failed run's last final answer, with its position among the events."""
    if trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return None
    events = trajectory.events
    at = next(
        (i for i in range(len(events) - 1, -1, -1) if events[i].type is EventType.FINAL_ANSWER),
        None,
    )
    return (at, events[at]) if at is not None else None


def rule_misread_number(ctx: RuleContext) -> Iterator[Finding]:
    """A final answer in a failed run whose number swaps the digits of a number a
    tool's result gave, and that nothing earlier in the run held."""
    trajectory = ctx.trajectory
    found = failed_answer(trajectory)
    if found is None:
        return
    at, answer = found
    events = trajectory.events
    said = numbers(flatten(answer.output, limit=4000))
    if not said:
        return
    earlier: set[str] = held(trajectory.goal or "")
    results: list[tuple[AgentEvent, dict[str, str]]] = []
    for event in events[:at]:
        if event.step_index >= answer.step_index:
            continue  # (the answering step's own events: its model reply, its node's end)
        text = flatten(event.input, limit=4000) + " " + flatten(event.output, limit=4000)
        earlier |= held(text)
        if event.type in RESULT_TYPES and event.error is None:
            results.append((event, numbers(text)))
    for value, written in said.items():
        if value in earlier:
            continue
        for result, quantities in results:
            source = next((quantities[v] for v in quantities if _swapped(value, v)), None)
            if source is None:
                continue
            text = flatten(result.output, limit=4000)
            where = text.find(source)
            quote = text[max(0, where - QUOTE // 2) : where + len(source) + QUOTE // 2].strip()
            yield rule_finding(
                "misread_number",
                "observation.output_misread",
                answer,
                f"the final answer says {written} where the result at step "
                f"{result.step_index} says {source}: the same digits, swapped",
                confidence=0.6,
                evidence=[
                    quoted(answer, "output", written),
                    quoted(result, "output", quote),
                ],
            )
            return
