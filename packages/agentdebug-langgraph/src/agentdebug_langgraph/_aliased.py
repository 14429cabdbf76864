"""A rerun branch's checkpointer: the user's thread id, the branch's thread.

A branch runs on a thread of its own (``t~agentdebug-<id>``), so the user's thread
is left as the run left it. Its nodes must still see the run's thread id in their
config: an app keys its own data by it (a session table, a long-term store
namespace such as ``("conversations", thread_id)``, a sub-agent's thread
``f"{thread_id}-support"``), and a branch whose node reads the branch's made-up id
finds none of it and fails for the debugger's own reason. So the branch is invoked
with the user's thread id, through :class:`ThreadAlias`, a checkpointer that hands
every read and write of that thread to the branch's thread in the graph's own
saver (subgraphs with checkpoints of their own reach it through LangGraph's
config, and so go there too). What the saver answers is passed back as it is: the
loop's checkpoint config then names the branch's thread, which is where the
callback records its checkpoints, for the next round's fork.

Node code may also reach its own thread through a graph object
(``graph.get_state({"configurable": {"thread_id": tid}})``, ``update_state`` from an
audit hook; the graph given to the executor, a ``with_config`` copy of it, the
builder compiled again on the same saver): while a branch runs, the saver's own
methods map the thread too (:func:`aliasing`), but only in the branch's own context
(a context variable, which LangGraph's workers and tasks inherit), so the app's
other runs meanwhile, in other threads, pass through unchanged. A thread the node
starts itself (``run_in_executor``, a ``ThreadPoolExecutor``) does not inherit the
context: what it writes by the thread id goes to the user's thread.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

# (the user's thread, the branch's) in a branch's own context
BRANCH_ALIAS: ContextVar[tuple[str, str] | None] = ContextVar("agentdebug_alias", default=None)


class ThreadAlias(BaseCheckpointSaver[Any]):
    """``base``, with thread ``alias[0]`` read and written as thread ``alias[1]``."""

    def __init__(self, base: BaseCheckpointSaver[Any], alias: tuple[str, str]) -> None:
        self.base, self.alias = base, alias
        self.serde = base.serde  # (as it is: not wrapped again)

    def _in(self, config: Any) -> Any:
        return _mapped(config, self.alias)

    def _thread(self, thread_id: Any) -> Any:
        return self.alias[1] if str(thread_id) == self.alias[0] else thread_id

    @property
    def config_specs(self) -> list[Any]:
        return list(self.base.config_specs)

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.base.get_next_version(current, channel)

    def get_tuple(self, config: Any) -> Any:
        return self.base.get_tuple(self._in(config))

    def list(
        self,
        config: Any,
        *,
        filter: dict[str, Any] | None = None,
        before: Any = None,
        limit: int | None = None,
    ) -> Iterator[Any]:
        return self.base.list(self._in(config), filter=filter, before=self._in(before), limit=limit)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self.base.put(self._in(config), checkpoint, metadata, new_versions)

    def put_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self.base.put_writes(self._in(config), writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.base.delete_thread(self._thread(thread_id))

    def get_delta_channel_history(
        self, *, config: Any, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return self.base.get_delta_channel_history(config=self._in(config), channels=channels)

    async def aget_tuple(self, config: Any) -> Any:
        return await self.base.aget_tuple(self._in(config))

    async def alist(
        self,
        config: Any,
        *,
        filter: dict[str, Any] | None = None,
        before: Any = None,
        limit: int | None = None,
    ) -> AsyncIterator[Any]:
        listed = self.base.alist(
            self._in(config), filter=filter, before=self._in(before), limit=limit
        )
        async for item in listed:
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return await self.base.aput(self._in(config), checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await self.base.aput_writes(self._in(config), writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.base.adelete_thread(self._thread(thread_id))

    async def aget_delta_channel_history(
        self, *, config: Any, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return await self.base.aget_delta_channel_history(
            config=self._in(config), channels=channels
        )


def _mapped(config: Any, alias: tuple[str, str] | None) -> Any:
    """``config`` with thread ``alias[0]`` named ``alias[1]``."""
    conf = config.get("configurable") if isinstance(config, dict) else None
    if alias is None or not isinstance(conf, dict) or str(conf.get("thread_id")) != alias[0]:
        return config
    return {**config, "configurable": {**conf, "thread_id": alias[1]}}


def aliased(graph: Any, alias: tuple[str, str] | None) -> Any:
    """``graph`` with its checkpointer seen through :class:`ThreadAlias` for
    ``alias`` (the user's thread, the branch's); ``graph`` itself for None."""
    saver = getattr(graph, "checkpointer", None)
    if alias is None or not isinstance(saver, BaseCheckpointSaver):
        return graph
    return graph.copy(update={"checkpointer": ThreadAlias(saver, alias)})


_LOCK = threading.Lock()
_INSTALLED: dict[int, list[Any]] = {}  # id(saver) -> [branches running, the saver]
# the saver methods that name a thread: by the config they take first, its thread
# id, a keyword config, or a config and a keyword ``before``
_BY_CONFIG = ("get_tuple", "put", "put_writes", "aget_tuple", "aput", "aput_writes")
_BY_THREAD = ("delete_thread", "adelete_thread")
_BY_KEYWORD = ("get_delta_channel_history", "aget_delta_channel_history")
_LISTS = ("list", "alist")


def _contextual(saver: Any, name: str) -> Any:
    """``saver``'s method ``name``, mapping the thread of :data:`BRANCH_ALIAS` in
    the caller's context (a method of another context passes through)."""
    method = getattr(type(saver), name)

    def by_config(config: Any, *args: Any, **kwargs: Any) -> Any:
        return method(saver, _mapped(config, BRANCH_ALIAS.get()), *args, **kwargs)

    def by_thread(thread_id: Any, *args: Any, **kwargs: Any) -> Any:
        alias = BRANCH_ALIAS.get()
        if alias is not None and str(thread_id) == alias[0]:
            thread_id = alias[1]
        return method(saver, thread_id, *args, **kwargs)

    def by_keyword(*args: Any, config: Any, **kwargs: Any) -> Any:
        return method(saver, *args, config=_mapped(config, BRANCH_ALIAS.get()), **kwargs)

    def listed(config: Any, *args: Any, before: Any = None, **kwargs: Any) -> Any:
        alias = BRANCH_ALIAS.get()
        return method(saver, _mapped(config, alias), *args, before=_mapped(before, alias), **kwargs)

    if name in _BY_THREAD:
        return by_thread
    if name in _BY_KEYWORD:
        return by_keyword
    return listed if name in _LISTS else by_config


