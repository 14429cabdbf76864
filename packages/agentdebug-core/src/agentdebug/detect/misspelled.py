"""A call that failed on a value misspelled from the task, and who misspelled it.

The user asks for the weather in "Geneva, Zürich and Bern"; the planner's model
writes ``["Geneva", "Zurick", "Bern"]``; the geocoder finds no "Zurick", and the
branch that asked raises. The branch's call was made with what it was given: the
fault is the step that first wrote "Zurick" for the task's "Zürich"
(``planning.task_misunderstanding``). Without this rule the branch that raised was
blamed and told to fix its arguments, which it cannot.

The rule keeps to what it can read for certain, in a failed run: a failed call
whose error names one of its arguments (or says no such record exists), an
argument of at least ``MIN_CHARS`` characters that the task does not hold but holds
a near spelling of (alike by ``ALIKE`` or more, case and accents aside: "Zurick"
for "Zürich"; "Zurich" for "Zürich" is the same word). The finding is the first
step's before the call whose output holds the misspelling (a planner, a model's
reply), else the call's own (a model's tool call that misspelled it).
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.invented import call_of, leaves
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import DECISION_TYPES, RESULT_TYPES, tool_name
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "argument_misspelled"
MIN_CHARS = 4  # an argument's characters, for a near spelling to mean a slip
ALIKE = 0.8  # how alike a misspelling is to the task's word (difflib's ratio)
_WORD = re.compile(r"[^\W_][\w'-]*")
_WRITERS = DECISION_TYPES | {EventType.AGENT_END}


def _fold(text: str) -> str:
    """Case and accents aside: "Zürich" and "zurich" are one word."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().casefold()


def _near(value: str, task: str) -> str | None:
    """The task's words (as many as ``value`` has) that ``value`` misspells, if any."""
    size = len(value.split())
    words = _WORD.findall(task)
    folded = _fold(value)
    for i in range(len(words) - size + 1):
        phrase = " ".join(words[i : i + size])
        other = _fold(phrase)
        if other == folded:
            return None  # (the task's own word, accents aside)
        if difflib.SequenceMatcher(None, folded, other).ratio() >= ALIKE:
            return phrase
    return None


def _holds(text: str, value: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text) is not None


def rule_argument_misspelled(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's call that failed on a misspelling of the task's words."""
    trajectory = ctx.trajectory
    task = flatten(trajectory.goal, limit=4000) if trajectory.goal else ""
    if trajectory.outcome.status is not OutcomeStatus.FAILURE or not task:
        return
    events = trajectory.events
    for failed in events:
        if failed.type not in RESULT_TYPES or failed.id not in ctx.failures:
            continue
        mode, error = ctx.failures[failed.id]
        call = call_of(ctx, failed)
        if call is None:
            continue
        for value in (leaf.strip() for leaf in leaves(call.input)):
            if len(value) < MIN_CHARS or _holds(task, value):
                continue
            if value not in error and mode != "system.resource_not_found":
                continue
            meant = _near(value, task)
            if meant is None:
                continue
            yield _finding(events, ctx.position[call.id], call, failed, value, meant)
            return


def _finding(
    events: list[AgentEvent],
    at: int,
    call: AgentEvent,
    failed: AgentEvent,
    value: str,
    meant: str,
) -> Finding:
    """Blames the first step before the call whose output holds ``value``."""
    writer = next(
        (
            e
            for e in events[:at]
            if e.type in _WRITERS and e.agent_name and _holds(flatten(e.output, limit=8000), value)
        ),
        call,
    )
    who = writer.agent_name or "the agent"
    tool = tool_name(failed) or "the tool"
    field = "input" if writer is call else "output"
    return rule_finding(
        RULE,
        "planning.task_misunderstanding",
        writer,
        f"{who} wrote {value!r} at step {writer.step_index} for the task's {meant!r}; "
        f"{tool} failed on it at step {failed.step_index}",
        confidence=0.8,
        evidence=[quoted(writer, field, value)],
        metadata={
            "fix": (
                f"At step {writer.step_index}, {who}: write {meant!r} as the task has it, not "
                f"{value!r}, which {tool} could not use at step {failed.step_index} "
                f'("{shorten(flatten(failed.error.message if failed.error else failed.output), 120)}").'
            )
        },
    )
