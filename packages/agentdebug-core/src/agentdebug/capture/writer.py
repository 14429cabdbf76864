"""The background writer: takes events off the agent's hot path and into the store.

``record`` only appends a tuple to a deque. A daemon thread wakes every
``interval`` seconds, turns the queued tuples into JSON rows and writes them in one
transaction per run, so a process killed mid-run keeps everything up to the last
flush. A store that fails is logged once and the rows are kept in memory (the
session's spill) so the run can still be analysed; the agent is never interrupted.
"""

from __future__ import annotations

import atexit
import logging
import threading
import traceback
import weakref
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel

from agentdebug.gcutil import gc_paused
from agentdebug.limits import max_event_bytes
from agentdebug.schema import AgentTrajectory, ErrorInfo, Outcome
from agentdebug.store.base import EventRow, TraceStore

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

log = logging.getLogger("agentdebug.capture")

CHUNK = 4096
_HEAD_BYTES = 64 * 1024

# Slots of a queued event tuple, in order (see TraceSession.record).
(
    _SESSION,
    _SEQ,
    _TYPE,
    _AGENT,
    _STEP,
    _INPUT,
    _OUTPUT,
    _ERROR,
    _MODULE,
    _PARENT,
    _DURATION,
    _METADATA,
    _EXTRA,
    _EVENT_ID,
    _TS,
) = range(15)


