"""After ``os.fork()``: a child process starts with its parent's debuggers, their
background writers and their store connections, but not the writers' threads.

A pre-fork server (gunicorn ``--preload``, uWSGI, Celery's prefork pool) forks
after its master has recorded a run (a warm-up, a health check): a child that
flushed the inherited writer would wait for threads that do not exist, and hang
the request forever; and SQLite's connections must not be used across a fork.
So in the child, every inherited writer is made inert (what it held is the
parent's to write; a run the child goes on recording through it is lost, and
said so), and every debugger forgets its store and writer, to open its own on
first use: runs the child starts are recorded as in any process.
"""

from __future__ import annotations

import logging
import os
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentdebug.capture.debugger import AgentDebug

log = logging.getLogger("agentdebug.capture")

_DEBUGGERS: weakref.WeakSet[AgentDebug] = weakref.WeakSet()
_INHERITED = ("flush", "close", "help", "anchor", "control")  # a writer's entry points


def track(debugger: AgentDebug) -> None:
    """Reopen ``debugger``'s store in a forked child (see the module)."""
    _DEBUGGERS.add(debugger)


def _dropped(*args: Any, **kwargs: Any) -> None:
    """An inherited writer's entry point in a forked child: nothing to wait for."""
    return None


def _after_fork_in_child() -> None:
    from agentdebug.capture import writer as writers

    inherited = {*writers._OPEN, *writers._WRITERS}
    for writer in inherited:
        for name in _INHERITED:
            setattr(writer, name, _dropped)  # (its threads did not come along)
        if writer.queue:
            log.warning(
                "agentdebug: %d event(s) recorded before this process forked are left "
                "to the parent to write",
                len(writer.queue),
            )
        writer.queue.clear()
    writers._OPEN.clear()
    writers._WRITERS.clear()
    for debugger in list(_DEBUGGERS):
        debugger._forget_after_fork()


def _before_fork() -> None:
    """A debugger settling abandoned runs (a thread at its first capture, often
    the warm-up a pre-fork server makes just before forking) is let finish first
    (a second at most), so a child does not inherit a store it holds mid-query."""
    for debugger in list(_DEBUGGERS):
        settling = getattr(debugger, "_settling", None)
        if settling is not None and settling.is_alive():
            settling.join(timeout=1.0)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
