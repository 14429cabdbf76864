"""The hot path framework integrations record through: ``TraceSession.emitter``.

``record`` checks and coerces every field because a user's agent calls it; an
integration that builds its events itself knows their types, and on a graph's
thread those checks cost as much as the rest. So it records documents it builds,
through a function bound once to the session's state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from agentdebug.capture.encode import NON_STR_KEYS, Walk, clean_text, distinct_keys, to_json
from agentdebug.schema import EventType

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

log = logging.getLogger("agentdebug.capture")

_FINAL = EventType.FINAL_ANSWER
_LOOK = 255  # as record: look at the writer's backlog every 256 events
_now = time.time


class Emit(Protocol):
    """What :meth:`TraceSession.emitter` returns: records one event, returns its id."""

    def __call__(self, doc: dict[str, Any], agent_name: str) -> str | None: ...


def _through(value: Any, default: Any) -> Any:
    """A payload as ``default`` makes it JSON (keys that are not strings made
    strings), for ``record`` to take; as it is if it has no JSON form at all."""
    if value is None or default is to_json:
        return value
    value = distinct_keys(value, Walk())  # ({1: "a", "1": "b"}: JSON would keep one)
    try:
        return orjson.loads(orjson.dumps(value, default=default, option=NON_STR_KEYS))
    except Exception:
        pass
    try:  # text UTF-8 cannot hold, in the value or in what ``default`` makes of it
        cleaned = clean_text(value)
        return orjson.loads(
            orjson.dumps(cleaned, default=lambda v: clean_text(default(v)), option=NON_STR_KEYS)
        )
    except Exception:
        return value


def emitter(session: TraceSession, default: Callable[[Any], Any] = to_json) -> Emit:
    """A function ``emit(doc, agent_name)`` that records one event into
    ``session`` and returns its id: :meth:`TraceSession.record` for a framework
    integration on the agent's hot path.

    ``doc`` is the event's document, built by the caller, whose values are
    already of the right types: ``type`` (an EventType), ``step_index`` (an
    ``int`` at least 0), ``agent_name``, and any other AgentEvent fields
    (``module``, ``parent_id``, ``duration_ms`` finite and at least 0,
    ``input``, ``output``, ``metadata``, ``checkpoint``), with ``"id"`` and
    ``"timestamp"`` keys (any value) where they should sit in the JSON:
    ``emit`` fills them in. Nothing is checked or coerced (a graph step
    records several events, and the checks cost as much as the rest), no
    error goes with it (use ``record``), and the event is encoded at once, as
    ``record`` encodes one with payloads; ``default`` is orjson's hook for the
    objects it does not know (the framework's own payload types). An event
    that does not go through (a payload without a JSON form, an event over the
    size limit) is handed to ``record``. Never raises.

    A function bound once to the session's state (an integration holds it for
    the run), taking a document rather than fields, so that a caller that knows
    its event's shape builds it in one step: on a graph's thread every bytecode
    counts. It holds the session, not the reverse."""
    next_seq = session._counter.__next__
    sink, key, limit = session._sink, session._key, session._limit
    dumps = orjson.dumps

    def emit(doc: dict[str, Any], agent_name: str) -> str | None:
        try:
            seq = next_seq()
            step = doc["step_index"]
            if step > session._last_step:
                session._last_step = step
            eid = doc["id"] = f"e{seq}"
            doc["timestamp"] = _now()
            try:  # (a copy: orjson's bytes keep the 4 KiB it wrote them into)
                data = memoryview(dumps(doc, default)).tobytes()
            except Exception:  # no JSON form, or keys to coerce: the careful path
                pass
            else:
                if len(data) <= limit and doc["type"] is not _FINAL:
                    if not session._anchored:  # just before queueing: see TraceSession._key
                        session._anchor()
                    sink((key, seq, data, agent_name))
                    if not seq & _LOOK:
                        session._keep_up()
                    return eid
            return session.record(
                doc["type"],
                agent_name=agent_name,
                step_index=step,
                parent_id=doc.get("parent_id"),
                module=doc.get("module"),
                duration_ms=doc.get("duration_ms"),
                input=_through(doc.get("input"), default),
                output=_through(doc.get("output"), default),
                metadata=doc.get("metadata"),
                checkpoint=doc.get("checkpoint"),
            )
        except Exception:
            log.exception("agentdebug: an event could not be recorded")
            return None

    return emit
