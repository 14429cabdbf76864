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

from agentdebug.detect import signals
from agentdebug.schema import ErrorInfo

from agentdebug_langgraph._live import live_graph

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
