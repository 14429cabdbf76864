"""What every importer shares: size limits, JSON paths for error messages, text helpers.

Importers read files nobody here wrote, so an error must point at the place in the
file (the line of a JSON Lines file, or the record of a JSON document, and the
field, as a JSON path like ``events[3].step_index``) rather than at our own code. These helpers keep that wording the same across formats.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from pydantic import ValidationError

from agentdebug.errors import InputError
from agentdebug.limits import MAX_EVENT_BYTES_ENV, max_event_bytes
from agentdebug.stages import Source


def json_size(value: Any, limit: int) -> int:
    """The size of ``value`` as JSON, in bytes; exact once it could exceed ``limit``.

    Short strings (the common case) are counted by length without encoding: a
    string of ``n`` characters is at most ``4 n`` bytes, so only strings that could
    pass the limit are encoded.
    """
    if value is None:
        return 0
    if isinstance(value, str):
        n = len(value)
        return n if n * 4 <= limit else len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, (int, float, bool)):
        return 8
    try:
        return len(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
    except TypeError:
        return len(repr(value))


def check_size(
    value: Any,
    *,
    source: str,
    field: str,
    record: int | str | None = None,
    limit: int | None = None,
    lineno: int | None = None,
) -> None:
    """Refuse one field of one event that is larger than the per-event limit."""
    limit = max_event_bytes() if limit is None else limit
    size = json_size(value, limit)
    if size > limit:
        raise InputError(
            f"value of {size:,} bytes is over the per-event limit of {limit:,} bytes "
            f"(raise {MAX_EVENT_BYTES_ENV} to import it)",
            source=source,
            record=record,
            field=field,
            lineno=lineno,
        )


def line_of(source: Source, index: int) -> int:
    """The line of a JSON Lines file that holds ``source.records[index]`` (from 1).

    A file read by :func:`agentdebug.io.source.read_source` knows its lines (blank
    ones skipped but counted); records built in memory are taken as one a line."""
    numbers = getattr(source.records, "line_numbers", None)
    if isinstance(numbers, list) and index < len(numbers):
        return int(numbers[index])
    return index + 1


def join_path(prefix: str, part: str | int) -> str:
    """``events`` + 3 -> ``events[3]``; ``events[3]`` + ``type`` -> ``events[3].type``."""
    if isinstance(part, int):
        return f"{prefix}[{part}]"
    return f"{prefix}.{part}" if prefix else part


def loc_path(loc: Iterable[str | int], prefix: str = "") -> str:
    """A pydantic error location as a JSON path, e.g. ``events[3].step_index``."""
    path = prefix
    for part in loc:
        path = join_path(path, part)
    return path


def from_validation_error(
    exc: ValidationError,
    *,
    source: str,
    record: int | str | None = None,
    prefix: str = "",
    lineno: int | None = None,
) -> InputError:
    """The first problem pydantic found, as an InputError naming its field.

    The message keeps pydantic's wording and the offending value (shortened), and
    says how many other problems there were, so a user fixes the file in one pass
    where the errors are few.
    """
    errors = exc.errors(include_url=False)
    if not errors:  # pragma: no cover - pydantic always reports at least one
        return InputError(
            str(exc), source=source, record=record, field=prefix or None, lineno=lineno
        )
    first = errors[0]
    field = loc_path(first.get("loc", ()), prefix)
    message = first.get("msg", "invalid value")
    if first.get("type") != "missing" and "input" in first:
        message += f" (got {short_repr(first['input'])})"
    if len(errors) > 1:
        message += f"; and {len(errors) - 1} more problem(s)"
    return InputError(message, source=source, record=record, field=field or None, lineno=lineno)


def short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def type_name(value: Any) -> str:
    """A JSON type name for a parsed value, for messages like "expected a list, got string"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def parse_json_text(value: Any) -> Any:
    """A string holding a JSON object or array, parsed; anything else unchanged."""
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                return value
    return value


def not_one_object(source: Source) -> str | None:
    """Why ``source`` is not a single JSON object (None when it is): the first
    question of every importer that reads one object per file."""
    if source.records is not None:
        return "JSON Lines, not one JSON object"
    if not isinstance(source.document, Mapping):
        return "not a JSON object"
    return None


def exchange(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """A request saved beside its response (``{"request": {messages...}, "response":
    {choices...}}``, or ``{"messages": [...], "response": {...}}``) as one document
    with the response's ``choices`` (a Responses API response's ``output``; any
    other response, such as an Anthropic message, stays as ``response``); anything
    else as it is."""
    response = doc.get("response")
    if not isinstance(response, Mapping) or "choices" in doc:
        return doc
    request = doc.get("request")
    merged = {k: v for k, v in doc.items() if k not in ("request", "response")}
    if isinstance(request, Mapping) and "messages" not in doc:
        merged.update(request)
    if "choices" in response:
        merged["choices"] = response["choices"]
    elif isinstance(response.get("output"), list):  # the Responses API's
        merged["output"] = response["output"]
        merged.setdefault("instructions", response.get("instructions"))
        merged["response"] = {k: v for k, v in response.items() if k != "output"}
    else:  # (an Anthropic message is the reply; anything else is kept as it is)
        merged["response"] = response
    return merged


def response_reply(doc: Mapping[str, Any], name: str, line: int | None) -> Any:
    """The assistant's reply in an OpenAI response saved with its request
    (``choices[0].message``, see :func:`exchange`), or None; ``line`` is the JSON
    Lines line holding ``doc``, for errors."""
    choices = doc.get("choices")
    if choices is None:
        return None
    if not isinstance(choices, list):
        raise InputError(
            f"expected a list, got {type_name(choices)}",
            source=name,
            lineno=line,
            field="choices",
        )
    if not choices:
        return None
    first = choices[0]
    message = first.get("message") if isinstance(first, Mapping) else None
    if not isinstance(message, Mapping):
        got = "missing" if message is None else f"expected an object, got {type_name(message)}"
        field = "choices[0].message" if isinstance(first, Mapping) else "choices[0]"
        raise InputError(got, source=name, lineno=line, field=field)
    reply = {"role": "assistant", **message}
    if first.get("finish_reason") is not None:
        reply["finish_reason"] = first["finish_reason"]
    return reply


def tool_names(tools: Any) -> list[str]:
    """The names of the tools a request offered (OpenAI ``function`` or Anthropic style)."""
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        if isinstance(name, str) and name:
            names.append(name)
    return names
