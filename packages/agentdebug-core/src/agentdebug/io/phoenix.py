"""Arize Phoenix span exports: one OpenInference span per JSON object.

What Phoenix writes (``px.Client().get_spans_dataframe()`` saved as JSON Lines,
or spans copied from its UI or REST API): ``{name, context: {trace_id, span_id},
parent_id, span_kind, start_time, end_time, status_code, status_message,
attributes, events}``, with ``attributes`` one nested object
(``{"llm": {"model_name": ...}}`` for ``llm.model_name``). A dataframe's flat
columns (``context.span_id``, ``attributes.llm.model_name``) are read the same.
A JSON Lines file or a JSON array of such spans is accepted.

OpenTelemetry's own ``ConsoleSpanExporter`` writes nearly the same object per
span (``span.to_json()``, indented, one after another): ids as ``0x`` hex (read
as the plain hex OTLP writes, so a trace is one run whichever way it was
exported), ``kind`` as ``SpanKind.CLIENT``, ``status: {status_code,
description}``, and the span's ``resource``; it is read here too.

The spans go through the shared OpenTelemetry mapping
(:mod:`agentdebug.io.otel`), one run per trace id, with the trace id as the run's
id (as the ``otlp`` importer does, so the same trace imported either way is one
run). A span that cannot be read is an error naming its line (JSON Lines) or
record (its index in an array) and field; its trace is skipped and reported, the
other traces are imported. Like ``otlp``, the importer gathers its files' spans
in a batch before it builds the runs, so a trace a rotated log split across files
is one run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import hexdigits
from typing import Any

from agentdebug.errors import InputError, RecordsSkipped
from agentdebug.io._common import line_of, parse_json_text, type_name
from agentdebug.io.otel import Span, parse_timestamp, spans_to_trajectory
from agentdebug.io.otlp import normalise_id
from agentdebug.stages import ImportedRun, Source

_STATUS = {"OK": "ok", "ERROR": "error", "UNSET": "unset"}


def _records(source: Source) -> Sequence[Any] | None:
    """The span objects of ``source``: its JSON Lines, or its JSON array."""
    if source.records is not None:
        return source.records
    if isinstance(source.document, list):
        return source.document
    if _looks_like_span(source.document):  # (one span: a console exporter's one-span trace)
        return [source.document]
    return None


def _context(raw: Mapping[str, Any]) -> Any:
    if "context" in raw:
        return raw["context"]
    flat = {k[len("context.") :]: v for k, v in raw.items() if k.startswith("context.")}
    return flat or None


def _looks_like_span(raw: Any) -> bool:
    if not isinstance(raw, Mapping):
        return False
    context = _context(raw)
    return isinstance(context, Mapping) and "span_id" in context and "trace_id" in context


class PhoenixImporter:
    """Reads Arize Phoenix span exports (one run per trace id)."""

    name = "phoenix"
    description = (
        "Arize Phoenix spans: {context: {trace_id, span_id}, parent_id, span_kind, "
        "attributes, ...} per JSON line or in a JSON array; also OpenTelemetry's "
        "ConsoleSpanExporter output"
    )

    def sniff(self, source: Source) -> str | None:
        records = _records(source)
        if records is None:
            return "not JSON Lines or a JSON array"
        if not records:
            return "empty list"
        if not _looks_like_span(records[0]):
            return "the first record has no 'context' with 'trace_id' and 'span_id'"
        return None

    def load(self, source: Source) -> Iterator[ImportedRun]:
        for run, _files in self.load_gathered([(source, self.gather(source))]):
            yield run

    def gather(self, source: Source) -> PhoenixGathered:
        """The spans of one file by trace id, with the traces a span of which could
        not be read and why (see :mod:`agentdebug.io.batch`: a batch gathers every
        file before building, so a trace a rotating log split is one run)."""
        records = _records(source)
        assert records is not None
        lines = source.records is not None
        piece = PhoenixGathered()
        for index, raw in enumerate(records):
            try:
                span, trace_id = _span(
                    raw, source.name, index, line_of(source, index) if lines else None
                )
            except InputError as exc:
                piece.errors.append(exc)
                trace = _context(raw) if isinstance(raw, Mapping) else None
                if isinstance(trace, Mapping) and isinstance(trace.get("trace_id"), str):
                    piece.bad.add(_id(trace["trace_id"]) or trace["trace_id"])
                continue
            piece.traces.setdefault(trace_id, []).append(span)
            if resource_of(raw):
                piece.resources.setdefault(trace_id, resource_of(raw))
        return piece

    def load_gathered(
        self, items: list[tuple[Source, PhoenixGathered]]
    ) -> Iterator[tuple[ImportedRun, list[Path]]]:
        """One run per trace id over all the files' spans, with the files it was
        read from; a trace with a span that could not be read is not imported,
        and is reported with the span's error after the other runs."""
        traces: dict[str, list[Span]] = {}
        resources: dict[str, dict[str, Any]] = {}
        files: dict[str, list[Source]] = {}
        errors: list[InputError] = []
        bad: dict[str, str] = {}  # trace id -> the file its unreadable span is in
        for source, piece in items:
            errors.extend(piece.errors)
            for trace_id in piece.bad:  # (the first file it is bad in)
                bad.setdefault(trace_id, source.name)
            for trace_id in list(piece.traces):
                traces.setdefault(trace_id, []).extend(piece.traces.pop(trace_id))
                files.setdefault(trace_id, []).append(source)
            for trace_id, resource in piece.resources.items():
                resources.setdefault(trace_id, resource)
        for trace_id in list(traces):
            spans = traces.pop(trace_id)
            sources = files[trace_id]
            name = ", ".join(s.name for s in sources)
            if trace_id in bad:
                errors.append(
                    InputError(
                        f"trace {trace_id!r} not imported: one of its spans could not be read",
                        source=bad[trace_id],
                    )
                )
                continue
            metadata: dict[str, Any] = {"trace_id": trace_id, "source_file": sources[0].path.name}
            if trace_id in resources:
                metadata["resource"] = resources[trace_id]
                if "service.name" in resources[trace_id]:
                    metadata["service_name"] = resources[trace_id]["service.name"]
            try:
                trajectory = spans_to_trajectory(
                    spans, trajectory_id=trace_id, source=name, metadata=metadata
                )
            except InputError as exc:
                errors.append(exc.located(source=name))
                continue
            yield ImportedRun(trajectory=trajectory), [s.path for s in sources]
        if len(errors) == 1 and not files:
            raise errors[0]
        if errors:
            raise RecordsSkipped(errors)


