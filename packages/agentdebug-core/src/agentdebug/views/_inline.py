"""A payload on one line, for a person following a run (``agentdebug show``, the
text report's timeline).

Unlike :func:`agentdebug.text.flatten`, which feeds rules and keeps only the text,
this keeps what a reader needs to tell one result from another: the keys of an
object (``ok=true, count=0, items=[]``), its nulls (``price=null``), a capture
truncation marker said plainly (``[truncated: 20,971,522 bytes] xxxx…``), and a
model reply that asked for tools as the calls it made
(``search_fares({"date":"14/12/2026",…})``).
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping
from typing import Any

import orjson

from agentdebug.text import compact_json, flatten
from agentdebug.views._render import _arguments, tool_calls

TRUNCATED = "[truncated: {n:,} bytes]"
_BARE = re.compile(r"[\w.\-/:@+#]+")  # a string shown without quotes inside an object
_MESSAGE_KEYS = {
    "role",
    "content",
    "name",
    "tool_calls",
    "invalid_tool_calls",
    "tool_call_id",
    "status",
    "type",
    "id",
}


def is_truncation(value: Any) -> bool:
    """Whether ``value`` is the marker capture leaves for a payload too big to keep."""
    return (
        isinstance(value, Mapping)
        and value.get("truncated") is True
        and isinstance(value.get("original_bytes"), int)
        and set(value) <= {"truncated", "original_bytes", "head"}
    )


def _is_message(value: Mapping[str, Any], spoken: bool = False) -> bool:
    """Whether a mapping reads as a chat message; ``spoken``: only one that says who
    spoke or calls a tool (a record such as ``{"name": "a.txt", "content": ...}``
    is not one)."""
    said = "role" in value or "tool_calls" in value or (not spoken and "content" in value)
    return said and set(value) <= _MESSAGE_KEYS


class _Line:
    """Builds the line piece by piece, and stops adding once it has ``limit``
    characters (a 20 MB payload is not rendered to be cut to 100)."""

    def __init__(self, limit: int, spoken: bool = False) -> None:
        self.limit = limit
        self.spoken = spoken  # (messages told by a role or tool calls only)
        self.parts: list[str] = []
        self.size = 0

    @property
    def full(self) -> bool:
        return self.size >= self.limit

    def add(self, text: str) -> None:
        if not self.full:
            text = text[: self.limit - self.size + 1]
            self.parts.append(text)
            self.size += len(text)

    def text(self) -> str:
        return "".join(self.parts)

    def value(self, v: Any, top: bool = False) -> None:
        if self.full:
            return
        if v is None:
            self.add("null")
        elif isinstance(v, bool):
            self.add("true" if v else "false")
        elif isinstance(v, float) and not math.isfinite(v):
            self.add("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
        elif isinstance(v, (int, float)):
            self.add(str(v))
        elif isinstance(v, str):
            self.add(v if top or _BARE.fullmatch(v) else _quoted(v, self.limit))
        elif is_truncation(v):
            self.add(TRUNCATED.format(n=v["original_bytes"]))
            head = v.get("head")
            if isinstance(head, str) and head:
                self.add(" " + head + "…")
        elif isinstance(v, Mapping) and _is_message(v, self.spoken):
            self.message(v)
        elif isinstance(v, Mapping):
            self.mapping(v, top)
        elif isinstance(v, (list, tuple)):
            self.sequence(v, top)
        else:
            self.add(str(v))

    def message(self, m: Mapping[str, Any]) -> None:
        content = m.get("content")
        said = False
        if content not in (None, "", []):
            if isinstance(content, str):
                self.add(content)
            else:  # a list of parts: their text
                self.add(_parts_text(content, self.limit))
            said = True
        calls = _calls(m)
        if calls:
            self.add((" → " if said else "") + "; ".join(calls))
        status = m.get("status")
        if isinstance(status, str) and status != "success":  # (a tool message's error)
            self.add(f" [status: {status}]")

    def mapping(self, v: Mapping[Any, Any], top: bool) -> None:
        if not v:
            self.add("{}")
            return
        self.add("" if top else "{")
        for i, (key, item) in enumerate(v.items()):
            if self.full:
                break
            self.add(f"{', ' if i else ''}{key}=")
            self.value(item)
        self.add("" if top else "}")

    def sequence(self, v: list[Any] | tuple[Any, ...], top: bool) -> None:
        if top and v and all(isinstance(m, Mapping) and _is_message(m, self.spoken) for m in v):
            for i, m in enumerate(v):  # a message list: who said what
                role = m.get("role")
                self.add(("  " if i else "") + (f"[{role}] " if role else ""))
                self.message(m)
            return
        self.add("[")
        for i, item in enumerate(v):
            if self.full:
                break
            self.add(", " if i else "")
            self.value(item)
        self.add("]")


_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
_THINKING_PARTS = frozenset({"thinking", "reasoning", "reasoning_content"})


def _parts_text(content: Any, limit: int) -> str:
    """A message's content parts as a reader wants them: the text the model said
    first, then its thinking, marked (a thinking block comes first in Anthropic's
    replies, and its signature, a long opaque string, is not text at all); a part
    of another kind (an image, a tool's block) as :func:`flatten` reads it."""
    if not isinstance(content, list):
        return flatten(content, limit=limit)
    said: list[str] = []
    thought: list[str] = []
    for part in content:
        if isinstance(part, str):
            said.append(part)
            continue
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            said.append(part["text"])
        elif kind in _THINKING_PARTS:
            text = _thought(part)
            if text:
                thought.append(text)
        elif kind != "redacted_thinking":
            said.append(flatten(part, limit=limit))
    text = " ".join(t for t in said if t)
    if thought:
        text += (" " if text else "") + "[thinking: " + " ".join(thought)[:limit] + "]"
    return text[: limit + 1]


def _thought(part: Mapping[str, Any]) -> str:
    """A thinking block's text: Anthropic's ``thinking``, LangChain's standard
    ``reasoning``, Bedrock's ``reasoning_content``, or the text of a reasoning
    item's ``summary`` parts (OpenAI's)."""
    for key in ("thinking", "reasoning", "text", "reasoning_content"):
        text = part.get(key)
        if isinstance(text, Mapping):  # (Bedrock's: {"text": ..., "signature": ...})
            text = text.get("text")
        if isinstance(text, str) and text:
            return text
    summary = part.get("summary")
    if isinstance(summary, list):
        return " ".join(
            str(p.get("text")) for p in summary if isinstance(p, Mapping) and p.get("text")
        )
    return ""


def _calls(message: Mapping[str, Any]) -> list[str]:
    return [
        call_text(name if isinstance(name, str) else "?", args)
        for name, args in tool_calls(message)
    ]


def _quoted(text: str, limit: int) -> str:
    return orjson.dumps(text[:limit]).decode()


def inline(value: Any, limit: int = 2000, *, spoken: bool = False) -> str:
    """``value`` on one line of at most about ``limit`` characters (before the
    caller shortens it to its width): a string as it is, an object as
    ``key=value`` pairs (strings quoted unless they are one word), nulls, NaN and
    empty containers written out, a truncation marker as ``[truncated: N bytes]``
    and its head, a message as its content and the tool calls it made (with
    ``spoken``, only a mapping with a role or tool calls is taken for a message:
    for a state whose records have ``content`` keys of their own)."""
    if value is None:
        return ""
    line = _Line(limit, spoken)
    line.value(value, top=True)
    return line.text()


def call_text(tool: str | None, arguments: Any) -> str:
    """A tool call as ``tool(arguments)``, the arguments as compact JSON, without
    the ``args``/``kwargs`` wrapper some tracers record."""
    args = _arguments(arguments)
    if isinstance(args, str) and args[:1] in ("{", "["):  # (OpenAI's arguments: JSON text)
        with contextlib.suppress(orjson.JSONDecodeError):
            args = orjson.loads(args)
    try:  # (in the order the model gave them)
        text = orjson.dumps(args, default=str).decode()
    except TypeError:  # (keys that are not strings)
        text = compact_json(args)
    return f"{tool}({text})" if tool else text
