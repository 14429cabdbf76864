"""How a rerun branch is invoked: ``invoke``, or ``ainvoke`` for a run an async app
made (a graph of coroutine nodes runs no other way), on a loop of the branch's own,
a ``SqliteSaver``'s graph through ``AsyncSqliteSaver`` on the same file."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentdebug.errors import AgentDebugError
from agentdebug.schema import AgentTrajectory, EventType

from agentdebug_langgraph._aliased import aliased
from agentdebug_langgraph._checkpoints import is_sqlite_saver
from agentdebug_langgraph._state import ASYNC

log = logging.getLogger("agentdebug.langgraph")


def made_async(trajectory: AgentTrajectory) -> bool:
    """Whether the run was made with ``ainvoke``/``astream``, in any of its
    invocations: its start (``metadata["langgraph"]["asynchronous"]``) or a resume
    (the resume's event says so: a run started with ``invoke`` and resumed with
    ``ainvoke`` may have nodes that only run so after the interrupt)."""
    lg = trajectory.metadata.get("langgraph")
    if isinstance(lg, dict) and lg.get(ASYNC) is True:
        return True
    return any(
        e.type is EventType.USER_INPUT and e.metadata.get(ASYNC) is True for e in trajectory.events
    )


def runs_async(graph: Any, given: bool | None, recorded: bool, run_id: str) -> bool:
    """Whether the branch runs with ``ainvoke``: as ``given`` (the executor's
    ``asynchronous``); by default as the run was made (``recorded``), where the
    graph's saver can run ``ainvoke``: a SqliteSaver on a file (through
    AsyncSqliteSaver), or a saver with async methods. Otherwise it runs with
    ``invoke`` when every node can (as it did before runs recorded how they were
    made); a graph with coroutine-only nodes is refused."""
    if given is False and _coroutine_only(graph):  # (LangGraph: "No synchronous function")
        raise AgentDebugError(
            f"cannot rerun run '{run_id}' with invoke (asynchronous=False): the graph has "
            "nodes that only run as coroutines; leave asynchronous unset (as the run was "
            "made) or set it to True"
        )
    if given is not None:
        return given
    if not recorded:
        return False
    saver = graph.checkpointer
    try:
        possible = sqlite_file(saver) is not None or _has_async_methods(saver)
    except AgentDebugError:  # an in-memory SqliteSaver: no file to share
        possible = False
    if not possible and _coroutine_only(graph):
        raise AgentDebugError(
            f"cannot rerun run '{run_id}': it was made with ainvoke and the graph has "
            f"nodes that only run so, but its checkpointer, {type(saver).__name__}, has no "
            "async methods (or is an in-memory SqliteSaver); use InMemorySaver, a "
            "SqliteSaver on a file, or a saver with both kinds of methods"
        )
    if not possible:
        log.info(
            "agentdebug: run %s was made with ainvoke, but %s cannot run one; its branch "
            "runs with invoke",
            run_id,
            type(saver).__name__,
        )
    return possible


def invoker(
    graph: Any, context: Any, asynchronous: bool, alias: tuple[str, str] | None = None
) -> Callable[[Any, Any], Any]:
    """``invoke(config, given)`` runs the branch with runtime ``context``:
    ``graph.invoke``; with
    ``asynchronous``, ``ainvoke`` on a loop of the branch's own (on a worker
    thread when called from async code, which waits for it), a ``SqliteSaver``'s
    graph through ``AsyncSqliteSaver`` on the same file (found here, in the
    caller's thread: its connection may belong to it). ``alias``: (the user's
    thread, the branch's), the config naming the user's (:mod:`._aliased`)."""
    if not asynchronous:
        runner = aliased(graph, alias)
        return lambda config, given: runner.invoke(given, config, context=context)
    saver = graph.checkpointer
    path = sqlite_file(saver)
    if path is None and not _has_async_methods(saver):
        raise AgentDebugError(
            f"cannot rerun with ainvoke (the run was made with ainvoke or astream, or "
            f"asynchronous=True was given): the graph's checkpointer, "
            f"{type(saver).__name__}, has no async methods; use InMemorySaver, "
            "SqliteSaver (the branch then runs through AsyncSqliteSaver on its file) or "
            "a saver with both kinds of methods, or LangGraphRerunExecutor("
            "asynchronous=False) if the graph's nodes can run synchronously"
        )

    def invoke(config: Any, given: Any) -> Any:
        run = _ainvoke(graph, given, config, path, context, alias)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(run)
        # called from async code: the branch's event loop in a thread of its own
        with ThreadPoolExecutor(max_workers=1) as pool:  # (this context: recording_branch)
            return pool.submit(contextvars.copy_context().run, asyncio.run, run).result()

    return invoke


async def _ainvoke(
    graph: Any, given: Any, config: Any, path: str | None, context: Any, alias: Any
) -> Any:
    """``graph.ainvoke``; for a graph on ``SqliteSaver`` (whose async methods refuse),
    through ``AsyncSqliteSaver`` on its file ``path``, opened on the branch's own
    loop, with the saver's own serializer."""
    if path is None:
        return await aliased(graph, alias).ainvoke(given, config, context=context)
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with aiosqlite.connect(path) as conn:
        saver = AsyncSqliteSaver(conn, serde=graph.checkpointer.serde)
        copy = aliased(graph.copy(update={"checkpointer": saver}), alias)
        return await copy.ainvoke(given, config, context=context)


def _coroutine_only(graph: Any) -> bool:
    """Whether a node of the graph has no synchronous function (``async def``)."""
    for node in getattr(graph, "nodes", {}).values():
        bound = getattr(node, "bound", None)
        if getattr(bound, "func", True) is None and getattr(bound, "afunc", None) is not None:
            return True
    return False


def _has_async_methods(saver: Any) -> bool:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    return type(saver).aget_tuple is not BaseCheckpointSaver.aget_tuple


def sqlite_file(saver: Any) -> str | None:
    """The database file of a ``SqliteSaver`` (``None`` for any other saver)."""
    if not is_sqlite_saver(saver):
        return None
    with saver.cursor(transaction=False) as cur:
        rows = cur.execute("PRAGMA database_list").fetchall()
    path = next((str(row[2]) for row in rows if row[1] == "main"), "")
    if not path:
        raise AgentDebugError(
            "cannot rerun a graph with coroutine nodes on an in-memory SqliteSaver: its "
            "branch runs through AsyncSqliteSaver, which needs the same database file "
            "(use a file, or InMemorySaver)"
        )
    return path
