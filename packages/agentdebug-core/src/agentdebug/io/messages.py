"""Chat transcripts: OpenAI- and Anthropic-style lists of ``{role, content, ...}`` messages.

Accepted shapes: a JSON array of messages; an object ``{"messages": [...], "goal"?,
"metadata"?, "id"?, "framework"?, "reference_answer"?, "system"?, "model"?,
"tools"?, "choices"?}`` (an OpenAI request saved with its response: the reply in
``choices[0].message`` is the last message); JSON Lines with one message per line
(one conversation) or one conversation object per line (one run each; a line
that cannot be read is reported, by its number, after the others are read). The
OpenAI Responses API's items (a list of them, or ``{input, output, instructions}``)
are read as the chat messages they stand for (:mod:`agentdebug.io.responses`).

Each message is one step (``step_index`` = its position in the list, system
messages included, so a step number points back at the user's own list). System
and developer messages (and an Anthropic top-level ``system``) become the agent's
instructions and ``metadata.system_prompt``, not events. An assistant message with
tool calls (OpenAI ``tool_calls`` or Anthropic ``tool_use`` blocks) yields one
TOOL_CALL event per call (after an LLM_RESPONSE for any text it carries); a tool
message or an Anthropic ``tool_result`` block yields a TOOL_RESULT whose
``parent_id`` is the call with the same id (``is_error: true`` becomes the
result's error); an Anthropic server tool's result in the assistant's own message
(``web_search_tool_result``, ...) follows its call, its objects kept whole as the
output. Thinking blocks, and an assistant's ``reasoning_content``, ``thinking``,
``reasoning`` or ``reasoning_details`` fields, become REASONING events (reasoning
given only encrypted: one with no text and ``metadata.encrypted``). The last
assistant text, when no tool call follows it, is the FINAL_ANSWER. A numeric
``id`` is the run's id as text; an ``outcome`` ({status, reason?}) the run's.

Nothing is passed over in silence: images, audio and files are kept in
``metadata.content_parts``, a part's fields not read (citations, annotations, a
signature) in ``metadata.part_fields``, message and conversation fields not read
into an event in ``metadata.fields``, and a content part of a type not known here
is an error naming it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.io import responses
from agentdebug.io._chat import (
    Builder,
    Message,
    arguments,
    extra_fields,
    mark_final,
    message_reasoning,
    read_outcome,
    server_error,
    server_output,
    thought_meta,
)
from agentdebug.io._common import (
    exchange,
    from_validation_error,
    line_of,
    response_reply,
    tool_names,
    type_name,
)
from agentdebug.io.semconv import Content, read_content
from agentdebug.schema import AgentEvent, AgentInfo, AgentTrajectory, EventType, Outcome
from agentdebug.stages import ImportedRun, Source

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
DEFAULT_AGENT = "assistant"

CONVERSATION_FIELDS = frozenset(
    [
        "messages",
        "goal",
        "metadata",
        "id",
        "framework",
        "reference_answer",
        "system",
        "model",
        "tools",
        "choices",
        "input",
        "output",
        "instructions",
        "outcome",
    ]
)


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("role") in ROLES


def _conversation_lines(records: Sequence[Any]) -> bool:
    """Whether JSON Lines hold one conversation object per line (not one message)."""
    return any(
        isinstance(r, Mapping) and ("messages" in r or responses.conversation(r) is not None)
        for r in records
    ) and not any(_is_message(r) for r in records)


def _sniff_list(items: Sequence[Any], lines: Source | None = None) -> str | None:
    """Why ``items`` (a JSON array, or the ``lines`` of a JSON Lines file) are no
    message list; None when they are."""
    if not items:
        return "empty list"
    if not all(isinstance(m, Mapping) for m in items):
        return "list items are not all objects"
    if responses.looks_like_items(items):  # (OpenAI Responses API items)
        return None

    def at(i: int) -> str:
        return f"line {line_of(lines, i)}" if lines else f"record {i}"

    missing = next((i for i, m in enumerate(items) if "role" not in m), None)
    if missing is not None:
        return f"{at(missing)}: no field 'role'"
    bad = next((i for i, m in enumerate(items) if m.get("role") not in ROLES), None)
    if bad is not None:
        return (
            f"{at(bad)}, field 'role': {items[bad]['role']!r} is not a message role "
            f"({', '.join(sorted(ROLES))})"
        )
    return None


class MessagesImporter:
    """Reads OpenAI- and Anthropic-style chat message lists."""

    name = "messages"
    description = (
        "chat messages (OpenAI or Anthropic style: system/user/assistant/tool, with tool calls)"
    )

    def sniff(self, source: Source) -> str | None:
        doc = source.document
        if source.records is not None:
            if _conversation_lines(source.records):
                return None
            return _sniff_list(source.records, source)
        if isinstance(doc, list):
            return _sniff_list(doc)
        if isinstance(doc, Mapping):
            doc = exchange(doc)
            messages = doc.get("messages")
            if not isinstance(messages, list):
                if responses.conversation(doc) is not None:
                    return None
                return "no 'messages' list (nor a Responses API 'input' or 'output' list)"
            if messages and not any(_is_message(m) for m in messages):
                return "'messages' holds no {role, content} objects"
            return None
        return "not a JSON list or object"

    def load(self, source: Source) -> Iterator[ImportedRun]:
        stem = source.path.stem
        if source.records is not None:
            records = source.records
            if _conversation_lines(records):
                yield from _conversations(records, source)
                return
            yield _conversation(
                {"messages": records}, source, default_id=f"messages-{stem}", line=None, prefix=""
            )  # (one message a line: an error names the message's line)
            return
        doc = source.document
        if isinstance(doc, list):
            yield _conversation(
                {"messages": doc}, source, default_id=f"messages-{stem}", line=None, prefix=""
            )
        else:
            assert isinstance(doc, Mapping)
            yield _conversation(exchange(doc), source, default_id=f"messages-{stem}", line=None)


def _conversations(records: Sequence[Any], source: Source) -> Iterator[ImportedRun]:
    """One run per line; a line that cannot be read is reported after the others."""
    errors: list[InputError] = []
    read = 0
    for number, record in enumerate(records, start=1):
        line = line_of(source, number - 1)
        try:
            if not isinstance(record, Mapping):
                raise InputError(
                    f"expected a conversation object {{messages: [...]}}, got {type_name(record)}",
                    source=source.name,
                    lineno=line,
                )
            run = _conversation(
                record, source, default_id=f"messages-{source.path.stem}-{number}", line=line
            )
        except InputError as exc:
            errors.append(exc.located(source=source.name, lineno=line))
            continue
        read += 1
        yield run
    if len(errors) == 1 and not read:
        raise errors[0]
    if errors:
        raise RecordsSkipped(errors)


def _read_message(b: Builder, at: Message) -> None:
    message = at.body
    if not isinstance(message, Mapping):
        raise b.error(f"expected a message object, got {type_name(message)}", at)
    if responses.is_item(message):  # an OpenAI Responses API item
        for body in responses.as_messages(message, b.fail(at)):
            _read_one(b, at, body)
        return
    _read_one(b, at, message)


def _read_one(b: Builder, at: Message, message: Mapping[str, Any]) -> None:
    role = message.get("role")
    if role not in ROLES:
        problem = "missing" if role is None else f"unknown role {role!r}"
        raise b.error(problem, at, "role")
    fail = b.fail(at)
    content = read_content(message.get("content"), fail)
    meta: dict[str, Any] = {"role": role}
    extra = extra_fields(message)
    if isinstance(extra.get("refusal"), str) and not content.text:
        content.text = extra.pop("refusal")
        content.refusal = True
    audio = extra.get("audio")  # (an OpenAI audio reply: its transcript is what it said)
    if isinstance(audio, Mapping) and isinstance(audio.get("transcript"), str):
        content.text = content.text or (audio["transcript"] if role == "assistant" else None)
    if role == "assistant":
        content.reasoning[:0] = message_reasoning(extra)
    if content.media:
        meta["content_parts"] = content.media
    if content.part_fields:
        meta["part_fields"] = content.part_fields
    if content.refusal:
        meta["refusal"] = True
    if extra:
        meta["fields"] = extra
    speaker = message.get("name") if isinstance(message.get("name"), str) else None
    if content.calls and role != "assistant":
        at_call = content.calls[0][0]
        raise fail(f"a tool call block in a {role} message (expected in an assistant's)", at_call)

    if role in ("system", "developer"):
        if content.results or content.media or content.reasoning:
            raise fail("a system message can hold only text", "content")
        if content.text:
            b.system.append(content.text)
        return
    for j, (where, block) in enumerate(content.results if role != "assistant" else []):
        _block_result(b, at, role, f"m{at.step}.{j}", where, block)
    if role == "user":
        if b.goal is None and content.text:
            b.goal = content.text
        if speaker:
            meta["name"] = speaker
        if content.text or content.media or not content.results:
            b.add(
                at,
                "content",
                id=f"m{at.step}",
                type=EventType.USER_INPUT,
                output=content.text,
                metadata=meta,
            )
        return
    if role == "assistant":
        _assistant(b, at, message, content, meta, speaker or DEFAULT_AGENT)
        return
    # tool / function results
    call_id = message.get("tool_call_id")
    key = str(call_id) if call_id is not None else f"legacy:{speaker}"
    parent = b.call_ids.get(key)
    if call_id is not None:
        meta["tool_call_id"] = call_id
    if speaker or parent:
        meta["tool_name"] = speaker or (parent[2] if parent else None)
    if parent is None:
        meta["unmatched_tool_call"] = True
    failed = message.get(responses.IS_ERROR) is True  # (as an Anthropic tool_result's)
    if failed:
        meta.get("fields", {}).pop(responses.IS_ERROR, None)
        meta = {k: v for k, v in meta.items() if v != {}}
    b.add(
        at,
        "content",
        id=f"m{at.step}",
        type=EventType.TOOL_RESULT,
        agent_name=parent[1] if parent else None,
        parent_id=parent[0] if parent else None,
        output=content.text,
        error={"message": content.text or "the tool reported an error"} if failed else None,
        metadata=meta,
    )


def _block_result(
    b: Builder, at: Message, role: str, event_id: str, where: str, block: Mapping[str, Any]
) -> None:
    """An Anthropic ``tool_result`` block (or a server tool's, such as a
    ``web_search_tool_result``) as a TOOL_RESULT linked to its call."""
    fail = b.fail(at)
    is_error = block.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        raise fail(f"expected true or false, got {type_name(is_error)}", f"{where}.is_error")
    raw = block.get("content")
    kept = server_output(block.get("type"), raw)  # (a server tool's own objects)
    inner = Content() if kept else read_content(raw, fail, f"{where}.content")
    if inner.calls or inner.results:
        raise fail("a tool result cannot hold tool blocks", f"{where}.content")
    call_id = block.get("tool_use_id")
    parent = b.call_ids.get(str(call_id)) if call_id is not None else None
    meta: dict[str, Any] = {"role": role, "block": block.get("type")}
    if call_id is not None:
        meta["tool_call_id"] = call_id
    if parent is not None:
        meta["tool_name"] = parent[2]
    else:
        meta["unmatched_tool_call"] = True
    if inner.media:
        meta["content_parts"] = inner.media
    if inner.part_fields:
        meta["part_fields"] = inner.part_fields
    extra = {
        k: v for k, v in block.items() if k not in ("type", "tool_use_id", "is_error", "content")
    }
    if extra:
        meta["fields"] = extra
    error = {"message": inner.text or "the tool reported an error"} if is_error else None
    error = (server_error(raw) or error) if kept else error
    b.add(
        at,
        f"{where}.content",
        id=event_id,
        type=EventType.TOOL_RESULT,
        agent_name=parent[1] if parent else None,
        parent_id=parent[0] if parent else None,
        output=raw if kept else inner.text,
        error=error,
        metadata=meta,
    )


@dataclass
class _Call:
    field: str  # where its arguments are, under the message
    tool: str
    args: Any
    problem: str | None
    call_id: Any


def _calls(b: Builder, at: Message, message: Mapping[str, Any], content: Content) -> list[_Call]:
    """An assistant message's tool calls: OpenAI ``tool_calls`` (or the legacy
    ``function_call``), then Anthropic ``tool_use`` blocks."""
    fail = b.fail(at)
    raw = message.get("tool_calls")
    legacy = message.get("function_call")
    if raw is None and isinstance(legacy, Mapping):
        raw = [{"id": None, "type": "function", "function": legacy}]
    if raw is not None and not isinstance(raw, list):
        raise fail(f"expected a list, got {type_name(raw)}", "tool_calls")
    calls: list[_Call] = []
    for j, call in enumerate(raw or []):
        where = f"tool_calls[{j}]"
        if not isinstance(call, Mapping):
            raise fail(f"expected a tool call object, got {type_name(call)}", where)
        function = call.get("function")
        if not isinstance(function, Mapping):
            why = (
                "missing" if function is None else f"expected an object, got {type_name(function)}"
            )
            raise fail(why, f"{where}.function")
        tool = function.get("name")
        if not isinstance(tool, str) or not tool:
            raise fail("missing tool name", f"{where}.function.name")
        args, problem = arguments(function.get("arguments"))
        calls.append(_Call(f"{where}.function.arguments", tool, args, problem, call.get("id")))
    for where, block in content.calls:
        tool = block.get("name")
        if not isinstance(tool, str) or not tool:
            raise fail("missing tool name", f"{where}.name")
        args, problem = arguments(block.get("input"))
        calls.append(_Call(f"{where}.input", tool, args, problem, block.get("id")))
    return calls


def _assistant(
    b: Builder,
    at: Message,
    message: Mapping[str, Any],
    content: Content,
    meta: dict[str, Any],
    agent: str,
) -> None:
    """An assistant message's events: its reasoning; the calls of server tools
    whose results it holds (Anthropic ``server_tool_use``), each with its result;
    what it said; then the calls it asks the caller to run."""
    b.agents.setdefault(agent, None)
    calls = _calls(b, at, message, content)
    results = list(content.results)
    ids = [str(block.get("tool_use_id")) for _, block in results]
    only_thought = bool(content.reasoning) and not content.text and not calls
    for k, thought in enumerate(content.reasoning):
        b.add(
            at,
            thought.field,
            id=f"m{at.step}.thinking{k}" if k else f"m{at.step}.thinking",
            type=EventType.REASONING,
            agent_name=agent,
            output=thought.text or None,
            metadata=thought_meta(thought, meta if only_thought and not k else None),
        )
    said = (content.text or not calls) and not only_thought
    response_id = f"m{at.step}" if said else None
    served = [j for j, call in enumerate(calls) if str(call.call_id) in ids]
    order = served + [j for j in range(len(calls)) if j not in served]
    host = order[0] if calls and not said else None  # (the event the message's meta is on)
    if served and content.preamble is not None:  # (said before it searched: not its answer)
        said_first = {"role": "assistant", "before_server_tools": True}
        kind = EventType.LLM_RESPONSE
        b.add(at, "content", id=f"m{at.step}.said", type=kind, agent_name=agent,
              output=content.preamble, metadata=said_first)  # fmt: skip
    for j in served:
        event_id = _call(b, at, agent, j, calls[j], None, meta if j == host else None)
        where, block = results.pop(ids.index(str(calls[j].call_id)))
        ids.remove(str(calls[j].call_id))
        _block_result(b, at, "assistant", f"{event_id}.result", where, block)
    if said:
        b.add(
            at,
            "content",
            id=response_id,
            type=EventType.LLM_RESPONSE,
            agent_name=agent,
            output=content.after if served and content.preamble is not None else content.text,
            metadata=meta,
        )
    for j in order[len(served) :]:
        _call(b, at, agent, j, calls[j], response_id, meta if j == host else None)
    for k, (where, block) in enumerate(results):  # (results of no call here, or again)
        _block_result(b, at, "assistant", f"m{at.step}.result{k}", where, block)


def _call(
    b: Builder,
    at: Message,
    agent: str,
    j: int,
    call: _Call,
    parent: str | None,
    meta: dict[str, Any] | None,
) -> str:
    """A TOOL_CALL event, ``meta`` the message's (for what it said besides its calls)."""
    call_meta: dict[str, Any] = {"role": "assistant", "tool_name": call.tool}
    if meta is not None:
        call_meta.update({k: v for k, v in meta.items() if k != "role"})
    if call.call_id is not None:
        call_meta["tool_call_id"] = call.call_id
    if call.problem:
        call_meta["arguments_error"] = call.problem
    event_id = f"m{at.step}.{j}"
    b.add(
        at,
        call.field,
        id=event_id,
        type=EventType.TOOL_CALL,
        agent_name=agent,
        parent_id=parent,
        input=call.args,
        metadata=call_meta,
    )
    key = str(call.call_id) if call.call_id is not None else f"legacy:{call.tool}"
    b.call_ids[key] = (event_id, agent, call.tool)
    return event_id


