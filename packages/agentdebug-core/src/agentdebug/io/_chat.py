"""What reading a chat transcript needs whatever API wrote it: where a message is
(for errors), the events built so far, and which of them is the final answer.
Used by :mod:`agentdebug.io.messages`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from agentdebug.errors import InputError
from agentdebug.io._common import check_size, line_of, type_name
from agentdebug.io.semconv import MEDIA_PARTS, REASONING_PARTS, TEXT_PARTS, Fail, Thought
from agentdebug.limits import max_event_bytes
from agentdebug.schema import EventType, OutcomeStatus
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


#: Message fields in which other APIs give an assistant's reasoning as text:
#: DeepSeek's and vLLM's ``reasoning_content``, Ollama's ``thinking``, OpenRouter's
#: ``reasoning`` (with ``reasoning_details``, the same in parts).
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def thought_meta(thought: Thought, meta: dict[str, Any] | None) -> dict[str, Any]:
    """A REASONING event's metadata: the message's (``meta``, for its only event),
    the block's other fields (a signature, ...), and whether only its encrypted
    form was given."""
    out: dict[str, Any] = dict(meta) if meta is not None else {"role": "assistant"}
    if thought.fields:
        out["part_fields"] = thought.fields
    if not thought.text:
        out["encrypted"] = True
    return out


def message_reasoning(extra: dict[str, Any]) -> list[Thought]:
    """What an assistant message's own fields say it thought, as thinking blocks
    are read; the fields read are taken out of ``extra`` (the message's fields not
    read otherwise). OpenRouter's ``reasoning_details`` are read only without a
    ``reasoning`` text (they say the same); a detail with no text (an encrypted
    one) is reasoning kept encrypted."""
    thoughts: list[Thought] = []
    for name in REASONING_FIELDS:
        if isinstance(extra.get(name), str):
            text = extra.pop(name)  # (vLLM sends one text in two fields: kept once)
            if all(t.text != text for t in thoughts):
                thoughts.append(Thought(text, name, {}))
    details = extra.get("reasoning_details")
    if (
        thoughts
        or not isinstance(details, list)
        or not all(isinstance(d, Mapping) for d in details)
    ):
        return thoughts
    for k, detail in enumerate(extra.pop("reasoning_details")):
        key = next((t for t in ("text", "summary") if isinstance(detail.get(t), str)), None)
        rest = {f: v for f, v in detail.items() if f != key}
        thoughts.append(Thought(detail[key] if key else "", f"reasoning_details[{k}]", rest))
    return thoughts


_PART_TYPES = TEXT_PARTS | MEDIA_PARTS | REASONING_PARTS | {"refusal"}


def server_output(kind: Any, content: Any) -> bool:
    """Whether a result block is an Anthropic server tool's whose content is the
    tool's own objects (``web_search_result`` items, a ``code_execution_result``,
    a ``web_search_tool_result_error``, ...), not content parts: kept whole as
    the result's output."""
    if kind == "tool_result" or content is None or isinstance(content, str):
        return False
    parts = content if isinstance(content, list) else [content]
    return any(
        isinstance(p, Mapping) and isinstance(p.get("type"), str) and p["type"] not in _PART_TYPES
        for p in parts
    )


def server_error(content: Any) -> dict[str, Any] | None:
    """A server tool's error object (``web_search_tool_result_error``, ...) as an
    event error: its ``error_code`` and type; None when it is no error."""
    if not isinstance(content, Mapping) or not str(content.get("type", "")).endswith("_error"):
        return None
    code = content.get("error_code")
    return {"message": str(code) if code else "the tool reported an error", "type": content["type"]}


#: Other words exports use for how a run ended.
_STATUS_WORDS = {
    **dict.fromkeys(("failed", "fail", "error", "errored"), "failure"),
    **dict.fromkeys(("succeeded", "successful", "ok", "passed", "pass"), "success"),
}


def read_outcome(raw: Any, fail: Fail) -> tuple[dict[str, Any], dict[str, Any]]:
    """A transcript's own ``outcome`` (``{"status", "reason"?, "error"?}``, or the
    status alone as a string) as the run's outcome fields, and its other fields;
    ``fail(message, field)`` makes the error naming a bad field."""
    if isinstance(raw, str):
        raw = {"status": raw}
    if not isinstance(raw, Mapping):
        raise fail(f"expected an object {{status, reason?}}, got {type_name(raw)}", "outcome")
    status = raw.get("status")
    statuses = [s.value for s in OutcomeStatus]
    said = (
        _STATUS_WORDS.get(status.strip().lower(), status.strip().lower())
        if isinstance(status, str)
        else None
    )
    if said in statuses:
        status = said
    elif status is not None:
        raise fail(f"{status!r} is not an outcome status ({', '.join(statuses)})", "outcome.status")
    for key in ("reason", "stopped_by"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise fail(f"expected a string, got {type_name(raw[key])}", f"outcome.{key}")
    known = {"status", "reason", "error", "final_answer", "stopped_by"}
    read = {k: v for k, v in raw.items() if k in known and v is not None}
    if status is not None:
        read["status"] = status
    return read, {k: v for k, v in raw.items() if k not in known}
