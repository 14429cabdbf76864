"""What capture's writer does when the store does not take its writes, so that
the agent neither waits for the store nor loses a run without a word.

- **Read-only** (the store said so at open, its ``read_only``, or a write raised
  ``StoreReadOnly``): no write can succeed, so none is tried; said once per store
  (and process), and every run is kept in memory, where ``analyze`` reads it.
- **Locked** (``StoreLocked``: another connection holds SQLite's write lock, as a
  backup, ``agentdebug prune --vacuum`` or a ``sqlite3`` shell may for minutes,
  or another process a JSON Lines file's lock): the write is tried again on the
  store thread until the lock is let go; the events of the runs behind it wait
  in memory, in order, and are written then.
- **Anything else**: tried again for a moment (``RETRY_DELAYS``), then that run
  is kept in memory only, said once.

The agent's own waits are bounded. The end of a run (any flush) waits while the
store takes writes, but gives up once it has taken none for ``END_WAIT``
seconds, saying once that the store is stuck (locked, when the store can tell)
and that the events stay queued; until the store has caught up, later runs do
not wait at all. Closing the writer (the process's exit, ``AgentDebug.close``)
waits ``EXIT_WAIT`` seconds the same way, then says which runs were not written.
Before, each write waited out the store's own lock timeout (30 s for SQLite) five
times, the end of the run waiting for all of it, and then the run was dropped
from the store.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from agentdebug.store.base import StoreLocked, StoreReadOnly

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

log = logging.getLogger("agentdebug.capture")

END_WAIT = 5.0  # seconds a run's end waits for a store that takes no write
EXIT_WAIT = 10.0  # the same, when the writer closes (the process's exit)
LOCK_PAUSE = 0.5  # between tries of a write another connection's lock kept out
RETRY_DELAYS = (0.05, 0.1, 0.2, 0.4)  # tries of a write that failed otherwise
GAVE_UP = "the store took no write before the debugger closed"

_READ_ONLY_SAID: set[str] = set()  # stores said to be read-only, in this process
_SAID_LOCK = threading.Lock()


def _kind(exc: BaseException, ours: type[Exception], codes: tuple[int, ...]) -> bool:
    """Whether ``exc`` (or what caused it) is ``ours``, or a SQLite error with one
    of these primary result ``codes`` (a store of one's own on SQLite)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ours):
            return True
        if isinstance(cause, sqlite3.OperationalError):
            code = getattr(cause, "sqlite_errorcode", None)
            return isinstance(code, int) and code & 0xFF in codes
        cause = cause.__cause__
    return False


def locked(exc: BaseException) -> bool:
    """Whether a failed write was kept out by another connection's lock, so that
    the same write may succeed later."""
    return _kind(exc, StoreLocked, (5, 6))  # SQLITE_BUSY, SQLITE_LOCKED


def read_only(exc: BaseException) -> bool:
    """Whether a failed write can never succeed here."""
    return _kind(exc, StoreReadOnly, (8,))  # SQLITE_READONLY


def locked_now(store: Any) -> bool:
    """Whether another connection holds ``store``'s write lock now (SQLite, JSON
    Lines: a write would wait for it); False when the store cannot tell."""
    probe = getattr(store, "write_locked", None)
    try:
        return bool(probe()) if callable(probe) else False
    except Exception:
        return False


def _runs(ids: Iterable[str]) -> str:
    shown = list(dict.fromkeys(ids))
    if not shown:
        return "no run"
    more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
    return f"run{'s' if len(shown) > 1 else ''} {', '.join(shown[:5])}{more}"


class StoreHealth:
    """Whether a writer's store takes writes, and what has been said about it."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.location = str(getattr(store, "location", store))
        self.read_only: str | None = None  # why no write can succeed here
        self.progress = time.monotonic()  # when the store last finished a write
        self.stalled = False  # a wait gave up, or a lock was met: until caught up
        self.said = False  # the stall was said
        self.given_up = False  # the writer closed with the store stuck: writes spill
        why = getattr(store, "read_only", None)
        if why:
            self.refuse(str(why))

    # -- states ---------------------------------------------------------------

    def refuse(self, why: str) -> None:
        """No write can succeed (read-only): said once per store and process."""
        self.read_only = why
        with _SAID_LOCK:
            if self.location in _READ_ONLY_SAID:
                return
            _READ_ONLY_SAID.add(self.location)
        log.warning(
            "agentdebug: the store at %s cannot be written here (%s); runs are kept in "
            "memory only (analyze works), nothing is saved to it",
            self.location,
            why,
        )

    def stall(
        self, run_id: str | None, error: BaseException | None = None, waited: float = END_WAIT
    ) -> None:
        """The store takes no write (a wait for it gave up, or a write met a lock):
        later waits do not wait; said once, until the store has caught up."""
        self.stalled = True
        if self.said:
            return
        self.said = True
        who = f"run {run_id}" if run_id else "the agent"
        if error is not None or self._locked_now():
            why = f" ({error})" if error is not None else ""
            log.warning(
                "agentdebug: the store at %s is locked by another connection%s (a backup, "
                "agentdebug prune --vacuum, a sqlite3 shell?); %s goes on without waiting: "
                "its events stay queued in memory and are written when the lock goes",
                self.location,
                why,
                who,
            )
            return
        log.warning(
            "agentdebug: the store at %s has taken no write for %.0f s (another connection "
            "holding its lock?); %s goes on without waiting: its events stay queued in "
            "memory and are written when the store takes writes again",
            self.location,
            waited,
            who,
        )

    def _locked_now(self) -> bool:
        return locked_now(self.store)

    def progressed(self, caught_up: bool) -> None:
        """The store thread finished a write (``caught_up``: nothing else waits)."""
        self.progress = time.monotonic()
        if caught_up and self.stalled:
            self.stalled = self.said = False
            log.info(
                "agentdebug: the store at %s takes writes again; the runs that waited "
                "for it are written",
                self.location,
            )

    def left(self, since: float, limit: float) -> float:
        """Of a wait since ``since`` for at most ``limit`` seconds without a write
        done, the seconds left (none left: 0 or less)."""
        return limit - (time.monotonic() - max(since, self.progress))

    def give_up(self, waited: float, run_ids: Iterable[str]) -> None:
        """The writer closes with the store still stuck: what waits is not written."""
        self.given_up = True
        why = (
            "is still locked by another connection"
            if self._locked_now()
            else f"has taken no write for {waited:.0f} s"
        )
        log.error(
            "agentdebug: the store at %s %s as the debugger closes; the events of %s "
            "that waited for it were not written: kept in memory only, lost when this "
            "process exits",
            self.location,
            why,
            _runs(run_ids),
        )

    # -- a store call ---------------------------------------------------------

    def guard(
        self, session: TraceSession, action: Callable[[], None], *, waits_out_locks: bool
    ) -> bool:
        """Run a store call for ``session``'s run; False when it was not done (the
        caller keeps its rows in the session's spill). A write a lock kept out is
        tried again until the lock goes when ``waits_out_locks`` (the store
        thread); any other failure a moment (another process may hold the store),
        then the session's store is given up for good, said once."""
        if session.store_failed:
            return False
        if self.read_only is not None:
            session.store_failed, session.store_error = True, self.read_only
            return False
        delays = iter(RETRY_DELAYS)
        while True:
            if self.given_up:  # (said, with every run left waiting)
                session.store_failed, session.store_error = True, GAVE_UP
                return False
            try:
                action()
                self.progress = time.monotonic()
                return True
            except Exception as exc:
                if read_only(exc):
                    self.refuse(str(exc))
                    return self.guard(session, action, waits_out_locks=waits_out_locks)
                if waits_out_locks and not self.given_up and locked(exc):
                    self.stall(session.id, exc)
                    time.sleep(LOCK_PAUSE)
                    continue
                delay = next(delays, None)
                if delay is not None:
                    time.sleep(delay)
                    continue
                session.store_failed = True
                session.store_error = f"{type(exc).__name__}: {exc}"
                log.error(
                    "agentdebug: the store at %s failed (%s); run %s is kept in memory only",
                    self.location,
                    exc,
                    session.id,
                )
                return False
