"""TRAIL (Patronus AI): smolagents traces on GAIA, and their error annotations.

A trace file is ``{trace_id, spans: [...]}`` where each span carries its
OpenInference attributes in ``span_attributes`` and its children nested in
``child_spans``. The spans become a trajectory through the shared OpenTelemetry
mapping (:mod:`agentdebug.io.otel`), with id ``trail-<trace_id>``.

Two TRAIL-specific decisions:

* The Patronus wrapper spans (``main``, ``answer_single_question``, ...) log their
  Python arguments and return value; those become the event's input and output.
* Those arguments include the GAIA example with its answer key (``true_answer``
  and the annotators' solution steps). Like every gold label, the answer key is
  kept out of the events: ``true_answer`` becomes the trajectory's
  ``reference_answer`` (where Who&When's ``ground_truth`` goes too) and both keys
  are removed from the event, which lists them in ``metadata.withheld``.

Annotations live in separate files; :func:`load_trail_annotations` reads one into
a :class:`GoldLabel`, tolerating the trailing commas one real file has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from agentdebug.errors import InputError
from agentdebug.io._common import not_one_object, type_name
from agentdebug.io.otel import Span, parse_iso_duration, parse_timestamp, spans_to_trajectory
from agentdebug.schema import AgentTrajectory, GoldLabel
from agentdebug.stages import ImportedRun, Source
from agentdebug.taxonomy.crosswalk import normalize_trail_category

#: Keys of a GAIA example that are its answer key.
ANSWER_KEYS = ("true_answer", "Annotator Metadata")


class TrailImporter:
    """Reads TRAIL trace files (Patronus span exports with nested ``child_spans``)."""

    name = "trail"
    description = "TRAIL / Patronus trace: {trace_id, spans:[...]} with nested child_spans"

    def sniff(self, source: Source) -> str | None:
        if (why := not_one_object(source)) is not None:
            return why
        doc = source.document
        spans = doc.get("spans")
        if not isinstance(spans, list):
            return "no 'spans' list"
        if not spans:
            return None  # an empty trace is refused by load, with a clearer message
        if not all(isinstance(s, Mapping) and "span_id" in s for s in spans):
            return "'spans' items have no 'span_id'"
        return None

    def load(self, source: Source) -> Iterator[ImportedRun]:
        doc = source.document
        assert isinstance(doc, Mapping)
        yield ImportedRun(trajectory=_load(doc, source))


def _withhold(value: Any, found: dict[str, Any], withheld: set[str]) -> Any:
    """``value`` with every GAIA example's answer key taken out (and remembered)."""
    if isinstance(value, list):
        return [_withhold(v, found, withheld) for v in value]
    if not isinstance(value, Mapping):
        return value
    if "question" in value and "true_answer" in value:
        found.setdefault("reference_answer", value.get("true_answer"))
        found.setdefault("question", value.get("question"))
        if "task_id" in value:
            found.setdefault("task_id", value.get("task_id"))
        withheld.update(k for k in ANSWER_KEYS if k in value)
        return {k: _withhold(v, found, withheld) for k, v in value.items() if k not in ANSWER_KEYS}
    return {k: _withhold(v, found, withheld) for k, v in value.items()}


_STATUS = {
    "error": "error",
    "status_code_error": "error",
    "2": "error",
    "ok": "ok",
    "status_code_ok": "ok",
    "1": "ok",
    "unset": "unset",
    "status_code_unset": "unset",
    "0": "unset",
    "": "unset",
}

Fail = Callable[[str, str], InputError]  # (message, field under the span) -> error


def _status(raw: Any, fail: Fail) -> str:
    if raw is not None and not isinstance(raw, (str, int)):
        raise fail(
            f"expected a status such as 'Ok' or 'Error', got {type_name(raw)}", "status_code"
        )
    status = _STATUS.get(str(raw if raw is not None else "").strip().lower())
    if status is None:
        raise fail(f"expected 'Ok', 'Error' or 'Unset', got {raw!r}", "status_code")
    return status


def _list(raw: Any, fail: Fail, field: str) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise fail(f"expected a list, got {type_name(raw)}", field)
    return raw


