"""A call that failed on a value misspelled from the task, and who misspelled it.

The user asks for the weather in "Geneva, Zürich and Bern"; the planner's model
writes ``["Geneva", "Zurick", "Bern"]``; the geocoder finds no "Zurick", and the
branch that asked raises. The branch's call was made with what it was given: the
fault is the step that first wrote "Zurick" for the task's "Zürich"
(``planning.task_misunderstanding``). Without this rule the branch that raised was
blamed and told to fix its arguments, which it cannot.

The rule keeps to what it can read for certain, in a failed run: a failed call
whose error names one of its arguments, an argument of at least ``MIN_CHARS``
characters, not mostly digits (a date, an id), that the task does not hold but
holds a near spelling of (alike by ``ALIKE`` or more, case, accents and
punctuation aside: "Zurick" for "Zürich"; "Zurich" is the same word, and
"cancelled" for "cancel" or "orders" for "order" the same word in another form).
The finding is the first step's before the call whose output holds the
misspelling (a planner, a model's reply), else the call's own (a model's tool call
that misspelled it); none where the first to hold it was no agent's (a tool's
result, a user's later message: the agent copied it).
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
_GIVEN = RESULT_TYPES | {EventType.USER_INPUT}


def _fold(text: str) -> str:
    """Case, accents and punctuation aside: "Zürich" and "zurich" are one word, and
    "Acme Corp." and "Acme Corp" one name (letters of any script kept)."""
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(re.findall(r"[^\W_]+", kept.casefold()))


_ENDINGS = ("s", "es", "d", "ed", "ing", "er", "ers")


def _variant(a: str, b: str) -> bool:
    """``a`` and ``b`` are one word in another form: one the other with an ending
    ("cancel", "cancelled"; "order", "orders"), not a slip."""
    short, long = sorted((a, b), key=len)
    return long.startswith(short) or any(
        long.startswith(short[: len(short) - 2]) and long.endswith(end) for end in _ENDINGS
    )


class _Task:
    """The task's words, folded once, in windows of each size asked for."""

    def __init__(self, task: str) -> None:
        self.task = task
        self.spans = [m.span() for m in _WORD.finditer(task)]
        self.folded = [_fold(task[a:b]) for a, b in self.spans]
        self.windows: dict[int, list[tuple[str, str]]] = {}
        self.seen: dict[str, str | None] = {}

    def near(self, value: str) -> str | None:
        """The task's words (as many as ``value`` has) that ``value`` misspells."""
        folded = _fold(value)
        if folded not in self.seen:
            self.seen[folded] = self._near(folded)
        return self.seen[folded]

    def _near(self, folded: str) -> str | None:
        size = len(folded.split())
        if size not in self.windows:
            self.windows[size] = [  # (the task's own text of each window)
                (
                    self.task[self.spans[i][0] : self.spans[i + size - 1][1]],
                    " ".join(self.folded[i : i + size]),
                )
                for i in range(len(self.spans) - size + 1)
            ]
        windows = self.windows[size]
        if any(other == folded for _, other in windows):
            return None  # (the task's own word, accents and case aside)
        for phrase, other in windows:
            total = len(folded) + len(other)
            if not total or 2 * min(len(folded), len(other)) / total < ALIKE:
                continue  # (lengths too far apart to be alike enough)
            matcher = difflib.SequenceMatcher(None, folded, other, autojunk=False)
            alike = matcher.quick_ratio() >= ALIKE and matcher.ratio() >= ALIKE
            if alike and not _variant(folded, other):
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
    words: _Task | None = None
    for failed in events:
        if failed.type not in RESULT_TYPES or failed.id not in ctx.failures:
            continue
        error = ctx.failures[failed.id][1]
        call = call_of(ctx, failed)
        if call is None:
            continue
        for value in (str(leaf).strip() for leaf in leaves(call.input)):
            if len(value) < MIN_CHARS or value not in error or _holds(task, value):
                continue  # (short; not what the call failed on; or the task's own)
            if sum(c.isdigit() for c in value) * 2 >= sum(c.isalnum() for c in value):
                continue  # (a number, a date, an id: no spelling)
            words = words or _Task(task)
            meant = words.near(value)
            if meant is None:
                continue
            found = _finding(events, ctx.position[call.id], call, failed, value, meant)
            if found is not None:
                yield found
            return


def _finding(
    events: list[AgentEvent],
    at: int,
    call: AgentEvent,
    failed: AgentEvent,
    value: str,
    meant: str,
) -> Finding | None:
    """Blames the first step before the call whose output holds ``value``; None
    where the first to hold it was no agent's (a user's later message, a tool's
    result: the agent copied it)."""
    source = next(
        (
            e
            for e in events[:at]
            if (e.type in _WRITERS or e.type in _GIVEN)
            and _holds(flatten(e.input if e.type is EventType.USER_INPUT else e.output), value)
        ),
        call,
    )
    if source.type in _GIVEN or not source.agent_name:
        return None
    writer = source
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
