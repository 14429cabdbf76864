"""A model that gives the same reply again after its input changed: feedback unheeded.

A writer-critic loop (LangGraph's reflection pattern) fails when the writer's model
re-emits its draft word for word after the critic asked for a change: the loop runs
until its step limit, and each agent's repetition looks alike to a rule that only
counts repeats. What tells them apart is the input: the critic saw the same draft
each time and answered it the same way, which is consistent; the writer saw a new
critique and answered as before, which is the fault (``reflection.no_adaptation``).

The rule keeps to a failed run, a reply of text (not a tool call: a call repeated
after a result is the repeated-action rule's) of at least ``MIN_REPLY`` characters,
equal to the same agent's previous reply, while what the model was given (the
messages' text) differs from what it was given then by at least ``MIN_NEW``
characters that are not its own earlier replies (a supervisor's "next: researcher"
and the worker's own findings coming back are nothing to act on). The first such
reply is found.

A shorter reply, a routing label, repeats by design ("next: researcher" each time
research is needed), so it counts only in a run stopped by its step limit, given
``LOOP`` times or more in a row up to it: a supervisor that sends work back to its
researcher after the findings came in, until the recursion limit. The first repeat
is blamed (before, the last one, at the limit, was): that is where the findings
were there to act on. Where the label names another agent of the run, the mode is
``coordination.wrong_delegation``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import clip, flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "reply_unchanged"
_MODEL = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL})
MIN_REPLY = 30  # characters: a short label ("approve", "route: search") may well repeat
MIN_NEW = 24  # characters of new input for it to be something to act on
LOOP = 3  # a shorter reply given this many times in a row, up to a step limit
_LIMIT = "planning.step_limit_exhausted"


def _text(value: Any) -> str:
    """The text of messages (their contents, without ids or roles), or of a value."""
    if isinstance(value, dict) and "content" in value:
        return flatten(value.get("content"), limit=8000)
    if isinstance(value, list):
        return "\n".join(_text(item) for item in value)
    return flatten(value, limit=8000)


def text_reply(event: AgentEvent) -> str | None:
    """A model reply's text, when it is text alone (no tool calls)."""
    out = event.output
    if isinstance(out, dict) and (out.get("tool_calls") or out.get("invalid_tool_calls")):
        return None
    return _text(out).strip()


def _new_lines(now: str, before: str) -> list[str]:
    """The lines of ``now`` that ``before`` does not hold (what changed)."""
    seen = {line.strip() for line in before.splitlines()}
    return [line.strip() for line in now.splitlines() if line.strip() and line.strip() not in seen]