@dataclass
class PhoenixGathered:
    """What :meth:`PhoenixImporter.gather` read of one file."""

    traces: dict[str, list[Span]] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    bad: set[str] = field(default_factory=set)  # traces with a span that could not be read
    errors: list[InputError] = field(default_factory=list)


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"llm": {"model_name": "x"}}`` -> ``{"llm.model_name": "x"}``; lists stay
    whole under their key (the OpenInference readers accept both shapes)."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping) and item:
            out.update(flatten(item, name + "."))
        else:
            out[name] = item
    return out


def _text(raw: Mapping[str, Any], key: str, fail: Any, *, required: bool = False) -> str | None:
    value = raw.get(key)
    if value is None or value == "":
        if required:
            raise fail("missing", key)
        return None
    if not isinstance(value, str):
        raise fail(f"expected a string, got {type_name(value)}", key)
    return value


def _span(raw: Any, name: str, index: int, line: int | None) -> tuple[Span, str]:
    """The span at ``index`` of an array, or on ``line`` of a JSON Lines file."""

    def fail(message: str, field: str | None = None) -> InputError:
        if line is not None:
            return InputError(message, source=name, lineno=line, field=field)
        return InputError(message, source=name, record=index, field=field)

    if not isinstance(raw, Mapping):
        raise fail(f"expected a span object, got {type_name(raw)}")
    context = _context(raw)
    if not isinstance(context, Mapping):
        raise fail(
            "missing" if context is None else f"expected an object, got {type_name(context)}",
            "context",
        )
    span_id = _id(_text(context, "span_id", lambda m, f: fail(m, f"context.{f}"), required=True))
    trace_id = _id(_text(context, "trace_id", lambda m, f: fail(m, f"context.{f}"), required=True))
    for value, key in ((span_id, "span_id"), (trace_id, "trace_id")):
        if value is None:  # (all zeros: OpenTelemetry's "no id")
            raise fail("an invalid id (all zeros)", f"context.{key}")
    assert span_id is not None and trace_id is not None
    attributes = raw.get("attributes")
    if attributes is None:
        attributes = {
            k[len("attributes.") :]: v for k, v in raw.items() if k.startswith("attributes.")
        }
    attributes = parse_json_text(attributes)
    if not isinstance(attributes, Mapping):
        raise fail(f"expected an object, got {type_name(attributes)}", "attributes")
    attrs = flatten(attributes)
    kind = _text(raw, "span_kind", fail)
    if kind and not attrs.get("openinference.span.kind"):
        attrs["openinference.span.kind"] = kind.upper()
    start = _time(raw, "start_time", fail)
    end = _time(raw, "end_time", fail)
    duration = None
    if start is not None and end is not None and end >= start:
        duration = round((end - start).total_seconds() * 1000.0, 3)
    nested = raw.get("status")  # (the console exporter's {status_code, description})
    if nested is not None and not isinstance(nested, Mapping):
        raise fail(f"expected an object, got {type_name(nested)}", "status")
    held, at = (nested, "status.") if nested is not None else (raw, "")

    def status_fail(message: str, field: str) -> InputError:
        return fail(message, at + field)

    status_raw = _text(held, "status_code", status_fail) or "UNSET"
    status = _STATUS.get(status_raw.upper().removeprefix("STATUS_CODE_"))
    if status is None:
        raise fail(f"expected OK, ERROR or UNSET, got {status_raw!r}", f"{at}status_code")
    message = _text(held, "description" if nested is not None else "status_message", status_fail)
    kind_raw = raw.get("kind")  # (the console exporter's "SpanKind.CLIENT")
    otel_kind = kind_raw.removeprefix("SpanKind.") if isinstance(kind_raw, str) else None
    span = Span(
        span_id=span_id,
        parent_id=_id(_text(raw, "parent_id", fail)),
        otel_kind=otel_kind or None,
        metadata={"links": raw["links"]} if raw.get("links") else {},
        name=_text(raw, "name", fail) or "",
        attributes=attrs,
        start=start,
        duration_ms=duration,
        status=status,
        status_message=message,
        events=_events(raw.get("events"), fail),
        path="" if line is not None else f"[{index}]",
        line=line,
        attributes_path="attributes",
    )
    return span, trace_id


