"""Reading a run a newer agentdebug wrote: the fields this one does not know are
left out, said once, rather than the whole run refused.

The schema refuses fields it does not know (``extra="forbid"``), so that a typo in
a recorded or imported run is an error rather than a value silently dropped. A
store, though, may be shared with a newer agentdebug, whose run headers and
events carry fields added since: refusing such a run ("field 'priority': Extra
inputs are not permitted") made it unreadable here for one field it could do
without. So a store's read path validates as always (a run this agentdebug wrote
costs nothing more) and only when that fails on unknown fields drops them,
validates again, and says which fields it left out (once per run and process).
Anything else wrong with the run still makes it damaged.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import orjson
from pydantic import ValidationError

from agentdebug.schema import AgentEvent, AgentTrajectory
from agentdebug.schema.trace import events_from_python

log = logging.getLogger("agentdebug.store")

_NOTED: set[tuple[str, str]] = set()  # (store, run) said already in this process
_NOTED_LOCK = threading.Lock()


def drop_unknown(doc: Any, error: ValidationError) -> list[str]:
    """Delete from ``doc`` (parsed JSON) every field ``error`` says is not allowed;
    their names, dotted, without list positions (empty: none was found)."""
    names: list[str] = []
    for problem in error.errors(include_url=False):
        if problem.get("type") != "extra_forbidden":
            continue
        loc = problem.get("loc", ())
        target = doc
        try:
            for part in loc[:-1]:
                target = target[part]
        except (KeyError, IndexError, TypeError):
            continue
        if loc and isinstance(target, dict) and loc[-1] in target:
            del target[loc[-1]]
            names.append(".".join(str(p) for p in loc if not isinstance(p, int)))
    return names


def events_without_unknown(
    docs: bytes | list[Any], error: ValidationError, unknown: set[str]
) -> list[AgentEvent]:
    """Events from ``docs`` (a JSON array, or the parsed list) that failed to
    validate with ``error``: with the fields it names as unknown dropped (their
    names added to ``unknown``), validated again. Raises ``error`` when none was
    unknown, or the next ValidationError when something else is wrong too."""
    if not any(p.get("type") == "extra_forbidden" for p in error.errors(include_url=False)):
        raise error  # (not JSON, a wrong value: damaged, as it says)
    parsed = orjson.loads(docs) if isinstance(docs, bytes) else docs
    names = drop_unknown(parsed, error)
    if not names:
        raise error
    unknown.update(f"event.{name}" for name in names)
    return events_from_python(parsed)


def header_without_unknown(head: dict[str, Any], unknown: set[str]) -> AgentTrajectory:
    """``AgentTrajectory.model_validate(head)``, with the header's unknown fields
    dropped (their names added to ``unknown``) when those are what it refuses."""
    try:
        return AgentTrajectory.model_validate(head)
    except ValidationError as exc:
        names = drop_unknown(head, exc)
        if not names:
            raise
        unknown.update(names)
    return AgentTrajectory.model_validate(head)


def note_unknown(location: str, run_id: str, unknown: set[str]) -> None:
    """Say (once per run and process) which fields of a stored run were left out."""
    if not unknown:
        return
    with _NOTED_LOCK:
        if (location, run_id) in _NOTED:
            return
        _NOTED.add((location, run_id))
    log.warning(
        "agentdebug: run %s in %s holds fields this agentdebug does not know: %s "
        "(written by a newer agentdebug?); read without them",
        run_id,
        location,
        ", ".join(sorted(unknown)),
    )
