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


# what a failure's reason says is not there: said before the missing thing ("a
# summary is missing the revenue", "never mentions", "no mention of", "has no"), or
# after it ("the revenue is missing", "is not included", "wasn't included")
_ABSENT_BEFORE = re.compile(
    r"(?<!\bthe )(?<!\ba )(?<!\ban )\b(?:missing|lacks?|lacking|without|omit(?:s|ted)?|"
    r"leaves? out|no mention of|(?:has|have|had) no|"
    r"(?:does|did|do)(?: not|n't) (?:mention|include|give|say|state|have)|"
    r"fail(?:s|ed)? to (?:mention|include|give|say|state)|"
    r"never (?:mentions?|includes?|gives?|says|states?))\b",
    re.I,
)
_ABSENT_AFTER = re.compile(
    r"\b(?:is|are|was|were)(?: not|n't)? (?:missing|absent|left out)\b|"
    r"\b(?:is|are|was|were)(?: not|n't) (?:included|mentioned|given|stated|there)\b",
    re.I,
)
_CLAUSE = re.compile(r"[.;,!?()]|\b(?:and|but|while|whereas)\b", re.I)
_LIST_END = re.compile(r"[.;!?()]|\b(?:but|while|whereas)\b", re.I)
_LIST_SEP = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+", re.I)
_ITEM_WORDS = 3  # a list's later items are short ("the profit"), not clauses
_NONE = re.compile(r"^\W*(?:nothing|none|no\b)", re.I)  # ("nothing is missing")
_PLACE = re.compile(r"^\W*(?:from|in|of|for|on|at)\b", re.I)  # ("missing from a summary")


def _listed(rest: str) -> str:
    """What follows "missing": its first phrase, and the short items of a list it
    starts ("the revenue, the profit and the margin"), not a clause after it
    ("the revenue, and the writer then ignored it")."""
    first, *more = _LIST_SEP.split(_LIST_END.split(rest, maxsplit=1)[0])
    items = [first]
    for item in more:
        if len(item.split()) > _ITEM_WORDS:
            break
        items.append(item)
    return " ".join(items)


def absent_terms(reason: str, terms: Callable[[str], set[str]]) -> set[str]:
    """The words (``terms`` of a text) naming what the reason says is missing: of
    what follows "missing", "lacks", "never mentions"... ("a summary is missing the
    revenue", "missing: revenue"), or comes before "is missing", "is not included"
    ("the revenue is missing from one summary"); none when it says nothing is
    missing ("nothing is missing, but ..."). Quotes count as their words."""
    reason = re.sub(r"[\"`]|(?<!\w)'|'(?!\w)", " ", reason)  # ("omits 'revenue'")
    out: set[str] = set()
    taken: list[tuple[int, int]] = []
    for found in _ABSENT_AFTER.finditer(reason):
        taken.append(found.span())
        before = _CLAUSE.split(reason[: found.start()])[-1]
        if _NONE.match(before):
            continue
        rest = reason[found.end() :].lstrip(" :")
        after: set[str] = set()
        if found.group().lower().endswith("missing") and not _PLACE.match(rest):
            after = terms(_listed(rest))  # ("is missing the revenue")
        out |= after or terms(before)
    for found in _ABSENT_BEFORE.finditer(reason):
        if any(a <= found.start() < b for a, b in taken):
            continue
        rest = reason[found.end() :].lstrip(" :")
        if _PLACE.match(rest):  # ("revenue: missing in one summary")
            out |= terms(_CLAUSE.split(reason[: found.start()])[-1])
        else:
            out |= terms(_listed(rest))
    return out


def singled_out(
    group: Sequence[tuple[AgentEvent, set[str]]], names: set[str], absent: set[str]
) -> AgentEvent | None:
    """Of one agent's steps that each gave part of the answer (parallel branches
    of a fan-out, or its turns), the one the failure's reason singles out: the only
    one saying a name or value the reason names ("doc-1" of "doc-1's figure is
    wrong"); else, of three or more, the only one not saying a word that the reason
    says is missing (``absent``: :func:`absent_terms`) and that all the others say ("a summary is missing
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
