"""How LangGraph 1.2 deals with a node that fails, read from what the callback sees.

Two of its ways reach a callback in a shape that does not say what happened:

- **Node error handlers** (``add_node(..., error_handler=...)``): LangGraph runs the
  handler as a task of its own, named ``__error_handler__<node>``, with the path
  ending ``("node_error_handler", False)`` and a namespace under the failed task's
  (``node:<task>|__error_handler__node:<id>``), which reads as a node inside a
  subgraph. The handler is a node of the failed node's graph, and its start names
  the failed attempt it handles (``metadata["handles"]``): core counts an error
  whose handler finished as resolved, as it does one a retry got past.
- **Node timeouts** (``add_node(..., timeout=...)``, a ``TimeoutPolicy``): the
  watchdog cancels the node, so its callback gets a ``CancelledError``, which is
  also what a caller's stop looks like; LangGraph then raises ``NodeTimeoutError``
  from the runner, to a ``RetryPolicy``, the node's error handler or the graph's
  caller, without a node callback. So a node's cancel is held until what follows
  tells (:class:`NodeFailureEvents`): a timeout is recorded as the node's error
  (``NodeTimeoutError``, mode ``system.timeout``), a stop as a stop.
"""

from __future__ import annotations

import re
import time
from datetime import timedelta
from typing import Any

from agentdebug import EventType
from agentdebug.detect import signals
from agentdebug.detect.signals import FAILURE_MODE
from agentdebug.schema import ErrorInfo

from agentdebug_langgraph._base import CaptureBase
from agentdebug_langgraph._live import live_graph
from agentdebug_langgraph._state import ERRORS_HELD, GraphRun, NodeRun

HANDLER_PATH = ("node_error_handler",)  # path[-2:-1] of an error handler's task
HANDLES = signals.HANDLES  # metadata of a handler's start: the failed attempt's start


def handler_namespace(ns: str) -> tuple[str, str]:
    """(the failed task's namespace, the namespace the handler would have as a node
    of that task's graph) of an error handler's task namespace."""
    failed, _, own = ns.rpartition("|")
    outer = failed.rpartition("|")[0]
    return failed, (f"{outer}|{own}" if outer else own)


def _seconds(value: Any) -> float | None:
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value) if isinstance(value, int | float) and value > 0 else None


def is_cancel(error: BaseException) -> bool:
    return type(error).__name__ == "CancelledError"


def is_node_timeout(error: BaseException) -> bool:
    return type(error).__name__ == "NodeTimeoutError"


_TASK_NOTE = re.compile(r"During task with name '[^']*' and id '([^']+)'")


def _task_of(error: BaseException) -> str | None:
    """The task id LangGraph's note on an error names ("During task with name ...")."""
    for note in getattr(error, "__notes__", None) or ():
        found = _TASK_NOTE.search(note) if isinstance(note, str) else None
        if found:
            return found.group(1)
    return None


def _limits(session_id: str, node: str) -> dict[str, float]:
    """The run and idle limits of the node's ``TimeoutPolicy`` in the run's graph
    (none found: a node of a subgraph, or a LangGraph that keeps them elsewhere)."""
    try:
        graph = live_graph(session_id)
        spec = graph.nodes.get(node) if graph is not None else None
        policy = getattr(spec, "timeout", None)
        out = {
            "run_timeout": _seconds(getattr(policy, "run_timeout", None)),
            "idle_timeout": _seconds(getattr(policy, "idle_timeout", None)),
        }
    except Exception:
        return {}
    return {k: v for k, v in out.items() if v is not None}


