"""The graph run a callback is recording, held in the run's context.

A node may call its model with callbacks of its own, ``model.invoke(messages,
config={"callbacks": [counter]})`` (LangChain's way to pass a handler at run time,
``{**config, "callbacks": [...]}`` too): LangChain then builds that call's callback
manager from those alone, and the handler the graph's run was given is not in it,
so the call would be missing from the run. langchain-core's configure hook adds a
handler to every callback manager built while a context variable holds it (how
``instrument()`` works too); so a callback holds :data:`RECORDING` in the graph's
context while it records a run, and a call made inside that run with callbacks of
its own still reaches it (found under its node by namespace). The hook is the one
``instrument()`` uses (:data:`SLOT`): one lookup per manager built, not two.

The same variable tells a second ``AgentDebugCallback`` in one run's callbacks
(one given to ``with_config``, another to ``invoke``) that the run is being
recorded already, so it is recorded once (:func:`recorded_by`).
"""

from __future__ import annotations

import contextlib
import threading
from contextvars import ContextVar, Token
from typing import Any, cast

# (root run id's int, the callback recording it) in the run's context
RECORDING: ContextVar[tuple[int, Any] | None] = ContextVar(
    "agentdebug_langgraph_recording", default=None
)


class _Slot:
    """Duck-types the ``ContextVar.get`` langchain-core's configure hook calls:
    inside a run a callback records, that callback; else ``instrument()``'s, if on."""

    def __init__(self) -> None:
        self.handler: Any = None  # instrument()'s

    def get(self, default: Any = None) -> Any:
        held = RECORDING.get()
        if held is not None and held[0] in held[1]._roots:  # (its run still going)
            return held[1]
        return self.handler if self.handler is not None else default


SLOT = _Slot()
_registered = False
_lock = threading.Lock()


def register() -> None:
    """Register the configure hook, once a process (langchain-core has no way to
    remove one): for a handler class, which it does not add where a handler of
    that class is already (the run's own, given in its config)."""
    global _registered
    if _registered:
        return
    from agentdebug_langgraph._callback import AgentDebugCallback

    with _lock:
        if not _registered:
            from langchain_core.tracers.context import register_configure_hook

            register_configure_hook(
                cast("ContextVar[Any]", SLOT), True, handle_class=AgentDebugCallback
            )
            _registered = True


def recorded_by(run_key: int) -> Any:
    """The callback recording the run whose root run id's int is ``run_key`` in
    this context, if one is."""
    held = RECORDING.get()
    return held[1] if held is not None and held[0] == run_key else None


def hooked(callback: Any) -> bool:
    """Whether the configure hook may have added ``callback`` here: it holds a run
    in this context, and is not ``instrument()``'s (which records every graph)."""
    held = RECORDING.get()
    return held is not None and held[1] is callback and SLOT.handler is not callback


def hold(run_key: int, callback: Any) -> Token[tuple[int, Any] | None]:
    """Hold ``callback`` as the one recording run ``run_key`` in this context."""
    register()
    return RECORDING.set((run_key, callback))


def release(token: Token[tuple[int, Any] | None] | None) -> None:
    """Let go when the run ends; in another context than the one it started in (a
    stream closed elsewhere, a cancelled task's callback) there is nothing to undo:
    the value left there names a run that is over, which :class:`_Slot` ignores."""
    if token is None:
        return
    with contextlib.suppress(ValueError):
        RECORDING.reset(token)
