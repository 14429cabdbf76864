"""The OpenAI Responses API's items, read as the chat messages they stand for.

A Responses conversation is a list of items (``client.responses.create(input=...)``,
and a response's ``output``): messages (``{role, content}``, or ``{"type":
"message", ...}`` with ``output_text`` parts), ``function_call`` items (``call_id``,
``name``, ``arguments`` as JSON text), ``function_call_output`` items (``call_id``,
``output``), ``reasoning`` items (``summary`` parts, or only ``encrypted_content``:
reasoning kept encrypted, not an empty reply) and the calls of hosted tools
(``web_search_call``, ``file_search_call``, ``mcp_call``, ...). Each item becomes
the message a Chat Completions transcript would hold (a ``function_call`` an
assistant message with one tool call, its output a tool message), so the
``messages`` importer reads both APIs one way: one step per item, a call linked
to its output by ``call_id``. A hosted tool's call is a tool call, and what it
returned (``output``, ``results``, ``error``) its result. An item of a type not
known here is an error naming it, not passed over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from agentdebug.io._common import type_name
from agentdebug.io.semconv import Fail, read_content

#: Items that call a tool the caller runs: the field with the tool's name (None:
#: the tool is the item type's), and the field with its arguments.
_CALLS = {
    "function_call": ("name", "arguments"),
    "custom_tool_call": ("name", "input"),
    "computer_call": (None, "action"),
    "local_shell_call": (None, "action"),
}
_OUTPUTS = frozenset(f"{kind}_output" for kind in _CALLS)
#: Tools the API runs itself: the call and what came of it are one item.
_HOSTED = frozenset(
    [
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",  # (what an MCP server offered: its result is the tools)
        "mcp_approval_request",  # (a call waiting for approval: no result yet)
    ]
)
_RESULT_FIELDS = ("output", "outputs", "results", "result", "tools", "error")
#: The caller's answer to an ``mcp_approval_request``: the result of that call.
_APPROVAL = "mcp_approval_response"
_ONLY_ITEMS = frozenset(set(_CALLS) | _OUTPUTS | _HOSTED | {_APPROVAL})
#: On a tool message made from a hosted tool's item: the tool reported an error.
IS_ERROR = "is_error"
ITEM_TYPES = frozenset({"message", "reasoning", _APPROVAL} | set(_CALLS) | _OUTPUTS | _HOSTED)


def is_item(value: Any) -> bool:
    """Whether ``value`` is a Responses item (a typed message included), not a
    plain chat message."""
    if not isinstance(value, Mapping) or "type" not in value:
        return False
    return "role" not in value or value.get("type") == "message"


def looks_like_items(items: Sequence[Any]) -> bool:
    """Whether ``items`` hold an item only the Responses API writes: a call, a
    call's output, or a typed message with a role (``reasoning`` and ``message``
    alone are agentdebug's own event types too)."""
    return any(
        isinstance(i, Mapping)
        and (
            i.get("type") in _ONLY_ITEMS
            or (i.get("type") == "message" and isinstance(i.get("role"), str))
        )
        for i in items
    )


def conversation(doc: Mapping[str, Any]) -> tuple[str, list[Any], list[Any]] | None:
    """A Responses request and/or response (``{input, output, instructions, ...}``)
    as (the path of its input, the input items, the output items); None when
    ``doc`` is no such thing. A text ``input`` is one user message."""
    if "messages" in doc:
        return None
    raw_input, output = doc.get("input"), doc.get("output")
    if isinstance(raw_input, str):
        items: list[Any] = [{"role": "user", "content": raw_input}]
    elif isinstance(raw_input, list):
        items = list(raw_input)
    elif raw_input is None:
        items = []
    else:
        return None
    outputs = list(output) if isinstance(output, list) else []
    if output is not None and not isinstance(output, list):
        return None
    everything = items + outputs
    if not everything:
        return None
    if not all(isinstance(i, Mapping) and ("role" in i or "type" in i) for i in everything):
        return None
    if not isinstance(raw_input, str) and not looks_like_items(everything) and not outputs:
        return None
    return "input", items, outputs


