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

Node code may also reach its own thread through the graph object it closes over
(``graph.get_state({"configurable": {"thread_id": tid}})``, ``update_state`` from an
audit hook): while a branch runs, that graph's checkpointer is a
:class:`ThreadAlias` too (:func:`aliasing`), which maps the thread only in the
branch's own context (a context variable, which LangGraph's workers and tasks
inherit), so the app's other runs of the graph meanwhile, in other threads, pass
through it unchanged.
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
    """``base``, with thread ``alias[0]`` read and written as thread ``alias[1]``;
    with no ``alias``, the one :data:`BRANCH_ALIAS` holds in the caller's context."""

    def __init__(self, base: BaseCheckpointSaver[Any], alias: tuple[str, str] | None) -> None:
        self.base, self.alias = base, alias
        self.serde = base.serde  # (as it is: not wrapped again)

    def _in(self, config: Any) -> Any:
        alias = self.alias or BRANCH_ALIAS.get()
        conf = config.get("configurable") if isinstance(config, dict) else None
        if alias is None or not isinstance(conf, dict) or str(conf.get("thread_id")) != alias[0]:
            return config
        return {**config, "configurable": {**conf, "thread_id": alias[1]}}

    def _thread(self, thread_id: Any) -> Any:
        alias = self.alias or BRANCH_ALIAS.get()
        return alias[1] if alias is not None and str(thread_id) == alias[0] else thread_id

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


def aliased(graph: Any, alias: tuple[str, str] | None) -> Any:
    """``graph`` with its checkpointer seen through :class:`ThreadAlias` for
    ``alias`` (the user's thread, the branch's); ``graph`` itself for None."""
    saver = getattr(graph, "checkpointer", None)
    if alias is None or not isinstance(saver, BaseCheckpointSaver):
        return graph
    while isinstance(saver, ThreadAlias):  # (the graph's, while a branch runs)
        saver = saver.base
    return graph.copy(update={"checkpointer": ThreadAlias(saver, alias)})


_LOCK = threading.Lock()
_INSTALLED: dict[int, list[Any]] = {}  # id(graph) -> [branches running, its own saver]


@contextmanager
def aliasing(graph: Any, alias: tuple[str, str] | None) -> Iterator[None]:
    """While a branch runs: ``alias`` in its context, and ``graph``'s checkpointer a
    context-bound :class:`ThreadAlias` (put back when the last branch on it ends)."""
    saver = getattr(graph, "checkpointer", None)
    if alias is None:
        yield
        return
    token = BRANCH_ALIAS.set(alias)
    with _LOCK:
        held = _INSTALLED.get(id(graph))
        mine = held is not None or (
            isinstance(saver, BaseCheckpointSaver) and not isinstance(saver, ThreadAlias)
        )
        if held is not None:  # (another branch of the graph is running)
            held[0] += 1
        elif mine:
            _INSTALLED[id(graph)] = [1, saver]
            graph.checkpointer = ThreadAlias(saver, None)  # type: ignore[arg-type]
    try:
        yield
    finally:
        BRANCH_ALIAS.reset(token)
        if mine:
            with _LOCK:
                held = _INSTALLED[id(graph)]
                held[0] -= 1
                if not held[0]:
                    del _INSTALLED[id(graph)]
                    graph.checkpointer = held[1]
