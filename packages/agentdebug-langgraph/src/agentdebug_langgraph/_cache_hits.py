"""Nodes LangGraph serves from its node cache (``CachePolicy`` with a ``cache``).

A cache hit does not run the node, so no callback fires for it: LangGraph fills
the task's writes from the cache and only marks the hit in the ``updates``
stream. Without this module such a node is missing from the trajectory, and the
``Send`` branches it fans out to are filed under the run's input instead of
under it.

The loop finds hits in one method, ``match_cached_writes`` (``amatch_cached_writes``
in async runs), which returns the tasks it served. When the callback first sees a
graph start (:func:`install`: a subgraph may have a cache of its own, which the
graph's start does not show), that method of LangGraph's loop classes is wrapped: the tasks it returns go to every handler among the task's callbacks
that records them (:class:`ServesCache`, i.e. ``AgentDebugCallback``), which
records each as a node that started and ended at once, marked ``cached``. Runs
without a cache, and graphs without such a handler, pass through unchanged.
Everything here reads LangGraph internals, so it is guarded: a LangGraph that
moved them leaves cache hits unrecorded and says so once.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable
from uuid import UUID

from agentdebug.detect import signals

from agentdebug_langgraph._once import Once

log = logging.getLogger("agentdebug.langgraph")

CACHED = signals.CACHED  # event metadata: LangGraph served this node's result from its cache
_WRAPPED = "__agentdebug_wrapped__"
# LangGraph's channels for a functional-API task's value and for ``Send`` packets
_RETURN, _TASKS = "__return__", "__pregel_tasks"


@runtime_checkable
class ServesCache(Protocol):
    """A handler that records the tasks a run's cache served."""

    def on_cached_task(self, task: Any, parent_run_id: UUID | None) -> None: ...


def _install() -> None:
    """Wrap the loops' cache lookups (once per process; a run without a cache pays a
    call and a test of the empty list it finds per step)."""
    try:
        from langgraph.pregel._loop import AsyncPregelLoop, SyncPregelLoop
    except ImportError:
        _unsupported("its loop classes moved")
        return
    for cls, name, wrap in (
        (SyncPregelLoop, "match_cached_writes", _wrap_sync),
        (AsyncPregelLoop, "amatch_cached_writes", _wrap_async),
    ):
        original = cls.__dict__.get(name)
        if original is None:
            _unsupported(f"{cls.__name__}.{name} is gone")
            continue
        if not getattr(original, _WRAPPED, False):
            setattr(cls, name, wrap(original))


install = Once(_install)


def _wrap_sync(original: Callable[[Any], Sequence[Any]]) -> Callable[[Any], Sequence[Any]]:
    @functools.wraps(original)
    def match_cached_writes(loop: Any) -> Sequence[Any]:
        matched = original(loop)
        if matched:
            served(matched)
        return matched

    setattr(match_cached_writes, _WRAPPED, True)
    return match_cached_writes


def _wrap_async(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.wraps(original)
    async def amatch_cached_writes(loop: Any) -> Sequence[Any]:
        matched: Sequence[Any] = await original(loop)
        if matched:
            served(matched)
        return matched

    setattr(amatch_cached_writes, _WRAPPED, True)
    return amatch_cached_writes


def served(tasks: Sequence[Any]) -> None:
    """Hand each served task to the recording handlers among its callbacks (the
    child manager LangGraph made for the step, whose parent is the graph run).
    Never raises into the graph."""
    for task in tasks:
        try:
            config = task.config or {}
            manager = config.get("callbacks")
            if manager is None:
                continue
            handlers = manager if isinstance(manager, list) else manager.handlers
            parent = getattr(manager, "parent_run_id", None)
            for handler in handlers:
                if isinstance(handler, ServesCache):
                    handler.on_cached_task(task, parent)
        except Exception:
            log.exception("agentdebug: a node served from the cache could not be recorded")


def cached_update(writes: Sequence[tuple[str, Any]]) -> tuple[Any, list[Any]]:
    """What a served task's writes say the node returned: its state update (or the
    value of a functional-API task), and the ``Send`` packets it fanned out."""
    from langgraph.types import Send

    update: dict[str, Any] = {}
    sends: list[Any] = []
    for channel, value in writes:
        if channel == _RETURN:
            return value, sends
        if channel == _TASKS:
            if isinstance(value, Send):
                sends.append(value)
        elif not channel.startswith(("__", "branch:")):
            update[channel] = value
    return update, sends


def _unsupported(why: str) -> None:
    log.warning(
        "agentdebug: nodes served from LangGraph's cache are not recorded with this "
        "LangGraph version (%s)",
        why,
    )
