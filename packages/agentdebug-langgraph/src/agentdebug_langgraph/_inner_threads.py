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
from collections import OrderedDict
from datetime import datetime
from typing import Any, NamedTuple

from agentdebug.schema import AgentTrajectory

from agentdebug_langgraph import _pregel
from agentdebug_langgraph._checkpoints import BRANCH_MARK, copy_to_thread

log = logging.getLogger("agentdebug.langgraph")


_KEPT = 64
_MADE: OrderedDict[str, dict[str, str]] = OrderedDict()  # branch run -> its copies


class InnerThreads(NamedTuple):
    """What a branch's callback needs to run such graphs on copies of their threads."""

    tag: str  # the copies' mark (the branch's run id, shortened)
    as_of: str | None  # the forked checkpoint's time: the threads as they were then
    made: dict[str, str]  # the user's thread -> the branch's copy, as they are made
    sources: dict[str, str]  # the user's thread -> the thread to copy (a branch's copy)
    own: tuple[str, str] | None = None  # (the user's thread, the branch's): _aliased
    saver: Any = None  # the branch's graph's checkpointer, where ``own``'s threads are


def inner_threads(
    branch_id: str,
    forked: AgentTrajectory,
    as_of: str | None,
    own: tuple[str, str] | None = None,
    saver: Any = None,
) -> InnerThreads:
    """For the branch ``branch_id`` of run ``forked``: a branch of a branch made in
    this process copies the first branch's copies (as they were at this fork); one
    made in another process, the user's threads as they were at the first fork (the
    first branch's turns are gone with its process, the original's later ones are
    not wanted)."""
    made: dict[str, str] = {}
    _MADE[branch_id] = made
    while len(_MADE) > _KEPT:
        _MADE.popitem(last=False)
    sources = _MADE.get(forked.id, {})
    lg = forked.metadata.get("langgraph")
    fork = lg.get("fork") if isinstance(lg, dict) else None
    first = fork.get("as_of") if isinstance(fork, dict) and not sources else None
    if isinstance(first, str) and as_of and first < as_of:  # (ISO times of one zone)
        as_of = first
    # the copies carry the branch thread's own mark, so that they are pruned with it
    tag = own[1].rpartition(BRANCH_MARK)[2] if own is not None else branch_id[:12]
    return InnerThreads(tag, as_of, made, dict(sources), own, saver)


def isolate_inner(inner: InnerThreads) -> None:
    """Called at a graph's start inside a branch's node: when it runs on a thread of
    its own, run it on the branch's copy of that thread."""
    tag, as_of, made = inner.tag, inner.as_of, inner.made
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
    if inner.own is not None and str(thread) == inner.own[0] and graph.checkpointer is inner.saver:
        # a graph run on the branch graph's saver with the node's own config (the
        # user's thread id, as the branch's nodes see it): on the branch's thread,
        # where that config leads (a graph with a saver of its own keyed alike: a
        # copy of its thread there, as below)
        conf["thread_id"] = inner.own[1]
        return
    mine = made.get(str(thread))
    if mine is None:
        mine = made[str(thread)] = f"{thread}{BRANCH_MARK}{tag}"
        try:
            _copy_as_of(graph, inner.sources.get(str(thread), str(thread)), mine, as_of)
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
