"""Reading a captured run's events in the capture tests."""

from __future__ import annotations

from typing import Any

from agentdebug import AgentTrajectory, EventType


def of_type(run: AgentTrajectory, kind: EventType) -> list[Any]:
    return [e for e in run.events if e.type is kind]


def starts(run: AgentTrajectory) -> dict[str, list[Any]]:
    """The run's node starts, by agent name."""
    out: dict[str, list[Any]] = {}
    for event in of_type(run, EventType.AGENT_START):
        out.setdefault(event.agent_name, []).append(event)
    return out