def _id(raw: str | None) -> str | None:
    """A span or trace id; ``0x`` hex (as the console exporter writes ids) as the
    plain hex OTLP writes, so one trace exported both ways is one run."""
    if raw is not None and raw[:2] in ("0x", "0X"):
        return normalise_id(raw, 32 if len(raw) > 18 else 16)
    if raw and all(c in hexdigits for c in raw):  # (as OTLP's: "ABC..." is "abc...")
        return None if set(raw) == {"0"} else raw.lower()
    return raw


def resource_of(raw: Any) -> dict[str, Any]:
    """The resource attributes a console-exporter span carries (``resource.attributes``)."""
    resource = raw.get("resource") if isinstance(raw, Mapping) else None
    attrs = resource.get("attributes") if isinstance(resource, Mapping) else None
    return dict(attrs) if isinstance(attrs, Mapping) else {}


def _time(raw: Mapping[str, Any], key: str, fail: Any) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    moment = parse_timestamp(value)
    if moment is None:
        raise fail(f"expected an ISO-8601 time, got {value!r}", key)
    return moment


def _events(raw: Any, fail: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    raw = parse_json_text(raw)
    if not isinstance(raw, list):
        raise fail(f"expected a list of span events, got {type_name(raw)}", "events")
    out: list[dict[str, Any]] = []
    for i, event in enumerate(raw):
        if not isinstance(event, Mapping):
            raise fail(f"expected a span event object, got {type_name(event)}", f"events[{i}]")
        attributes = event.get("attributes") or {}
        if not isinstance(attributes, Mapping):
            raise fail(
                f"expected an object, got {type_name(attributes)}", f"events[{i}].attributes"
            )
        out.append(
            {
                "name": event.get("name"),
                "timestamp": event.get("timestamp"),
                "attributes": flatten(attributes),
            }
        )
    return out
