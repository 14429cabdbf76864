"""The trace: what an agent did, as typed, versioned, immutable evidence.

A trajectory is written once (by capture or an importer) and then only read. Every
later stage (detection, attribution, recovery) produces its own objects that point
back at events by id; nothing writes into a trajectory after it is finished.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass

SCHEMA_VERSION = "1.0"


class EventType(StrEnum):
    """What kind of thing happened at one point of a run."""

    USER_INPUT = "user.input"
    AGENT_START = "agent.start"
    AGENT_END = "agent.end"
    LLM_CALL = "llm.call"
    LLM_RESPONSE = "llm.response"
    TOOL_CALL = "tool.call"
    TOOL_RESULT = "tool.result"
    REASONING = "reasoning"
    PLAN = "plan"
    MEMORY_READ = "memory.read"
    MEMORY_WRITE = "memory.write"
    HANDOFF = "handoff"
    MESSAGE = "message"
    UI_ACTION = "ui.action"
    OBSERVATION = "observation"
    FINAL_ANSWER = "final_answer"
    ERROR = "error"
    CHECKPOINT = "checkpoint"
    SPAN = "span"


class ErrorInfo(BaseModel):
    """An error attached to an event: what failed, as the framework reported it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message: str
    type: str | None = None
    traceback: str | None = None

    @classmethod
    def coerce(cls, value: Any) -> ErrorInfo | None:
        """Accept a string, an exception, a mapping or an ErrorInfo."""
        if value is None or isinstance(value, ErrorInfo):
            return value
        if isinstance(value, BaseException):
            return cls(message=str(value) or type(value).__name__, type=type(value).__name__)
        if isinstance(value, dict):
            return cls.model_validate(value)
        return cls(message=str(value))


class Artifact(BaseModel):
    """A file, screenshot or blob an event produced, by reference."""

    model_config = ConfigDict(frozen=True)

    name: str
    uri: str
    media_type: str | None = None


class CheckpointRef(BaseModel):
    """Where the framework keeps the state it could restore this step from."""

    model_config = ConfigDict(frozen=True)

    framework: str
    checkpoint_id: str
    thread_id: str | None = None
    namespace: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


@pydantic_dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class AgentEvent:
    """One thing that happened in a run.

    ``step_index`` is the position the run's own framework gives the step (for
    Who&When, the 0-based index into ``history``); attribution blames steps, so it
    is always set: capture numbers events in order when the caller gives none.

    ``error`` takes an :class:`ErrorInfo` or its dict form; use ``ErrorInfo.coerce``
    for strings and exceptions. (A coercing validator here would run for every
    event of every load and costs more than the rest of the validation.)

    A frozen, slotted pydantic dataclass rather than a model: a run can hold
    100,000 events, and without a ``__dict__`` and a fields-set per instance an
    event is a third of the objects, so loading a run is about twice as fast and
    the collector has a third as much to scan. The ``model_*`` methods below keep
    the model API that the rest of agentdebug (and users) call.
    """

    id: str
    type: EventType
    step_index: int = Field(ge=0)
    agent_name: str | None = None
    module: str | None = None
    parent_id: str | None = None
    timestamp: datetime | None = None
    duration_ms: float | None = Field(default=None, ge=0)
    input: Any = None
    output: Any = None
    error: ErrorInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    artifacts: tuple[Artifact, ...] = ()
    checkpoint: CheckpointRef | None = None

    @classmethod
    def model_validate(cls, data: Any) -> AgentEvent:
        return _EVENT.validate_python(data)

    @classmethod
    def model_validate_json(cls, data: str | bytes) -> AgentEvent:
        return _EVENT.validate_json(data)

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        return _EVENT.json_schema()

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def model_dump(self, **options: Any) -> dict[str, Any]:
        out: dict[str, Any] = _EVENT.dump_python(self, **options)
        return out

    def model_dump_json(self, **options: Any) -> str:
        return _EVENT.dump_json(self, **options).decode()

    def model_copy(self, *, update: dict[str, Any] | None = None) -> AgentEvent:
        return dataclasses.replace(self, **(update or {}))


_EVENT: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)


class OutcomeStatus(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    UNKNOWN = "unknown"
    RUNNING = "running"


class Outcome(BaseModel):
    """How the run ended, as far as anyone knows."""

    model_config = ConfigDict(frozen=True)

    status: OutcomeStatus = OutcomeStatus.UNKNOWN
    final_answer: Any = None
    error: ErrorInfo | None = None
    reason: str | None = None

    @field_validator("error", mode="before")
    @classmethod
    def _coerce_error(cls, value: Any) -> Any:
        return ErrorInfo.coerce(value)


class AgentInfo(BaseModel):
    """An agent that took part in the run."""

    model_config = ConfigDict(frozen=True)

    name: str
    role: str | None = None
    instructions: str | None = None
    tools: list[str] = Field(default_factory=list)


def utcnow() -> datetime:
    return datetime.now(UTC)


class AgentTrajectory(BaseModel):
    """A whole run: goal, agents, events in order, and how it ended."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    goal: str | None = None
    framework: str | None = None
    agents: list[AgentInfo] = Field(default_factory=list)
    events: list[AgentEvent] = Field(default_factory=list)
    outcome: Outcome = Field(default_factory=Outcome)
    reference_answer: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    parent_id: str | None = None
    branch_from_event_id: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    schema_version: str = SCHEMA_VERSION

    def event(self, event_id: str) -> AgentEvent | None:
        for event in self.events:
            if event.id == event_id:
                return event
        return None

    def agent_names(self) -> list[str]:
        """Agents in order of first appearance, declared ones first."""
        names: dict[str, None] = {a.name: None for a in self.agents}
        for event in self.events:
            if event.agent_name:
                names.setdefault(event.agent_name, None)
        return list(names)

    def steps(self) -> list[int]:
        return sorted({e.step_index for e in self.events})
