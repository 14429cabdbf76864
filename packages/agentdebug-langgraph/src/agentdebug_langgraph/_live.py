"""What lives beside the callbacks, process-wide: the shared default debugger, the
graphs that made recent runs (for reruns in this process), and which callback
records a rerun branch while it runs."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from agentdebug import AgentDebug

# run id -> the compiled graph that made it, for the last LIVE_KEPT runs (a service
# that keeps one graph would otherwise list every run it ever made)
_LIVE_GRAPHS: OrderedDict[str, weakref.ref[Any]] = OrderedDict()
# run id -> the success check that judged it, for as many runs: a check defined in a
# script, a lambda or a closure has no importable name, and a rerun in this process
# must still be judged by it
_LIVE_CHECKS: OrderedDict[str, Any] = OrderedDict()
LIVE_KEPT = 1024
_default: AgentDebug | None = None
# the callback recording a rerun branch, while the branch runs (see recording_branch)
BRANCH_RECORDER: ContextVar[Any] = ContextVar("agentdebug_langgraph_branch", default=None)


def default_debugger() -> AgentDebug:
    """One debugger (store and writer thread) shared by every callback that is not
    given its own, so that many callbacks do not mean many writer threads."""
    global _default
    if _default is None:
        _default = AgentDebug()
    return _default


@contextmanager
def recording_branch(callback: Any) -> Iterator[None]:
    """While a rerun branch runs, only ``callback`` (the executor's) records it: a
    callback the user bound into the graph (``graph.with_config(callbacks=[cb])``)
    sees the branch too, and would record it again as a run of its own."""
    token = BRANCH_RECORDER.set(callback)
    try:
        yield
    finally:
        BRANCH_RECORDER.reset(token)


def live_graph(run_id: str) -> Any:
    """The compiled graph that made run ``run_id`` (one of the last ``LIVE_KEPT``),
    while it is alive in this process."""
    ref = _LIVE_GRAPHS.get(run_id)
    return ref() if ref is not None else None


def note_graph(run_id: str, graph: Any) -> None:
    try:
        _LIVE_GRAPHS[run_id] = weakref.ref(graph)
    except TypeError:  # not weakly referenceable: not kept
        return
    while len(_LIVE_GRAPHS) > LIVE_KEPT:
        _LIVE_GRAPHS.popitem(last=False)


def live_check(run_id: str) -> Any:
    """The success check that judged run ``run_id`` (one of the last ``LIVE_KEPT``
    in this process), or None."""
    return _LIVE_CHECKS.get(run_id)


def note_check(run_id: str, check: Any) -> None:
    _LIVE_CHECKS[run_id] = check
    while len(_LIVE_CHECKS) > LIVE_KEPT:
        _LIVE_CHECKS.popitem(last=False)