class NodeFailureEvents(CaptureBase):
    """The events of nodes that failed otherwise than by raising: cut off by their
    timeout, handled by their error handler, stopped by the caller (a part of
    :class:`~agentdebug_langgraph.AgentDebugCallback`).

    A node's ``CancelledError`` is held (``GraphRun.cancelled``) until what follows
    says what it was: LangGraph's ``NodeTimeoutError`` for the node (at the graph's
    end, or out of a subgraph), another attempt of its task (a ``RetryPolicy``
    retry) or its error handler starting say it was the node's timeout; the run's
    end without either says it was a stop (the caller's, or a teardown after a
    sibling failed), recorded then at the node."""

    def _cancelled(self, rec: NodeRun, error: BaseException) -> None:
        rec.run.cancelled[rec.ns] = (rec, time.perf_counter(), error)

    def _cut_off(
        self, run: GraphRun, *, ns: str | None = None, name: Any = None, task: str | None = None
    ) -> tuple[NodeRun, float] | None:
        """The attempt a timeout cut off (of task ``ns``, or of node ``name``: of its
        ``Send`` branches, the one of task id ``task``), with when it ended: held (its
        cancel came), else still running for the callback (then dropped from the
        tables, so that its cancel, when it comes, is taken for nothing)."""

        def chosen(recs: list[NodeRun]) -> list[NodeRun]:
            if ns is not None:
                return [r for r in recs if r.ns == ns]
            named = [r for r in recs if r.name == name]
            return [r for r in named if task and r.ns.endswith(":" + task)] or named

        held = chosen([h[0] for h in run.cancelled.values()])
        if held:  # (the first: siblings are torn down after it)
            return held[0], run.cancelled.pop(held[0].ns)[1]
        running = chosen([r for r in self._by_ns.values() if r.run is run])
        if not running:
            return None
        rec = running[0]
        self._by_ns.pop(rec.ns, None)
        for key, node in list(self._nodes.items()):
            if node is rec:
                del self._nodes[key]
        return rec, time.perf_counter()

    def _superseded(self, run: GraphRun, ns: str) -> None:
        """Another attempt of task ``ns`` (a retry), or its error handler, starts:
        the attempt before, if it was cancelled or still runs, was cut off by its
        timeout."""
        found = self._cut_off(run, ns=ns)
        if found is None:
            return
        rec, ended = found
        elapsed = ended - rec.started
        error = ErrorInfo(
            type="NodeTimeoutError",
            message=f"Node '{rec.name}' was cut off by its timeout after {elapsed:.3f}s.",
        )
        self._record_timeout(rec, error, elapsed, _limits(run.session.id, rec.name))

    def _settle_timeout(self, run: GraphRun, error: BaseException) -> bool:
        """LangGraph's ``NodeTimeoutError`` reaches a node running a subgraph or the
        graph's end: recorded, as raised, at the attempt it cut off, once. False if
        none is found."""
        found = self._cut_off(run, name=getattr(error, "node", None), task=_task_of(error))
        if found is None:
            return False
        rec, ended = found
        limits = {
            k: v
            for k in ("run_timeout", "idle_timeout")
            if isinstance(v := getattr(error, k, None), int | float)
        }
        self._record_timeout(rec, error, ended - rec.started, limits, getattr(error, "kind", None))
        if len(run.node_errors) >= ERRORS_HELD:
            del run.node_errors[next(iter(run.node_errors))]
        run.node_errors[id(error)] = (error, rec.ns)
        return True

    def _record_timeout(
        self,
        rec: NodeRun,
        error: Any,
        elapsed: float,
        limits: dict[str, float],
        kind: Any = None,
    ) -> None:
        """A node cut off by its ``TimeoutPolicy``: its error, mode ``system.timeout``
        and the attempt a retry or its error handler then names."""
        run = rec.run
        meta: dict[str, Any] = {
            "node": rec.name,
            "langgraph_error": "node_timeout",
            FAILURE_MODE: "system.timeout",
            **limits,
        }
        if isinstance(kind, str):
            meta["timeout_kind"] = kind
        run.session.record(
            EventType.ERROR,
            agent_name=rec.agent,
            step_index=rec.step,
            error=error,
            parent_id=rec.event_id,
            module="langgraph.node",
            duration_ms=elapsed * 1000.0,
            metadata=meta,
        )
        run.failed[rec.ns] = (rec.event_id, run.attempts.pop(rec.ns, 1))

    def _settle_stops(self, run: GraphRun) -> None:
        """At the run's end: the cancels nothing explained were stops."""
        for rec, ended, error in list(run.cancelled.values()):
            self._stopped_at(rec, error, ended)
        run.cancelled.clear()

    def _handling(self, run: GraphRun, failed_ns: str, doc: dict[str, Any]) -> None:
        """A node's error handler starts: it names the failed attempt it handles, and
        goes under it (an attempt its timeout cut off is recorded first)."""
        self._superseded(run, failed_ns)
        before = run.failed.pop(failed_ns, None)
        if before is not None and before[0] is not None:
            doc["metadata"][HANDLES] = doc["parent_id"] = before[0]

    def _stopped_at(self, rec: NodeRun, error: BaseException, ended: float | None = None) -> None:
        """A node stopped by a ``BaseException`` that is not an ``Exception``: the
        run was stopped while it ran, which the node did not do wrong. Recorded as a
        stop at the innermost node it passed (the run's end then records no other)."""
        run = rec.run
        known = run.node_errors.get(id(error))
        if known is not None and known[0] is error:
            return  # recorded at a node inside this one
        if len(run.node_errors) >= ERRORS_HELD:
            del run.node_errors[next(iter(run.node_errors))]
        run.node_errors[id(error)] = (error, rec.ns)
        run.stopped_at_node = True
        run.session.record(
            EventType.CHECKPOINT,
            agent_name=rec.agent,
            step_index=rec.step,
            parent_id=rec.event_id,
            module="langgraph.node",
            duration_ms=((ended or time.perf_counter()) - rec.started) * 1000.0,
            metadata={"langgraph_event": "stopped", "by": type(error).__name__, "node": rec.name},
        )
