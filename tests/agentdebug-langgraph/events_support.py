"""Reading a captured run's events in the capture tests, and running a graph as
the test is parametrized to (``invoke`` or ``ainvoke``)."""

from __future__ import annotations

import asyncio
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


def run_as(how: str, graph: Any, inputs: Any, config: Any) -> Any:
    """``graph.invoke``, or (``how="ainvoke"``) ``graph.ainvoke`` on an event loop
    of its own, as an async app runs it."""
    if how == "ainvoke":
        return asyncio.run(graph.ainvoke(inputs, config))
    return graph.invoke(inputs, config)
