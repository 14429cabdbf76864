"""The graph run a callback is recording, held in the run's context.

A node may call its model with callbacks of its own, ``model.invoke(messages,
config={"callbacks": [counter]})`` (LangChain's way to pass a handler at run time,
``{**config, "callbacks": [...]}`` too): LangChain then builds that call's callback
manager from those alone, and the handler the graph's run was given is not in it,
so the call would be missing from the run. langchain-core's configure hook adds a
handler to every callback manager built while a context variable holds it (how
``instrument()`` works too); so a callback holds :data:`RECORDING` in the graph's
context while it records a run, and a call made inside that run with callbacks of
its own still reaches it (found under its node by namespace). The hook reads a
plain ``ContextVar`` (its ``get`` runs in C, on every manager LangChain builds in
the run: a few a step). A value left in a context after its run (a stream an app
stopped reading and never closed) adds the callback to what that context builds
later, which records nothing of it: a graph's start that the hook brought and that
was not given the callback is not recorded (``_starting``), and a call outside a
node of a run is no one's.

:data:`RUN` (the run's key with its callback) tells a second ``AgentDebugCallback``
in one run's callbacks (one given to ``with_config``, another to ``invoke``) that
the run is being recorded already, so it is recorded once (:func:`recorded_by`).
``instrument()``'s process-wide handler has a hook of its own (:data:`SLOT`).
"""

from __future__ import annotations

import contextlib
import threading
from contextvars import ContextVar, Token
from typing import Any, cast

# the callback recording the run this context is in (what the hook adds)
RECORDING: ContextVar[Any] = ContextVar("agentdebug_langgraph_recording", default=None)
# (root run id's int, the callback recording it)
RUN: ContextVar[tuple[int, Any] | None] = ContextVar("agentdebug_langgraph_run", default=None)


class _Slot:
    """Duck-types the ``ContextVar.get`` langchain-core's configure hook calls, for
    ``instrument()``'s handler: one process-wide value, seen from every thread and
    task (a ``ContextVar`` set once would be seen only where it was set)."""

    def __init__(self) -> None:
        self.handler: Any = None

    def get(self, default: Any = None) -> Any:
        return self.handler if self.handler is not None else default


SLOT = _Slot()
_registered: set[str] = set()
_lock = threading.Lock()


def register(which: str = "run") -> None:
    """Register the configure hook for :data:`RECORDING` (``"run"``) or for
    ``instrument()``'s :data:`SLOT` (``"instrument"``), once a process each
    (langchain-core has no way to remove one). The run's adds its handler where that
    very handler is not already (the run's own managers, inherited); instrument's,
    where no handler of its class is (a run given one of its own)."""
    if which in _registered:
        return
    with _lock:
        if which not in _registered:
            from langchain_core.tracers.context import register_configure_hook

            if which == "run":  # (the very handler, by identity: cheaper than a class test)
                register_configure_hook(RECORDING, True)
            else:
                from agentdebug_langgraph._callback import AgentDebugCallback

                slot = cast("ContextVar[Any]", SLOT)
                register_configure_hook(slot, True, handle_class=AgentDebugCallback)
            _registered.add(which)


def recorded_by(run_key: int) -> Any:
    """The callback recording the run whose root run id's int is ``run_key`` in
    this context, if one is."""
    held = RUN.get()
    return held[1] if held is not None and held[0] == run_key else None


def hooked(callback: Any) -> bool:
    """Whether the configure hook may have added ``callback`` here: it holds a run
    in this context (or did: one left open), and is not ``instrument()``'s (which
    records every graph)."""
    return RECORDING.get() is callback and SLOT.handler is not callback


Held = tuple[Token[Any], Token[tuple[int, Any] | None]]


def hold(run_key: int, callback: Any) -> Held:
    """Hold ``callback`` as the one recording run ``run_key`` in this context."""
    register()
    return RECORDING.set(callback), RUN.set((run_key, callback))


def release(held: Held | None) -> None:
    """Let go when the run ends; in another context than the one it started in (a
    stream closed elsewhere, a cancelled task's callback) there is nothing to undo."""
    if held is None:
        return
    with contextlib.suppress(ValueError):
        RUN.reset(held[1])
    with contextlib.suppress(ValueError):
        RECORDING.reset(held[0])
