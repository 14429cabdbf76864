"""A node whose model call LangChain refused because the thread's conversation
holds a tool call no tool answered (``INVALID_CHAT_HISTORY``): where that call was
asked.

A tool that raises inside LangGraph's ``ToolNode`` (its default lets the error
through) leaves the model's call in the thread's messages with no ``ToolMessage``:
the run that asked fails, and every later run on the thread then fails at its first
model call, "Found AIMessages with tool_calls that do not have a corresponding
ToolMessage", whatever it is asked. Its diagnosis should point at the run that left
the call, not at the turn that meets it; so the error event of the node that met it
names the calls (``unanswered_calls``) and, from this run or the store's runs on
the thread, where they were asked (``asked_in``: the run, its step, agent and
event, and what its tool raised). Core's ``tool_call_left_unanswered`` rule reads
them. Only on that error's path: nothing here runs on a step that succeeds.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from agentdebug import AgentTrajectory
from agentdebug.detect.unanswered import UNANSWERED_SIGNS, asked_here, unanswered_ids
from agentdebug.store import RunQuery

from agentdebug_langgraph._state import FRAMEWORK, GraphRun, index_threads

log = logging.getLogger("agentdebug.langgraph")

RUNS_READ = 20  # the thread's latest runs looked through for the call


def unanswered(run: GraphRun, error: BaseException, debugger: Any) -> dict[str, Any]:
    """The error event's metadata for a refused history: the calls, and where
    they were asked (``{}`` for any other error). Never raises."""
    try:
        text = str(error)
        if not UNANSWERED_SIGNS.search(text):
            return {}
        ids = unanswered_ids(text)
        if not ids:
            return {}
        out: dict[str, Any] = {"unanswered_calls": ids}
        asked = run.tool_calls.get(ids[0])  # (asked in this run: its own decision)
        if asked is not None:
            event, step, agent = asked
            out["asked_in"] = {"run": run.session.id, "event": event, "step": step, "agent": agent}
            return out
        found = _asked_before(run, ids, debugger)
        if found is not None:
            out["asked_in"] = found
        return out
    except Exception:
        log.exception("agentdebug: where the unanswered tool call was asked could not be found")
        return {}


def _asked_before(run: GraphRun, ids: list[str], debugger: Any) -> dict[str, Any] | None:
    """The latest of the thread's earlier runs whose model asked for one of
    ``ids``: where, and what its tool raised."""
    if run.thread_id is None or debugger is None:
        return None
    store = debugger.store
    if store is None:
        return None
    debugger.flush()  # (an async run's end may still be on its way)
    index_threads(store)
    where = (("langgraph.thread_id", run.thread_id),)
    query = RunQuery(framework=FRAMEWORK, metadata=where, limit=RUNS_READ)
    for header in store.list_runs(query):
        if header.id == run.session.id:
            continue
        found = _asked_in(store.load_trajectory(header.id), set(ids))
        if found is not None:
            return found
    return None


def _asked_in(trajectory: AgentTrajectory, ids: set[str]) -> dict[str, Any] | None:
    """Where ``trajectory`` asked for one of ``ids``, with what its tool raised; or
    where a run that met the same unanswered call said it was asked (each later
    turn on the thread fails so: the run that asked may be further back than the
    runs read)."""
    events = trajectory.events
    for event in events:
        said = event.metadata.get("asked_in")
        met = event.metadata.get("unanswered_calls")
        if isinstance(said, dict) and isinstance(met, list) and ids.intersection(met):
            return said
    asked = asked_here(events, ids)
    if asked is None:
        return None
    asked["run"] = trajectory.id
    at = next(i for i, e in enumerate(events) if e.id == asked["event"])
    failed = next(
        (e for e in events[at:] if e.error and e.metadata.get("tool_call_id") in ids), None
    )
    if failed is not None and failed.error is not None:
        asked["tool_error"] = re.sub(r"\s+", " ", failed.error.message)[:300]
    return asked
