"""A step that kept some of the items an earlier step found and dropped the one
the run turned out to need.

A RAG graph: ``retrieve`` returns four chunks, the termination clause among them;
``rerank`` keeps the top two by keyword overlap, and the clause is not one of them;
``answer`` says, truthfully, that the excerpts do not give a notice period. The run
fails ("the answer does not give the 90-day termination notice period"), the
answering model did nothing wrong, and without this rule the free tier guessed it.
The fault is the selection (``memory.context_loss``: what the run had, lost on
the way).

The rule keeps to what it can read for certain, in a failed run that says what was
missing (the success check's reason, or the reference answer): a node whose update
writes a list of text items (strings, or documents' contents) that is a part of a
list an earlier step wrote or read (a node's update, a retriever's documents, a
tool's result), smaller by at least one item, where a dropped item holds at least
``MIN_MATCH`` of the terms of what was missing (words of four letters or more told
apart by their first six, and numbers) and more of them than any item kept, and
no model call or node after the selection was given that item. The first such
selection is blamed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agentdebug.detect.rule_finding import quoted, rule_finding
from agentdebug.schema import AgentEvent, EventType, Finding, OutcomeStatus
from agentdebug.text import compact_json, flatten, shorten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

RULE = "needed_item_dropped"
MIN_MATCH = 2  # terms of what was missing a dropped item must hold
MIN_ITEM = 20  # characters of an item's text: a passage, not a label
_HEAD = 40  # the characters of an item looked for later
LOOKBACK = 200  # the latest lists a selection is looked for in
TEXT_LOOKBACK = 20  # the latest lists a text that joins passages is looked for in
_TERM = re.compile(r"[a-z]{4,}|\d+(?:[.,]\d+)?")
_CONTENT = ("page_content", "content", "text", "snippet", "chunk", "body")
_LATER = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL, EventType.AGENT_END})
# words of a failure's reason that say it failed, not what it lacked
_GENERIC_WORDS = (
    "answer answers answered does doesn didn give gives given giving user users asked "
    "asks should must with that this from what which their there about missing miss "
    "include includes included mention mentions mentioned contain contains final state "
    "says said reply response output result results expected correct wrong incorrect "
    "value values have been were will would could also only than then them they none "
    "provide provided provides tell tells told request requested question"
)
_GENERIC = frozenset(_GENERIC_WORDS.split(" "))


def terms(text: str) -> set[str]:
    """Words of four letters or more, known by their first six ("termination" and
    "terminate" alike), and numbers; not the words that only say something failed."""
    return {
        t if t[0].isdigit() else t[:6]
        for t in _TERM.findall(text.lower())
        if t[0].isdigit() or t not in _GENERIC
    }


def shown(text: str, hits: set[str]) -> str:
    """The words of ``text`` that hold the terms ``hits``, as written there."""
    words: dict[str, str] = {}
    for word in _TERM.findall(text.lower()):
        words.setdefault(word if word[0].isdigit() else word[:6], word)
    return ", ".join(words[t] for t in sorted(hits) if t in words)


def _item(value: Any) -> str | None:
    """An item's text: a string, a document's or message's contents, or those of a
    ``(document, score)`` pair (``similarity_search_with_score``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in _CONTENT:
            text = value.get(key)
            if isinstance(text, str):
                return text
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and isinstance(value[1], (int, float))
        and not isinstance(value[1], bool)
    ):
        return _item(value[0])
    return None


def _passages(value: Any) -> list[str]:
    """A list's items that are passages (a heading, a label among them left out)."""
    if not isinstance(value, list):
        return []
    return [t for t in map(_item, value) if t is not None and len(t) >= MIN_ITEM]


def _lists(output: Any) -> Iterator[tuple[str | None, list[str]]]:
    """The lists of passages a step wrote: its output itself, or its values."""
    pairs = output.items() if isinstance(output, dict) else [(None, output)]
    for key, value in pairs:
        texts = _passages(value)
        if texts:
            yield (None if key is None else str(key)), texts


def _selections(output: Any) -> Iterator[tuple[str | None, list[str] | str]]:
    """What a node's update selected into: its lists of passages, and its texts (the
    top passages joined into one context string)."""
    yield from _lists(output)
    if isinstance(output, dict):
        for key, value in output.items():
            if isinstance(value, str) and len(value) >= MIN_ITEM:
                yield str(key), value


