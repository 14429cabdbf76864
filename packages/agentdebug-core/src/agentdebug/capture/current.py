"""Which session is current: the one ``agentdebug.record`` and
``agentdebug.current_session()`` use.

It is a context variable, set by ``with dbg.trace()``: each thread and asyncio task
sees its own. Two things make a context variable say more than it should or less:

- A generator shares the context of whoever drives it, so a ``with`` inside a
  streaming generator sets the variable in its caller's context, and generators
  that end out of order reset it to a run that has already ended. A run that has
  ended is never current: the nearest enclosing run still open is (the one that was
  current when it began), else none. Nothing recorded outside any live run is
  appended to an ended one. Nor is a run a generator's ``with`` began current
  while that generator waits at a ``yield``: its frame is then off the stack
  (``f_back`` is None), so the code driving it sees the run it would see without
  the generator, and a second stream it starts is not the first one's sub-run.
  Not so for a generator that ``contextlib`` or pytest drives (a
  ``@contextmanager`` helper around ``dbg.trace()``, a yield fixture): its
  ``yield`` hands the ``with`` body to its caller, whose code is inside the run
  (also an ``@asynccontextmanager``'s, and an async fixture's of pytest-asyncio or
  anyio). An async generator's frame is off the stack at every ``await`` as well,
  while the work it awaits runs in its name (its tasks record into its run), so its
  frame's last instruction tells the two apart: a wait at an ``await`` follows a
  ``SEND``; a ``yield`` hands its value up without one.
- A thread does not inherit its creator's context (a ``ThreadPoolExecutor``,
  ``loop.run_in_executor``, ``threading.Thread``), so ``agentdebug.record`` there
  finds no session and records nothing. That is said once per process, with the
  fix, when a run is open on another thread at the time (a guess at which run the
  thread's work belongs to could file it under another request's run).

A framework integration may also keep a run current that no ``with`` entered: the
LangGraph plugin's graph run, inside one of its nodes, found from LangChain's own
context variable (:func:`register_finder`). Inside a node, ``agentdebug.record``
then records into the graph's run, with the node's agent, step and start event as
the fields it leaves out, and a ``dbg.trace()`` begun there is the graph run's
sub-run. Of a run entered with ``with`` and a framework's, the one begun inside the
other is current.

``current_session`` is on the path of every ``agentdebug.record``: what it does
beyond reading the variable, one attribute and the registered finders happens only
when no live session is current, or when the current one was begun in a generator.
"""

from __future__ import annotations

import dis
import inspect
import logging
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

log = logging.getLogger("agentdebug.capture")

_current: ContextVar[TraceSession | None] = ContextVar("agentdebug_session", default=None)

# runs entered with ``with`` and not yet exited: id(session) -> (thread ident, run id)
_live: dict[int, tuple[int, str]] = {}
_warned = False  # the thread warning is said once per process
# drivers whose generator's yield hands its `with` body to the caller (see above)
_WITH_DRIVERS = ("contextlib", "_pytest.", "pytest_asyncio", "anyio.")
_GENERATORS = inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR
# async generator code -> the offsets where its frame waits at an ``await``
_AWAITS: dict[CodeType, frozenset[int] | None] = {}
_AWAITS_KEPT = 1024
_UNREAD = frozenset({-1})  # (not read yet)
_unreadable_said = False  # (said once per process)


#: A framework's current run: the session and the fields an event recorded there
#: has unless given (``agent_name``, ``step_index``, ``parent_id``), or None.
Finder = Callable[[], "tuple[TraceSession, Mapping[str, Any]] | None"]
_finders: list[Finder] = []


# set while a framework integration begins a run of its own inside a run of the
# same framework's that already records it (a LangGraph graph invoked in a node of a
# recorded graph is recorded there, as a subgraph): no framework run is current
_FRAMEWORK_OFF: ContextVar[bool] = ContextVar("agentdebug_framework_runs_off", default=False)


@contextmanager
def framework_runs_ignored() -> Iterator[None]:
    """Within the block, only runs entered with ``with`` are current (see
    :data:`_FRAMEWORK_OFF`)."""
    token = _FRAMEWORK_OFF.set(True)
    try:
        yield
    finally:
        _FRAMEWORK_OFF.reset(token)


def register_finder(finder: Finder) -> None:
    """Add a way to find a run a framework keeps current without a ``with`` (the
    LangGraph plugin's, inside a node). ``finder`` is called on every
    :func:`current_session`, so it must be cheap, and it must not raise (an
    exception is logged and taken for None)."""
    if finder not in _finders:
        _finders.append(finder)


def current_session() -> TraceSession | None:
    """The session recording in this thread or task, if any (never one that has ended)."""
    found = current_run()
    return found[0] if found is not None else None


def current_run() -> tuple[TraceSession, Mapping[str, Any]] | None:
    """The session ``agentdebug.record`` records into here, and the fields its
    events have unless given (none for a run entered with ``with``; a LangGraph
    node's agent, step and start event for the graph's run); None outside any run
    (said once, when a run is open on another thread)."""
    found = _innermost()
    if found is None and _live:
        _warn_other_thread()
    return found


def live_current() -> TraceSession | None:
    """The live session of this context, if any, without :func:`current_session`'s
    warning about other threads."""
    found = _innermost()
    return found[0] if found is not None else None


