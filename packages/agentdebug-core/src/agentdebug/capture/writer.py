"""The background writer: takes events off the agent's hot path and into the store.

``record`` only appends a tuple to a deque; so do the start and the end of a run
(as control items, so they keep their order among the events). A daemon thread
wakes every ``interval`` seconds, turns the queued tuples into JSON rows and
writes them in one transaction per run and chunk, so a process killed mid-run
keeps everything up to the last flush. A store that fails is retried a few times
(another process may hold the database for a moment); if it keeps failing, that
is logged once and the run's rows are kept in memory (the session's spill) so it
can still be analysed. The agent is never interrupted.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentdebug.capture.encode import AGENT, EVENT_ID, SEQ, SESSION, event_id, event_json
from agentdebug.gcutil import gc_paused
from agentdebug.limits import max_event_bytes
from agentdebug.store.base import EventRow, TraceStore

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

log = logging.getLogger("agentdebug.capture")

CHUNK = 4096
RETRY_DELAYS = (0.05, 0.1, 0.2, 0.4)
_CONTROL = object()  # first slot of a queued start/end of a run


class BackgroundWriter:
    """One writer thread per store; sessions share it."""

    def __init__(self, store: TraceStore, *, interval: float = 0.1) -> None:
        self.store = store
        self.interval = interval
        self.queue: deque[tuple[Any, ...]] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = False
        self._limit = max_event_bytes()
        self._thread = threading.Thread(target=self._loop, name="agentdebug-writer", daemon=True)
        self._thread.start()
        atexit.register(_flush_at_exit, weakref.ref(self))

    def control(self, session: TraceSession, action: Callable[[], None]) -> None:
        """Queue a store call (a run's start or end) in order with the events."""
        self.queue.append((_CONTROL, session, action))

    # -- the drain -----------------------------------------------------------------

    def flush(self) -> None:
        with self._lock:
            self._drain_locked()

    def _drain_locked(self) -> None:
        """Write what is queued, at most ``CHUNK`` events per transaction, so that
        the rows being built stay few and the memory they use is reused."""
        queue = self.queue
        while queue:
            batches: dict[int, tuple[TraceSession, list[EventRow]]] = {}
            pending: tuple[Any, ...] | None = None
            with gc_paused():
                for _ in range(CHUNK):
                    try:
                        item = queue.popleft()
                    except IndexError:
                        break
                    if item[0] is _CONTROL:
                        pending = item
                        break
                    self._add(batches, item)
            self._write(batches)
            if pending is not None:
                self._guard(pending[1], pending[2])

    def _add(
        self, batches: dict[int, tuple[TraceSession, list[EventRow]]], item: tuple[Any, ...]
    ) -> None:
        session = item[SESSION]
        given = None
        if item[EVENT_ID] is not None:  # a caller's id: unique within the run
            given = event_id(item)
            if given in session.user_ids:
                given = f"{given}#{item[SEQ]}"
            session.user_ids.add(given)
        data = event_json(item, self._limit, given)
        row = EventRow(item[SEQ], item[AGENT] if isinstance(item[AGENT], str) else None, data)
        batch = batches.get(id(session))
        if batch is None:
            batches[id(session)] = (session, [row])
        else:
            batch[1].append(row)

    def _write(self, batches: dict[int, tuple[TraceSession, list[EventRow]]]) -> None:
        for session, rows in batches.values():
            if session.store_failed or not self._guard(
                session,
                lambda s=session, r=rows: self.store.append_events(s.id, r),  # type: ignore[misc]
            ):
                session.spill.extend(rows)

    def _guard(self, session: TraceSession, action: Callable[[], None]) -> bool:
        """Run a store call; retry a moment if it fails, then give up on this
        session's store for good (logged once) rather than break the agent."""
        if session.store_failed:
            return False
        for delay in (*RETRY_DELAYS, None):
            try:
                action()
                return True
            except Exception as exc:
                if delay is not None:
                    time.sleep(delay)
                    continue
                session.store_failed = True
                session.store_error = f"{type(exc).__name__}: {exc}"
                log.error(
                    "agentdebug: the store at %s failed (%s); run %s is kept in memory only",
                    self.store.location,
                    exc,
                    session.id,
                )
        return False

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