def _span_events(raw: Any, fail: Fail) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, event in enumerate(_list(raw, fail, "events")):
        if not isinstance(event, Mapping):
            raise fail(f"expected a span event object, got {type_name(event)}", f"events[{i}]")
        attributes = event.get("Attributes", event.get("attributes")) or {}
        if not isinstance(attributes, Mapping):
            raise fail(
                f"expected an object, got {type_name(attributes)}", f"events[{i}].attributes"
            )
        out.append(
            {
                "name": event.get("Name", event.get("name")),
                "timestamp": event.get("Timestamp", event.get("timestamp")),
                "attributes": dict(attributes),
            }
        )
    return out


def _logs(
    raw: Any, found: dict[str, Any], withheld: set[str], fail: Fail
) -> tuple[Any, Any, list[dict[str, Any]]]:
    """Function arguments and return value from Patronus logs; other logs as they are."""
    inp: Any = None
    out: Any = None
    others: list[dict[str, Any]] = []
    for i, log in enumerate(_list(raw, fail, "logs")):
        if not isinstance(log, Mapping):
            raise fail(f"expected a log object, got {type_name(log)}", f"logs[{i}]")
        body = log.get("body")
        if isinstance(body, Mapping) and "function.name" in body:
            args = body.get("function.arguments")
            if args:
                inp = _withhold(args, found, withheld)
            result = body.get("function.output")
            if result is not None and result != "<null>":
                out = _withhold(result, found, withheld)
            continue
        others.append(
            {
                "timestamp": log.get("timestamp"),
                "severity": log.get("severity_text"),
                "body": _withhold(body, found, withheld),
            }
        )
    return inp, out, others


def _spans(
    doc: Mapping[str, Any], name: str, found: dict[str, Any], trace_meta: dict[str, Any]
) -> list[Span]:
    spans: list[Span] = []

    def visit(raw: Any, parent: str | None, path: str) -> None:
        if not isinstance(raw, Mapping):
            raise InputError(
                f"expected a span object, got {type_name(raw)}", source=name, field=path
            )
        span_id = raw.get("span_id")
        if not isinstance(span_id, str) or not span_id:
            raise InputError(
                "missing span id"
                if span_id is None
                else f"expected a string, got {type_name(span_id)}",
                source=name,
                record=path,
                field=f"{path}.span_id",
            )
        attributes = raw.get("span_attributes") or {}
        if not isinstance(attributes, Mapping):
            raise InputError(
                f"expected an object, got {type_name(attributes)}",
                source=name,
                record=span_id,
                field=f"{path}.span_attributes",
            )

        def fail(message: str, field: str) -> InputError:
            return InputError(message, source=name, record=span_id, field=f"{path}.{field}")

        withheld: set[str] = set()
        fallback_in, fallback_out, logs = _logs(raw.get("logs"), found, withheld, fail)
        metadata: dict[str, Any] = {}
        if raw.get("scope_name"):
            metadata["scope"] = raw["scope_name"]
        if logs:
            metadata["logs"] = logs
        if withheld:
            metadata["withheld"] = sorted(withheld)
        duration = parse_iso_duration(raw.get("duration"))
        if duration is None and raw.get("duration") not in (None, ""):
            raise fail(
                f"expected an ISO-8601 duration such as 'PT1.5S', got {raw['duration']!r}",
                "duration",
            )
        start = parse_timestamp(raw.get("timestamp"))
        if start is None and raw.get("timestamp") not in (None, ""):
            raise fail(
                f"expected an ISO-8601 time, got {raw['timestamp']!r}",
                "timestamp",
            )
        if raw.get("links"):
            metadata["links"] = raw["links"]
        declared_parent = raw.get("parent_span_id") or None
        if parent is None and declared_parent:
            parent = str(declared_parent)  # a flat export: parents by id
        for key in ("service_name", "resource_attributes"):
            if raw.get(key) and key not in trace_meta:
                trace_meta[key] = raw[key]
        spans.append(
            Span(
                span_id=span_id,
                parent_id=parent,
                name=str(raw.get("span_name") or raw.get("name") or ""),
                attributes=dict(attributes),
                start=start,
                duration_ms=duration,
                status=_status(raw.get("status_code"), fail),
                status_message=raw.get("status_message") or None,
                events=_span_events(raw.get("events"), fail),
                otel_kind=raw.get("span_kind") or None,
                metadata=metadata,
                path=path,
                attributes_path="span_attributes",
                fallback_input=fallback_in,
                fallback_output=fallback_out,
            )
        )
        children = raw.get("child_spans") or []
        if not isinstance(children, list):
            raise InputError(
                f"expected a list, got {type_name(children)}",
                source=name,
                record=span_id,
                field=f"{path}.child_spans",
            )
        for i, child in enumerate(children):
            visit(child, span_id, f"{path}.child_spans[{i}]")

    for i, raw in enumerate(doc["spans"]):
        visit(raw, None, f"spans[{i}]")
    return spans


