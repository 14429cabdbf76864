"""agentdebug: capture a failing agent run, find the step that caused it, fix and rerun.

from agentdebug import AgentDebug, EventType
dbg = AgentDebug()
with dbg.trace(goal="Book flight", framework="my-agent") as t:
    t.record(EventType.PLAN, agent_name="planner", output="Search fares")
    report = t.analyze()
"""

from __future__ import annotations

from typing import Any

from agentdebug.capture import AgentDebug, TraceSession, current_session
from agentdebug.capture.current import current_run
from agentdebug.plugins import hookimpl
from agentdebug.schema import (
    AgentEvent,
    AgentInfo,
    AgentTrajectory,
    DiagnosticReport,
    ErrorInfo,
    EventType,
    Evidence,
    Finding,
    Fix,
    Hypothesis,
    Outcome,
    OutcomeStatus,
    Severity,
)

__version__ = "0.1.0"


def record(type: EventType | str, **fields: Any) -> str | None:
    """Record an event into the current session; does nothing outside one. Inside a
    LangGraph node the graph's run is current: the event is the node's (its agent,
    step and start event) unless the fields say otherwise."""
    found = current_run()
    if found is None:
        return None
    session, defaults = found
    for key, value in defaults.items():
        fields.setdefault(key, value)
    return session.record(type, **fields)


__all__ = [
    "AgentDebug",
    "AgentEvent",
    "AgentInfo",
    "AgentTrajectory",
    "DiagnosticReport",
    "ErrorInfo",
    "EventType",
    "Evidence",
    "Finding",
    "Fix",
    "Hypothesis",
    "Outcome",
    "OutcomeStatus",
    "Severity",
    "TraceSession",
    "__version__",
    "current_session",
    "hookimpl",
    "record",
]
