"""Reaching the running graph from inside a callback, to learn its checkpoint ids.

LangChain callbacks are told about runs, not about LangGraph's loop: a node's
``on_chain_start`` carries its step and task id but not the checkpoint the step
started from, nor the graph or its checkpointer. Those live in the frame of
``Pregel.stream`` / ``Pregel.astream`` that is calling us when the graph's own run
starts. So, once per graph run, :func:`find_graph_frame` walks a few frames up to
find it; at the first node of the run :func:`loop_of` takes the ``loop`` object
from that frame (then the frame is dropped), and each node start reads the loop's
current checkpoint: the state LangGraph would restore to redo that step. A
subgraph saves its own checkpoints, under its namespace; its loop is found once per
subgraph run, from the first of its nodes (:func:`running_loop`).

All of this reads LangGraph internals, so every access is guarded: if a future
LangGraph moves them, capture goes on without checkpoint ids (the rerun executor
then finds the checkpoint by the task id each node records) and says so once.
"""

from __future__ import annotations

import logging
import sys
from types import FrameType
from typing import Any

log = logging.getLogger("agentdebug.langgraph")

_STREAM_NAMES = frozenset({"stream", "astream"})
_MAX_DEPTH = 12
_SUBGRAPH_DEPTH = 16  # a subgraph's stream is 7-8 frames up from its node's callback
_warned = False


def find_graph_frame(depth: int = _MAX_DEPTH) -> FrameType | None:
    """The frame of the ``Pregel.stream``/``astream`` call that is starting a run
    (the nearest within ``depth`` frames of the caller's caller)."""
    try:
        from langgraph.pregel import Pregel

        frame: FrameType | None = sys._getframe(2)
        for _ in range(depth):
            if frame is None:
                return None
            if frame.f_code.co_name in _STREAM_NAMES and isinstance(
                frame.f_locals.get("self"), Pregel
            ):
                return frame
            frame = frame.f_back
    except Exception:  # pragma: no cover - interpreter without frames
        _warn_once("the running graph could not be found from the callback")
    return None


def inherit(frame: FrameType | None, handler: Any) -> bool:
    """Make ``handler`` one the run's nodes inherit, when the run was given it as a
    handler that is not (``config={"callbacks": CallbackManager(handlers=[cb])}``:
    LangChain then calls it for the graph's own start and end only, and the run
    would hold no node). The graph's callback manager is the copy LangChain made for
    this invocation (``stream``'s local, whose run manager, made as this start
    returns, hands its inheritable handlers to the nodes). True when it did so."""
    try:
        manager = frame.f_locals.get("callback_manager") if frame is not None else None
        inheritable = getattr(manager, "inheritable_handlers", None)
        if not isinstance(inheritable, list) or handler in inheritable:
            return False
        if handler not in getattr(manager, "handlers", ()):
            return False
        inheritable.append(handler)
        return True
    except Exception:  # pragma: no cover - a LangGraph that keeps it otherwise
        return False


def given(frame: FrameType | None, handler: Any) -> bool | None:
    """Whether the run starting in ``frame`` was given ``handler`` in its config's
    callbacks (a list, or a manager's handlers), rather than by langchain-core's
    configure hook; None when the frame does not tell."""
    try:
        config = frame.f_locals.get("config") if frame is not None else None
        if not isinstance(config, dict):
            return None
        callbacks = config.get("callbacks")
        if isinstance(callbacks, list):
            return any(h is handler for h in callbacks)
        handlers = getattr(callbacks, "handlers", None)
        return isinstance(handlers, list) and any(h is handler for h in handlers)
    except Exception:  # pragma: no cover - a LangGraph that keeps it otherwise
        return None


def is_async(frame: FrameType | None) -> bool | None:
    """Whether the run is an async one (``astream``: ``ainvoke``, ``astream_events``);
    None when its frame was not found."""
    return None if frame is None else frame.f_code.co_name == "astream"


def running_loop() -> Any:
    """The loop of the innermost graph run on the caller's stack: for a node inside
    a subgraph, the subgraph's (its ``stream`` is a few frames up from the node's
    callback, also in async runs); None from a worker thread of a parallel step."""
    return loop_of(find_graph_frame(depth=_SUBGRAPH_DEPTH))


def checkpoint_namespace(loop: Any) -> str:
    """The namespace the loop saves its checkpoints under ("" for the top-level graph)."""
    try:
        return str(loop.checkpoint_config.get("configurable", {}).get("checkpoint_ns") or "")
    except Exception:
        return ""


def graph_of(frame: FrameType | None) -> Any:
    """The compiled graph (a ``Pregel``) whose run the frame executes."""
    if frame is None:
        return None
    try:
        return frame.f_locals.get("self")
    except Exception:  # pragma: no cover
        return None


def loop_of(frame: FrameType | None) -> Any:
    """LangGraph's loop object for the run, once the run has created it."""
    if frame is None:
        return None
    try:
        loop = frame.f_locals.get("loop")
    except Exception:  # pragma: no cover
        return None
    if loop is None or not hasattr(loop, "checkpoint"):
        return None
    return loop


INSTRUCTIONS_KEPT = 5  # system messages of the state recorded (the first ones)
INSTRUCTION_CHARS = 4_000  # characters of each kept


def system_messages(loop: Any, key: str) -> list[str]:
    """The texts of the system messages the state's conversation (channel ``key``)
    holds as the run's first step starts: the first ``INSTRUCTIONS_KEPT``, each cut to
    ``INSTRUCTION_CHARS``; none when the channel is empty or not a list of messages."""
    found: list[str] = []
    try:  # (an empty channel raises EmptyChannelError; an app's object may be anything)
        channel = loop.channels.get(key)
        messages = channel.get() if channel is not None else None
        for message in messages if isinstance(messages, list) else ():
            if getattr(message, "type", None) != "system":
                continue
            content = getattr(message, "content", None)
            if isinstance(content, list):  # (content blocks: their texts)
                content = " ".join(
                    str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content
                )
            if isinstance(content, str) and content.strip():
                found.append(content[:INSTRUCTION_CHARS])
                if len(found) >= INSTRUCTIONS_KEPT:
                    break
    except Exception:  # (whatever the state holds, the step is recorded)
        log.debug("agentdebug: the state's system messages could not be read", exc_info=True)
    return found


def persists_steps(loop: Any) -> bool:
    """Whether the loop saves a checkpoint at every step (a checkpointer, and a
    durability other than ``exit``, which saves only the last one)."""
    try:
        return loop.checkpointer is not None and getattr(loop, "durability", None) != "exit"
    except Exception:
        return False


def current_checkpoint(loop: Any) -> tuple[str, str | None] | None:
    """(checkpoint id, thread id) of the state the loop's current step started from."""
    try:
        checkpoint_id = loop.checkpoint["id"]
        conf = loop.checkpoint_config.get("configurable", {})
        thread = conf.get("thread_id")
        return str(checkpoint_id), (str(thread) if thread is not None else None)
    except Exception:
        _warn_once("the loop's checkpoint could not be read")
        return None


def _warn_once(what: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        log.warning(
            "agentdebug: %s (this LangGraph version keeps it elsewhere); steps are "
            "recorded without checkpoint ids and reruns find checkpoints by task id",
            what,
        )
