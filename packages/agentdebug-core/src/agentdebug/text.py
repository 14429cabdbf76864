"""Turning event payloads (strings, dicts, message lists) into plain text."""

from __future__ import annotations

import re
from typing import Any

import orjson

_CONTENT_KEYS = ("content", "text", "message", "output", "value", "result", "answer")


def flatten(value: Any, limit: int | None = None) -> str:
    """The readable text of a payload: strings as they are, containers leaf by leaf.

    Message-shaped dicts contribute their content rather than their keys, so a
    rule that searches an output for "error" is not fooled by a key named "error"
    whose value is null.
    """
    parts: list[str] = []
    size = 0

    def walk(v: Any) -> None:
        nonlocal size
        if limit is not None and size >= limit:
            return
        if v is None:
            return
        if isinstance(v, str):
            parts.append(v)
            size += len(v)
        elif isinstance(v, dict):
            keys = [k for k in _CONTENT_KEYS if k in v]
            if keys:
                for k in keys:
                    walk(v[k])
                for k, item in v.items():
                    if k not in _CONTENT_KEYS and isinstance(item, (dict, list)):
                        walk(item)
            else:
                for item in v.values():
                    walk(item)
        elif isinstance(v, (list, tuple)):
            for item in v:
                walk(item)
        elif isinstance(v, (int, float, bool)):
            try:
                parts.append(str(v))
            except ValueError:  # (an int past Python's 4,300-digit limit for str)
                parts.append(f"<int of {int(v).bit_length()} bits>")
            size += 8
        else:
            text = str(v)
            parts.append(text)
            size += len(text)

    walk(value)
    text = "\n".join(parts)
    return text[:limit] if limit is not None else text


def compact_json(value: Any) -> str:
    """A stable one-line rendering, for comparing payloads."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()
    except TypeError:
        try:
            return repr(value)
        except ValueError:  # (an int past Python's 4,300-digit limit for str)
            return flatten(value)


def json_of(text: str, limit: int = 200_000) -> dict[str, Any] | list[Any] | None:
    """The JSON object or array a text holds whole (a tool's result as a ToolNode's
    message writes it), of ``limit`` characters or fewer; None for any other text."""
    stripped = text.strip()
    if (
        not stripped
        or len(stripped) > limit
        or (stripped[0], stripped[-1])
        not in (
            ("{", "}"),
            ("[", "]"),
        )
    ):
        return None
    try:
        parsed = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def clip(text: str, width: int) -> str:
    """The start of ``text``, at most ``width`` characters, ended at a word's end
    when one is in its last quarter (a quote cut mid-word reads as a typo); still
    a substring of ``text``, so a quote clipped this way is found in it."""
    if len(text) <= width:
        return text
    cut = text[:width]
    if not text[width].isspace():
        at = max(cut.rfind(" "), cut.rfind("\n"), cut.rfind("\t"))
        if at >= width * 3 // 4:
            cut = cut[:at]
    return cut.rstrip()


def shorten(text: str, width: int) -> str:
    """One line of at most ``width`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


# C0 and C1 control characters, DEL, and the bidirectional overrides that reorder
# what a terminal shows (a goal or an agent name comes from the agent, not from us)
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with its control characters written as escapes (``\\x07``,
    ``\\x1b``, ``\\n``), so printing a recorded string cannot ring the bell, move the
    cursor, recolour the terminal or break a one-line layout."""
    return _CONTROLS.sub(_escape, text)
