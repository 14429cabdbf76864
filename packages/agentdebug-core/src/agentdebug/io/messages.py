"""OpenAI-style chat transcripts: a list of ``{role, content, tool_calls?, ...}`` messages.

Accepted shapes: a JSON array of messages; an object ``{"messages": [...], "goal"?,
"metadata"?, "id"?, "framework"?, "reference_answer"?}``; JSON Lines with one
message per line (one conversation) or one conversation object per line (one run
each).

Each message is one step (``step_index`` = its position in the list, system
messages included, so a step number points back at the user's own list). System
messages become the agent's instructions, not events. An assistant message with
tool calls yields one TOOL_CALL event per call (after an LLM_RESPONSE for any text
it carries); a tool message yields a TOOL_RESULT whose ``parent_id`` is the call
with the same ``tool_call_id``. The last assistant text, when no tool call follows
it, is the FINAL_ANSWER.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
from pydantic import ValidationError

from agentdebug.errors import InputError
from agentdebug.io._common import check_size, from_validation_error, type_name
from agentdebug.limits import max_event_bytes
from agentdebug.schema import AgentEvent, AgentInfo, AgentTrajectory, EventType, Outcome
from agentdebug.stages import ImportedRun, Source

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
DEFAULT_AGENT = "assistant"


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("role") in ROLES


def _sniff_list(items: Sequence[Any]) -> str | None:
    if not items:
        return "empty list"
    if not all(isinstance(m, Mapping) for m in items):
        return "list items are not all objects"
    missing = next((i for i, m in enumerate(items) if "role" not in m), None)
    if missing is not None:
        return f"record {missing}: no field 'role'"
    bad = next((i for i, m in enumerate(items) if m.get("role") not in ROLES), None)
    if bad is not None:
        return (
            f"record {bad}, field 'role': {items[bad]['role']!r} is not a message role "
            f"({', '.join(sorted(ROLES))})"
        )
    return None


class MessagesImporter:
    """Reads OpenAI-style chat message lists."""

    name = "messages"
    description = "OpenAI-style chat messages (system/user/assistant/tool, with tool calls)"

    def sniff(self, source: Source) -> str | None:
        doc = source.document
        if source.records is not None:
            records = source.records
            if records and all(
                isinstance(r, Mapping) and isinstance(r.get("messages"), list) for r in records
            ):
                return None
            return _sniff_list(records)
        if isinstance(doc, list):
            return _sniff_list(doc)
        if isinstance(doc, Mapping):
            messages = doc.get("messages")
            if not isinstance(messages, list):
                return "no 'messages' list"
            if messages and not any(_is_message(m) for m in messages):
                return "'messages' holds no {role, content} objects"
            return None
        return "not a JSON list or object"

    def load(self, source: Source) -> Iterator[ImportedRun]:
        stem = source.path.stem
        if source.records is not None:
            records = source.records
            if all(isinstance(r, Mapping) and "messages" in r for r in records):
                for number, record in enumerate(records, start=1):
                    assert isinstance(record, Mapping)
                    yield _conversation(
                        record, source, default_id=f"messages-{stem}-{number}", record=number
                    )
                return
            yield _conversation(
                {"messages": records}, source, default_id=f"messages-{stem}", record=None, prefix=""
            )
            return
        doc = source.document
        if isinstance(doc, list):
            yield _conversation(
                {"messages": doc}, source, default_id=f"messages-{stem}", record=None, prefix=""
            )
        else:
            assert isinstance(doc, Mapping)
            yield _conversation(doc, source, default_id=f"messages-{stem}", record=None)


def text_of(content: Any) -> tuple[str | None, list[Any]]:
    """The text of a message's content, and any parts that are not text."""
    if content is None or isinstance(content, str):
        return content, []
    if isinstance(content, list):
        texts: list[str] = []
        others: list[Any] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and part.get("type") in (
                "text",
                "input_text",
                "output_text",
            ):
                texts.append(str(part.get("text", "")))
            else:
                others.append(part)
        return ("\n".join(texts) if texts else None), others
    raise TypeError(f"expected a string or a list of parts, got {type_name(content)}")


def _arguments(raw: Any) -> tuple[Any, str | None]:
    """Parsed tool-call arguments; a malformed JSON string is kept as it is, with why."""
    if not isinstance(raw, str):
        return raw, None
    if not raw.strip():
        return {}, None
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError as exc:
        return raw, f"arguments are not valid JSON: {exc.msg} at column {exc.colno}"


class _Builder:
    """Collects events for one conversation, numbering and linking them."""

    def __init__(self, name: str, record: int | None, prefix: str) -> None:
        self.name = name
        self.record = record
        self.prefix = prefix
        self.limit = max_event_bytes()
        self.events: list[dict[str, Any]] = []
        self.call_ids: dict[str, tuple[str, str | None]] = {}

    def where(self, index: int, field: str | None = None) -> str:
        path = f"{self.prefix}[{index}]"
        return f"{path}.{field}" if field else path

    def error(self, message: str, index: int, field: str | None = None) -> InputError:
        record = self.record if self.record is not None else index
        return InputError(message, source=self.name, record=record, field=self.where(index, field))

    def add(self, index: int, field: str, **event: Any) -> dict[str, Any]:
        for key in ("input", "output", "metadata"):  # metadata: image parts can be big
            check_size(
                event.get(key),
                source=self.name,
                record=self.record if self.record is not None else index,
                field=self.where(index, field),
                limit=self.limit,
            )
        event["step_index"] = index
        self.events.append(event)
        return event