def as_messages(item: Mapping[str, Any], fail: Fail) -> list[dict[str, Any]]:
    """The chat messages one item stands for (two for a hosted tool that returned
    something: its call and its result). ``fail(message, field)`` makes the error
    for a field of the item."""
    kind = item.get("type")
    rest = {k: v for k, v in item.items() if k != "type"}
    if kind == "message":
        if not isinstance(item.get("role"), str):
            raise fail("missing" if "role" not in item else "expected a string", "role")
        return [rest]
    if kind == "reasoning":
        summary = item.get("summary") or item.get("content") or []
        part = {"type": "reasoning", "summary": summary}
        if item.get("encrypted_content"):  # (the reasoning itself, when no summary was asked)
            part["encrypted_content"] = item["encrypted_content"]
        others = {k: v for k, v in rest.items() if k not in ("summary", "content", *part)}
        return [{"role": "assistant", "content": [part], **others}]
    if kind in _CALLS:
        name_field, args_field = _CALLS[kind]
        tool = item.get(name_field) if name_field else str(kind).removesuffix("_call")
        if not isinstance(tool, str) or not tool:
            raise fail("missing tool name", name_field or "type")
        call_id = _call_id(item, fail, "call_id")
        extra = {k: v for k, v in rest.items() if k not in (name_field, args_field, "call_id")}
        return [_call_message(call_id, tool, item.get(args_field), extra)]
    if kind in _OUTPUTS:
        call_id = _call_id(item, fail, "call_id")
        output = item.get("output")
        if isinstance(output, Mapping) and not isinstance(output.get("type"), str):
            output = orjson.dumps(output).decode()  # (a computer call's screenshot, as data)
        read_content(output, fail, "output")  # (so an error names the item's own field)
        extra = {k: v for k, v in rest.items() if k not in ("call_id", "output")}
        return [{"role": "tool", "tool_call_id": call_id, "content": output, **extra}]
    if kind in _HOSTED:
        return _hosted(str(kind), item, fail)
    if kind == _APPROVAL:
        call_id = _call_id(item, fail, "approval_request_id")
        approved = item.get("approve")
        if not isinstance(approved, bool):
            raise fail("missing" if approved is None else "expected true or false", "approve")
        said = "approved" if approved else "not approved"
        reason = item.get("reason")
        text = f"{said}: {reason}" if isinstance(reason, str) and reason else said
        return [{"role": "tool", "tool_call_id": call_id, "content": text}]
    if kind is None:
        raise fail("an item with neither 'role' nor 'type'", "type")
    raise fail(
        f"unknown Responses item type {kind!r}; not imported (known: "
        f"{', '.join(sorted(ITEM_TYPES))})",
        "type",
    )


def _call_id(item: Mapping[str, Any], fail: Fail, field: str) -> str:
    value = item.get(field)
    if not isinstance(value, str) or not value:
        got = "missing" if value is None else f"expected a string, got {type_name(value)}"
        raise fail(got, field)
    return value


def _call_message(call_id: Any, tool: str, args: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": tool, "arguments": args}}
    return {"role": "assistant", "content": None, "tool_calls": [call], **extra}


def _hosted(kind: str, item: Mapping[str, Any], fail: Fail) -> list[dict[str, Any]]:
    """A hosted tool's item: its call, and (when it says) what came of it as a
    tool result, an ``error`` as the result's error."""
    call_id = _call_id(item, fail, "id")
    tool = item.get("name") if isinstance(item.get("name"), str) else kind.removesuffix("_call")
    args = item.get("arguments")
    if args is None:
        args = {
            k: v
            for k, v in item.items()
            if k not in ("type", "id", "status", "name", *_RESULT_FIELDS)
        }
    keep = {k: v for k, v in item.items() if k in ("status", "server_label")}
    messages = [_call_message(call_id, str(tool), args, keep)]
    results = {k: item[k] for k in _RESULT_FIELDS if item.get(k) not in (None, "", [])}
    if results:
        error = results.pop("error", None)
        said = next(iter(results.values()), error)
        text = said if isinstance(said, str) else orjson.dumps(said).decode()
        result = {"role": "tool", "tool_call_id": call_id, "content": text}
        messages.append({**result, IS_ERROR: True} if error is not None else result)
    return messages
