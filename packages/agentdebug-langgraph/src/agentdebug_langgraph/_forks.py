"""Runs started from a past checkpoint: LangGraph's time travel.

``graph.invoke(None, {"configurable": {"thread_id": t, "checkpoint_id": c}})``
replays the thread from checkpoint ``c`` (one of ``get_state_history``'s), and
``graph.update_state(config, values)`` first writes a checkpoint of its own (an
edit of the state, ``source: "update"``) to run from. Either is a fork of the
thread's history at that point, not a retry of the run that stopped last, which is
what ``invoke(None)`` otherwise is (:mod:`agentdebug_langgraph._starting`).

So such a run continues the run whose node started from the checkpoint (the edits
of ``update_state`` in between are followed back through the checkpointer), from
before that node's step: ``metadata["continues_before_step"]``, which core's
history reads as "that run's events before this step" (a diagnosis of the fork
then reads what led to the checkpoint, not the branch the fork left). Its first
event is a ``user.input`` of ``langgraph_event: "time_travel"``, holding the edits;
``metadata["langgraph"]["forked_from"]`` says from where. The run that made the
checkpoint is looked for among the runs of the thread in the store, latest first,
back to the one that was going when the checkpoint was written (its ``ts``): a
store query per 8 runs, and the runs read back, on the graph's thread, once per
such run.
"""

from __future__ import annotations

import logging
import sqlite3
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from agentdebug import AgentTrajectory, EventType
from agentdebug.capture import RunMark
from agentdebug.store import RunQuery
from agentdebug.store.history import before_step
from langgraph.checkpoint.memory import InMemorySaver

try:
    from langgraph._internal._constants import NULL_TASK_ID
except ImportError:  # pragma: no cover - a LangGraph that moved it
    NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"

from agentdebug_langgraph import _convert

log = logging.getLogger("agentdebug.langgraph")

KEY = "forked_from"  # under the run's metadata["langgraph"]
RUNS_LOOKED_AT = 8  # runs of the thread read per store query for the checkpoint
RUNS_SEARCHED = 512  # runs of the thread read at most for it
EDITS_FOLLOWED = 32  # update_state checkpoints followed back at most


@dataclass
class Fork:
    """Where a time-travel run starts: the checkpoint it was given, the edits
    (``update_state``) between it and the last checkpoint a run's node started
    from, and that run and step (None when no recorded run made it)."""

    checkpoint_id: str
    base_checkpoint: str
    edits: list[dict[str, Any]] = field(default_factory=list)
    origin: AgentTrajectory | None = None
    step: int | None = None
    base_made: datetime | None = None  # when the base checkpoint was written (its ``ts``)
    # the tasks that ran from the base checkpoint, by the writes it keeps for them: a
    # run made with durability="exit" records no checkpoint on its steps, yet keeps
    # the one its failing (or interrupted) step started from, with that step's writes
    base_tasks: frozenset[str] = frozenset()

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"checkpoint_id": self.checkpoint_id}
        if self.base_checkpoint != self.checkpoint_id:
            out["base_checkpoint_id"] = self.base_checkpoint
        if self.edits:
            out["edits"] = len(self.edits)
        if self.origin is not None:
            out.update(run=self.origin.id, step=self.step)
        return out

    def before(self) -> AgentTrajectory | None:
        """The origin run as the fork keeps it: its events before the fork's step."""
        if self.origin is None or self.step is None:
            return None
        kept = before_step(self.origin.events, self.step)
        return self.origin.model_copy(update={"events": kept})

    def mark(self) -> RunMark | None:
        """Where the fork's numbering goes on from: after the whole origin run, so
        no id of the fork is one of it."""
        return RunMark.of(self.origin) if self.origin is not None else None


