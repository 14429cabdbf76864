"""What the grounder searches in an event (:mod:`agentdebug.evidence`).

An event's text is, part by part: its input and output as readable text
(``text.flatten``) and, for dict/list payloads, also as compact JSON; the error's
type, message and traceback; every string in its metadata; its agent name; and
what the prompts and ``agentdebug show`` write of it, since a model quotes what its
prompt showed and the views show an event as no payload holds it: a tool call as
``→ call get_weather({"city":"Pariss"})`` (a reply that asked for tools) or
``calls get_weather(...)`` (a step's summary line), a message in a model call's
input as ``[tool get_weather] Error: ...``, an object as ``key: value`` lines, an
error as ``ValueError: unknown city``; a person copies ``get_weather({...})`` from
``show``. A quote is read without the labels the views put before a line. Only
labels are dropped: the rest must still be found in one event, a tool call's
name and arguments in one call it holds.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from agentdebug.detect.signals import error_text
from agentdebug.schema import AgentEvent, EventType
from agentdebug.text import _CONTENT_KEYS, compact_json, flatten
from agentdebug.views._inline import call_text
from agentdebug.views._render import _is_message, arguments_text, readable, tool_calls

RAW, NORM = 1, 2  # a part searched verbatim, normalised, or both
# a part found only whole: what a view writes of an event (``amount: 100`` is not in
# the ``amount: 1000`` of a ``key: value`` line, nor a call cut short in a value)
WHOLE = 4
SMALL_JSON = 20_000  # compact JSON up to this size is normalised too (model quotes of tool calls)
_DEPTH = 6
_CALL_NAME = r"[A-Za-z_][\w.\-]*"
# what a view writes before a line: a message's head in a rendered message list
# ("[assistant]", "[tool get_weather]"), a field's label ("output:", "ERROR:",
# "result:"), show's mark of a failure ("✗")
_ROLES = "system|user|assistant|tool|function|developer|human|ai|message"
_LABEL = re.compile(
    rf"^(?:\[(?:{_ROLES})(?: [^\]\n]{{1,100}})?\]|(?:input|output|intent|action|result"
    r"|error|traceback):|✗)[ \t]*",
    re.IGNORECASE,
)
# "→ call " (a reply's calls in the full view), "calls " (the medium view), at the
# start of a line
_ARROW = re.compile(rf"(?m)^[ \t]*(?:(?:→|->)[ \t]*)?calls?[ \t]+(?={_CALL_NAME}[ \t]*\()")
_OPEN = re.compile(rf"^({_CALL_NAME})\s*\(\s*")


def _messages(value: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
    """The messages in a payload that asked for tools, at any depth up to a limit."""
    if depth > _DEPTH:
        return
    if isinstance(value, Mapping):
        if isinstance(value.get("tool_calls"), list):
            yield value
        items: Any = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return
    for item in items:
        if isinstance(item, (Mapping, list, tuple)):
            yield from _messages(item, depth + 1)


def _calls(name: Any, args: Any) -> list[str]:
    """``name(arguments)`` as a prompt writes it (keys sorted, a string of JSON as
    it is) and as ``show`` does (keys in the model's order, a string parsed)."""
    tool = name if isinstance(name, str) and name else "tool"
    return list(dict.fromkeys((f"{tool}({arguments_text(args)})", call_text(tool, args))))


def renderings(event: AgentEvent, small: Collection[str]) -> list[tuple[str, str]]:
    """(field, text) of what the views write of ``event`` beyond its payload's own
    text: its error as ``Type: message``; a dict or list payload in a field named
    in ``small`` (one not too big to render twice) as the full view shows it
    (``key: value`` lines, ``[role name]`` messages); each tool call it holds
    (a tool.call event, or a message that asked for tools) as ``name(arguments)``,
    and a message's several calls also together, one a line and ``; ``-separated."""
    out: list[tuple[str, str]] = []
    if event.error is not None:
        out.append(("error", error_text(event.error)))
    if event.type is EventType.TOOL_CALL and event.input is not None:
        name = event.metadata.get("tool_name") or event.module
        out += [("input", text) for text in _calls(name, event.input)]
    for field, payload in (("input", event.input), ("output", event.output)):
        if not isinstance(payload, (dict, list)):
            continue
        if field in small and isinstance(payload, dict) and not _is_message(payload):
            out.append((field, readable(payload)))  # (messages: their labels are dropped)
        for message in _messages(payload):
            calls = [_calls(name, args) for name, args in tool_calls(message)]
            out += [(field, text) for forms in calls for text in forms]
            if len(calls) > 1:
                firsts = [forms[0] for forms in calls]
                out += [(field, "\n".join(firsts)), (field, "; ".join(firsts))]
    return [p for p in dict.fromkeys(out) if p[1]]


def unlabelled(quote: str) -> str:
    """``quote`` without the labels a view writes before a line: a message's
    ``[role name]`` head, a field's label, ``→ call ``/``calls `` before a call."""
    for _ in range(3):
        bare = _LABEL.sub("", quote, count=1)
        if bare == quote:
            break
        quote = bare
    return _ARROW.sub("", quote)


# a call as the views write one: its name, then its JSON arguments at once
_OPENS_JSON_CALL = re.compile(rf"^{_CALL_NAME}\(\s*[\[{{]")


def opens_call(norm: str) -> bool:
    """Whether a normalised quote starts as the views write a tool call,
    ``name({`` (whole or cut): not prose ("Refund (partial) was approved"), nor a
    call written with keyword arguments, which the views never write."""
    return _OPENS_JSON_CALL.match(norm) is not None


def is_call(norm: str) -> bool:
    """Whether a normalised quote reads as one tool call, ``name(...)``."""
    return _OPEN.match(norm) is not None and norm.endswith(")")


def compact_call(norm: str) -> str:
    """A normalised quote of one call without spaces inside its parentheses
    (``get_weather ( {...} )`` as ``get_weather({...})``)."""
    if not is_call(norm):
        return norm
    opened = _OPEN.sub(r"\1(", norm, count=1)
    return opened[:-2] + ")" if opened.endswith(" )") else opened


# -- an event's parts -----------------------------------------------------------------


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth < 8 and isinstance(value, (dict, list, tuple)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _strings(item, depth + 1)


def _left_out(value: Any, depth: int = 0) -> Iterator[str]:
    """The strings ``text.flatten`` leaves out: beside a content key (a role, a name)."""
    if depth < 8 and isinstance(value, dict):
        content = any(k in value for k in _CONTENT_KEYS)
        for key, item in value.items():
            if not isinstance(item, str):
                yield from _left_out(item, depth + 1)
            elif content and key not in _CONTENT_KEYS:
                yield item
    elif depth < 8 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _left_out(item, depth + 1)


def event_parts(event: AgentEvent) -> list[tuple[str, str, int]]:
    """(field, text, RAW and/or NORM) for each part of ``event`` searched."""
    both = RAW | NORM
    parts: list[tuple[str, str, int]] = []
    small: list[str] = []
    for name, payload in (("input", event.input), ("output", event.output)):
        if payload is not None:
            parts.append((name, flatten(payload), both))
            if isinstance(payload, (dict, list)):
                dumped = compact_json(payload)
                small += [name] if len(dumped) <= SMALL_JSON else []
                parts.append((name, dumped, both if name in small else RAW))
                parts.append((name, "\n".join(_left_out(payload)), NORM))
    if event.error is not None:
        err = event.error
        parts.extend(("error", t, both) for t in (err.type, err.message, err.traceback) if t)
    parts.extend(("metadata", s, both) for s in _strings(event.metadata))
    if event.agent_name:
        parts.append(("agent", event.agent_name, both))
    parts.extend((name, text, both | WHOLE) for name, text in renderings(event, small))
    return [p for p in parts if p[1]]


def _cut(text: str, at: int, step: int) -> bool:
    """Whether the character at ``at`` carries on the word or number next to it
    (``step``: the side it is read from): a letter, a digit or ``_``; or ``.``,
    ``,`` or ``-`` with a letter or a digit beyond (``100`` of ``100.75``, ``Paris``
    of ``Paris-Nord``)."""
    if not 0 <= at < len(text):
        return False
    ch = text[at]
    if ch.isalnum() or ch == "_":
        return True
    beyond = at + step
    return ch in ".,-" and 0 <= beyond < len(text) and text[beyond].isalnum()


def whole_find(text: str, quote: str, start: int = 0) -> int:
    """Where ``quote`` is in ``text`` (from ``start``) without cutting a word or a
    number short at either end (``amount: 100`` is not in ``amount: 1000`` nor in
    ``amount: 100.75``, nor ``Paris`` in ``Pariss`` or ``Paris-Nord``): -1 when
    nowhere."""
    if not quote:
        return -1
    head, tail = quote[0].isalnum(), quote[-1].isalnum()
    at = text.find(quote, start)
    while at >= 0:
        end = at + len(quote)
        if not (head and _cut(text, at - 1, -1)) and not (tail and _cut(text, end, 1)):
            return at
        at = text.find(quote, at + 1)
    return -1
