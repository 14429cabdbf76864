"""Steps: the events that share one step index, the unit attribution blames."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agentdebug.schema import AgentEvent, AgentTrajectory, EventType

#: Events that record what came to an agent, not what it decided: the user's
#: input, a tool's output, an observation. A step holding only these is no
#: agent's decision (the tool or the user spoke there).
NOT_DECISIONS = frozenset({EventType.USER_INPUT, EventType.TOOL_RESULT, EventType.OBSERVATION})


def is_decision(event: AgentEvent) -> bool:
    """Whether ``event`` is its agent's decision: not one of :data:`NOT_DECISIONS`,
    or what a sub-agent's run brought back into the run it is within (an
    observation or an error naming ``metadata["sub_run"]``: the sub-agent's work,
    which a diagnosis may blame on it)."""
    return event.type not in NOT_DECISIONS or bool(event.metadata.get("sub_run"))


class Granularity(StrEnum):
    """How much of a step a view shows."""

    FULL = "full"
    """Every event's whole content (inputs, outputs, errors)."""
    MEDIUM = "medium"
    """Intent, action and state change, in two to four short lines."""
    COARSE = "coarse"
    """One line: progress, key entities, open commitment."""


@dataclass(frozen=True)
class Step:
    """The events of one step index, in trajectory order.

    ``seen_inputs`` says, for each LLM-call event whose input is a message list,
    how many leading messages the previous LLM call of the same agent already
    had, and at which step that call was (None when it is the agent's first
    call). :func:`steps_of` fills it in so that a full rendering can show only the
    new messages; a step built by hand without it shows the last two messages of a
    long input, because which ones are new cannot be told.
    """

    index: int
    agent: str | None
    events: tuple[AgentEvent, ...]
    seen_inputs: Mapping[str, tuple[int, int | None]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def event_ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.events)

    @property
    def types(self) -> tuple[EventType, ...]:
        return tuple(e.type for e in self.events)

    @property
    def errors(self) -> tuple[AgentEvent, ...]:
        """The events of this step that carry an error."""
        return tuple(e for e in self.events if e.error is not None)


def is_message_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and ("role" in m or "content" in m) for m in value)
    )


def steps_of(trajectory: AgentTrajectory) -> list[Step]:
    """The trajectory's steps, in order of first appearance."""
    grouped: dict[int, list[AgentEvent]] = {}
    for event in trajectory.events:
        grouped.setdefault(event.step_index, []).append(event)

    previous: dict[str | None, tuple[list[Any], int]] = {}
    seen: dict[int, dict[str, tuple[int, int | None]]] = {}
    for event in trajectory.events:
        if event.type is not EventType.LLM_CALL or not is_message_list(event.input):
            continue
        messages: list[Any] = event.input
        before = previous.get(event.agent_name)
        if before is None:
            seen.setdefault(event.step_index, {})[event.id] = (0, None)
        else:
            earlier, step = before
            shared = 0
            for old, new in zip(earlier, messages, strict=False):
                if old != new:
                    break
                shared += 1
            seen.setdefault(event.step_index, {})[event.id] = (shared, step)
        previous[event.agent_name] = (messages, event.step_index)

    steps: list[Step] = []
    for index, events in grouped.items():
        agent = next((e.agent_name for e in events if e.agent_name), None)
        steps.append(
            Step(index=index, agent=agent, events=tuple(events), seen_inputs=seen.get(index, {}))
        )
    return steps