def edited_goal(goal: str | None, edits: list[dict[str, Any]], key: str) -> str | None:
    """A time-travel run's goal where ``update_state`` rewrote the user's request:
    the forked run's goal while the edited messages still hold it (an edit that
    adds a correction, or touches other keys), else the last user message the
    latest edit of the messages left."""
    for edit in reversed(edits):
        said = _convert.human_texts(edit, key)
        if said:
            return goal if goal in said else said[-1]
    return goal


def requested_checkpoint(frame: FrameType | None) -> str | None:
    """The checkpoint a run was asked to start from (``configurable.checkpoint_id``)."""
    if frame is None:
        return None
    try:
        config = frame.f_locals.get("config")
        conf = config.get("configurable") if isinstance(config, dict) else None
        wanted = conf.get("checkpoint_id") if isinstance(conf, dict) else None
    except Exception:
        return None
    return str(wanted) if wanted else None


def reader(graph: Any, looped: bool) -> Any | None:
    """What the graph's checkpointer is read through by the callback, whose reads
    are sync: the checkpointer itself. On an event loop (``looped``: ``ainvoke``,
    ``astream``) an async saver's sync reads refuse (``AsyncSqliteSaver``,
    ``AsyncPostgresSaver``), or would wait on the very loop they block: there,
    ``InMemorySaver`` itself; for ``AsyncSqliteSaver`` on a file, a ``SqliteSaver``
    of its own on that file, read-only (the async saver commits every write); None
    for any other, whose reads are then not known."""
    saver = getattr(graph, "checkpointer", None)
    if not looped or saver is None:
        return saver
    if isinstance(saver, InMemorySaver):
        kind = type(saver)
        plain = kind.get_tuple is InMemorySaver.get_tuple and kind.list is InMemorySaver.list
        return saver if plain else None
    try:
        return _file_reader(saver)
    except Exception:
        log.debug("agentdebug: no reader for the graph's checkpointer", exc_info=True)
        return None


_READERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _file_reader(saver: Any) -> Any | None:
    """A read-only ``SqliteSaver`` on the file of an ``AsyncSqliteSaver`` (made once
    per saver), or None (another saver; a database in memory)."""
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    except ImportError:  # (langgraph-checkpoint-sqlite is an extra)
        return None
    if not isinstance(saver, AsyncSqliteSaver):
        return None
    if saver in _READERS:
        return _READERS[saver]
    path = _aiosqlite_file(saver.conn)
    made = None
    if path is not None:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
        made = SqliteSaver(conn, serde=saver.serde)
        made.is_setup = True  # (the async saver made its tables; this one writes nothing)
        made._has_task_path = getattr(saver, "_has_task_path", True)
    _READERS[saver] = made
    return made


def saver_file(saver: Any) -> str | None:
    """The database file of a ``SqliteSaver`` or an ``AsyncSqliteSaver``; None for
    any other saver, one in memory, or one that cannot tell (a closed connection).
    Never raises."""
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    except ImportError:  # (langgraph-checkpoint-sqlite is an extra)
        return None
    try:
        if isinstance(saver, SqliteSaver):
            rows = saver.conn.execute("PRAGMA database_list").fetchall()
            return next((str(row[2]) for row in rows if row[1] == "main"), "") or None
        if isinstance(saver, AsyncSqliteSaver):
            path = _aiosqlite_file(saver.conn)
            return str(path) if path is not None else None
    except Exception:
        log.debug("agentdebug: the saver's file could not be read", exc_info=True)
    return None


def _aiosqlite_file(conn: Any) -> Path | None:
    """The database file an ``aiosqlite`` connection opened: the ``database`` its
    connector was given (aiosqlite keeps it nowhere else; the connection itself
    answers only on aiosqlite's own thread). None for a database in memory, one
    named by a ``file:`` URI (not told apart from one in memory here), or a file
    that is not there."""
    connector = getattr(conn, "_connector", None)
    code, cells = getattr(connector, "__code__", None), getattr(connector, "__closure__", None)
    if code is None or not cells:
        return None
    names = dict(zip(code.co_freevars, (c.cell_contents for c in cells), strict=False))
    database = names.get("database")
    if isinstance(database, bytes):
        database = database.decode()
    if not isinstance(database, (str, Path)) or str(database).startswith((":memory:", "file:")):
        return None
    path = Path(database).resolve()
    return path if path.is_file() else None


