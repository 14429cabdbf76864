"""Asking for JSON and reading it back: the three request forms and the parser.

Servers differ in how they accept a schema. OpenAI, vLLM and recent Ollama take
``{"type": "json_schema", ...}``; llama.cpp's server rejects that and takes
``{"type": "json_object", "schema": ...}``; some take neither. The client tries the
forms in :data:`FORMS` order. The two weaker forms also carry the schema in the
system prompt, since servers that accept ``json_object`` often ignore its schema.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from agentdebug.text import shorten

Form = Literal["json_schema", "json_object", "text"]
FORMS: tuple[Form, ...] = ("json_schema", "json_object", "text")

#: Opens the system-prompt paragraph that carries the schema; the scripted
#: server's dry-run answerer looks for it.
SCHEMA_MARKER = "Answer with one JSON object that matches this JSON schema"

T = TypeVar("T", bound=BaseModel)


def schema_name(schema: type[BaseModel]) -> str:
    """The name OpenAI accepts for a json_schema: [A-Za-z0-9_-], at most 64 chars."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "answer"


def json_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema, closed where it says nothing about extra keys.

    ``additionalProperties: false`` is what strict structured-output servers want
    and what a constrained decoder needs to stop inventing keys; it is added only
    to objects with declared properties, so dict fields keep their value schema.
    """
    doc = schema.model_json_schema()
    _close_objects(doc)
    return doc


def _close_objects(node: Any) -> None:
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            _close_objects(value)
    elif isinstance(node, list):
        for item in node:
            _close_objects(item)


def schema_instruction(json_schema: dict[str, Any]) -> str:
    text = orjson.dumps(json_schema).decode()
    return f"{SCHEMA_MARKER}, and nothing else (no prose, no code fence):\n{text}"


def response_format(form: Form, name: str, json_schema: dict[str, Any]) -> dict[str, Any] | None:
    if form == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": json_schema, "strict": False},
        }
    if form == "json_object":
        return {"type": "json_object", "schema": json_schema}
    return None


def messages_for(
    form: Form, messages: list[dict[str, str]], json_schema: dict[str, Any]
) -> list[dict[str, str]]:
    """``messages`` as sent in ``form``: the weaker forms add the schema to the
    system prompt (merged into the first system message, since some chat
    templates refuse a second one)."""
    out = [dict(m) for m in messages]
    if form == "json_schema":
        return out
    instruction = schema_instruction(json_schema)
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content') or ''}\n\n{instruction}".lstrip()
    else:
        out.insert(0, {"role": "system", "content": instruction})
    return out


# ------------------------------------------------------------------------ reading

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_OPEN_THINK = re.compile(r"<think>", re.I)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\n?(.*?)```", re.S)


class NotJSON(ValueError):
    """The answer holds no JSON object."""


def extract_json(text: str) -> Any:
    """The JSON value in a model's answer: the whole text, else the last complete
    top-level ``{...}`` inside prose, else a fenced block.

    Reasoning in ``<think>`` tags is skipped, and so is everything after a
    ``<think>`` that is never closed: a draft inside unfinished reasoning is not
    the answer, however well-formed it is.

    With several objects in prose ("my first guess was {...}, but my final answer
    is {...}") the *last* one is taken: models reason towards their answer and
    write it last, and a draft they revise comes first.
    """
    body = _THINK.sub("", text)
    unclosed = _OPEN_THINK.search(body)
    if unclosed is not None:
        body = body[: unclosed.start()]
        if not body.strip():
            raise NotJSON("the answer ended inside unfinished <think> reasoning")
    body = body.strip()
    if not body:
        raise NotJSON("the answer is empty")
    try:
        return json.loads(body)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    last: dict[str, Any] | None = None
    first_error: ValueError | None = None
    at = 0
    while (start := body.find("{", at)) >= 0:
        try:
            value, end = decoder.raw_decode(body, start)
        except ValueError as exc:
            first_error = first_error or exc
            at = start + 1
            continue
        if isinstance(value, dict):
            last = value
        at = end  # (objects nested inside this one are part of it, not candidates)
    if last is not None:
        return last
    for match in reversed(list(_FENCE.finditer(body))):
        try:
            return json.loads(match.group(1).strip())
        except ValueError:
            continue
    if first_error is not None:
        raise NotJSON(f"the answer is not valid JSON ({first_error})")
    raise NotJSON("the answer holds no JSON object")


def describe_errors(exc: ValidationError, limit: int = 8) -> str:
    """A validation error in one line, each problem with where and what was given."""
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "the answer"
        given = err.get("input")
        shown = "" if isinstance(given, dict | list) else f" (got {shorten(repr(given), 60)})"
        if err["type"] == "missing":
            shown = ""
        parts.append(f"{where}: {err['msg']}{shown}")
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def parse_answer(
    text: str, schema: type[T], *, finish_reason: str | None = None
) -> tuple[T | None, str | None]:
    """(value, None) when ``text`` holds a valid instance, else (None, problem).

    An answer the server cut off (finish reason ``length``) is never accepted,
    even when a JSON object can be read from it: what was cut may have been the
    final answer, and what is left a draft.
    """
    if finish_reason == "length":
        try:
            extract_json(text)
        except NotJSON as exc:
            return None, f"{exc}; the answer was cut off at the output token limit"
        return None, "the answer was cut off at the output token limit"
    try:
        data = extract_json(text)
    except NotJSON as exc:
        return None, str(exc)
    try:
        value = schema.model_validate(data)
    except ValidationError as exc:
        return None, describe_errors(exc)
    blank = blank_fields(value)
    if blank:
        return None, "; ".join(f"{where}: must not be blank" for where in blank[:8])
    return value, None


def blank_fields(value: BaseModel, where: str = "") -> list[str]:
    """Where a required text field (``min_length`` at least 1) holds only whitespace.

    ``min_length=1`` means "say something"; a model that answers ``" "`` has not,
    and whitespace-only text would otherwise pass as a reflection, directive or
    reason.
    """
    found: list[str] = []
    for name, info in type(value).model_fields.items():
        field = getattr(value, name, None)
        path = f"{where}.{name}" if where else name
        if isinstance(field, str):
            needs_text = any((getattr(m, "min_length", 0) or 0) >= 1 for m in info.metadata)
            if needs_text and not field.strip():
                found.append(path)
        elif isinstance(field, BaseModel):
            found.extend(blank_fields(field, path))
        elif isinstance(field, list | tuple):
            for i, item in enumerate(field):
                if isinstance(item, BaseModel):
                    found.extend(blank_fields(item, f"{path}.{i}"))
                elif isinstance(item, str) and not item.strip() and _items_need_text(info):
                    found.append(f"{path}.{i}")
    return found


def _items_need_text(info: Any) -> bool:
    """Whether a list field's items are constrained to be non-empty strings."""
    args = getattr(info.annotation, "__args__", ())
    for arg in args:
        for meta in getattr(arg, "__metadata__", ()):
            if (getattr(meta, "min_length", 0) or 0) >= 1:
                return True
    return False


#: How much of a bad answer a repair request quotes back: enough for the model to
#: see what it wrote, never megabytes of it.
REPAIR_ECHO_CHARS = 4000


def echoed(answer: str) -> str:
    """The bad answer as quoted back in a repair round, cut to REPAIR_ECHO_CHARS."""
    if len(answer) <= REPAIR_ECHO_CHARS:
        return answer
    cut = len(answer) - REPAIR_ECHO_CHARS
    return f"{answer[:REPAIR_ECHO_CHARS]}\n[... {cut} more characters cut]"


def repair_message(problem: str) -> str:
    return (
        f"Your previous answer could not be used: {shorten(problem, 1000)}.\n"
        "Reply with the corrected answer: one JSON object that matches the requested "
        "schema, and nothing else."
    )
