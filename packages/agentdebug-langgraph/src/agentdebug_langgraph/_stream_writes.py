"""What a node writes with LangGraph's stream writer (``get_stream_writer()``, or
``runtime.stream_writer`` of an injected ``Runtime``), recorded as the node's own
``observation``.

A write fires no LangChain callback: LangGraph hands it to the ``custom`` stream,
or drops it when the caller did not ask for that mode. Progress a node reports this
way ("searching flights", "3 results", a partial answer) is evidence a diagnosis
reads beside the node's model and tool calls, and it was missing from the run.

Each graph run's writer lives in its loop's config (``Runtime.stream_writer``),
from which LangGraph gives every task its own. When the callback first sees a
graph start (:func:`install`), the loop classes' ``__init__`` is wrapped, once: a
loop whose run manager holds a recording handler (:class:`CaptureBase`) gets a
writer that records each write into the node it comes from, then passes it on
unchanged. Graphs without such a handler keep LangGraph's writer; nothing is done
per step. Everything here reads LangGraph internals, so it is guarded: a
LangGraph that moved them leaves writes unrecorded and says so once.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from agentdebug_langgraph._base import CaptureBase, current_node_runs, record_note
from agentdebug_langgraph._once import Once

log = logging.getLogger("agentdebug.langgraph")

MODULE = "langgraph.stream_writer"
_WRAPPED = "__agentdebug_wrapped__"
_RECORDS = "__agentdebug_records__"
_CONF, _RUNTIME = "configurable", "__pregel_runtime"  # (checked against LangGraph's in install)
# set while a write is being passed on by our writer: a subgraph's writer is its
# parent task's (perhaps behind LangGraph's guard for a node's timeout, which is not
# ours to recognise), so one write can pass through two of ours, and is recorded once
_PASSING: ContextVar[bool] = ContextVar("agentdebug_langgraph_stream_write", default=False)
_said = False


def _install() -> None:
    """Wrap the loops' ``__init__`` (once per process)."""
    try:
        from langgraph._internal._constants import CONF, CONFIG_KEY_RUNTIME
        from langgraph.pregel._loop import AsyncPregelLoop, SyncPregelLoop
    except ImportError:
        _unsupported("its loop classes moved")
        return
    if (CONF, CONFIG_KEY_RUNTIME) != (_CONF, _RUNTIME):
        _unsupported("a run's writer is not where it was")
        return
    for cls in (SyncPregelLoop, AsyncPregelLoop):
        original = cls.__dict__.get("__init__")
        if original is None:
            _unsupported(f"{cls.__name__}.__init__ is gone")
        elif not getattr(original, _WRAPPED, False):
            cls.__init__ = _wrap_init(original)  # type: ignore[method-assign]


install = Once(_install)


def _wrap_init(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def __init__(loop: Any, *args: Any, **kwargs: Any) -> None:
        original(loop, *args, **kwargs)
        try:
            _record_writes(loop)
        except Exception:
            log.exception("agentdebug: a graph's stream writes will not be recorded")

    setattr(__init__, _WRAPPED, True)
    return __init__


def _record_writes(loop: Any) -> None:
    """Give ``loop``'s run a recording writer, when a recording handler is among the
    run's callbacks and its writer is not one of ours already (a subgraph's writer
    is its parent task's)."""
    manager = getattr(loop, "manager", None)
    handlers = getattr(manager, "handlers", None) or ()
    if not any(isinstance(h, CaptureBase) for h in handlers):
        return
    configurable = loop.config.get(_CONF)
    runtime = configurable.get(_RUNTIME) if isinstance(configurable, dict) else None
    writer = getattr(runtime, "stream_writer", None)
    override = getattr(runtime, "override", None)
    if writer is None or override is None:
        _unsupported("a run's writer is not where it was")
        return
    if getattr(writer, _RECORDS, False):
        return
    configurable[_RUNTIME] = override(stream_writer=_recording(writer))


def _recording(writer: Callable[[Any], None]) -> Callable[[Any], None]:
    def stream_writer(chunk: Any) -> None:
        if _PASSING.get():
            writer(chunk)
            return
        try:
            recorded(chunk)
        except Exception:
            log.exception("agentdebug: a stream write could not be recorded")
        token = _PASSING.set(True)
        try:
            writer(chunk)
        finally:
            _PASSING.reset(token)

    setattr(stream_writer, _RECORDS, True)
    return stream_writer


def recorded(chunk: Any) -> None:
    """Record ``chunk`` into the node whose code wrote it, in each recording
    handler's run (found as ``agentdebug.record`` in a node finds it: from the config
    LangChain keeps current, whose callbacks are the node's children)."""
    for rec in current_node_runs():
        record_note(rec, MODULE, chunk, {"stream_writer": True})


def _unsupported(why: str) -> None:
    global _said
    if _said:
        return
    _said = True
    log.warning(
        "agentdebug: what nodes write with get_stream_writer() is not recorded with "
        "this LangGraph version (%s)",
        why,
    )
