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
from pydantic_core import CoreConfig, CoreSchema, SchemaValidator, core_schema

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


@pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class AgentEvent:
    """One thing that happened in a run.

    ``step_index`` is the position the run's own framework gives the step (for
    Who&When, the 0-based index into ``history``); attribution blames steps, so it
    is always set: capture numbers events in order when the caller gives none.

    ``error`` takes an :class:`ErrorInfo` or its dict form; use ``ErrorInfo.coerce``
    for strings and exceptions.
    """

    # A coercing validator for ``error`` would run for every event of every load
    # and cost more than the rest of the validation.
    #
    # A frozen pydantic dataclass rather than a model: a run can hold 100,000
    # events, and without a fields-set per instance an event is fewer objects. An
    # event read back from a store (``events_from_json``) keeps in its ``__dict__``
    # only the fields its stored document has (stores write events without their
    # defaults); the others are read from the class, where every optional field's
    # default is set. That spares pydantic filling in and setting ten defaults per
    # event, the larger part of loading a run. So ``vars()`` of a loaded event, and
    # orjson, which writes a dataclass from its ``__dict__``, show only the stored
    # fields (the rest are their defaults); pydantic's dumps show them all. An
    # event made by its constructor keeps only its non-default fields too
    # (``__post_init__``), so both look alike. The ``model_*`` methods below keep
    # the model API that agentdebug (and users) call.

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

    def __post_init__(self) -> None:
        # Only the fields that differ from their defaults stay in ``__dict__``, as
        # in a loaded event: the rest are read from the class (half the memory).
        d = self.__dict__
        kept = {k: v for k, v in d.items() if v is not None}
        if not kept.get("metadata", True):
            del kept["metadata"]
        if not kept.get("artifacts", True):
            del kept["artifacts"]
        object.__setattr__(self, "__dict__", kept)

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
_EVENTS: TypeAdapter[list[AgentEvent]] = TypeAdapter(list[AgentEvent])


class ReadOnlyDict(dict[str, Any]):
    """The metadata of a loaded event that has none: one empty dict shared by all
    such events, so it refuses to be changed (an event is evidence, and a change
    here would show in every one of them). Any copy of it is an ordinary dict."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:  # dict(...)-style construction, as copies make: a plain dict
            return dict(*args, **kwargs)
        return super().__new__(cls)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("the metadata of a recorded event cannot be changed")

    __setitem__ = __delitem__ = __ior__ = _refuse
    setdefault = update = pop = popitem = clear = _refuse

    def copy(self) -> dict[str, Any]:
        return {}

    def __copy__(self) -> dict[str, Any]:
        return {}

    def __deepcopy__(self, memo: Any) -> dict[str, Any]:
        return {}


def _stored_event_fields() -> tuple[CoreSchema, dict[str, Any]]:
    """The schema of a stored event document, and the defaults of its optional fields.

    Derived from AgentEvent's own schema, field by field, so a stored event is
    validated exactly as the dataclass validates one; only a field left out is
    left out (not filled in), and is read from the class instead.
    """
    schema: Any = _EVENT.core_schema
    definitions = None
    if schema["type"] == "definitions":
        definitions, schema = schema["definitions"], schema["schema"]
    fields: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for field in schema["schema"]["fields"]:
        name, inner = field["name"], field["schema"]
        if inner["type"] != "default":
            fields[name] = core_schema.typed_dict_field(inner, required=True)
            continue
        fields[name] = core_schema.typed_dict_field(inner["schema"], required=False)
        if "default" in inner:
            defaults[name] = inner["default"]
        elif inner.get("default_factory") is dict:
            defaults[name] = ReadOnlyDict()
        else:  # a new field with another factory needs a shared, immutable default here
            raise TypeError(f"AgentEvent.{name}: no shared default for its default_factory")
    shape: CoreSchema = core_schema.list_schema(
        core_schema.typed_dict_schema(fields, extra_behavior="forbid")
    )
    if definitions is not None:
        shape = core_schema.definitions_schema(shape, definitions)
    return shape, defaults


_STORED_SCHEMA, _DEFAULTS = _stored_event_fields()
for _name, _value in _DEFAULTS.items():
    setattr(AgentEvent, _name, _value)  # where a loaded event's absent fields are read
# Strings are not interned while parsing: an event's id, payloads and timestamps are
# almost all unique, and looking each up in pydantic's string cache costs about 7%
# of loading a run.
_STORED = SchemaValidator(_STORED_SCHEMA, CoreConfig(cache_strings="keys"))


def _event_of(
    fields: dict[str, Any], _new: Any = object.__new__, _set: Any = object.__setattr__
) -> AgentEvent:
    event: AgentEvent = _new(AgentEvent)
    _set(event, "__dict__", fields)
    return event


def events_from_json(data: str | bytes) -> list[AgentEvent]:
    """Events from a JSON array of event documents (as stores keep them), each
    validated as :class:`AgentEvent` validates one. Raises ``ValidationError``."""
    return list(map(_event_of, _STORED.validate_json(data)))


def events_from_python(docs: Any) -> list[AgentEvent]:
    """:func:`events_from_json` for documents already parsed (dicts; events pass)."""
    if isinstance(docs, list) and any(isinstance(d, AgentEvent) for d in docs):
        return _EVENTS.validate_python(docs)
    return list(map(_event_of, _STORED.validate_python(docs)))


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
    # what stopped the run before it ended (its caller closing the stream, a cancel,
    # Ctrl-C: ``GeneratorExit``, ...): its status is unknown, and with no fault
    # found in it nothing is attributed
    stopped_by: str | None = None

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


def aware(value: datetime) -> datetime:
    """``value`` with a zone: a naive time is read as UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


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

    @field_validator("started_at", "ended_at")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        """In UTC; a time with no zone (an export's ``2026-12-01T10:00:00``) is UTC:
        both stores, ``list``, ``--since`` and ``prune --older-than`` then read and
        show it alike."""
        return aware(value).astimezone(UTC) if value is not None else None

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

    def step_order(self) -> list[int]:
        """The events' positions in the order a reader follows the run: as
        recorded, except that a tool call filed under an earlier step (the model
        answer that asked for it), though recorded as the next node ran it, comes
        right after that step's events recorded before it rather than among the
        next step's. Nothing else moves: a node's end after the nodes of the
        subgraph it ran, or a final answer an earlier step gave, stays where it
        happened."""
        events = self.events
        order: list[int] = []
        for i, event in enumerate(events):
            step = event.step_index
            if event.type is EventType.TOOL_CALL and order and events[order[-1]].step_index > step:
                at = len(order)
                while at > 0 and events[order[at - 1]].step_index > step:
                    at -= 1
                order.insert(at, i)
            else:
                order.append(i)
        return order
