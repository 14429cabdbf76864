"""What span attributes mean: OpenInference and OpenTelemetry GenAI conventions.

OpenInference (``openinference.span.kind``, ``input.value``,
``llm.input_messages.N.message.role``, ``llm.model_name``, ``tool.name``, ...) and
the GenAI semantic conventions (``gen_ai.operation.name``, ``gen_ai.agent.name``,
``gen_ai.tool.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``, ...) say the
same things in different words; this module reads both into one vocabulary: a kind
(LLM, TOOL, AGENT, CHAIN, ...), an input, an output and typed metadata.

Chat message content follows conventions too: OpenAI and Anthropic content parts
(``text``, ``image_url``, ``tool_use``, ``tool_result``, ``thinking``, ...) are
sorted by :func:`read_content` into text, media, reasoning and tool blocks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentdebug.errors import InputError
from agentdebug.io._common import parse_json_text, type_name

_NAMED_AGENT = re.compile(r"You're a helpful agent named '([^']+)'")
_GENAI_OPS = {
    "chat": "LLM",
    "text_completion": "LLM",
    "generate_content": "LLM",
    "completion": "LLM",
    "execute_tool": "TOOL",
    "invoke_agent": "AGENT",
    "create_agent": "AGENT",
    "embeddings": "EMBEDDING",
}
_TASK_KEYS = ("task", "input", "query", "question", "prompt", "message")


def as_int(value: Any) -> int | None:
    """Token counts arrive as strings in some exports."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def unflatten(attributes: Mapping[str, Any], prefix: str) -> Any:
    """Rebuild ``prefix.0.message.role``-style keys into lists and dicts."""
    root: dict[str, Any] = {}
    dot = prefix + "."
    for key, value in attributes.items():
        if not key.startswith(dot):
            continue
        node = root
        parts = key[len(dot) :].split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value
    return _listify(root) if root else None


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(k.isdigit() for k in node):
        return [_listify(node[k]) for k in sorted(node, key=int)]
    return {k: _listify(v) for k, v in node.items()}


# OpenLLMetry's (Traceloop's) span kinds, as OpenInference names them
_TRACELOOP_KINDS = {"workflow": "AGENT", "task": "CHAIN", "agent": "AGENT", "tool": "TOOL"}


def span_kind(attributes: Mapping[str, Any]) -> str:
    """OpenInference kind (LLM, TOOL, AGENT, CHAIN, ...), or one inferred from GenAI keys."""
    kind = attributes.get("openinference.span.kind")
    if isinstance(kind, str) and kind:
        return kind.upper()
    kind = attributes.get("traceloop.span.kind")  # (OpenLLMetry's own spans)
    if isinstance(kind, str) and kind.lower() in _TRACELOOP_KINDS:
        return _TRACELOOP_KINDS[kind.lower()]
    op = attributes.get("gen_ai.operation.name")
    if isinstance(op, str) and op in _GENAI_OPS:
        return _GENAI_OPS[op]
    if "gen_ai.tool.name" in attributes:
        return "TOOL"
    if "gen_ai.agent.name" in attributes and "gen_ai.request.model" not in attributes:
        return "AGENT"
    if "gen_ai.request.model" in attributes or "gen_ai.system" in attributes:
        return "LLM"
    return ""


def _message(raw: Any) -> Any:
    """An OpenInference ``message`` dict as a chat message ``{role, content, ...}``."""
    if not isinstance(raw, Mapping):
        return raw
    msg = raw.get("message", raw)
    if not isinstance(msg, Mapping):
        return msg
    out: dict[str, Any] = {}
    if "role" in msg:
        out["role"] = msg["role"]
    if "name" in msg:
        out["name"] = msg["name"]
    content = msg.get("content")
    if content is None and isinstance(msg.get("contents"), list):
        texts = [
            str(c.get("message_content", {}).get("text", ""))
            for c in msg["contents"]
            if isinstance(c, Mapping) and isinstance(c.get("message_content"), Mapping)
        ]
        content = "\n".join(t for t in texts if t) or None
    out["content"] = content
    calls = msg.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [_tool_call(c) for c in calls]
    if "tool_call_id" in msg:
        out["tool_call_id"] = msg["tool_call_id"]
    if content is None and isinstance(msg.get("parts"), list):
        out.update(_parts(msg["parts"]))
    if "finish_reason" in msg:
        out["finish_reason"] = msg["finish_reason"]
    return out