def live_run() -> tuple[TraceSession, Mapping[str, Any]] | None:
    """:func:`current_run` without its warning about other threads (for a run
    deciding whether it is a sub-run, and where in the outer run it was begun)."""
    return _innermost()


def _innermost() -> tuple[TraceSession, Mapping[str, Any]] | None:
    """Of the run entered with ``with`` and a framework's, the one begun inside the
    other (a graph invoked inside a traced request; a ``dbg.trace()`` in a node)."""
    session = _current.get()
    if session is not None and session.ended_at is None:
        frame = session._generator
        if frame is not None and frame.f_back is None and _at_yield(frame):  # (see _active)
            session = _live_outer(session)
    else:
        session = _live_outer(session)
    framework = _framework_run() if _finders and not _FRAMEWORK_OFF.get() else None
    if framework is None:
        return (session, session._defaults) if session is not None else None
    if session is None or not _began_within(session, framework[0]):
        return framework
    return session, session._defaults


def _framework_run() -> tuple[TraceSession, Mapping[str, Any]] | None:
    for finder in _finders:
        try:
            found = finder()
        except Exception:
            log.exception("agentdebug: a framework's current run could not be found")
            continue
        if found is not None and found[0].ended_at is None:
            return found
    return None


def _began_within(session: TraceSession, other: TraceSession) -> bool:
    """Whether ``session`` was begun inside ``other`` (is in its chain of runs)."""
    seen = 0
    walk: TraceSession | None = session
    while walk is not None and seen < 1000:
        if walk is other:
            return True
        walk, seen = walk._outer, seen + 1
    return False


def _live_outer(session: TraceSession | None) -> TraceSession | None:
    """``session``, else the nearest run it was begun within, that is open and not
    a waiting generator's."""
    seen = 0
    while session is not None and not _active(session) and seen < 1000:
        session, seen = session._outer, seen + 1
    return session if session is not None and _active(session) else None


def _active(session: TraceSession) -> bool:
    """Open, and not begun by a generator that is waiting at a ``yield`` (its
    frame is then linked to no caller; an async generator's is at every ``await``
    too, where the work it awaits runs in its name)."""
    frame = session._generator
    return session.ended_at is None and (
        frame is None or frame.f_back is not None or not _at_yield(frame)
    )


def _at_yield(frame: FrameType) -> bool:
    """A generator frame that is not running waits at a ``yield``: a plain
    generator's always; an async generator's unless it waits at an ``await`` (its
    last instruction hands up what ``SEND`` got from the awaited object)."""
    code = frame.f_code
    if not code.co_flags & inspect.CO_ASYNC_GENERATOR:
        return True
    awaits = _AWAITS.get(code, _UNREAD)
    if awaits is _UNREAD:  # (one read: another thread may clear the cache meanwhile)
        if len(_AWAITS) >= _AWAITS_KEPT:
            _AWAITS.clear()
        awaits = _AWAITS[code] = _await_offsets(code)
    return awaits is not None and frame.f_lasti not in awaits


def _await_offsets(code: CodeType) -> frozenset[int] | None:
    """The offsets where ``code`` suspends at an ``await``: each ``YIELD_VALUE``
    right after a ``SEND`` (a ``yield`` of an async generator wraps its value
    first), and the instruction after it (where a suspended frame's ``f_lasti``
    points from Python 3.13). None for a bytecode this cannot read: every wait is
    taken for an ``await``, and the run stays current, as before async generators
    were told apart."""
    try:
        found: set[int] = set()
        before = after_await = None
        for ins in dis.get_instructions(code):
            if after_await:
                found.add(ins.offset)
            after_await = ins.opname == "YIELD_VALUE" and before == "SEND"
            if after_await:
                found.add(ins.offset)
            before = ins.opname
        if not found and "SEND" not in dis.opmap:
            raise ValueError("no SEND in this Python's bytecode")
        return frozenset(found)
    except Exception:
        global _unreadable_said
        if not _unreadable_said:
            _unreadable_said = True
            log.warning(
                "agentdebug: this Python's bytecode does not say where an async generator "
                "waits; a run begun in one stays current while it waits at a yield"
            )
        return None


def _ours(module: object) -> bool:
    return isinstance(module, str) and (
        module.startswith(("agentdebug.", "agentdebug_")) or module == "agentdebug"
    )


def _generator_entering() -> FrameType | None:
    """The generator frame whose ``with`` is entering a run,
    if a generator's is: the first frame above :func:`enter` that is not
    agentdebug's own (the session's ``__enter__``/``__aenter__``, a plugin's run
    entering its session)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and _ours(frame.f_globals.get("__name__")):
        frame = frame.f_back
    if frame is None or not frame.f_code.co_flags & _GENERATORS:
        return None
    driver = frame.f_back
    if driver is not None and str(driver.f_globals.get("__name__", "")).startswith(_WITH_DRIVERS):
        return None  # (a @contextmanager's or a yield fixture's: its caller is inside)
    return frame


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
    session._generator = _generator_entering()
    session._outer = live_current()
    _live[id(session)] = (threading.get_ident(), session.id)
    return _current.set(session)


def leave(session: TraceSession, token: Token[TraceSession | None] | None) -> None:
    """Undo :func:`enter`. Where runs ended out of order (generators), the variable
    is left at the nearest live run, never at one that has ended."""
    _live.pop(id(session), None)
    session._generator = None  # (its frame holds the session: let both go)
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
