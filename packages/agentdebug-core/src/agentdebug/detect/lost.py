"""A value the failure says was wanted, seen in the run and then carried no further.

A planner reads "at most 120 EUR a night" and writes a plan without it; a summarizer
is given a quote whose total is 43,914 USD and writes one without the fee; a merge
node joins two scans and keeps one's issues. The run fails ("hotels over the 120 EUR
budget", "the real total 43,914"), and the value the failure names was in the run,
given to one step, and in nothing that step or any later one wrote. That step is
where it was lost (``memory.context_loss``); without this rule the free tier guessed.

The rule keeps to what it can read for certain, in a failed run that says what was
wanted (the success check's reason, or the reference answer): a value of it (a
number of two digits or more, "43,914" and "43914" alike, not a year; or an
identifier with digits, "INV-1042", "CVE-2024-38371") that some step before the end
held (the user's input, a tool's result, a node's update, a model's prompt or
reply) and that neither the run's last model reply nor its last node update holds.
The step blamed is the one that was given it and did not pass it on: the model call
whose prompt held it last while its reply did not, else the first model call or node
update after the last step that held it. Of several such values, the earliest step
is blamed. It is a weaker signal than the other rules' (a value may be left out on
purpose), so its confidence is lower than theirs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "needed_value_lost"
MOST_VALUES = 8  # values of a failure's reason looked for
MIN_REPLY = 40  # characters of a model's reply expected to carry what it was given
_READ = 100_000  # characters of an event read
# an identifier with digits ("INV-1042", "CVE-2024-38371", "T-4502", "A320neo"), or a number of
# two digits or more ("43,914", "505.50"); not a part of a longer word or number
_VALUE = re.compile(
    r"(?<![\w.,-])(?:[A-Za-z]+[-_]?\d{2,}(?:[-_]?\w)*"
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{2,}(?:\.\d+)?)(?![\w-]|[.,]\d)"
)
_GROUPS = re.compile(r"(?<=\d),(?=\d{3})")
_ZEROS = re.compile(r"(?<=\d)\.0+(?!\d)")  # "43,914.00" is "43914"


def _norm(text: str) -> str:
    return _ZEROS.sub("", _GROUPS.sub("", text))


# a model's reply: a call, or an agent's message in an imported log (Who&When's)
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL, EventType.MESSAGE})
_DECISIONS = frozenset({*_MODEL, EventType.AGENT_END})


def _values(text: str) -> list[str]:
    """The values of a failure's reason, as written, without their digit groups."""
    found: list[str] = []
    for m in _VALUE.finditer(text):
        value = _norm(m.group())
        if value.isdigit() and len(value) == 4 and 1900 <= int(value) <= 2100:
            continue  # a year
        if value not in found:
            found.append(value)
    return found[:MOST_VALUES]


def _holds(text: str, value: str) -> bool:
    """Whether ``text`` (its digit groups taken out) holds ``value`` as a whole."""
    at = text.find(value)
    while at >= 0:
        before = text[at - 1] if at else " "
        after = text[at + len(value)] if at + len(value) < len(text) else " "
        if not (before.isalnum() or before in "._-") and not (
            after.isalnum()
            or (after in "._-" and text[at + len(value) + 1 : at + len(value) + 2].isalnum())
        ):
            return True
        at = text.find(value, at + 1)
    return False


def rule_needed_value_lost(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's wanted value that a step was given and did not pass on."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    values = _values(f"{run.outcome.reason or ''} {run.reference_answer or ''}")
    if not values:
        return
    events = [e for e in run.events if e.type is not EventType.FINAL_ANSWER]
    texts = [(_norm(flatten(e.input, _READ)), _norm(flatten(e.output, _READ))) for e in events]
    decisions = [i for i, e in enumerate(events) if e.type in _DECISIONS and e.agent_name]
    models = [i for i in decisions if events[i].type in _MODEL]
    # the run's last word: its last model reply, or with no model, its last node update
    ends = models or decisions
    end = ends[-1] if ends else None
    best: tuple[int, str, int] | None = None  # (blamed position, value, where it was)
    for value in values:
        if end is not None and _holds(texts[end][1], value):
            continue  # carried to the end
        seen = [i for i, (given, said) in enumerate(texts) if _holds(f"{given}\n{said}", value)]
        if not seen:
            continue
        # the first model given it that wrote a reply of substance without it (a
        # route's label is not expected to carry it); else the first decision after
        # the last step that held it
        blamed = next(
            (
                i
                for i in models
                if i >= seen[0]
                and _holds(texts[i][0], value)
                and not _holds(texts[i][1], value)
                and len(texts[i][1].strip()) >= MIN_REPLY
            ),
            None,
        )
        last = blamed if blamed is not None else seen[-1]
        if blamed is None:
            blamed = next((i for i in decisions if i > last), None)
        if blamed is not None and (best is None or blamed < best[0]):
            best = (blamed, value, last)
    if best is not None:
        blamed, value, last = best
        yield _finding(events[blamed], events[last], value)


def _finding(event: AgentEvent, seen: AgentEvent, value: str) -> Finding:
    agent = event.agent_name
    where = "its prompt" if seen is event else f"{seen.agent_name or seen.type.value}"
    at = f"step {seen.step_index}" if seen is not event else "its own call"
    return rule_finding(
        RULE,
        "memory.context_loss",
        event,
        f"{value!r}, which the failure says was wanted, was last held by {where} at {at}; "
        f"{agent} went on without it",
        confidence=0.45,
        evidence=[quoted(seen, "input" if seen is event else "output", value)],
        metadata={
            "fix": (
                f"At step {event.step_index}, {agent}: carry {value!r} forward (it was given "
                f"it, at step {seen.step_index}, and wrote nothing that holds it); the run "
                "needed it."
            ),
            "value": value,
        },
    )
