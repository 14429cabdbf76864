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
between two agents' turns (a turn: an agent's model calls in a row, a tool call
before its verdict among them; its last text reply is what it said); one agent,
the critic, opens every reply with the same word that rejects ("REVISE",
"Rejected", "Needs changes"; any case), none approving anywhere in it ("approved",
"looks good"), each of at least ``MIN_VERDICT`` characters (not a routing label,
"next: researcher") and each unlike the one before it (a critic that repeats its
critique was not heeded: the writer's fault); the other, the writer, gives a
draft unlike its previous one every time (a writer that re-sends its draft is the
reply-unchanged rule's).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from typing import TYPE_CHECKING

from agentdebug.detect.adaptation import text_reply
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "critic_never_satisfied"
LOOP = 3  # rounds of writer and critic, at least, up to the limit
MIN_VERDICT = 20  # characters of a verdict: a routing label is shorter
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL})
_LIMIT = "planning.step_limit_exhausted"
_OPENING = re.compile(r"\W*([A-Za-z]{2,})")
_REJECTING_WORDS = (
    "revise revision revisions rejected reject rejecting fail failed fails no not needs "
    "need changes change incorrect wrong insufficient unacceptable redo rewrite retry"
)
_REJECTING = frozenset(_REJECTING_WORDS.split(" "))
_APPROVING = re.compile(
    r"\b(?:approved?|approves|accept(?:ed|able)?|lgtm|looks good|no changes needed|"
    r"meets (?:all )?the|passes|publish it|ship it)\b",
    re.I,
)


def rule_critic_never_satisfied(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's critic that rejected each revised draft until the step limit."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    if not any(mode == _LIMIT for mode, _ in ctx.failures.values()):
        return
    turns = _turns(run.events)
    if len(turns) < 2 * LOOP:
        return
    pair = {turns[-1][0], turns[-2][0]}
    if len(pair) != 2:
        return
    tail: list[tuple[str, AgentEvent, str]] = []  # the alternating turns up to the end
    for turn in reversed(turns):
        if turn[0] not in pair or (tail and turn[0] == tail[-1][0]):
            break
        tail.append(turn)
    tail.reverse()
    critics = [a for a in pair if all(_rejects(said) for who, _, said in tail if who == a)]
    if len(critics) != 1:
        return
    (critic,) = critics
    verdicts = [(e, said) for who, e, said in tail if who == critic]
    drafts = [said for who, _, said in tail if who != critic]
    if tail[0][0] == critic:  # (a loop opens with a draft)
        verdicts = verdicts[1:]
    if len(verdicts) < LOOP or len(drafts) < LOOP:
        return
    if len({_opening(said) for _, said in verdicts}) != 1:
        return
    if any(a == b for a, b in pairwise(drafts)) or any(a[1] == b[1] for a, b in pairwise(verdicts)):
        return  # a draft re-sent, or a critique repeated: the writer did not act on it
    (writer,) = pair - {critic}
    yield _finding([e for e, _ in verdicts], len(drafts), writer)


def _turns(events: list[AgentEvent]) -> list[tuple[str, AgentEvent, str]]:
    """Each agent's model calls in a row as one turn: (agent, the call that said
    its last text, that text); a turn with no text reply is left out."""
    turns: list[tuple[str, AgentEvent, str]] = []
    last: str | None = None
    for event in events:
        if event.type not in _MODEL or event.error is not None or not event.agent_name:
            continue
        said = text_reply(event)
        agent = event.agent_name
        if said:
            if agent == last and turns and turns[-1][0] == agent:
                turns[-1] = (agent, event, said)  # (a later text of the same turn)
            else:
                turns.append((agent, event, said))
        last = agent
    return turns


def _opening(said: str) -> str | None:
    m = _OPENING.match(said)
    return m.group(1).lower() if m else None


def _rejects(said: str) -> bool:
    """A verdict that rejects: it opens with a word that does, approves nowhere, and
    is longer than a label."""
    return len(said) >= MIN_VERDICT and _opening(said) in _REJECTING and not _APPROVING.search(said)


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
