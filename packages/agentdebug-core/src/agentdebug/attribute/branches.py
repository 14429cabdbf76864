"""Of one agent's steps that each gave part of a run's final answer (the parallel
branches of a fan-out, or its turns), the one the failure's reason singles out: the
order the steps ran in is no sign of which went wrong (see
:func:`agentdebug.attribute.words.answer_origin`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from agentdebug.schema import AgentEvent, EventType


def branches_of(
    agent: str | None,
    decisions: Sequence[AgentEvent],
    answer: set[str],
    words_of: Callable[[AgentEvent], set[str]],
) -> list[tuple[AgentEvent, set[str]]]:
    """``agent``'s steps that gave part of the answer (``answer``: its words), by
    what they said, not what they asked for (a tool call, a model turn that calls
    tools: a worker reads its document before it sums it up): each step's words,
    named by its event that said most of the answer."""
    steps: dict[int, tuple[AgentEvent, set[str], int]] = {}
    for e in decisions:
        if e.agent_name != agent or not says(e):
            continue
        own = words_of(e)
        gave = len(own & answer)
        held = steps.get(e.step_index)
        if held is None:
            steps[e.step_index] = (e, own, gave)
        else:
            lead = e if gave > held[2] else held[0]
            steps[e.step_index] = (lead, held[1] | own, max(held[2], gave))
    return [(e, words) for e, words, gave in steps.values() if gave]


def says(event: AgentEvent) -> bool:
    """Whether a decision says something (an answer, a result), rather than asks
    for a tool's or is the run's final answer."""
    if event.type in (EventType.TOOL_CALL, EventType.FINAL_ANSWER):
        return False
    out = event.output
    return not (isinstance(out, dict) and out.get("tool_calls"))


# a failure's reason that says something is not there ("a summary is missing the
# revenue"): the step that did not say it is the one it means
ABSENT = re.compile(
    r"\b(?:missing|lacks?|lacking|without|omit(?:s|ted)?|absent|left out|leaves? out|"
    r"(?:does|did|do)(?: not|n't) (?:mention|include|give|say|state|have))\b",
    re.I,
)


def singled_out(
    group: Sequence[tuple[AgentEvent, set[str]]], names: set[str], absent: set[str]
) -> AgentEvent | None:
    """Of one agent's steps that each gave part of the answer (parallel branches
    of a fan-out, or its turns), the one the failure's reason singles out: the only
    one saying a name or value the reason names ("doc-1" of "doc-1's figure is
    wrong"); else, of three or more, the only one not saying a word that the reason
    says is missing (``absent``) and that all the others say ("a summary is missing
    the revenue", of three summaries two of which give it; not "a summary leaks the
    forecast", which two of three said: there the one that did not is the one that
    did right). None when it singles out none, or several: the order the steps ran
    in is no sign of which went wrong."""
    if len(group) < 2:
        return None
    having = [{e.id for e, words in group if term in words} for term in sorted(names)]
    picked = {next(iter(ids)) for ids in having if len(ids) == 1}
    if not picked and len(group) >= 3:
        everyone = {e.id for e, _ in group}
        having = [{e.id for e, words in group if term in words} for term in sorted(absent)]
        picked = {next(iter(everyone - ids)) for ids in having if len(ids) == len(group) - 1}
    if len(picked) != 1:
        return None
    (chosen,) = picked
    return next(e for e, _ in group if e.id == chosen)
