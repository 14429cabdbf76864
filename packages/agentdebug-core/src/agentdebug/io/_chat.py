"""What reading a chat transcript needs whatever API wrote it: where a message is
(for errors), the events built so far, and which of them is the final answer.
Used by :mod:`agentdebug.io.messages`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from agentdebug.errors import InputError
from agentdebug.io._common import check_size, line_of
from agentdebug.io.semconv import Fail
from agentdebug.limits import max_event_bytes
from agentdebug.schema import EventType
from agentdebug.stages import Source

#: Message fields read into events; any others are kept in ``metadata.fields``.
MESSAGE_FIELDS = frozenset(
    ["role", "content", "name", "tool_calls", "function_call", "tool_call_id"]
)


def arguments(raw: Any) -> tuple[Any, str | None]:
    """Parsed tool-call arguments; a malformed JSON string is kept as it is, with why."""
    if not isinstance(raw, str):
        return raw, None
    if not raw.strip():
        return {}, None
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError as exc:
        return raw, f"arguments are not valid JSON: {exc.msg} at column {exc.colno}"


@dataclass
class Message:
    """One message and where it is: its JSON path, step, and index in its list."""

    path: str
    step: int
    index: int | None  # its position in the list (None for the response's reply)
    body: Any


class Builder:
    """Collects events for one conversation, numbering and linking them."""

    def __init__(self, source: Source, line: int | None, per_line: bool = False) -> None:
        self.source = source
        self.name = source.name
        self.line = line  # the JSON Lines line holding the whole conversation
        self.per_line = per_line  # one message a line
        self.limit = max_event_bytes()
        self.events: list[dict[str, Any]] = []
        #: call id -> (event id, agent, tool name)
        self.call_ids: dict[str, tuple[str, str | None, str]] = {}
        self.system: list[str] = []
        self.goal: str | None = None
        self.agents: dict[str, None] = {}

    def where(self, at: Message) -> dict[str, Any]:
        """The message's line of a JSON Lines file, else its index in the document."""
        if self.line is None and self.per_line and at.index is not None:
            return {"lineno": line_of(self.source, at.index)}
        return {"lineno": self.line} if self.line is not None else {"record": at.index}

    def error(self, message: str, at: Message, field: str | None = None) -> InputError:
        return InputError(
            message,
            source=self.name,
            field=f"{at.path}.{field}".lstrip(".") if field else at.path or None,
            **self.where(at),
        )

    def fail(self, at: Message) -> Fail:
        return lambda message, field: self.error(message, at, field)

    def add(self, at: Message, field: str, **event: Any) -> dict[str, Any]:
        for key in ("input", "output", "metadata"):  # metadata: image parts can be big
            check_size(
                event.get(key),
                source=self.name,
                field=f"{at.path}.{field}".lstrip("."),
                limit=self.limit,
                **self.where(at),
            )
        event["step_index"] = at.step
        self.events.append(event)
        return event


def extra_fields(message: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v for k, v in message.items() if k not in MESSAGE_FIELDS and v not in (None, "", [], {})
    }


def mark_final(events: list[dict[str, Any]]) -> str | None:
    """Turn the last assistant text into FINAL_ANSWER unless a tool call comes after it."""
    for data in reversed(events):
        if data["type"] is EventType.TOOL_CALL:
            return None
        if data["type"] is EventType.LLM_RESPONSE:
            if not data.get("output"):
                return None
            data["type"] = EventType.FINAL_ANSWER
            return str(data["output"])
    return None