def rule_reply_unchanged(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's model reply equal to its agent's previous one, given new input."""
    if ctx.trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return
    events = ctx.trajectory.events
    limits = [ctx.position[i] for i, (mode, _) in ctx.failures.items() if mode == _LIMIT]
    calls: dict[str, list[AgentEvent]] = {}  # agent -> its model's answered calls
    for event in events:
        if event.type in _MODEL and event.error is None and event.agent_name:
            calls.setdefault(event.agent_name, []).append(event)
    replies = {agent: [text_reply(e) for e in made] for agent, made in calls.items()}
    # the positions of every model call, to count those between a loop and the limit
    answered = [ctx.position[e.id] for made in calls.values() for e in made]
    answered.sort()
    seen: dict[str, int] = {}  # agent -> its calls looked at so far
    own: dict[str, set[str]] = {}  # agent -> the lines its model said so far
    for event in events:
        if event.type not in _MODEL or event.error is not None:
            continue
        agent = event.agent_name
        if not agent:
            continue
        index = seen[agent] = seen.get(agent, -1) + 1
        before = calls[agent][index - 1] if index else None
        said = replies[agent][index]
        earlier = own.setdefault(agent, set())
        if before is not None and said and said == replies[agent][index - 1]:
            times = 0  # (a short reply: how often it was given in a row, from ``before``)
            if len(said) < MIN_REPLY:
                times = _looped(ctx, calls[agent], replies[agent], index - 1, limits, answered)
            if len(said) >= MIN_REPLY or times:
                found = _unheeded(agent, event, before, said, earlier, times, calls.keys())
                if found is not None:
                    yield found
                    return
        earlier.update(line.strip() for line in _text(event.output).splitlines())


def _looped(
    ctx: RuleContext,
    made: list[AgentEvent],
    said: list[str | None],
    first: int,
    limits: list[int],
    answered: list[int],
) -> int:
    """How many times in a row the short reply ``said[first]`` was given, where it
    looped up to the run's step limit (``LOOP`` times or more, its last the agent's
    last call, at most two model calls between it and the limit), with nothing new
    coming back between repeats (the same findings each round, not "part 3 of 10");
    else 0 (a label given again by design)."""
    if not limits or (first > 0 and said[first - 1] == said[first]):
        return 0  # (no limit; or not the loop's start, which was looked at)
    times = 1
    while first + times < len(made) and said[first + times] == said[first]:
        times += 1
    last = first + times - 1
    if times < LOOP or last != len(made) - 1:
        return 0
    at, limit = ctx.position[made[last].id], min(limits)
    if (
        not at < limit
        or bisect.bisect_left(answered, limit) - bisect.bisect_right(answered, at) > 2
    ):
        return 0  # (the limit came later: something else used the steps up)
    news = {
        frozenset(_new_lines(_text(made[k].input), _text(made[k - 1].input))) - {said[first]}
        for k in range(first + 2, last + 1)
    }
    news.discard(frozenset())
    return times if len(news) <= 1 else 0


def _unheeded(
    agent: str,
    event: AgentEvent,
    before: AgentEvent,
    said: str,
    earlier: set[str],
    times: int,
    agents: Collection[str],
) -> Finding | None:
    """The finding for ``event``'s reply, the same as ``before``'s, where what it was
    given changed by something to act on; None where it did not."""
    given, given_before = _text(event.input).strip(), _text(before.input).strip()
    if given == given_before:
        return None  # (the same input answered the same way: consistent)
    # (what it was not given before, nor had said itself, in any earlier reply: its
    # replies come back in a chat's history)
    old = {line.strip() for line in given_before.splitlines()}
    changed = [
        line  # (a line quoting its own reply, "Previous: <draft>", is no news either)
        for line in _new_lines(given, "")
        if line not in old and line not in earlier and said not in line
    ]
    if sum(len(line) for line in changed) < MIN_NEW:
        return None  # (a routing label, "next: researcher": nothing to act on)
    new = changed[0]
    mode, message = (
        "reflection.no_adaptation",
        (
            f"{agent}'s model gave the same reply at step {event.step_index} as at step "
            f"{before.step_index}, though what it was given had changed (now: "
            f"{shorten(new, 100)!r})"
        ),
    )
    fix = (
        f"At step {event.step_index}, {agent}: the reply repeated the one at step "
        f"{before.step_index} word for word, though the input had changed "
        f"({shorten(new, 160)!r}). Act on what changed: revise the reply to "
        "address it, or say why it cannot be done."
    )
    if times:
        others = [a for a in agents if a != agent and _names(said, a)]
        if others:
            mode = "coordination.wrong_delegation"
        message = (
            f"{agent}'s model gave the same reply ({said!r}) at step {event.step_index} "
            f"as at step {before.step_index}, {times} times in a row until the run's "
            f"step limit, though what it was given had changed (now: {shorten(new, 100)!r})"
        )
        fix = (
            f"At step {event.step_index}, {agent}: the reply repeated {said!r} (as at step "
            f"{before.step_index}), though {shorten(new, 160)!r} had come in, and the run "
            "looped on it until its step limit. Route on what came back: to the next "
            "step, or to the end, not to the same one again."
        )
    return rule_finding(
        RULE,
        mode,
        event,
        message,
        confidence=0.75,
        evidence=[
            quoted(event, "output", clip(said, 300)),
            quoted(event, "input", clip(new, 300)),
        ],
        metadata={"fix": fix},
    )


def _names(text: str, agent: str) -> bool:
    """``text`` names ``agent`` (as a whole word, any case, ``_`` or ``-`` as a space)."""
    words = re.escape(agent.lower()).replace("_", "[ _-]").replace("\\-", "[ _-]")
    return re.search(rf"(?<![\w-]){words}(?![\w-])", text.lower()) is not None