def _load(doc: Mapping[str, Any], source: Source) -> AgentTrajectory:
    name = source.name
    trace_id = doc.get("trace_id") or source.path.stem
    found: dict[str, Any] = {}
    metadata: dict[str, Any] = {"trace_id": str(trace_id), "source_file": source.path.name}
    spans = _spans(doc, name, found, metadata)
    if not spans:
        raise InputError("no events: 'spans' is empty", source=name, field="spans")
    if "question" in found:
        metadata["benchmark"] = "trail"
        metadata["gaia_question"] = found["question"]
        if "task_id" in found:
            metadata["gaia_task_id"] = found["task_id"]
    reference = found.get("reference_answer")
    return spans_to_trajectory(
        spans,
        trajectory_id=f"trail-{trace_id}",
        source=name,
        reference_answer=str(reference) if reference is not None else None,
        metadata=metadata,
    )


# -- annotations ------------------------------------------------------------------------


def _strip_trailing_commas(data: bytes) -> bytes:
    """Remove commas right before ``]`` or ``}`` outside strings."""
    out = bytearray()
    in_string = False
    escaped = False
    i = 0
    n = len(data)
    while i < n:
        c = data[i]
        if in_string:
            out.append(c)
            if escaped:
                escaped = False
            elif c == 0x5C:  # backslash
                escaped = True
            elif c == 0x22:  # quote
                in_string = False
            i += 1
            continue
        if c == 0x22:
            in_string = True
        elif c == 0x2C:  # comma: drop it if only whitespace separates it from ] or }
            j = i + 1
            while j < n and data[j] in b" \t\r\n":
                j += 1
            if j < n and data[j] in b"]}":
                i += 1
                continue
        out.append(c)
        i += 1
    return bytes(out)


def load_trail_annotations(path: str | Path) -> GoldLabel:
    """One TRAIL annotation file as a :class:`GoldLabel` (source ``"trail"``).

    ``errors`` keeps every annotated error dict with ``category`` normalised (the
    original spelling in ``category_raw`` when it differed); ``location`` is a span
    id, hence an event id of the imported trajectory. ``metadata`` holds the trace
    id, the trajectory id it labels, and the scores.
    """
    path = Path(path)
    name = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", source=name) from None
    repaired = False
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            doc = orjson.loads(_strip_trailing_commas(data))
            repaired = True
        except orjson.JSONDecodeError:
            raise InputError(
                f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
                source=name,
            ) from None
    if not isinstance(doc, Mapping):
        raise InputError(f"expected an object, got {type_name(doc)}", source=name)
    raw_errors = doc.get("errors", [])
    if not isinstance(raw_errors, list):
        raise InputError(
            f"expected a list, got {type_name(raw_errors)}", source=name, field="errors"
        )
    errors: list[dict[str, Any]] = []
    for i, raw in enumerate(raw_errors):
        if not isinstance(raw, Mapping):
            raise InputError(
                f"expected an object, got {type_name(raw)}",
                source=name,
                record=i,
                field=f"errors[{i}]",
            )
        if not isinstance(raw.get("location"), str):
            raise InputError(
                "missing span id", source=name, record=i, field=f"errors[{i}].location"
            )
        error = dict(raw)
        category = normalize_trail_category(raw.get("category"))
        if category != raw.get("category"):
            error["category_raw"] = raw.get("category")
        error["category"] = category
        errors.append(error)
    trace_id = str(doc.get("trace_id") or path.stem)
    metadata: dict[str, Any] = {
        "trace_id": trace_id,
        "trajectory_id": f"trail-{trace_id}",
        "source_file": path.name,
        "scores": doc.get("scores", []),
    }
    if repaired:
        metadata["repaired"] = "trailing commas removed"
    return GoldLabel(source="trail", errors=errors, metadata=metadata)