def rule_needed_item_dropped(ctx: RuleContext) -> Iterator[Finding]:
    """A failed run's selection that dropped the item holding what the run lacked."""
    run = ctx.trajectory
    if run.outcome.status is not OutcomeStatus.FAILURE:
        return
    need = terms(f"{run.outcome.reason or ''} {run.reference_answer or ''}")
    if len(need) < MIN_MATCH:
        return
    events = run.events
    found: list[_Found] = []  # lists written or read so far
    started: dict[str, int] = {}  # agent -> position of its latest start
    for i, event in enumerate(events):
        agent = event.agent_name
        if event.type is EventType.AGENT_START and agent:
            started[agent] = i
        if event.type is EventType.AGENT_END and agent:
            for key, kept in _selections(event.output):
                hit = _selection(found, kept, need)
                if hit is None:
                    continue
                # what the node's own model calls were given counts as reaching it too
                own = [e for e in events[started.get(agent, i) : i] if e.agent_name == agent]
                if not _reached([*own, *events[i + 1 :]], hit[1]):
                    yield _finding(event, key, hit[3], *hit[:3])
                    return
        if event.type not in (EventType.USER_INPUT, EventType.FINAL_ANSWER):
            found.extend(_Found(event, texts) for _, texts in _lists(event.output))
            del found[:-LOOKBACK]


class _Found:
    """A list of passages a step wrote or read, its set made when first needed."""

    __slots__ = ("_set", "event", "texts")

    def __init__(self, event: AgentEvent, texts: list[str]) -> None:
        self.event, self.texts = event, texts
        self._set: set[str] | None = None

    @property
    def have(self) -> set[str]:
        if self._set is None:
            self._set = set(self.texts)
        return self._set


def _selection(
    found: list[_Found], kept: list[str] | str, need: set[str]
) -> tuple[AgentEvent, str, set[str], list[str]] | None:
    """The earlier list the selection ``kept`` (a list of passages, or a text joining
    some) is a part of, smaller, its dropped item that holds more of what was needed
    than any kept one, and the items kept; None if there is none."""
    whole = set(kept) if isinstance(kept, list) else None
    for n, source in enumerate(reversed(found)):
        if whole is None:
            if n == TEXT_LOOKBACK:  # (a text is searched for every item of a list)
                break
            keep = {t for t in source.texts if t[:_HEAD] in kept}
            if not keep or len(keep) == len(source.have):
                continue
        else:
            # (a list as long as the earlier one is no part of it: a growing list
            # written whole at every step is passed over without its set)
            if len(source.texts) <= len(whole) or not whole < source.have:
                continue
            keep = whole
        scored = [
            (len(hits), t, hits)
            for t in source.texts
            if t not in keep
            for hits in [terms(t) & need]
        ]
        score, text, hits = max(scored, key=lambda s: s[0])
        if score >= MIN_MATCH and score > max(len(terms(t) & need) for t in keep):
            return source.event, text, hits, [t for t in source.texts if t in keep]
    return None


def _reached(later: list[AgentEvent], text: str) -> bool:
    """Whether a model call or node after the selection was given, or wrote, the item."""
    head = text[:_HEAD]
    return any(
        e.type in _LATER and (head in flatten(e.input) or head in flatten(e.output)) for e in later
    )


def _finding(
    event: AgentEvent,
    key: str | None,
    kept: list[str],
    source: AgentEvent,
    dropped: str,
    hits: set[str],
) -> Finding:
    agent = event.agent_name
    by = source.agent_name or source.type.value
    where = f"{key!r}" if key else "its output"
    item = shorten(dropped, 100)
    said = shown(dropped, hits)
    return rule_finding(
        RULE,
        "memory.context_loss",
        event,
        f"{agent} kept {len(kept)} of the items {by} had at step {source.step_index} "
        f"({where}) and dropped {item!r}, the one that holds what the run lacked "
        f"({said}); no step after it was given that item",
        confidence=0.6,
        evidence=[
            quoted(source, "output", dropped[:300]),
            quoted(event, "output", compact_json({key: kept} if key else kept)[:300]),
        ],
        metadata={
            "fix": (
                f"At step {event.step_index}, {agent}: keep {item!r} (what {by} found at "
                f"step {source.step_index}); the selection into {where} dropped it, and the "
                f"run needed it ({said}). Select on every part of the request, or keep "
                f"more than {len(kept)} items."
            ),
            "dropped_from": source.id,
        },
    )