def _to_jsonable(value: Any) -> Any:
    """orjson's fallback for objects it does not know: pydantic models, sets, the rest as repr."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, BaseException):
        return error_dict(value)
    return repr(value)


def dumps(value: Any) -> bytes:
    return orjson.dumps(value, default=_to_jsonable, option=orjson.OPT_NON_STR_KEYS)


def error_dict(error: Any) -> dict[str, Any]:
    if isinstance(error, BaseException):
        out: dict[str, Any] = {
            "message": str(error) or type(error).__name__,
            "type": type(error).__name__,
        }
        if error.__traceback__ is not None:
            out["traceback"] = "".join(
                traceback.format_exception(type(error), error, error.__traceback__)
            )
        return out
    if isinstance(error, ErrorInfo):
        return error.model_dump(exclude_none=True)
    if isinstance(error, dict):
        return {
            "message": str(error.get("message", error)),
            **{k: str(v) for k, v in error.items() if k in ("type", "traceback") and v is not None},
        }
    return {"message": str(error)}


def _truncated(value: Any, size: int, head: int) -> dict[str, Any]:
    text = value if isinstance(value, str) else dumps(value).decode("utf-8", errors="replace")
    return {"truncated": True, "original_bytes": size, "head": text[:head]}


def event_json(item: tuple[Any, ...], limit: int) -> bytes:
    """The JSON document, shaped like AgentEvent, for one queued tuple."""
    event_id = item[_EVENT_ID] or f"e{item[_SEQ]}"
    doc: dict[str, Any] = {"id": event_id, "type": item[_TYPE], "step_index": item[_STEP]}
    if item[_AGENT] is not None:
        doc["agent_name"] = item[_AGENT]
    if item[_MODULE] is not None:
        doc["module"] = item[_MODULE]
    if item[_PARENT] is not None:
        doc["parent_id"] = item[_PARENT]
    doc["timestamp"] = item[_TS]
    if item[_DURATION] is not None:
        doc["duration_ms"] = item[_DURATION]
    if item[_INPUT] is not None:
        doc["input"] = item[_INPUT]
    if item[_OUTPUT] is not None:
        doc["output"] = item[_OUTPUT]
    if item[_ERROR] is not None:
        doc["error"] = error_dict(item[_ERROR])
    if item[_METADATA]:
        doc["metadata"] = item[_METADATA]
    if item[_EXTRA]:
        doc.update(item[_EXTRA])
    data = dumps(doc)
    if len(data) > limit:
        notes = dict(doc.get("metadata") or {})
        for key in ("input", "output"):
            if key in doc:
                size = len(dumps(doc[key]))
                if size > limit // 4:
                    doc[key] = _truncated(doc[key], size, min(_HEAD_BYTES, limit // 8))
                    notes[f"{key}_truncated_bytes"] = size
        doc["metadata"] = notes
        data = dumps(doc)
        if len(data) > limit:  # the bulk is somewhere else (metadata): keep the core only
            keep: dict[str, Any] = {
                k: doc[k]
                for k in ("id", "type", "step_index", "agent_name", "timestamp")
                if k in doc
            }
            keep["metadata"] = {"truncated": True, "original_bytes": len(data)}
            data = dumps(keep)
        log.warning("event %s exceeded %d bytes and was truncated", event_id, limit)
    return data


def _fallback_json(item: tuple[Any, ...], exc: Exception) -> bytes:
    log.warning("agentdebug: event %s could not be serialised: %s", item[_SEQ], exc)
    event_id = item[_EVENT_ID] or f"e{item[_SEQ]}"
    doc = {
        "id": event_id,
        "type": item[_TYPE],
        "step_index": item[_STEP],
        "agent_name": item[_AGENT],
        "timestamp": item[_TS],
        "metadata": {"serialisation_error": str(exc)},
    }
    return dumps(doc)


class BackgroundWriter:
    """One writer thread per store; sessions share it."""

    def __init__(self, store: TraceStore, *, interval: float = 0.1) -> None:
        self.store = store
        self.interval = interval
        self.queue: deque[tuple[Any, ...]] = deque()
        self._control: deque[tuple[str, Any]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = False
        self._limit = max_event_bytes()
        self._thread = threading.Thread(target=self._loop, name="agentdebug-writer", daemon=True)
        self._thread.start()
        atexit.register(_flush_at_exit, weakref.ref(self))

    # -- control messages keep their order relative to events through the lock --

    def begin(self, session: TraceSession, header: AgentTrajectory) -> None:
        self._submit_control(session, lambda: self.store.begin_run(header))

    def finish(self, session: TraceSession, outcome: Outcome, ended_at: datetime) -> None:
        self._submit_control(session, lambda: self.store.finish_run(session.id, outcome, ended_at))

    def _submit_control(self, session: TraceSession, action: Callable[[], None]) -> None:
        with self._lock:
            self._drain_locked()
            self._guard(session, action)

    def _guard(self, session: TraceSession, action: Callable[[], None]) -> bool:
        if session.store_failed:
            return False
        try:
            action()
            return True
        except Exception as exc:  # a broken store must not break the agent
            session.store_failed = True
            session.store_error = f"{type(exc).__name__}: {exc}"
            log.error(
                "agentdebug: the store at %s failed (%s); run %s is kept in memory only",
                self.store.location,
                exc,
                session.id,
            )
            return False

    # -- the drain ---------------------------------------------------------------

    def flush(self) -> None:
        with self._lock:
            self._drain_locked()

    def _drain_locked(self) -> None:
        """Write what is queued, at most ``CHUNK`` events per transaction, so that
        the rows being built stay few and the memory they use is reused."""
        queue = self.queue
        limit = self._limit
        while queue:
            batches: dict[int, tuple[TraceSession, list[EventRow]]] = {}
            with gc_paused():
                for _ in range(CHUNK):
                    try:
                        item = queue.popleft()
                    except IndexError:
                        break
                    session = item[_SESSION]
                    try:
                        data = event_json(item, limit)
                    except Exception as exc:  # an unserialisable value: keep the event, say why
                        data = _fallback_json(item, exc)
                    row = EventRow(item[_SEQ], item[_AGENT], data)
                    batch = batches.get(id(session))
                    if batch is None:
                        batches[id(session)] = (session, [row])
                    else:
                        batch[1].append(row)
            for session, rows in batches.values():
                if session.store_failed or not self._guard(
                    session,
                    lambda s=session, r=rows: self.store.append_events(s.id, r),  # type: ignore[misc]
                ):
                    session.spill.extend(rows)

    def _loop(self) -> None:
        while not self._stopped:
            self._wake.wait(self.interval)
            self._wake.clear()
            if self.queue:
                try:
                    self.flush()
                except Exception:  # the thread must survive anything
                    log.exception("agentdebug writer failed")

    def close(self) -> None:
        self.flush()
        self._stopped = True
        self._wake.set()
        self._thread.join(timeout=5)


def _flush_at_exit(ref: weakref.ref[BackgroundWriter]) -> None:
    writer = ref()
    if writer is not None:
        try:
            writer.flush()
        except Exception:
            log.exception("agentdebug: final flush failed")