def _parts(parts: list[Any]) -> dict[str, Any]:
    """A GenAI-convention message's ``parts`` (``gen_ai.input.messages``:
    ``{"type": "text", "content": ...}``, ``tool_call``, ``tool_call_response``,
    ``reasoning``, and media) as a chat message's content, tool calls, the id of
    the call it answers and its reasoning; media and parts of other types are kept
    whole under ``parts``."""
    texts: list[str] = []
    out: dict[str, Any] = {}
    for part in parts:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind == "tool_call":
            call = {"id": part.get("id"), "name": part.get("name")}
            call["arguments"] = parse_json_text(part.get("arguments"))
            out.setdefault("tool_calls", []).append(call)
        elif kind == "tool_call_response":
            out["tool_call_id"] = part.get("id")
            said = part.get("response", part.get("result"))
            texts.append(said if isinstance(said, str) else json.dumps(said, default=str))
        elif kind == "reasoning" and isinstance(part.get("content"), str):
            out.setdefault("reasoning", []).append(part["content"])
        else:
            out.setdefault("parts", []).append(part)
    out["content"] = "\n".join(texts) if texts else None
    return out


def _tool_call(raw: Any) -> Any:
    call = raw.get("tool_call", raw) if isinstance(raw, Mapping) else raw
    if not isinstance(call, Mapping):
        return call
    out: dict[str, Any] = {}
    if "id" in call:
        out["id"] = call["id"]
    function = call.get("function")
    if isinstance(function, Mapping):
        out["name"] = function.get("name")
        out["arguments"] = parse_json_text(function.get("arguments"))
    else:  # (flat, as OpenLLMetry writes a call: ...tool_calls.0.name, .arguments)
        if "name" in call:
            out["name"] = call["name"]
        if "arguments" in call or "args" in call:
            out["arguments"] = parse_json_text(call.get("arguments", call.get("args")))
    if not set(out) - {"id"} and set(call) - {"id"}:
        return dict(call)  # (a shape not known: kept as it came, not emptied)
    return out


def _messages(attributes: Mapping[str, Any], used: set[str], *prefixes: str) -> Any:
    """Messages under the first prefix present (flattened keys or one JSON string)."""
    for prefix in prefixes:
        if prefix in attributes:
            used.add(prefix)
            value = parse_json_text(attributes[prefix])
            return [_message(m) for m in value] if isinstance(value, list) else value
        flat = unflatten(attributes, prefix)
        if flat is not None:
            used.update(k for k in attributes if k.startswith(prefix + "."))
            return [_message(m) for m in flat] if isinstance(flat, list) else flat
    return None


#: Why a model stopped that says nothing more than its text does.
_PLAIN_FINISH = frozenset({None, "stop", "end_turn", "STOP", "stop_sequence"})


def _output_of(messages: Any) -> Any:
    """A single message that holds only its text (no tool calls, reasoning or other
    parts; it ended as models do) is that text; anything else stays structured, so
    a ``finish_reason`` such as ``length`` (cut at the token limit) is kept."""
    if isinstance(messages, list) and len(messages) == 1:
        only = messages[0]
        if not isinstance(only, Mapping):
            return messages
        rest = {  # (what else it says: empty fields and its speaker's name say nothing)
            k: v
            for k, v in only.items()
            if k not in ("role", "content", "name") and v not in (None, "", [], {})
        }
        if not rest or (set(rest) == {"finish_reason"} and rest["finish_reason"] in _PLAIN_FINISH):
            return only.get("content")
        return {k: v for k, v in only.items() if k != "role"}
    return messages