def _conversation(
    doc: Mapping[str, Any],
    source: Source,
    *,
    default_id: str,
    line: int | None,
    prefix: str = "messages",
) -> ImportedRun:
    """One run; ``prefix`` is the message list's path ("" for the file's own list or
    lines) and ``line`` the line of a JSON Lines file holding ``doc``."""
    name = source.name
    messages = doc.get("messages")
    later: list[Any] = []  # a Responses API response's output items, after its input
    found = None if isinstance(messages, list) else responses.conversation(doc)
    if found is not None:
        prefix, messages, later = found
    if not isinstance(messages, list):
        raise InputError(
            f"expected a list, got {type_name(messages)}",
            source=name,
            lineno=line,
            field="messages",
        )
    if not messages and not later:
        raise InputError(
            "no events: the message list is empty", source=name, lineno=line, field=prefix or None
        )
    b = Builder(source, line, per_line=prefix == "" and source.records is not None)
    b.goal = doc.get("goal") if isinstance(doc.get("goal"), str) else None
    for key in ("system", "instructions"):  # Anthropic's, the Responses API's system prompt
        if doc.get(key) is None:
            continue
        top = Message("", 0, None, None)
        text = read_content(doc.get(key), b.fail(top), key)
        if text.calls or text.results or text.media or text.reasoning:
            raise b.error("a system prompt can hold only text", top, key)
        if text.text:
            b.system.append(text.text)
    entries = [
        Message("" if b.per_line else f"{prefix}[{i}]", i, i, m) for i, m in enumerate(messages)
    ]
    entries += [Message(f"output[{k}]", len(entries) + k, None, m) for k, m in enumerate(later)]
    reply = response_reply(doc, name, line)
    answer = doc.get("response")  # an Anthropic response saved with its request
    if reply is not None:
        entries.append(Message("choices[0].message", len(messages), None, reply))
    elif isinstance(answer, Mapping) and answer.get("role") == "assistant":
        reply = {k: v for k, v in answer.items() if k != "type"}
        entries.append(Message("response", len(messages), None, reply))
    for entry in entries:
        _read_message(b, entry)

    if not b.events:
        raise InputError(
            "no events: only system messages", source=name, lineno=line, field=prefix or None
        )
    final_answer = mark_final(b.events)
    events: list[AgentEvent] = []
    for data in b.events:
        try:
            events.append(AgentEvent.model_validate(data))
        except ValidationError as exc:  # pragma: no cover - fields are built above
            raise from_validation_error(
                exc, source=name, lineno=line, prefix=f"{prefix}[{data['step_index']}]"
            ) from None

    instructions = "\n\n".join(b.system) or None
    tools = tool_names(doc.get("tools"))
    agents = [AgentInfo(name=a, instructions=instructions, tools=tools) for a in b.agents]
    metadata = dict(doc.get("metadata") or {}) if isinstance(doc.get("metadata"), Mapping) else {}
    if instructions:
        metadata.setdefault("system_prompt", instructions)
    if isinstance(doc.get("model"), str):
        metadata.setdefault("model", doc["model"])
    if doc.get("tools"):
        metadata.setdefault("tools", doc["tools"])
    choices = doc.get("choices")
    if isinstance(choices, list) and len(choices) > 1:
        metadata.setdefault("other_choices", choices[1:])
    extra = {
        k: v
        for k, v in doc.items()
        if k not in CONVERSATION_FIELDS and not (k == "response" and reply is not None)
    }
    if extra:
        metadata.setdefault("fields", extra)
    metadata.setdefault("source_file", source.path.name)
    given = doc.get("id")  # (a number too: a dataset's conversation ids often are)
    if isinstance(given, int) and not isinstance(given, bool):
        given = str(given)
    traj_id = given if isinstance(given, str) and given else default_id
    told: dict[str, Any] = {"final_answer": final_answer}
    if doc.get("outcome") is not None:  # how the transcript says the run ended
        said, rest = read_outcome(doc["outcome"], b.fail(Message("", 0, None, None)))
        told.update(said)
        if rest:
            metadata.setdefault("outcome_fields", rest)
    try:
        outcome = Outcome(**told)
    except ValidationError as exc:
        raise from_validation_error(exc, source=name, lineno=line, prefix="outcome") from None
    try:
        trajectory = AgentTrajectory(
            id=traj_id,
            goal=b.goal,
            framework=doc.get("framework") if isinstance(doc.get("framework"), str) else None,
            agents=agents,
            events=events,
            outcome=outcome,
            reference_answer=doc.get("reference_answer")
            if isinstance(doc.get("reference_answer"), str)
            else None,
            metadata=metadata,
        )
    except ValidationError as exc:
        raise from_validation_error(exc, source=name, lineno=line) from None
    return ImportedRun(trajectory=trajectory)
