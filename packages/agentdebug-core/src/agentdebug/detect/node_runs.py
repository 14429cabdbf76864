"""Which of a run's events a node's own code made: the node runs the run recorded
(a graph's node: its start and its end), and whether a model spoke in one before a
given event.

Rules that blame a node's code (:mod:`agentdebug.detect.coded`,
:mod:`agentdebug.detect.narrowed`) keep to node runs whose start was recorded (an
imported transcript's agent turn has none: what it did may be a model's) in which
no model had been called by then: the node's own, or one run under it (a
subgraph's node, ``sub/pick``, or a graph invoked inside it, at steps of their own).
"""

from __future__ import annotations

import bisect
from typing import Any

from agentdebug.schema import AgentEvent, EventType

MODEL_TYPES = frozenset({EventType.LLM_RESPONSE, EventType.LLM_CALL, EventType.REASONING})


class NodeRuns:
    """The run's node runs, read once."""

    def __init__(self, events: list[AgentEvent]) -> None:
        self._starts: dict[tuple[str | None, int], int] = {}  # (agent, step) -> its start
        self._asked: dict[str, list[int]] = {}  # agent -> where its model calls are
        inner: set[str] = set()
        for i, e in enumerate(events):
            name = e.agent_name
            if e.type is EventType.AGENT_START:
                self._starts[(name, e.step_index)] = i
            elif e.type in MODEL_TYPES and name:
                self._asked.setdefault(name, []).append(i)
            if name and "/" in name:
                inner.add(name)
        # agents that ran others under them (``sub`` of ``sub/pick``): their ends echo
        # the inner graph's state, not their own work
        self.outer = {n.rsplit("/", k)[0] for n in inner for k in range(1, n.count("/") + 1)}

    def started(self, event: AgentEvent, at: int) -> bool:
        """Whether the event at ``at`` belongs to a node run the run recorded the start
        of (before it)."""
        start = self._starts.get((event.agent_name, event.step_index))
        return start is not None and start < at

    def start_of(self, event: AgentEvent) -> int | None:
        """Where the start of the node run ``event`` belongs to is, if recorded."""
        return self._starts.get((event.agent_name, event.step_index))

    def wrote(self, event: AgentEvent, at: int) -> bool:
        """Whether the event at ``at`` is a step's own writing: anything but a node's
        end that echoes what others wrote (a node that ran a subgraph, or one whose
        model spoke before it ended: the model wrote it)."""
        if event.type is not EventType.AGENT_END:
            return True
        return event.agent_name not in self.outer and self.plain_until(event, at)

    def plain_until(self, event: AgentEvent, at: int) -> bool:
        """Whether the event at ``at`` belongs to a node run the run recorded the start
        of, in which no model had spoken by then (its own, or one run under it)."""
        name = event.agent_name
        if not name:
            return False
        start = self._starts.get((name, event.step_index))
        if start is None or start >= at:
            return False
        for agent, where in self._asked.items():
            if agent == name or agent.startswith(f"{name}/"):
                k = bisect.bisect_right(where, start)
                if k < len(where) and where[k] < at:
                    return False
        return True


def written_field(event: AgentEvent) -> str:
    """Where an event writes what it says: the user's input and a tool call's
    arguments in its ``input``, everything else in its ``output``."""
    return "input" if event.type in (EventType.USER_INPUT, EventType.TOOL_CALL) else "output"


def written(event: AgentEvent) -> Any:
    """What an event writes (:func:`written_field`)."""
    return event.input if written_field(event) == "input" else event.output
