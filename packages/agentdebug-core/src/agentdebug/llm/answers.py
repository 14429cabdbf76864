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
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\n?(.*?)```", re.S)


class NotJSON(ValueError):
    """The answer holds no JSON object."""


def extract_json(text: str) -> Any:
    """The JSON value in a model's answer: the whole text, a fenced block, or the
    outermost ``{...}`` inside prose (reasoning in ``<think>`` tags is skipped)."""
    body = _THINK.sub("", text).strip()
    if not body:
        raise NotJSON("the answer is empty")
    candidates = [body, *(m.group(1).strip() for m in _FENCE.finditer(body))]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    first_error: ValueError | None = None
    for match in re.finditer(r"\{", body):
        try:
            value, _ = decoder.raw_decode(body, match.start())
        except ValueError as exc:
            first_error = first_error or exc
            continue
        if isinstance(value, dict):
            return value
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
    """(value, None) when ``text`` holds a valid instance, else (None, problem)."""
    try:
        data = extract_json(text)
    except NotJSON as exc:
        problem = str(exc)
        if finish_reason == "length":
            problem += "; the answer was cut off at the output token limit"
        return None, problem
    try:
        return schema.model_validate(data), None
    except ValidationError as exc:
        return None, describe_errors(exc)


def repair_message(problem: str) -> str:
    return (
        f"Your previous answer could not be used: {problem}.\n"
        "Reply with the corrected answer: one JSON object that matches the requested "
        "schema, and nothing else."
    )
