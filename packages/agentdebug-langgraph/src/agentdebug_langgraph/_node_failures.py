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
  caller, without a node callback. A cancel that comes when the node's own run or
  idle limit has passed is that timeout: recorded as the node's error
  (``NodeTimeoutError``, mode ``system.timeout``), not as a stop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Timeout:
    """A node's timeout that fired: which limit, its length and the time taken (s)."""

    kind: str  # "run" or "idle"
    limit: float
    elapsed: float

    def error(self, node: str) -> ErrorInfo:
        """As LangGraph's ``NodeTimeoutError`` says it."""
        return ErrorInfo(
            type="NodeTimeoutError",
            message=(
                f"Node '{node}' exceeded its {self.kind} timeout of {self.limit:.3f}s "
                f"(elapsed: {self.elapsed:.3f}s)."
            ),
        )


def _seconds(value: Any) -> float | None:
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value) if isinstance(value, int | float) and value > 0 else None


def timeout_of(session_id: str, node: str, started: float, error: BaseException) -> Timeout | None:
    """The node's timeout, when ``error`` (a ``CancelledError`` at the node) is its
    watchdog's cancel (:func:`limit_passed`)."""
    if type(error).__name__ != "CancelledError":
        return None
    return limit_passed(session_id, node, started)


def limit_passed(session_id: str, node: str, started: float) -> Timeout | None:
    """The node's timeout if it has passed: the node (of the run's graph) has a
    ``TimeoutPolicy`` whose run limit it has run past, or an idle limit at most as
    long as the time it ran."""
    try:
        graph = live_graph(session_id)
        spec = graph.nodes.get(node) if graph is not None else None
        policy = getattr(spec, "timeout", None)
        if policy is None:
            return None
        elapsed = time.perf_counter() - started
        run_limit = _seconds(getattr(policy, "run_timeout", None))
        idle_limit = _seconds(getattr(policy, "idle_timeout", None))
        slack = 0.98  # (the watchdog's clock and ours start a moment apart)
        if run_limit is not None and elapsed >= run_limit * slack:
            return Timeout("run", run_limit, elapsed)
        if idle_limit is not None and elapsed >= idle_limit * slack:
            return Timeout("idle", idle_limit, elapsed)
    except Exception:  # a LangGraph that keeps them elsewhere: a stop, as before
        return None
    return None


class NodeFailureEvents(CaptureBase):
    """The events of nodes that failed otherwise than by raising: cut off by their
    timeout, handled by their error handler, stopped by the caller (a part of
    :class:`~agentdebug_langgraph.AgentDebugCallback`)."""

    def _handling(self, run: GraphRun, failed_ns: str, doc: dict[str, Any]) -> None:
        """A node's error handler starts: it names the failed attempt it handles, and
        goes under it. A failed node still running for the callback was cut off by
        its timeout, whose cancel has not come yet: its error is recorded first."""
        cut = self._by_ns.pop(failed_ns, None)
        if cut is not None:
            for key, rec in list(self._nodes.items()):
                if rec is cut:
                    del self._nodes[key]
            timeout = limit_passed(run.session.id, cut.name, cut.started)
            self._timed_out(cut, timeout)
        before = run.failed.pop(failed_ns, None)
        if before is not None and before[0] is not None:
            doc["metadata"][HANDLES] = doc["parent_id"] = before[0]

    def _timed_out(self, rec: NodeRun, timeout: Timeout | None) -> None:
        """A node cut off by its ``TimeoutPolicy``: its error (as LangGraph's
        ``NodeTimeoutError`` says it), and the attempt a retry or its error handler
        then names; the graph's own ``NodeTimeoutError`` is not recorded again."""
        run = rec.run
        if timeout is not None:
            error: Any = timeout.error(rec.name)
            meta: dict[str, Any] = {
                "node": rec.name,
                "langgraph_error": "node_timeout",
                FAILURE_MODE: "system.timeout",
                "timeout": timeout.limit,
                "timeout_kind": timeout.kind,
            }
        else:  # (cut off, for a reason LangGraph did not say)
            error = ErrorInfo(type="NodeError", message=f"node '{rec.name}' was cut off")
            meta = {"node": rec.name}
        event_id = run.session.record(
            EventType.ERROR,
            agent_name=rec.agent,
            step_index=rec.step,
            error=error,
            parent_id=rec.event_id,
            module="langgraph.node",
            duration_ms=(time.perf_counter() - rec.started) * 1000.0,
            metadata=meta,
        )
        run.failed[rec.ns] = (rec.event_id, run.attempts.pop(rec.ns, 1))
        run.timeouts[rec.name] = event_id

    def _stopped_at(self, rec: NodeRun, error: BaseException) -> None:
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
            duration_ms=(time.perf_counter() - rec.started) * 1000.0,
            metadata={"langgraph_event": "stopped", "by": type(error).__name__, "node": rec.name},
        )