def task_of(value: Any) -> str | None:
    """The task text in an agent's input: the string, or its ``task``/``input``/... key."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, Mapping):
        for key in _TASK_KEYS:
            if isinstance(value.get(key), str) and value[key]:
                return str(value[key])
    if isinstance(value, list):  # chat messages: the first user message's text
        for message in value:
            if isinstance(message, Mapping) and message.get("role") == "user":
                return task_of(message.get("content"))
    return None


#: GenAI span events (semantic conventions before ``gen_ai.input.messages``) that
#: each hold one input message, by role.
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def event_content(events: list[dict[str, Any]]) -> tuple[Any, Any, set[int], set[int]]:
    """An LLM span's input messages and output read from its GenAI span events
    (``gen_ai.user.message`` ... with ``content``, ``tool_calls``, ``id``;
    ``gen_ai.choice`` with ``message``; each attribute possibly inside a JSON
    ``gen_ai.event.content``; or the older ``gen_ai.content.prompt`` /
    ``gen_ai.content.completion`` with ``gen_ai.prompt`` / ``gen_ai.completion``),
    and the positions of the events each was read from (None where there were none)."""
    inputs: list[Any] = []
    outputs: list[Any] = []
    used_in: set[int] = set()
    used_out: set[int] = set()
    for i, event in enumerate(events):
        name = event.get("name")
        attrs = dict(event.get("attributes") or {})
        body = parse_json_text(attrs.get("gen_ai.event.content"))
        if isinstance(body, Mapping):
            attrs = {**attrs, **body}
        if name in _MESSAGE_EVENTS:
            message: dict[str, Any] = {"role": attrs.get("role") or _MESSAGE_EVENTS[name]}
            message["content"] = parse_json_text(attrs.get("content"))
            if attrs.get("tool_calls") is not None:
                message["tool_calls"] = parse_json_text(attrs["tool_calls"])
            if name == "gen_ai.tool.message" and attrs.get("id") is not None:
                message["tool_call_id"] = attrs["id"]
            inputs.append(_message(message))
            used_in.add(i)
        elif name == "gen_ai.choice":
            said = parse_json_text(attrs.get("message"))
            said = dict(said) if isinstance(said, Mapping) else {"content": said}
            said.setdefault("role", "assistant")
            if attrs.get("finish_reason") is not None:
                said["finish_reason"] = attrs["finish_reason"]
            outputs.append(_message(said))
            used_out.add(i)
        elif name == "gen_ai.content.prompt" and "gen_ai.prompt" in attrs:
            prompt = parse_json_text(attrs["gen_ai.prompt"])
            inputs.extend(prompt if isinstance(prompt, list) else [prompt])
            used_in.add(i)
        elif name == "gen_ai.content.completion" and "gen_ai.completion" in attrs:
            said = parse_json_text(attrs["gen_ai.completion"])
            outputs.extend(said if isinstance(said, list) else [said])
            used_out.add(i)
    return inputs or None, _output_of(outputs) if outputs else None, used_in, used_out


def agent_label(name: str, attrs: Mapping[str, Any]) -> str:
    """The name an agent span's agent goes by.

    ``gen_ai.agent.name`` (or ``agent.name``, ``smolagents.name``, OpenLLMetry's
    ``traceloop.entity.name``); else the name
    a smolagents managed agent is given in its task ("You're a helpful agent named
    'X'"); else the span name without ``.run`` (``CodeAgent.run`` -> ``CodeAgent``).
    """
    for key in ("gen_ai.agent.name", "agent.name", "smolagents.name", "traceloop.entity.name"):
        if isinstance(attrs.get(key), str) and attrs[key]:
            return str(attrs[key])
    task = task_of(parse_json_text(attrs.get("input.value")))
    if task:
        named = _NAMED_AGENT.search(task[:2000])
        if named:
            return named.group(1)
    return name[: -len(".run")] if name.endswith(".run") else name


def content_fields(
    attrs: Mapping[str, Any], kind: str, used: set[str]
) -> tuple[Any, Any, dict[str, Any]]:
    """Input, output and typed metadata of a span of ``kind``; adds consumed keys to ``used``.

    LLM spans: input = the input messages, output = the output message's text (or
    the message, when it carries tool calls); ``input.value``/``output.value`` hold
    the same messages as JSON and are not kept twice. TOOL spans: arguments and
    result. Other spans: ``input.value`` and ``output.value``, parsed when JSON.
    """
    meta: dict[str, Any] = {}

    def take(key: str) -> Any:
        used.add(key)
        return attrs.get(key)

    inp: Any = None
    out: Any = None
    tokens: dict[str, int | None] = {}
    for name, key in (
        ("prompt", "llm.token_count.prompt"),
        ("completion", "llm.token_count.completion"),
        ("total", "llm.token_count.total"),
        ("prompt", "gen_ai.usage.input_tokens"),
        ("completion", "gen_ai.usage.output_tokens"),
        ("prompt", "gen_ai.usage.prompt_tokens"),  # (OpenLLMetry's older names)
        ("completion", "gen_ai.usage.completion_tokens"),
        ("total", "llm.usage.total_tokens"),
    ):
        if key in attrs:
            tokens.setdefault(name, as_int(take(key)))
    if tokens:
        meta["tokens"] = tokens
    if kind == "LLM":
        inp = _messages(attrs, used, "llm.input_messages", "gen_ai.input.messages", "gen_ai.prompt")
        out = _messages(
            attrs, used, "llm.output_messages", "gen_ai.output.messages", "gen_ai.completion"
        )
        out = _output_of(out)
        for key in ("llm.model_name", "gen_ai.request.model", "gen_ai.response.model"):
            if key in attrs:
                meta.setdefault("model", take(key))
        if "llm.invocation_parameters" in attrs:
            meta["invocation_parameters"] = parse_json_text(take("llm.invocation_parameters"))
        if "llm.provider" in attrs or "gen_ai.system" in attrs:
            meta["provider"] = take("llm.provider") or take("gen_ai.system")
    elif kind == "TOOL":
        for key in ("tool.name", "gen_ai.tool.name", "traceloop.entity.name"):
            if key in attrs:
                meta.setdefault("tool_name", take(key))
        for key in ("tool.description", "gen_ai.tool.description"):
            if key in attrs:
                meta.setdefault("tool_description", take(key))
        if "tool.parameters" in attrs:
            meta["tool_parameters"] = parse_json_text(take("tool.parameters"))
        if "gen_ai.tool.call.id" in attrs:
            meta["tool_call_id"] = take("gen_ai.tool.call.id")
        if "gen_ai.tool.call.arguments" in attrs:
            inp = parse_json_text(take("gen_ai.tool.call.arguments"))
        if "gen_ai.tool.call.result" in attrs:
            out = parse_json_text(take("gen_ai.tool.call.result"))
    elif kind == "AGENT":
        tools = parse_json_text(attrs.get("smolagents.tools_names"))
        if isinstance(tools, list):
            used.add("smolagents.tools_names")
            meta["tools"] = [str(t) for t in tools]
        managed = unflatten(attrs, "smolagents.managed_agents")
        if isinstance(managed, list):
            used.update(k for k in attrs if k.startswith("smolagents.managed_agents."))
            meta["managed_agents"] = managed
        if "gen_ai.agent.id" in attrs:
            meta["agent_id"] = take("gen_ai.agent.id")
        if "gen_ai.agent.description" in attrs:
            meta["agent_description"] = take("gen_ai.agent.description")
        inp = _messages(attrs, used, "gen_ai.input.messages")
        out = _output_of(_messages(attrs, used, "gen_ai.output.messages"))
    if inp is None and "input.value" in attrs:
        inp = parse_json_text(take("input.value"))
        used.add("input.mime_type")
    elif "input.value" in attrs and kind == "LLM":
        used.update(("input.value", "input.mime_type"))  # the same messages, as JSON
    if out is None and "output.value" in attrs:
        out = parse_json_text(take("output.value"))
        used.add("output.mime_type")
    elif "output.value" in attrs and kind == "LLM":
        used.update(("output.value", "output.mime_type"))
    if inp is None and "traceloop.entity.input" in attrs:  # (OpenLLMetry's spans)
        inp = _entity(parse_json_text(take("traceloop.entity.input")))
    if out is None and "traceloop.entity.output" in attrs:
        out = parse_json_text(take("traceloop.entity.output"))
    return inp, out, meta


def _entity(value: Any) -> Any:
    """What OpenLLMetry records a decorated function was called with (``{"args":
    [...], "kwargs": {...}}``) as its arguments: the keywords alone, or the one
    positional argument, when that is all there is."""
    if isinstance(value, Mapping) and set(value) <= {"args", "kwargs"}:
        args, kwargs = value.get("args") or [], value.get("kwargs") or {}
        if not args and isinstance(kwargs, Mapping):
            return dict(kwargs)
        if isinstance(args, list) and len(args) == 1 and not kwargs:
            return args[0]
    return value


# -- chat content parts (OpenAI, Anthropic) ---------------------------------------------

TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
#: Parts kept as they are, in ``metadata.content_parts``: what a user sent or a
#: model saw that is not text.
MEDIA_PARTS = frozenset(
    [
        "computer_screenshot",  # (a Responses computer call's output)
        "image_url",
        "image",
        "input_image",
        "image_file",
        "input_audio",
        "audio",
        "file",
        "input_file",
        "document",
        "redacted_thinking",
        "search_result",
    ]
)
#: Thinking blocks: Anthropic's ``thinking``, a Responses ``reasoning`` item (or
#: LangChain's standard ``reasoning`` part), LangChain's Bedrock ``reasoning_content``.
REASONING_PARTS = frozenset({"thinking", "reasoning", "reasoning_content"})
#: The fields of a text or thinking part read into an event's text; any others
#: (citations, annotations, a signature, ...) are kept as the part's fields.
_READ = frozenset({"type", "text", "thinking", "reasoning", "summary", "reasoning_content"})

Fail = Callable[[str, str], InputError]  # (message, field under the message) -> error


@dataclass
class Thought:
    """A thinking block: its text ("" where only its encrypted form was kept), its
    field, and the block's other fields (a signature, ``encrypted_content``, ...)."""

    text: str
    field: str
    fields: dict[str, Any]


