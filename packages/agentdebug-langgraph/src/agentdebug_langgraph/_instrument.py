"""``instrument()``: capture every LangGraph run in the process without touching configs.

langchain-core lets a library add a handler to every callback manager it builds
(``register_configure_hook``). It reads the hook through ``.get()``, which for a
``ContextVar`` would only see values set in the current thread and context; a
debugger switched on once must also see graphs run from worker threads and from
tasks created earlier, so the hook gets a process-wide slot with the same
``get()`` (:data:`agentdebug_langgraph._recording.SLOT`). The hook is registered once (langchain-core
has no way to remove one); ``uninstrument()`` empties the slot. A graph invoked with its own
``AgentDebugCallback`` in ``config["callbacks"]`` is not captured twice: the hook
is registered with the handler class, and langchain-core skips it when a handler
of that class is already there.
"""

from __future__ import annotations

from typing import Any

from agentdebug import AgentDebug

from agentdebug_langgraph._callback import AgentDebugCallback
from agentdebug_langgraph._recording import SLOT, register


def instrument(
    callback: AgentDebugCallback | AgentDebug | None = None, **options: Any
) -> AgentDebugCallback:
    """Capture every LangGraph graph run in this process from now on.

    ``options`` are those of :class:`AgentDebugCallback` (``debugger``,
    ``success_check``, ``on_report``, ...), or pass a ready ``callback``; an
    ``AgentDebug`` in its place is the debugger (``instrument(dbg)``). Returns
    the handler in use (its ``last_run_id`` and ``reports`` tell what it saw).
    Calling it again replaces the handler."""
    if isinstance(callback, AgentDebug):
        if "debugger" in options:
            raise TypeError("instrument() got two debuggers (one positional, one as debugger=)")
        options["debugger"], callback = callback, None
    elif callback is not None and not isinstance(callback, AgentDebugCallback):
        # checked here: langchain-core would call any object as a handler, and
        # one without a handler's attributes breaks every graph run
        raise TypeError(
            "instrument() takes an AgentDebugCallback or an AgentDebug, "
            f"not {type(callback).__name__}"
        )
    if callback is not None and options:
        raise TypeError("pass either a callback or its options, not both")
    handler = callback if callback is not None else AgentDebugCallback(**options)
    register("instrument")
    SLOT.handler = handler
    return handler


def uninstrument() -> None:
    """Stop capturing runs that were not given a callback explicitly."""
    SLOT.handler = None


def instrumented() -> AgentDebugCallback | None:
    """The handler ``instrument()`` installed, if capture is on."""
    handler: AgentDebugCallback | None = SLOT.handler
    return handler
