"""agentdebug's own format: serialized trajectories and lists of events.

Accepted shapes:

* one serialized :class:`AgentTrajectory` (an object with ``events``; ``id``
  defaults to the file name's stem);
* a JSON array of event objects (one run, id = file stem);
* JSON Lines where each line is an event (one run) or each line a whole
  trajectory (one run per line).

Events may leave out ``id`` (then ``e{i}``) and ``step_index`` (then their
position), and may give ``error`` as just its message. Anything else wrong is an
:class:`InputError` naming the place: the line of a JSON Lines file ("line 3"), or
the event's index in a JSON document ("record 2"), and the field as a JSON path,
e.g. ``events[2].step_index``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import pairwise
from typing import Any

from pydantic import ValidationError

from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.io._common import (
    check_size,
    from_validation_error,
    join_path,
    line_of,
    type_name,
)
from agentdebug.limits import max_event_bytes
from agentdebug.schema import AgentEvent, AgentTrajectory
from agentdebug.stages import ImportedRun, Source

EVENT_FIELDS = frozenset(AgentEvent.field_names())
_SIZED_FIELDS = ("input", "output", "metadata", "error", "artifacts")


def _looks_like_events(items: Sequence[Any]) -> str | None:
    if not items:
        return "empty list"
    if not all(isinstance(item, Mapping) for item in items):
        return "list items are not all objects"
    if any("type" in item for item in items):
        return None
    if all(set(item) <= EVENT_FIELDS for item in items):
        return None
    return "list items are not events (no 'type')"


class EventsImporter:
    """Reads agentdebug trajectories and event lists."""

    name = "events"
    description = "agentdebug trajectory JSON, or a list / JSON Lines of AgentEvent objects"

    def sniff(self, source: Source) -> str | None:
        if source.records is not None:
            if all(isinstance(r, Mapping) and "events" in r for r in source.records):
                return None
            return _looks_like_events(source.records)
        doc = source.document
        if isinstance(doc, Mapping):
            if "events" not in doc:
                return "no 'events' field"
            return None
        if isinstance(doc, list):
            return _looks_like_events(doc)
        return "not a JSON list or object"

    def load(self, source: Source) -> Iterator[ImportedRun]:
        stem = source.path.stem
        if source.records is not None:
            records = source.records
            if all(isinstance(r, Mapping) and "events" in r for r in records):
                skipped: list[InputError] = []  # (one bad run does not cost the others)
                for index, record in enumerate(records):
                    assert isinstance(record, Mapping)
                    line = line_of(source, index)
                    try:
                        run = _trajectory(record, source, f"{stem}-{index + 1}", line=line)
                    except InputError as exc:
                        skipped.append(exc.located(source=source.name, lineno=line))
                        continue
                    yield ImportedRun(run)
                if skipped:
                    raise RecordsSkipped(skipped)
                return
            events = _events(records, source, prefix="", per_line=True)
            yield ImportedRun(_build({"id": stem}, events, source, line=None))
            return
        doc = source.document
        if isinstance(doc, list):
            events = _events(doc, source, prefix="")
            yield ImportedRun(_build({"id": stem}, events, source, line=None))
        else:
            assert isinstance(doc, Mapping)
            yield ImportedRun(_trajectory(doc, source, stem, line=None))


def _events(
    items: Sequence[Any],
    source: Source,
    *,
    prefix: str,
    per_line: bool = False,
    line: int | None = None,
) -> list[AgentEvent]:
    """Validate events one by one so an error names the event it is in.

    ``per_line``: each item is a line of a JSON Lines file, and an error names its
    line; otherwise the items are the list at ``prefix`` in a JSON document, and an
    error names the event's index as the record, or ``line`` when the document is
    a whole trajectory on one line of a JSON Lines file.
    """
    name = source.name
    if not items:
        raise InputError(
            "no events: the event list is empty", source=name, lineno=line, field=prefix or None
        )
    limit = max_event_bytes()
    events: list[AgentEvent] = []
    seen: dict[str, str] = {}
    for index, item in enumerate(items):
        lineno = line_of(source, index) if per_line else line
        rec = None if lineno is not None else index
        path = "" if per_line else join_path(prefix, index)
        if not isinstance(item, Mapping):
            raise InputError(
                f"expected an event object, got {type_name(item)}",
                source=name,
                record=rec,
                lineno=lineno,
                field=path or None,
            )
        data = dict(item)
        for key in _SIZED_FIELDS:
            if key in data:
                check_size(
                    data[key],
                    source=name,
                    record=rec,
                    lineno=lineno,
                    field=join_path(path, key),
                    limit=limit,
                )
        if isinstance(data.get("error"), str):  # the short form: just the message
            data["error"] = {"message": data["error"]}
        data.setdefault("id", f"e{index}")
        if data.get("step_index") is None:
            data["step_index"] = index
        try:
            event = AgentEvent.model_validate(data)
        except ValidationError as exc:
            raise from_validation_error(
                exc, source=name, record=rec, lineno=lineno, prefix=path
            ) from None
        if event.id in seen:
            raise InputError(
                f"duplicate event id {event.id!r} (also {seen[event.id]})",
                source=name,
                record=rec,
                lineno=lineno,
                field=join_path(path, "id"),
            )
        seen[event.id] = f"line {lineno}" if per_line else f"event {index}"
        events.append(event)
    return events


def _trajectory(
    doc: Mapping[str, Any], source: Source, default_id: str, *, line: int | None
) -> AgentTrajectory:
    """One trajectory: the file's one document, or a JSON Lines file's ``line``."""
    items = doc.get("events")
    if not isinstance(items, list):
        raise InputError(
            f"expected a list, got {type_name(items)}",
            source=source.name,
            lineno=line,
            field="events",
        )
    events = _events(items, source, prefix="events", line=line)
    header = {k: v for k, v in doc.items() if k != "events"}
    if not header.get("id"):
        header["id"] = default_id
    return _build(header, events, source, line=line)


def in_order(events: list[AgentEvent]) -> tuple[list[AgentEvent], str | None]:
    """The events in the order they happened, and a note when the file had them
    otherwise (logs merged from several workers, a list written backwards).

    By timestamp when every event has one (agentdebug's own exports are in
    timestamp order even where parallel branches interleave their steps); else by
    step when the steps go backwards. Both sorts are stable, so events of one
    moment or one step keep the file's order."""
    stamps = [e.timestamp for e in events if e.timestamp is not None]
    if len(stamps) == len(events):
        try:
            if any(b < a for a, b in pairwise(stamps)):
                order = sorted(range(len(events)), key=stamps.__getitem__)
                return [
                    events[i] for i in order
                ], "events sorted by timestamp: the file listed them out of order"
        except TypeError:  # times with and without a zone: no order to go by
            pass
        return events, None
    steps = [e.step_index for e in events]
    if any(b < a for a, b in pairwise(steps)):
        ordered = sorted(events, key=lambda e: e.step_index)
        return ordered, "events sorted by step: the file listed them out of order"
    return events, None


def _build(
    header: Mapping[str, Any], events: list[AgentEvent], source: Source, *, line: int | None
) -> AgentTrajectory:
    events, note = in_order(events)
    meta = header.get("metadata")
    if note is not None and (meta is None or isinstance(meta, Mapping)):
        header = {**header, "metadata": {**(meta or {}), "import_note": note}}
    try:
        return AgentTrajectory.model_validate({**header, "events": events})
    except ValidationError as exc:
        raise from_validation_error(exc, source=source.name, lineno=line) from None
