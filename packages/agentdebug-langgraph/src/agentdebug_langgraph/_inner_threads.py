"""A rerun branch and the graphs its nodes invoke on threads of their own.

A node may run another compiled graph with a checkpointer and a thread of its own
(``orders.invoke(x, {"configurable": {"thread_id": "orders-1"}})``: a sub-agent
that keeps its conversation). The branch runs the node's code again, and that code
names the user's thread: the branch would write its turns into the sub-agent's
real conversation, which the next real turn then reads. So, while a branch runs,
such a graph's start is redirected to a thread of the branch's own
(``orders-1~agentdebug-<id>``), holding the sub-agent's thread as it was when the
forked checkpoint was taken (its latest checkpoint then, copied), or empty when it
had none yet. The graph's own ``config`` is changed where LangGraph builds the run
from it, before its loop reads the thread (a LangGraph internal, read as
:mod:`agentdebug_langgraph._pregel` reads the rest: guarded).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from agentdebug_langgraph import _pregel
from agentdebug_langgraph._checkpoints import BRANCH_MARK, copy_to_thread

log = logging.getLogger("agentdebug.langgraph")


def isolate_inner(tag: str, as_of: str | None, made: dict[str, str]) -> None:
    """Called at a graph's start inside a branch's node: when it runs on a thread of
    its own, run it on the branch's copy of that thread (``made``: the user's thread
    -> the branch's, for this branch)."""
    frame = _pregel.find_graph_frame()
    graph = _pregel.graph_of(frame)
    if frame is None or graph is None or graph.checkpointer in (None, True, False):
        return
    config = frame.f_locals.get("config")
    conf = config.get("configurable") if isinstance(config, dict) else None
    if not isinstance(conf, dict):
        return
    thread = conf.get("thread_id")
    if thread is None or BRANCH_MARK in str(thread):
        return  # (the branch's own graph, or one already on a branch's thread)
    mine = made.get(str(thread))
    if mine is None:
        mine = made[str(thread)] = f"{thread}{BRANCH_MARK}{tag}"
        try:
            _copy_as_of(graph, str(thread), mine, as_of)
        except Exception as exc:  # (an async saver read on the loop: started empty)
            log.warning(
                "agentdebug: the branch runs graph %s on thread %s, empty: its thread %s "
                "could not be copied (%s)", graph.get_name(), mine, thread, exc,
            )  # fmt: skip
    conf["thread_id"] = mine
    conf.pop("checkpoint_id", None)


def _copy_as_of(graph: Any, thread: str, mine: str, as_of: str | None) -> None:
    """The user's thread as it was at ``as_of`` (its latest checkpoint then), copied
    to ``mine``; nothing when it had none yet."""
    when = datetime.fromisoformat(as_of) if as_of else None
    for snap in graph.get_state_history({"configurable": {"thread_id": thread}}):
        if when is None or datetime.fromisoformat(snap.created_at) <= when:
            copy_to_thread(graph, snap, mine)
            return