def fork_at(saver: Any, thread_id: str, checkpoint_id: str) -> Fork:
    """A run from ``checkpoint_id``: the checkpoint under its edits, read through
    ``saver`` (:func:`reader`; None: not known). Never raises: what cannot be read
    is left out."""
    fork = Fork(checkpoint_id, checkpoint_id)
    try:
        _follow_edits(fork, saver, thread_id)
    except Exception:
        log.debug("agentdebug: the checkpoint's edits could not be read", exc_info=True)
    return fork


def _tasks_of(tup: Any) -> frozenset[str]:
    """The ids of the tasks that ran from a checkpoint (a ``CheckpointTuple``), by
    the writes it keeps for them: a step's writes, its error, its interrupt."""
    return frozenset(
        str(write[0]) for write in tup.pending_writes or () if write[0] != NULL_TASK_ID
    )


def tasks_at(saver: Any, thread_id: str, checkpoint_id: str) -> frozenset[str]:
    """The tasks that ran from a top-level checkpoint (:func:`_tasks_of`), read
    through ``saver`` (:func:`reader`); empty when it cannot be read. Never raises."""
    config = {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": checkpoint_id,
        }
    }
    try:
        if saver is None or not hasattr(saver, "get_tuple"):
            return frozenset()
        tup = saver.get_tuple(config)
        return _tasks_of(tup) if tup is not None else frozenset()
    except Exception:
        log.debug("agentdebug: the checkpoint's writes could not be read", exc_info=True)
        return frozenset()


def latest_edit(saver: Any, thread_id: str) -> str | None:
    """The thread's latest checkpoint when ``update_state`` made it (a human's fix
    of the state, run on with the thread's own config rather than the one
    ``update_state`` returned): that run starts from it as from a checkpoint named.
    Reads one checkpoint through ``saver`` (:func:`reader`); never raises."""
    try:
        if saver is None or not hasattr(saver, "get_tuple"):
            return None
        tup = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        if tup is None or (tup.metadata or {}).get("source") != "update":
            return None
        return str(tup.config["configurable"]["checkpoint_id"])
    except Exception:
        log.debug("agentdebug: the thread's latest checkpoint could not be read", exc_info=True)
        return None


def on_saver(saver: Any, run: Any) -> bool:
    """Whether a run waiting at an interrupt waits on this checkpointer (read
    through ``saver``, :func:`reader`: the checkpoint it waits at is there): two
    graphs alike (their names and nodes) with savers of their own may name a
    thread alike. True when it cannot be told (no checkpoint known). Never raises."""
    waiting_at = getattr(run, "interrupt_checkpoint", None)
    if not waiting_at or saver is None or not hasattr(saver, "get_tuple"):
        return True
    config = {
        "configurable": {
            "thread_id": str(run.thread_id),
            "checkpoint_ns": "",
            "checkpoint_id": waiting_at,
        }
    }
    try:
        return saver.get_tuple(config) is not None
    except sqlite3.OperationalError as exc:  # a file the saver has not set up yet: not there
        return "no such table" not in str(exc)
    except Exception:
        return True


def find_origin(fork: Fork, debugger: Any, thread_id: str) -> Fork:
    """``fork`` with the run and step it forks, when a recorded run made its base
    checkpoint. Never raises."""
    try:
        _find_origin(fork, debugger, thread_id)
    except Exception:
        log.exception(
            "agentdebug: the run that made checkpoint %s could not be found", fork.base_checkpoint
        )
    return fork


