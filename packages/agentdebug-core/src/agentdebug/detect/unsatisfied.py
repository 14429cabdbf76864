"""A critic that rejected every draft of a writer who revised each time, until the
step limit.

A reflection loop (write, critique, write, ...) ends only when the critic
approves. When the critic checks the wrong thing (words, not syllables) or asks
for what cannot be met, every revision is rejected and the loop runs into the
recursion limit. The writer did its part: each draft differs from the one
before. The fault is the critic's, and it began with its first rejection
(``verification.incorrect_verification``: a right result rejected); before, the
critic's last call, at the limit, was blamed as the limit's cause.

The rule keeps to what it can read for certain, in a failed run stopped by its
step limit: the run's last ``LOOP`` rounds or more (up to the limit) alternate
between two agents' model calls, a writer's and a critic's; every one of the
critic's replies opens with the same verdict word ("REVISE", "Rejected"), which
is not one that approves; and every one of the writer's replies differs from its
previous one. (A writer that re-sends its draft is the reply-unchanged rule's.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agentdebug.detect.adaptation import text_reply
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "critic_never_satisfied"
LOOP = 3  # rounds of writer and critic, at least, up to the limit
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL})
_LIMIT = "planning.step_limit_exhausted"
_VERDICT = re.compile(r"\W*([A-Za-z]{2,})")
_APPROVING = frozenset(
    [
        "approved",
        "approve",
        "approves",
        "accept",
        "accepted",
        "accepts",
        "pass",
        "passed",
        "passes",
        "lgtm",
        "ok",
        "okay",
        "yes",
        "good",
        "great",
        "perfect",
        "done",
        "final",
        "publish",
        "ship",
    ]
)


def rule_critic_never_satisfied(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's critic that rejected each revised draft until the step limit."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    if not any(mode == _LIMIT for mode, _ in ctx.failures.values()):
        return
    calls = [e for e in run.events if e.type in _MODEL and e.error is None and e.agent_name]
    if len(calls) < 2 * LOOP:
        return
    critic, writer = calls[-1].agent_name, calls[-2].agent_name
    if critic == writer:
        return
    rounds = 0  # the alternating tail, from the end
    while rounds < len(calls) and calls[-1 - rounds].agent_name == (
        critic if rounds % 2 == 0 else writer
    ):
        rounds += 1
    tail = calls[len(calls) - rounds :]
    if tail[0].agent_name == critic:  # (a loop opens with a draft)
        tail = tail[1:]
    verdicts = [e for e in tail if e.agent_name == critic]
    drafts = [text_reply(e) for e in tail if e.agent_name == writer]
    if len(verdicts) < LOOP or any(not d for d in drafts) or len(set(drafts)) < len(drafts):
        return
    words = {_verdict(e) for e in verdicts}
    if len(words) != 1:
        return
    (word,) = words
    if word is None or word.lower() in _APPROVING:
        return
    yield _finding(verdicts, len(drafts), writer or "the writer")


def _verdict(event: AgentEvent) -> str | None:
    m = _VERDICT.match(text_reply(event) or "")
    return m.group(1) if m else None


def _finding(verdicts: list[AgentEvent], drafts: int, writer: str) -> Finding:
    first = verdicts[0]
    critic = first.agent_name
    said = text_reply(first) or ""
    return rule_finding(
        RULE,
        "verification.incorrect_verification",
        first,
        f"{critic} rejected all {drafts} drafts {writer} wrote, each revised after the "
        f"critique before, until the step limit; its first rejection: {shorten(said, 120)!r}",
        confidence=0.7,
        evidence=[quoted(e, "output", shorten(text_reply(e) or "", 200)) for e in verdicts[:3]],
        metadata={
            "fix": (
                f"At step {first.step_index}, {critic}: it rejected the first draft "
                f"({shorten(said, 80)!r}) and every revision after it. Check the draft "
                "against the task's own criteria as stated, approve a draft that meets "
                "them, and bound the rounds of revision."
            )
        },
    )
