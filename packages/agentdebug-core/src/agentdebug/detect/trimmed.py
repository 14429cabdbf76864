"""An answer given without the instructions its conversation held: a trim cut them.

An airline's disruption chat keeps the model's context small with a ``window`` node
that keeps the newest messages that fit a budget, walking back from the latest, and
does not pin the system message. In the second turn the history outgrows the
budget, the system prompt (the passenger's facts and "never promise compensation")
is cut, and the model promises EUR 400. The run fails at the answer ("she was told
she'd get EUR 400 compensation ... Claims will reject it"), the model did what a
model given no rules does, and without this rule the free tier blamed it.

The rule keeps to what it can read for certain, in a failed run: the instructions the
conversation held (the system messages a framework integration recorded with the
run's first step, ``signals.INSTRUCTIONS``: LangGraph's state, an earlier turn's
on a thread too; or system messages of the run's input) sharing at least
``MIN_SHARED`` terms with the failure (its reason, or the reference answer: words of
four letters or more, known by their first six, and numbers); and the run's answer
(its last model call that wrote text) whose whole prompt, rebuilt from the parts a
call records (``prompt_new_from``), holds two messages or more and not the
instruction's first ``_HEAD`` characters. The step blamed is the last node before the
answer whose own code (no model in it) wrote a list of messages the answer's prompt
holds every one of, without the instruction (the trim); else the answer's own step,
whose code built its prompt (``memory.context_loss`` either way).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.filtered import shown, terms
from agentdebug.detect.node_runs import MODEL_TYPES, NodeRuns
from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.detect.signals import INSTRUCTIONS
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "instruction_trimmed"
MIN_SHARED = 2  # terms an instruction shares with the failure
_HEAD = 120  # characters of an instruction looked for in a prompt
_READ = 400_000  # characters of a prompt read
_SPACE = re.compile(r"\s+")


def rule_instruction_trimmed(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's answer whose prompt no longer held the conversation's
    instructions, which the failure is about."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    need = terms(f"{run.outcome.reason or ''} {run.reference_answer or ''}")
    events = run.events
    held = [(t, at) for t, at in _instructions(events) if len(terms(t) & need) >= MIN_SHARED]
    if not held:
        return
    replies = [i for i, e in enumerate(events) if _wrote_text(e)]
    if not replies:
        return
    # the answer the failure is about: the last reply sharing its terms (not a title a
    # model wrote after it), else the last reply
    answer = next(
        (i for i in reversed(replies) if len(terms(flatten(events[i].output, _READ)) & need) >= 2),
        replies[-1],
    )
    prompt = _prompt(events, answer)
    if prompt is None or len(prompt) < 2:
        return
    said = _norm(flatten(prompt, _READ))
    systems = [terms(str(m.get("content"))) for m in prompt if _role(m) == "system"]
    missing = [
        (t, at)
        for t, at in held
        if at <= answer and _norm(t)[:_HEAD] not in said and not _restated(terms(t), systems)
    ]
    if not missing:
        return
    text, at = missing[0]
    runs = NodeRuns(events)
    trim = _trimmer(events, runs, answer, prompt, _norm(text)[:_HEAD])
    yield _finding(events, trim if trim is not None else answer, answer, at, text, need)


def _instructions(events: list[AgentEvent]) -> list[tuple[str, int]]:
    """The conversation's instructions, each with where the run first held it."""
    found: dict[str, int] = {}
    for i, event in enumerate(events):
        said = event.metadata.get(INSTRUCTIONS) if event.type is EventType.AGENT_START else None
        if isinstance(said, list):
            for text in said:
                if isinstance(text, str) and text.strip():
                    found.setdefault(text, i)
        elif event.type is EventType.USER_INPUT:
            for text in _system_texts(event.input):
                found.setdefault(text, i)
    return list(found.items())


def _system_texts(payload: Any, depth: int = 0) -> Iterator[str]:
    """The system messages' texts a payload holds (``{"role": "system", ...}``)."""
    if depth > 6:
        return
    if isinstance(payload, dict):
        if payload.get("role") == "system" and isinstance(payload.get("content"), str):
            yield payload["content"]
            return
        for value in list(payload.values())[:200]:
            yield from _system_texts(value, depth + 1)
    elif isinstance(payload, (list, tuple)):
        if len(payload) == 2 and payload[0] == "system" and isinstance(payload[1], str):
            yield payload[1]  # (a ("system", text) pair, as LangChain takes one)
            return
        for value in payload[:200]:
            yield from _system_texts(value, depth + 1)


