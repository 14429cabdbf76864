"""A reviewer's edit at an interrupt, and a node using the text from before it.

Human-in-the-loop graphs show a draft at an interrupt ("Approve or edit the
e-mail") and resume with the reviewer's version. When a node after the resume
puts out the draft as it was shown, word for word, and not the reviewer's
version, the edit was lost on the way (a node that reads ``state["draft"]``
where the review wrote ``final_text``): that node ignored the reviewer's
correction (``coordination.ignored_input``). Without this rule the free tier named
the first model call, by default.

The rule keeps to what it can read for certain: in a failed run, a resume whose
answer holds a text of at least ``MIN_TEXT`` characters (the answer itself, or one
of its fields) that differs from a text the interrupt showed yet is plainly an
edit of it (most of it the same), and, before the next interrupt, a node's output
or a tool call's arguments that hold the shown text verbatim and not the edit.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.rejected import RECORDED_FROM, RESUMES, answers, is_interrupt
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import EventType, Finding, OutcomeStatus
from agentdebug.text import shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "edit_ignored"
MIN_TEXT = 20  # characters of a text to follow (a short value may well recur)
ALIKE = 0.45  # the least similarity of an edit to the text it edits (a heavy rewrite: 0.54)
COMPARED = 2000  # characters of each text compared
PAIRS = 16  # texts of the question and of the answer looked at
_USES = {EventType.AGENT_END: "output", EventType.TOOL_CALL: "input"}


def _texts(value: Any) -> list[str]:
    """The texts a value holds, at any depth, of ``MIN_TEXT`` characters or more."""
    if isinstance(value, str):
        return [value] if len(value.strip()) >= MIN_TEXT else []
    if isinstance(value, dict):
        return [t for item in value.values() for t in _texts(item)]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _texts(item)]
    return []


def _alike(a: str, b: str) -> float:
    """How alike two texts are (difflib's ratio), on their first ``COMPARED``
    characters, the cheap bounds first: texts can be long, and difflib is quadratic."""
    matcher = difflib.SequenceMatcher(None, a[:COMPARED], b[:COMPARED], autojunk=False)
    if matcher.real_quick_ratio() < ALIKE or matcher.quick_ratio() < ALIKE:
        return 0.0
    return matcher.ratio()


def _edit(shown: list[str], answer: Any) -> tuple[str, str] | None:
    """The (shown, edited) pair: a text of the answer that edits a shown one (the
    most alike of those it edits). An answer text that is one of the shown texts
    is a choice among them, not an edit."""
    shown = shown[:PAIRS]
    plain = {t.strip() for t in shown}
    for edited in _texts(answer)[:PAIRS]:
        if edited.strip() in plain:
            continue
        scored = [(_alike(before, edited), before) for before in shown]
        best = max(scored, default=(0.0, ""), key=lambda pair: pair[0])
        if best[0] >= ALIKE:
            return best[1], edited
    return None


def _holds(value: Any, text: str) -> bool:
    return any(text in t for t in _texts(value))


def rule_edit_ignored(ctx: RuleContext) -> Iterator[Finding]:
    """A node after a reviewer's edit that puts out the text as it was before it."""
    if ctx.trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return
    events = ctx.trajectory.events
    for at, resume, asked in answers(events):
        pair = _edit(_texts(asked.output), resume.input)
        if pair is None:
            continue
        before, edited = pair
        for event in events[at + 1 :]:
            if is_interrupt(event):
                break
            field = _USES.get(event.type)
            if (
                field is None
                or event.step_index < resume.step_index  # (filed under an earlier step)
                or event.metadata.get(RESUMES)  # (a tool's paused call, run again: the
                or event.metadata.get(RECORDED_FROM) == "node_update"  # model's own args)
            ):
                continue
            value = getattr(event, field)
            if not _holds(value, before) or _holds(value, edited):
                continue
            who = event.agent_name or "the agent"
            yield rule_finding(
                RULE,
                "coordination.ignored_input",
                event,
                f"the reviewer edited the text at step {resume.step_index}, and {who} used "
                f"it as it was before the edit at step {event.step_index}",
                confidence=0.8,
                evidence=[
                    quoted(event, field, before[:300]),
                    quoted(resume, "input", edited[:300]),
                ],
                metadata={
                    "fix": (
                        f"At step {event.step_index}, {who}: use the text as the reviewer "
                        f"edited it at step {resume.step_index} ({shorten(edited, 160)!r}), "
                        f"not as it was shown for review ({shorten(before, 160)!r}): read "
                        "it from where the review puts it."
                    )
                },
            )
            return