@dataclass
class Content:
    """What a message's ``content`` holds, sorted by what becomes of it."""

    text: str | None = None
    media: list[Any] = field(default_factory=list)
    reasoning: list[Thought] = field(default_factory=list)
    #: (field, block) of each tool_use / tool_result block
    calls: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    results: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    refusal: bool = False
    #: of a message whose text parts come both before and after its tool results
    #: (an Anthropic assistant that said something, searched with a server tool, then
    #: answered): the text before the last result, and the text after it (``text``
    #: holds both)
    preamble: str | None = None
    after: str | None = None
    #: text parts' fields not read into the text (``citations``, ``annotations``,
    #: ...), each field's values from all parts in one list
    part_fields: dict[str, list[Any]] = field(default_factory=dict)


def _string(value: Any, fail: Fail, where: str) -> str:
    if not isinstance(value, str):
        raise fail(f"expected a string, got {type_name(value)}", where)
    return value


def _others(part: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in part.items() if k not in _READ and v not in (None, "", [], {})}


def read_content(content: Any, fail: Fail, where: str = "content") -> Content:
    """Sort ``content`` (a string, or a list of parts) into text, media, reasoning
    and tool blocks; a part of an unknown type is an error naming it."""
    if content is None or isinstance(content, str):
        return Content(text=content)
    single = isinstance(content, Mapping)  # one part on its own: its path is ``where``
    if single:
        content = [content]
    if not isinstance(content, list):
        raise fail(f"expected a string or a list of parts, got {type_name(content)}", where)
    out = Content()
    texts: list[str] = []
    before = 0  # (how many of the texts came before the last result part)
    for j, part in enumerate(content):
        at = where if single else f"{where}[{j}]"
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, Mapping):
            raise fail(f"expected a content part object or a string, got {type_name(part)}", at)
        kind = part.get("type")
        if kind in TEXT_PARTS or (kind is None and "text" in part):
            texts.append(_string(part.get("text"), fail, f"{at}.text"))
            for key, value in _others(part).items():
                out.part_fields.setdefault(key, []).extend(
                    value if isinstance(value, list) else [value]
                )
        elif kind == "refusal":
            texts.append(_string(part.get("refusal"), fail, f"{at}.refusal"))
            out.refusal = True
        elif kind in MEDIA_PARTS:
            out.media.append(part)
        elif kind in REASONING_PARTS:
            thought = _thought(part, fail, at)
            if thought.text or thought.fields:
                out.reasoning.append(thought)
        elif isinstance(kind, str) and kind.endswith("tool_use"):
            out.calls.append((at, part))
        elif isinstance(kind, str) and kind.endswith("tool_result"):
            out.results.append((at, part))
            before = len(texts)
        elif kind is None:
            raise fail("content part has no 'type'", f"{at}.type")
        else:
            known = sorted(TEXT_PARTS | MEDIA_PARTS | REASONING_PARTS | {"refusal"})
            raise fail(
                f"unknown content part type {kind!r}; not imported (known: "
                f"{', '.join(known)}, *tool_use, *tool_result)",
                f"{at}.type",
            )
    if 0 < before < len(texts):
        out.preamble, out.after = "\n".join(texts[:before]), "\n".join(texts[before:])
    out.text = "\n".join(texts) if texts else None
    return out


