"""The store's rows for a batch of queued events: what the background writer
hands a store (see :mod:`agentdebug.capture.writer`)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from agentdebug.capture.encode import (
    AGENT,
    ENCODED,
    ENCODED_LEN,
    EVENT_ID,
    SEQ,
    batch_json,
    event_id,
    event_json,
)
from agentdebug.schema import AgentEvent
from agentdebug.schema.trace import events_from_json
from agentdebug.store.base import EventBatch, EventRow

_seq_of = operator.itemgetter(SEQ)
_agent_of = operator.itemgetter(AGENT)
_encoded_of = operator.itemgetter(ENCODED)


def doc_of(item: tuple[Any, ...], given_id: str | None, limit: int) -> bytes:
    """One event's JSON: as ``record`` encoded it, or by the careful path."""
    if len(item) == ENCODED_LEN:
        data: bytes = item[ENCODED]
        return data
    return event_json(item, limit, given_id)


def one_by_one(items: list[tuple[Any, ...]], ids: dict[int, str], limit: int) -> list[EventRow]:
    """A row per event, each encoded on its own (the total path)."""
    return [
        EventRow(
            item[SEQ],
            item[AGENT] if item[AGENT].__class__ is str else None,
            doc_of(item, ids.get(i), limit),
        )
        for i, item in enumerate(items)
    ]


def rows_of(items: list[tuple[Any, ...]], ids: dict[int, str], limit: int) -> Sequence[EventRow]:
    """The run's rows for these events: one JSON array when their sequence
    numbers follow on (as they do unless several threads record into the run at
    once), else a row each. Events ``record`` encoded are joined as they are
    (loops in C: this is the writer's share of the GIL for a busy agent)."""
    first = items[0][SEQ]
    n = len(items)
    if list(map(_seq_of, items)) == list(range(first, first + n)):
        try:
            agents = set(map(_agent_of, items))
        except TypeError:  # a caller passed an unhashable name
            agents = {a for item in items if (a := item[AGENT]).__class__ is str}
        agents = {a for a in agents if a.__class__ is str and a}
        array: bytes | None
        try:
            array = b"[" + b",".join(list(map(_encoded_of, items))) + b"]"
        except TypeError:  # some came as they were recorded: encode those here
            array = None
            if not any(len(item) == ENCODED_LEN for item in items):
                array = batch_json(items, ids, limit)
        if array is None:  # the careful path, event by event
            docs = [doc_of(item, ids.get(i), limit) for i, item in enumerate(items)]
            array = b"[" + b",".join(docs) + b"]"
        return EventBatch(first, n, array, agents)
    return [
        EventRow(
            item[SEQ],
            item[AGENT] if isinstance(item[AGENT], str) else None,
            doc_of(item, ids.get(i), limit),
        )
        for i, item in enumerate(items)
    ]


def unwritten_docs(
    session: Any, jobs: Sequence[tuple[Any, Any]], items: Sequence[tuple[Any, ...]], limit: int
) -> list[bytes]:
    """The JSON documents of ``session``'s events among a writer's ``jobs`` (handed
    to its store thread: rows, a batch's array, or a store call) and queued
    ``items`` (its run key first), oldest first. An event may be in both, or already
    in the store: the reader keeps one per id."""
    out: list[bytes] = []
    for owner, work in jobs:
        if owner is not session or callable(work):
            continue
        if isinstance(work, EventBatch):
            if work.length:
                out.append(work.array[1:-1])
        else:
            out.extend(row.data for row in work)
    key = session._key
    taken = dict(session.user_ids)  # (the writer's ``_add``, played here on a copy)
    for item in items:
        if item[0] == key:
            out.append(doc_of(item, _settled_id(taken, item), limit))
    return out


def _settled_id(taken: dict[str, int], item: tuple[Any, ...]) -> str | None:
    """The id the writer will give a queued event that came with its caller's own:
    that id, or ``id#seq`` when an earlier event of the run has it (the writer's
    ``_add``), noted in ``taken``."""
    if len(item) == ENCODED_LEN or item[EVENT_ID] is None:
        return None
    given = event_id(item)
    seq = item[SEQ]
    if taken.setdefault(given, seq) != seq:
        given = f"{given}#{seq}"
        taken[given] = seq
    return given


def merged_events(events: list[AgentEvent], docs: list[bytes]) -> list[AgentEvent]:
    """``events`` (a run's, as stored), and those of the JSON ``docs`` that are not
    among them: one per id (an event being written when the store was read may be
    in both)."""
    known = {e.id for e in events}
    for event in events_from_json(b"[" + b",".join(docs) + b"]"):
        if event.id not in known:
            known.add(event.id)
            events.append(event)
    return events
