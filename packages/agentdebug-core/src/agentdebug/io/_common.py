"""What every importer shares: size limits, JSON paths for error messages, text helpers.

Importers read files nobody here wrote, so an error must point at the place in the
file (record and field, as a JSON path like ``events[3].step_index``) rather than
at our own code. These helpers keep that wording the same across formats.
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
    record: int | str | None,
    field: str,
    limit: int | None = None,
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
        )


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
) -> InputError:
    """The first problem pydantic found, as an InputError naming its field.

    The message keeps pydantic's wording and the offending value (shortened), and
    says how many other problems there were, so a user fixes the file in one pass
    where the errors are few.
    """
    errors = exc.errors(include_url=False)
    if not errors:  # pragma: no cover - pydantic always reports at least one
        return InputError(str(exc), source=source, record=record, field=prefix or None)
    first = errors[0]
    field = loc_path(first.get("loc", ()), prefix)
    message = first.get("msg", "invalid value")
    if first.get("type") != "missing" and "input" in first:
        message += f" (got {short_repr(first['input'])})"
    if len(errors) > 1:
        message += f"; and {len(errors) - 1} more problem(s)"
    return InputError(message, source=source, record=record, field=field or None)


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
    with the response's ``choices``; anything else as it is."""
    response = doc.get("response")
    if not isinstance(response, Mapping) or "choices" in doc:
        return doc
    request = doc.get("request")
    merged = {k: v for k, v in doc.items() if k not in ("request", "response")}
    if isinstance(request, Mapping) and "messages" not in doc:
        merged.update(request)
    if "choices" in response:
        merged["choices"] = response["choices"]
    return merged