def _wrote_text(event: AgentEvent) -> bool:
    """A model call whose reply says something (not only tool calls; its content a
    text, or blocks of text)."""
    if event.type not in MODEL_TYPES or event.type is EventType.REASONING:
        return False
    out = event.output
    content = out.get("content") if isinstance(out, dict) else out
    return bool(flatten(content, 2_000).strip())


def _role(message: Any) -> str | None:
    role = message.get("role") if isinstance(message, dict) else None
    return role if isinstance(role, str) else None


def _restated(wanted: set[str], systems: list[set[str]]) -> bool:
    """Whether a system message of the prompt holds at least half of an instruction's
    terms: the instructions, restated (a date-stamped copy put back each turn, a
    summary replaced by a newer one)."""
    return bool(wanted) and any(len(wanted & have) * 2 >= len(wanted) for have in systems)


def _prompt(events: list[AgentEvent], at: int) -> list[Any] | None:
    """The whole prompt of the model call at ``at``: a call that records only what
    its agent's previous call had not seen (``prompt_new_from``) is put together
    with that call's; None when the first part is not in the run."""
    agent = events[at].agent_name
    calls = [
        i for i in range(at + 1)
        if events[i].type is events[at].type and events[i].agent_name == agent
    ]  # fmt: skip
    whole: list[Any] | None = None
    for i in calls:
        part = events[i].input
        if not isinstance(part, list):
            return None
        start = events[i].metadata.get("prompt_new_from")
        if isinstance(start, int) and not isinstance(start, bool):
            if whole is None or start > len(whole):
                whole = None
                continue
            whole = whole[:start] + part
        else:
            whole = list(part)
    return whole


def _trimmer(
    events: list[AgentEvent], runs: NodeRuns, answer: int, prompt: list[Any], head: str
) -> int | None:
    """The last node update before the answer, made by the node's own code, that is
    the list of messages the prompt was made of: two or more, and the same messages
    as the prompt's others than its system messages, without the instruction (not a
    node that added one message, a tool's answer, to the conversation)."""
    contents = {
        _norm(str(m.get("content"))) for m in prompt if isinstance(m, dict) and _role(m) != "system"
    }
    for i in range(answer - 1, -1, -1):
        event = events[i]
        if event.type is not EventType.AGENT_END or event.agent_name in runs.outer:
            continue
        kept = _messages(event.output)
        if len(kept) < 2 or not runs.plain_until(event, i):
            continue
        mine = {_norm(str(m.get("content"))) for m in kept if _role(m) != "system"}
        if mine == contents and not any(head in _norm(str(m.get("content"))) for m in kept):
            return i
    return None


def _messages(output: Any) -> list[dict[str, Any]]:
    """The list of messages an update writes (under any of its keys), if one."""
    values = output.values() if isinstance(output, dict) else [output]
    for value in values:
        if (
            isinstance(value, list)
            and value
            and all(isinstance(m, dict) and "role" in m and "content" in m for m in value)
        ):
            return value
    return []


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def _finding(
    events: list[AgentEvent], blamed: int, answer: int, at: int, text: str, need: set[str]
) -> Finding:
    event, reply = events[blamed], events[answer]
    who = event.agent_name or f"step {event.step_index}"
    by = reply.agent_name or "the model"
    words = shown(text, terms(text) & need).split(", ")
    shared = ", ".join(sorted(words, key=lambda w: w[:1].isdigit())[:5])  # (words first)
    head = shorten(text, 60)
    if blamed == answer:
        how = f"{who}'s code built that prompt without them"
        fix = (
            f"At step {event.step_index}, {who}: put the conversation's system message "
            "in front of what it sends the model."
        )
    else:
        how = f"{who} at step {event.step_index} made the messages it was given and left them out"
        fix = (
            f"At step {event.step_index}, {who}: keep the system message when it cuts the "
            "conversation down (LangChain's trim_messages(..., include_system=True)), or "
            "put it back in front of what it keeps."
        )
    return rule_finding(
        RULE,
        "memory.context_loss",
        event,
        f"The conversation's instructions ({head!r}, held at step {events[at].step_index}) "
        f"share {shared} with the failure, and the prompt of {by}'s answer at "
        f"step {reply.step_index} does not hold them: {how}",
        confidence=0.55,
        evidence=[quoted(reply, "input", None), quoted(events[at], "metadata", head)],
        metadata={"fix": fix, "value": head},
    )
