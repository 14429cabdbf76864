"""Which session is current: the one ``agentdebug.record`` and
``agentdebug.current_session()`` use.

It is a context variable, set by ``with dbg.trace()``: each thread and asyncio task
sees its own. Two things make a context variable say more than it should or less:

- A generator shares the context of whoever drives it, so a ``with`` inside a
  streaming generator sets the variable in its caller's context, and generators
  that end out of order reset it to a run that has already ended. A run that has
  ended is never current: the nearest enclosing run still open is (the one that was
  current when it began), else none. Nothing recorded outside any live run is
  appended to an ended one.
- A thread does not inherit its creator's context (a ``ThreadPoolExecutor``,
  ``loop.run_in_executor``, ``threading.Thread``), so ``agentdebug.record`` there
  finds no session and records nothing. That is said once per process, with the
  fix, when a run is open on another thread at the time (a guess at which run the
  thread's work belongs to could file it under another request's run).

``current_session`` is on the path of every ``agentdebug.record``: what it does
beyond reading the variable happens only when no live session is current.
"""

from __future__ import annotations

import logging
import threading
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

log = logging.getLogger("agentdebug.capture")

_current: ContextVar[TraceSession | None] = ContextVar("agentdebug_session", default=None)

# runs entered with ``with`` and not yet exited: id(session) -> (thread ident, run id)
_live: dict[int, tuple[int, str]] = {}
_warned = False  # the thread warning is said once per process


def current_session() -> TraceSession | None:
    """The session recording in this thread or task, if any (never one that has ended)."""
    session = _current.get()
    if session is not None and session.ended_at is None:
        return session
    return _fallback(session)


def live_current() -> TraceSession | None:
    """The live session of this context, if any, without :func:`current_session`'s
    warning about other threads (for a run deciding whether it is a sub-run)."""
    return _live_outer(_current.get())


def _fallback(session: TraceSession | None) -> TraceSession | None:
    """No live session in this context: the nearest live one that encloses an
    ended one, else None (said once, when a run is open on another thread)."""
    live = _live_outer(session)
    if live is None and _live:
        _warn_other_thread()
    return live


def _live_outer(session: TraceSession | None) -> TraceSession | None:
    seen = 0
    while session is not None and session.ended_at is not None and seen < 1000:
        session, seen = session._outer, seen + 1
    return session if session is not None and session.ended_at is None else None


def _warn_other_thread() -> None:
    global _warned
    if _warned:
        return
    here = threading.get_ident()
    for ident, run_id in list(_live.values()):
        if ident != here:
            _warned = True
            log.warning(
                "agentdebug: no run is current in thread %r while run %s is being recorded "
                "in another thread: agentdebug.record here records nothing (a thread does "
                "not inherit its creator's context variables). Run the work in the run's "
                "context, pool.submit(contextvars.copy_context().run, fn, *args) "
                "(asyncio.to_thread does this), or pass the session and call "
                "session.record(...). (Said once per process.)",
                threading.current_thread().name,
                run_id,
            )
            return


def enter(session: TraceSession) -> Token[TraceSession | None]:
    """Make ``session`` current (``with dbg.trace()``), remembering the run it encloses."""
    session._outer = _live_outer(_current.get())
    _live[id(session)] = (threading.get_ident(), session.id)
    return _current.set(session)


def leave(session: TraceSession, token: Token[TraceSession | None] | None) -> None:
    """Undo :func:`enter`. Where runs ended out of order (generators), the variable
    is left at the nearest live run, never at one that has ended."""
    _live.pop(id(session), None)
    if token is not None:
        try:
            _current.reset(token)
        except ValueError:  # exited in another context (threads, generators)
            _current.set(None)
    now = _current.get()
    if now is not None and now.ended_at is not None:
        _current.set(_live_outer(now))


def forget(session: TraceSession) -> None:
    """``session`` has ended (``close()`` without the ``with`` block's end)."""
    _live.pop(id(session), None)