def _thought(part: Mapping[str, Any], fail: Fail, at: str) -> Thought:
    """A thinking block (Anthropic ``thinking``, LangChain's ``reasoning`` or
    Bedrock ``reasoning_content: {text, signature}``, or a reasoning item's
    ``text`` or ``summary`` parts)."""
    inner = part.get("reasoning_content")
    if part.get("type") == "reasoning_content" and isinstance(inner, Mapping):
        text = _string(inner.get("text", ""), fail, f"{at}.reasoning_content.text")
        rest = {k: v for k, v in inner.items() if k != "text"}
        return Thought(text, at, {**_others(part), **rest})
    for key in ("thinking", "text", "reasoning", "reasoning_content"):
        if key in part:
            return Thought(_string(part[key], fail, f"{at}.{key}"), at, _others(part))
    summary = part.get("summary")
    if summary is None:
        return Thought("", at, _others(part))
    if not isinstance(summary, list):
        raise fail(f"expected a list of parts, got {type_name(summary)}", f"{at}.summary")
    texts = []
    for k, item in enumerate(summary):
        where = f"{at}.summary[{k}]"
        if not isinstance(item, Mapping):
            raise fail(f"expected an object, got {type_name(item)}", where)
        texts.append(_string(item.get("text"), fail, f"{where}.text"))
    return Thought("\n".join(texts), at, _others(part))
