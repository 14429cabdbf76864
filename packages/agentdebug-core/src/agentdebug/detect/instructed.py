"""A reviewer's instruction at an interrupt to drop a phrase, and the phrase kept.

A letter is shown for review at an interrupt ("Dear Sir, ..."); the reviewer
resumes with "Address her as 'Dr. Okafor', not 'Sir'."; the revising node's model
writes "Dear Sir, ..." again. Nothing failed on the way, so without this rule the
free tier guessed the first step; the fault is the revision that kept what the
reviewer asked to drop (``coordination.ignored_input``).

The rule keeps to what it can read for certain, in a failed run: a resume whose
answer quotes a phrase (straight or curly quotes) after a word that asks to drop
it ("not 'Sir'", "remove 'per our policy'", "replace 'Sir' with ...", "don't
mention 'fee'"), a phrase the interrupt showed, and, before the next interrupt, a
model's reply or a node's output (not the interrupting node's own) that still
holds it as a whole word, any case: not inside a phrase the answer asks for
("'Dr. Okafor', not 'Okafor'"), not quoted, not in a sentence telling of the
change ("'Sir' replaced by 'Dr. Okafor'"), and not repeating the answer (a node
passing it on).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.claimed import sentence
from agentdebug.detect.rejected import answers, is_interrupt
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import QUOTED
from agentdebug.schema import EventType, Finding, OutcomeStatus
from agentdebug.text import clip, flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "instruction_ignored"
# words just before a quoted phrase that ask to drop it
_DROP = re.compile(
    r"(?:\b(?:not|remove|drop|delete|without|instead of|never|avoid|cut|strike|replace|"
    r"change|swap|get rid of|take out|stop (?:using|saying)|do not (?:use|say|write|"
    r"mention|call)|don't (?:use|say|write|mention|call))\W{0,12}|\bno )$",
    re.I,
)
# a quoted text, in straight or curly quotes
_QUOTE = re.compile(QUOTED.pattern + r"|\u2018([^\u2019]+)\u2019|\u201c([^\u201d]+)\u201d")
# a sentence that tells of the change rather than keeping the phrase
_TELLS = re.compile(r"\b(?:replaced|removed|dropped|instead|changed|swapped|no longer)\b", re.I)
_WRITES = frozenset({EventType.LLM_RESPONSE, EventType.AGENT_END})


def _quotes(text: str) -> Iterator[tuple[re.Match[str], str]]:
    for found in _QUOTE.finditer(text):
        phrase = next((g for g in found.groups() if g), "").strip()
        if phrase:
            yield found, phrase


def _asked(answer: str, shown: str) -> tuple[list[str], list[str]]:
    """The phrases ``answer`` asks to drop that ``shown`` holds, and those it quotes
    otherwise (to keep, or to write instead)."""
    drop, keep = [], []
    for found, phrase in _quotes(answer):
        before = answer[max(0, found.start() - 30) : found.start()]
        if len(phrase) >= 2 and _DROP.search(before) and _word(phrase).search(shown):
            drop.append(phrase)
        else:
            keep.append(phrase)
    return drop, keep


def _word(phrase: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)", re.I)


def _kept(text: str, phrase: str, keep: list[str]) -> re.Match[str] | None:
    """Where ``text`` still says ``phrase``: not inside a phrase the reviewer asked
    for ("Dr. Okafor" for "not 'Okafor'"), nor quoted, nor in a sentence telling of
    the change ("'Sir' replaced by 'Dr. Okafor'")."""
    for other in keep:  # (masked, keeping positions)
        text = _word(other).sub(lambda m: " " * len(m.group()), text)
    for found in _word(phrase).finditer(text):
        left, right = text[found.start() - 1 : found.start()], text[found.end() : found.end() + 1]
        if left in "'\"\u2018\u201c" and left and right in "'\"\u2019\u201d" and right:
            continue
        if _TELLS.search(sentence(text, found, limit=400)):
            continue
        return found
    return None


def rule_instruction_ignored(ctx: RuleContext) -> Iterator[Finding]:
    """A reply after a reviewer's "not 'X'" that still says X."""
    if ctx.trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return
    events = ctx.trajectory.events
    for at, resume, asked in answers(events):
        answer = flatten(resume.input, limit=4000)
        if not answer:
            continue
        phrases, keep = _asked(answer, flatten(asked.output, limit=8000))
        if not phrases:
            continue
        echoes = [t.strip()[:40] for t in _strings(resume.input) if len(t.strip()) >= 10]
        for event in events[at + 1 :]:
            if is_interrupt(event):
                break
            if event.type not in _WRITES or event.step_index < resume.step_index:
                continue
            if event.type is EventType.AGENT_END and event.agent_name == asked.agent_name:
                continue  # (the interrupting node's own update: the answer, passed on)
            text = flatten(event.output, limit=8000)
            if any(echo in text for echo in echoes):
                continue  # (a node passing the answer on)
            found = next(((p, m) for p in phrases if (m := _kept(text, p, keep)) is not None), None)
            if found is None:
                continue
            kept, where = found
            who = event.agent_name or "the agent"
            start = max(0, where.start() - 60)
            yield rule_finding(
                RULE,
                "coordination.ignored_input",
                event,
                f"the reviewer asked at step {resume.step_index} to drop {kept!r} "
                f"({shorten(answer, 80)!r}), and {who} kept it at step {event.step_index}",
                confidence=0.8,
                evidence=[
                    quoted(event, "output", text[start : start + 160].strip()),
                    quoted(resume, "input", clip(answer, 300)),
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


def _strings(value: Any) -> Iterator[str]:
    """The texts a value holds, at any depth."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
