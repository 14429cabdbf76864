"""A node that ran a subgraph and passed on an empty value instead of its result.

A LangGraph node wraps a compiled research subgraph: ``out = research.invoke(...)``,
then ``return {"notes": out.get("summary", "")}``; the subgraph wrote ``findings``,
so the parent's state gets ``notes=""`` and the answering node says nothing was
found. The subgraph did its work; the fault is the node that dropped its result
(``coordination.information_withholding``). Without this rule the free tier found
nothing and guessed the subgraph's own step.

The rule keeps to what it can read for certain, in a failed run: a node's end whose
update writes every key it writes empty (``""``, ``[]``, ``{}``, ``None``: it passed
nothing on; one that resets a status key beside its result passed that on), while
a node inside it (an agent named under it, ``research/summarize``) ended with a
text of at least ``MIN_TEXT`` characters (a value's, or a message list's contents)
that nothing after it in the run holds: the result went nowhere. The first such
node is found.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import clip, compact_json, flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "result_dropped"
MIN_TEXT = 40  # characters of a result for it to be one worth passing on
_HEAD = 40  # the characters of a result looked for later (its opening)


def _texts(value: Any) -> Iterator[tuple[str, str]]:
    """A node's update's values of ``MIN_TEXT`` characters or more, as text (a list
    of messages, a ``create_react_agent``'s, as its messages' contents), with their
    keys."""
    if isinstance(value, dict):
        for key, item in value.items():
            text = flatten(item, limit=4000).strip() if item else ""
            if len(text) >= MIN_TEXT:
                yield str(key), text


def _emptied(value: Any) -> list[str]:
    """The keys an update writes, when it writes every one of them empty: it passed
    nothing on (a node that resets a status key beside its result passed one on)."""
    if not isinstance(value, dict) or not value:
        return []
    empty = [str(k) for k, v in value.items() if v is None or v in ("", [], {})]
    return empty if len(empty) == len(value) else []


def rule_result_dropped(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's node whose subgraph's result its update left out, written empty."""
    if ctx.trajectory.outcome.status is not OutcomeStatus.FAILURE:
        return
    events = ctx.trajectory.events
    started: dict[str, int] = {}  # agent -> position of its latest start
    said: list[str] | None = None  # each event's text, read once, if needed
    for i, event in enumerate(events):
        agent = event.agent_name
        if not agent:
            continue
        if event.type is EventType.AGENT_START:
            started[agent] = i
            continue
        if event.type is not EventType.AGENT_END or agent not in started:
            continue
        empty = _emptied(event.output)
        if not empty:
            continue
        inner = f"{agent}/"
        result = next(
            (
                (e, key, text)
                for e in reversed(events[started[agent] + 1 : i])
                if e.type is EventType.AGENT_END and (e.agent_name or "").startswith(inner)
                for key, text in _texts(e.output)
            ),
            None,
        )
        if result is None:
            continue
        child, key, text = result
        if said is None:
            said = [
                f"{flatten(e.input, limit=8000)}\n{flatten(e.output, limit=8000)}" for e in events
            ]
        head = text[:_HEAD]
        if any(head in later for later in said[i + 1 :]):
            continue  # (it got through, another way)
        wrote = ", ".join(compact_json({k: event.output[k]})[1:-1] for k in empty[:3])
        yield _finding(event, child, key, text, wrote)
        return


def _finding(event: AgentEvent, child: AgentEvent, key: str, text: str, wrote: str) -> Finding:
    agent = event.agent_name
    said = shorten(text, 100)
    return rule_finding(
        RULE,
        "coordination.information_withholding",
        event,
        f"{agent} wrote {wrote} after {child.agent_name} found {key}: {said!r} at step "
        f"{child.step_index}; nothing after it held that result",
        confidence=0.7,
        evidence=[quoted(child, "output", clip(text, 300)), quoted(event, "output", wrote)],
        metadata={
            "fix": (
                f"At step {event.step_index}, {agent}: pass on what {child.agent_name} "
                f"returned ({key}: {shorten(text, 80)!r}): the update wrote {wrote} instead. "
                f"Read the result under the key it is written to ({key!r}) and put it in "
                "the state the next step reads."
            )
        },
    )