def _conversation(
    doc: Mapping[str, Any],
    source: Source,
    *,
    default_id: str,
    record: int | None,
    prefix: str = "messages",
) -> ImportedRun:
    name = source.name
    messages = doc.get("messages")
    if not isinstance(messages, list):
        raise InputError(
            f"expected a list, got {type_name(messages)}",
            source=name,
            record=record,
            field="messages",
        )
    if not messages:
        raise InputError(
            "no events: the message list is empty", source=name, record=record, field=prefix or None
        )
    b = _Builder(name, record, prefix)
    system: list[str] = []
    goal = doc.get("goal") if isinstance(doc.get("goal"), str) else None
    agent_names: dict[str, None] = {}

    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise b.error(f"expected a message object, got {type_name(message)}", index)
        role = message.get("role")
        if role not in ROLES:
            problem = "missing" if role is None else f"unknown role {role!r}"
            raise b.error(problem, index, "role")
        try:
            text, parts = text_of(message.get("content"))
        except TypeError as exc:
            raise b.error(str(exc), index, "content") from None
        meta: dict[str, Any] = {"role": role}
        if parts:
            meta["content_parts"] = parts
        speaker = message.get("name") if isinstance(message.get("name"), str) else None

        if role in ("system", "developer"):
            if text:
                system.append(text)
            continue
        if role == "user":
            if goal is None and text:
                goal = text
            if speaker:
                meta["name"] = speaker
            b.add(
                index,
                "content",
                id=f"m{index}",
                type=EventType.USER_INPUT,
                output=text,
                metadata=meta,
            )
            continue
        if role == "assistant":
            agent = speaker or DEFAULT_AGENT
            agent_names.setdefault(agent, None)
            calls = message.get("tool_calls")
            legacy = message.get("function_call")
            if calls is None and isinstance(legacy, Mapping):
                calls = [{"id": None, "type": "function", "function": legacy}]
            if calls is not None and not isinstance(calls, list):
                raise b.error(f"expected a list, got {type_name(calls)}", index, "tool_calls")
            response_id: str | None = None
            if text or not calls:
                response_id = f"m{index}"
                b.add(
                    index,
                    "content",
                    id=response_id,
                    type=EventType.LLM_RESPONSE,
                    agent_name=agent,
                    output=text,
                    metadata=meta,
                )
            for j, call in enumerate(calls or []):
                field = f"tool_calls[{j}]"
                if not isinstance(call, Mapping):
                    raise b.error(
                        f"expected a tool call object, got {type_name(call)}", index, field
                    )
                function = call.get("function")
                if not isinstance(function, Mapping):
                    raise b.error(
                        "missing"
                        if function is None
                        else f"expected an object, got {type_name(function)}",
                        index,
                        f"{field}.function",
                    )
                tool = function.get("name")
                if not isinstance(tool, str) or not tool:
                    raise b.error("missing tool name", index, f"{field}.function.name")
                args, args_problem = _arguments(function.get("arguments"))
                call_meta: dict[str, Any] = {"role": role, "tool_name": tool}
                call_id = call.get("id")
                if call_id is not None:
                    call_meta["tool_call_id"] = call_id
                if args_problem:
                    call_meta["arguments_error"] = args_problem
                event_id = f"m{index}.{j}"
                b.add(
                    index,
                    f"{field}.function.arguments",
                    id=event_id,
                    type=EventType.TOOL_CALL,
                    agent_name=agent,
                    parent_id=response_id,
                    input=args,
                    metadata=call_meta,
                )
                b.call_ids[str(call_id) if call_id is not None else f"legacy:{tool}"] = (
                    event_id,
                    agent,
                )
            continue
        # tool / function results
        call_id = message.get("tool_call_id")
        key = str(call_id) if call_id is not None else f"legacy:{speaker}"
        parent = b.call_ids.get(key)
        if call_id is not None:
            meta["tool_call_id"] = call_id
        if speaker:
            meta["tool_name"] = speaker
        if parent is None:
            meta["unmatched_tool_call"] = True
        b.add(
            index,
            "content",
            id=f"m{index}",
            type=EventType.TOOL_RESULT,
            agent_name=parent[1] if parent else None,
            parent_id=parent[0] if parent else None,
            output=text,
            metadata=meta,
        )

    if not b.events:
        raise InputError(
            "no events: only system messages", source=name, record=record, field=prefix or None
        )
    final_answer = _mark_final(b.events)
    events: list[AgentEvent] = []
    for data in b.events:
        try:
            events.append(AgentEvent.model_validate(data))
        except ValidationError as exc:  # pragma: no cover - fields are built above
            raise from_validation_error(
                exc, source=name, record=record, prefix=f"{prefix}[{data['step_index']}]"
            ) from None

    instructions = "\n\n".join(system) or None
    agents = [AgentInfo(name=a, instructions=instructions) for a in agent_names]
    metadata = dict(doc.get("metadata") or {}) if isinstance(doc.get("metadata"), Mapping) else {}
    if instructions:
        metadata.setdefault("system_prompt", instructions)
    metadata.setdefault("source_file", source.path.name)
    traj_id = doc.get("id") if isinstance(doc.get("id"), str) and doc.get("id") else default_id
    try:
        trajectory = AgentTrajectory(
            id=traj_id,
            goal=goal,
            framework=doc.get("framework") if isinstance(doc.get("framework"), str) else None,
            agents=agents,
            events=events,
            outcome=Outcome(final_answer=final_answer),
            reference_answer=doc.get("reference_answer")
            if isinstance(doc.get("reference_answer"), str)
            else None,
            metadata=metadata,
        )
    except ValidationError as exc:
        raise from_validation_error(exc, source=name, record=record) from None
    return ImportedRun(trajectory=trajectory)


def _mark_final(events: list[dict[str, Any]]) -> str | None:
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