def _follow_edits(fork: Fork, saver: Any, thread_id: str) -> None:
    """Back through ``update_state`` checkpoints to the one a step started from,
    noting what each changed (top-level state keys, as made small)."""
    if saver is None or not hasattr(saver, "get_tuple"):
        return
    config = {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": fork.checkpoint_id,
        }
    }
    tup = saver.get_tuple(config)
    for _ in range(EDITS_FOLLOWED):
        if tup is None or (tup.metadata or {}).get("source") != "update" or not tup.parent_config:
            break
        parent = saver.get_tuple(tup.parent_config)
        if parent is None:
            break
        fork.edits.insert(0, _changed(parent.checkpoint, tup.checkpoint))
        fork.base_checkpoint = str(parent.config["configurable"]["checkpoint_id"])
        tup = parent
    if tup is not None and str(tup.config["configurable"]["checkpoint_id"]) == fork.base_checkpoint:
        fork.base_made = _made_at(tup.checkpoint)
        fork.base_tasks = _tasks_of(tup)


def _made_at(checkpoint: Any) -> datetime | None:
    """When LangGraph wrote a checkpoint (its ``ts``, ISO 8601 in UTC)."""
    try:
        made = datetime.fromisoformat(str(checkpoint["ts"]))
    except (KeyError, TypeError, ValueError):
        return None
    return made if made.tzinfo is not None else made.replace(tzinfo=UTC)


def _changed(before: Any, after: Any) -> dict[str, Any]:
    old = before.get("channel_values") or {}
    new = after.get("channel_values") or {}
    return {
        k: _convert.compact(v)
        for k, v in new.items()
        if isinstance(k, str)
        and not k.startswith(("__", "branch:"))
        and old.get(k) is not v
        and old.get(k) != v
    }


def _find_origin(fork: Fork, debugger: Any, thread_id: str) -> None:
    """The latest run on the thread whose top-level node started from the base
    checkpoint, and that node's step: the node recorded that checkpoint, or (a run
    made with ``durability="exit"``, which records none) its task is one of those
    that wrote to the checkpoint (LangGraph derives task ids from the checkpoint,
    so no task of another checkpoint has that id)."""
    store = debugger.store
    if store is None:
        return
    from agentdebug_langgraph._state import FRAMEWORK, index_threads  # (no cycle at import)

    index_threads(store)
    for run in _thread_runs(store, FRAMEWORK, thread_id, fork):
        for event in run.events:
            if event.type is not EventType.AGENT_START:
                continue
            ref = event.checkpoint
            if (
                ref is not None and ref.checkpoint_id == fork.base_checkpoint and not ref.namespace
            ) or (
                ref is None
                and "namespace" not in event.metadata
                and event.metadata.get("task_id") in fork.base_tasks
            ):
                fork.origin, fork.step = run, event.step_index
                return


def _thread_runs(
    store: Any, framework: str, thread_id: str, fork: Fork
) -> Iterator[AgentTrajectory]:
    """The thread's runs, latest first, that may hold a node started from the
    fork's base checkpoint: back to the run that was going when it was written (the
    first one started before it; the runs before that one had ended), a page at a
    time. When it is not known when it was written, the latest
    :data:`RUNS_LOOKED_AT` only."""
    made = fork.base_made
    where = (("langgraph.thread_id", thread_id),)
    seen: set[str] = set()
    until: datetime | None = None
    while len(seen) < RUNS_SEARCHED:
        query = RunQuery(framework=framework, metadata=where, until=until, limit=RUNS_LOOKED_AT)
        page = [s for s in store.list_runs(query) if s.id not in seen]
        if not page:
            return
        for summary in page:
            seen.add(summary.id)
            yield store.load_trajectory(summary.id)
            started = summary.started_at
            if made is None or (started is not None and started <= made):
                return
        until = min((s.started_at for s in page if s.started_at is not None), default=None)
        if until is None:
            return
    log.info(
        "agentdebug: the run that made checkpoint %s is not among the thread's latest %d "
        "runs; the fork is recorded as a run of its own",
        fork.base_checkpoint,
        RUNS_SEARCHED,
    )
