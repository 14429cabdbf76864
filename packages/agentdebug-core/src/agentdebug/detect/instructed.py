"""A reviewer's instruction at an interrupt to drop a phrase, and the phrase kept.

A letter is shown for review at an interrupt ("Dear Sir, ..."); the reviewer
resumes with "Address her as 'Dr. Okafor', not 'Sir'."; the revising node's model
writes "Dear Sir, ..." again. Nothing failed on the way, so without this rule the
free tier guessed the first step; the fault is the revision that kept what the
reviewer asked to drop (``coordination.ignored_input``).

The rule keeps to what it can read for certain, in a failed run: a resume whose
answer quotes a phrase after a word that asks to drop it ("not 'Sir'", "remove
'per our policy'", "don't mention 'fee'"), a phrase the interrupt showed, and,
before the next interrupt, a model's reply or a node's output that still holds it
(as a whole word) and does not repeat the instruction itself (the review node
passing the answer on).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.rejected import is_interrupt, is_resume
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import QUOTED
from agentdebug.schema import EventType, Finding, OutcomeStatus
from agentdebug.text import flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "instruction_ignored"
# words just before a quoted phrase that ask to drop it
_DROP = re.compile(
    r"\b(?:not|no|remove|drop|delete|without|instead of|never|avoid|cut|strike|"
    r"get rid of|take out|stop (?:using|saying)|do not (?:use|say|write|mention|call)|"
    r"don't (?:use|say|write|mention|call))\W{0,12}$",
    re.I,
)
_WRITES = frozenset({EventType.LLM_RESPONSE, EventType.AGENT_END})


def _to_drop(answer: str, shown: str) -> list[str]:
    """The phrases ``answer`` asks to drop that ``shown`` holds."""
    phrases = []
    for found in QUOTED.finditer(answer):
        phrase = (found.group(1) or found.group(2) or "").strip()
        if (
            len(phrase) >= 2
            and _DROP.search(answer[max(0, found.start() - 30) : found.start()])
            and _word(phrase).search(shown)
        ):
            phrases.append(phrase)
    return phrases


def _word(phrase: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")


def rule_instruction_ignored(ctx: RuleContext) -> Iterator[Finding]:
    """A reply after a reviewer's "not 'X'" that still says X."""
    if ctx.trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return
    events = ctx.trajectory.events
    for at, resume in enumerate(events):
        if not is_resume(resume):
            continue
        asked = next((e for e in reversed(events[:at]) if is_interrupt(e)), None)
        answer = flatten(resume.input, limit=4000)
        if asked is None or not answer:
            continue
        phrases = _to_drop(answer, flatten(asked.output, limit=8000))
        if not phrases:
            continue
        echo = answer[:40]
        for event in events[at + 1 :]:
            if is_interrupt(event):
                break
            if event.type not in _WRITES or event.step_index < resume.step_index:
                continue
            text = flatten(event.output, limit=8000)
            if echo in text:
                continue  # (the review node passing the answer on)
            kept = next((p for p in phrases if _word(p).search(text)), None)
            if kept is None:
                continue
            who = event.agent_name or "the agent"
            where = _word(kept).search(text)
            start = max(0, where.start() - 60) if where else 0
            yield rule_finding(
                RULE,
                "coordination.ignored_input",
                event,
                f"the reviewer asked at step {resume.step_index} to drop {kept!r} "
                f"({shorten(answer, 80)!r}), and {who} kept it at step {event.step_index}",
                confidence=0.8,
                evidence=[
                    quoted(event, "output", text[start : start + 160].strip()),
                    quoted(resume, "input", answer[:300]),
                ],
                metadata={
                    "fix": (
                        f"At step {event.step_index}, {who}: do what the reviewer asked at "
                        f"step {resume.step_index} ({shorten(answer, 160)!r}): {kept!r} is "
                        "still in the output. Give the model the reviewer's words, and "
                        "check the result against them."
                    )
                },
            )
            return