@contextmanager
def aliasing(graph: Any, alias: tuple[str, str] | None) -> Iterator[None]:
    """While a branch runs: ``alias`` in its context, and the methods of ``graph``'s
    saver (the instance's, shared by every graph compiled on it) mapping it there;
    put back when the last branch on that saver ends."""
    saver = getattr(graph, "checkpointer", None)
    if alias is None:
        yield
        return
    token = BRANCH_ALIAS.set(alias)
    with _LOCK:
        held = _INSTALLED.get(id(saver))
        mine = held is not None
        if held is not None:  # (another branch on this saver is running)
            held[0] += 1
        elif isinstance(saver, BaseCheckpointSaver):
            try:
                for name in (*_BY_CONFIG, *_BY_THREAD, *_BY_KEYWORD, *_LISTS):
                    if hasattr(type(saver), name):
                        setattr(saver, name, _contextual(saver, name))
            except (AttributeError, TypeError):  # (a saver with __slots__: as it is)
                _unpatch(saver)
            else:
                _INSTALLED[id(saver)] = [1, saver]
                mine = True
    try:
        yield
    finally:
        BRANCH_ALIAS.reset(token)
        if mine:
            with _LOCK:
                held = _INSTALLED[id(saver)]
                held[0] -= 1
                if not held[0]:
                    del _INSTALLED[id(saver)]
                    _unpatch(saver)


def _unpatch(saver: Any) -> None:
    own = getattr(saver, "__dict__", None)  # (none, for a saver with __slots__)
    for name in (*_BY_CONFIG, *_BY_THREAD, *_BY_KEYWORD, *_LISTS):
        if isinstance(own, dict):
            own.pop(name, None)
