"""OTLP JSON: what an OpenTelemetry collector's file exporter (or ``/v1/traces``) holds.

``{resourceSpans: [{resource, scopeSpans: [{scope, spans: [...]}]}]}``; a span has
``traceId``, ``spanId``, ``parentSpanId``, ``name``, ``kind``,
``startTimeUnixNano``, ``endTimeUnixNano``, ``attributes`` as a list of
``{key, value: {stringValue | intValue | ...}}``, ``status {code, message}`` and
``events``. JSON Lines of such objects (the collector's file exporter) are read
as one export. Parents are found by ``parentSpanId``; each ``traceId`` becomes one
trajectory, whose id is the trace id (over every file of a batch import, so a
trace a collector's file rotation split is one run). The snake_case spelling of the protobuf
field names (``resource_spans``, ``span_id``, ...) is accepted too, and so are
ids written as integers or ``0x`` hex (read as the same hex id, so a trace whose
spans were written either way stays one). Attributes that are not ``{key, value}``
objects are an error naming the span and field: dropped, what a span said would
be lost without a word. A span that cannot be read costs its trace only: the
other traces of the export are imported, and the trace is reported, skipped, with
where and why (:class:`TracesSkipped`); so is a trace that cannot be built.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentdebug.errors import AgentDebugError, InputError, RecordsSkipped
from agentdebug.io._common import line_of, type_name
from agentdebug.io.otel import Span, from_unix_nano, spans_to_trajectory
from agentdebug.stages import ImportedRun, Source

_HEX = re.compile(r"^[0-9a-fA-F]+$")
_SPAN_KINDS = {
    0: "UNSPECIFIED",
    1: "INTERNAL",
    2: "SERVER",
    3: "CLIENT",
    4: "PRODUCER",
    5: "CONSUMER",
}
log = logging.getLogger("agentdebug.io")


@dataclass
class Gathered:
    """What :meth:`OtlpImporter.gather` read of one file: its spans by trace id,
    each trace's resource attributes, and the traces a span of which could not be
    read, with the first such span's error."""

    traces: dict[str, list[Span]] = field(default_factory=dict)
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    bad: dict[str, InputError] = field(default_factory=dict)


class TracesSkipped(RecordsSkipped):
    """Traces of an export that could not be imported (the others were), one
    error each. With one, it is where that error is (``source``, ``lineno``,
    ``record``, ``field``), as the error of a file holding only that trace is."""

    def __init__(self, errors: Sequence[InputError], runs: Sequence[Any] = ()) -> None:
        super().__init__(errors, runs)
        if len(self.errors) == 1:
            (only,) = self.errors
            self.source, self.record, self.field = only.source, only.record, only.field
            self.lineno = only.lineno

    def __str__(self) -> str:
        return self.message  # (each error says where it is)

    def located(
        self,
        *,
        source: str | None = None,
        record: int | str | None = None,
        field: str | None = None,
        lineno: int | None = None,
    ) -> InputError:
        return TracesSkipped([e.located(source=source) for e in self.errors], self.runs)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def get(obj: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """``obj[key]`` under its camelCase or snake_case spelling."""
    if key in obj:
        return obj[key]
    return obj.get(_snake(key), default)


def any_value(
    value: Any, *, source: str | None = None, record: str | None = None, field: str = "value"
) -> Any:
    """An OTLP ``AnyValue`` as a plain value (a value that is not one, as it is); a
    ``kvlistValue`` whose items are not ``{key, value}`` objects is an error naming
    ``field`` in ``source`` and ``record``."""
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        found = get(value, key)
        if found is not None:
            return found
    integer = get(value, "intValue")
    if integer is not None:
        try:  # (OTLP/JSON writes 64-bit integers as decimal text)
            return int(integer)
        except (TypeError, ValueError):
            raise InputError(
                f"expected an integer (OTLP intValue), got {integer!r}",
                source=source,
                record=record,
                field=f"{field}.intValue",
            ) from None
    array = get(value, "arrayValue")
    if isinstance(array, Mapping):
        return [
            any_value(v, source=source, record=record, field=f"{field}.arrayValue.values[{i}]")
            for i, v in enumerate(array.get("values") or [])
        ]
    kvlist = get(value, "kvlistValue")
    if isinstance(kvlist, Mapping):
        where = f"{field}.kvlistValue.values"
        return attributes(kvlist.get("values") or [], source=source, record=record, field=where)
    raw = get(value, "bytesValue")
    if raw is not None:
        return raw
    return None


def attributes(
    items: Any, *, source: str | None = None, record: str | None = None, field: str = "attributes"
) -> dict[str, Any]:
    """An OTLP ``[{key, value}]`` list as a dict (a plain dict is accepted as is).
    Anything else, or an item that is not ``{key, value}`` with a text key, is an
    error naming ``field`` (and the item's index) in ``source`` and ``record``:
    dropping it would lose what the span said."""
    if items is None:
        return {}
    if isinstance(items, Mapping):
        return dict(items)
    if not isinstance(items, list):
        raise InputError(
            f"expected a list of {{key, value}} objects, got {type_name(items)}",
            source=source,
            record=record,
            field=field,
        )
    out: dict[str, Any] = {}
    for i, item in enumerate(items):
        key = item.get("key") if isinstance(item, Mapping) else None
        if not isinstance(key, str):
            got = type_name(item) if not isinstance(item, Mapping) else "an object without one"
            raise InputError(
                f"expected a {{key, value}} object with a text key, got {got}",
                source=source,
                record=record,
                field=f"{field}[{i}]",
            )
        out[key] = any_value(
            item.get("value"), source=source, record=record, field=f"{field}[{i}].value"
        )
    return out


def normalise_id(raw: Any, width: int = 32) -> str | None:
    """A trace or span id as lowercase hex (OTLP/JSON uses hex; protobuf JSON base64).

    An integer (as OpenTelemetry's Python API holds ids, and some tools write them)
    and ``0x``-prefixed hex are read as the same id in hex, ``width`` digits (32
    for a trace id, 16 for a span id), so the spans of one trace written either
    way stay one trace."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw == 0:  # (the invalid id, as all-zero hex is)
            return None
        return format(raw, f"0{width}x") if raw > 0 else str(raw)
    text = str(raw)
    if text[:2] in ("0x", "0X") and _HEX.match(text[2:]):
        digits = text[2:].lower().rjust(width, "0")
        return None if set(digits) == {"0"} else digits
    if _HEX.match(text) and len(text) in (16, 32):
        return text.lower()
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text
    if len(decoded) in (8, 16):
        hexed = decoded.hex()
        return None if set(hexed) == {"0"} else hexed
    return text


def _status(raw: Any) -> tuple[str, str | None]:
    if not isinstance(raw, Mapping):
        return "unset", None
    code = raw.get("code")
    text = str(code).upper() if code is not None else ""
    message = raw.get("message") or None
    if text in ("2", "STATUS_CODE_ERROR", "ERROR"):
        return "error", message
    if text in ("1", "STATUS_CODE_OK", "OK"):
        return "ok", message
    return "unset", message


def _kind(raw: Any) -> str | None:
    if isinstance(raw, int):
        return _SPAN_KINDS.get(raw)
    if isinstance(raw, str) and raw:
        return raw.upper().removeprefix("SPAN_KIND_")
    return None


class OtlpImporter:
    """Reads OTLP JSON trace exports (one trajectory per trace id)."""

    name = "otlp"
    description = "OpenTelemetry OTLP JSON export ({resourceSpans:[...]}) or its JSON Lines"

    def sniff(self, source: Source) -> str | None:
        docs = source.records if source.records is not None else [source.document]
        for doc in docs:
            if not isinstance(doc, Mapping):
                return "not a JSON object"
            if not isinstance(get(doc, "resourceSpans"), list):
                return "no 'resourceSpans' list"
        return None

    def load(self, source: Source) -> Iterator[ImportedRun]:
        built = False
        try:
            for run, _files in self.load_gathered([(source, self.gather(source))]):
                built = True
                yield run
        except RecordsSkipped as exc:
            if built or len(exc.errors) != 1:
                raise
            (only,) = exc.errors  # (the file's one trace: its error, as it is)
            cause = only.__cause__
            if isinstance(cause, Exception) and not isinstance(cause, AgentDebugError):
                raise cause from None  # (a bug in agentdebug, not in the file)
            raise only from None

    def gather(self, source: Source) -> Gathered:
        """The spans of one file, by trace id (see :mod:`agentdebug.io.batch`:
        a batch gathers every file before building, so a trace a collector's file
        rotation split across files is one run)."""
        docs = source.records if source.records is not None else [source.document]
        piece = Gathered()
        for index, doc in enumerate(docs):
            assert isinstance(doc, Mapping)
            line = line_of(source, index) if source.records is not None else None
            try:
                _collect(doc, source.name, line, piece)
            except InputError as exc:  # (not a span of a known trace: the file fails)
                raise exc.located(lineno=line) from None
        if not piece.traces and not piece.bad:
            raise InputError(
                "no events: the export holds no spans", source=source.name, field="resourceSpans"
            )
        return piece

    def load_gathered(
        self, items: list[tuple[Source, Gathered]]
    ) -> Iterator[tuple[ImportedRun, list[Path]]]:
        """One run per trace id over all the files' spans, with the files it was
        read from. A trace a span of which could not be read, or that cannot be
        built (its spans' fault, or, unexpectedly, agentdebug's), is skipped with
        its error (:class:`TracesSkipped`, after the others). The gathered spans
        are taken out of ``items`` as they are joined, and a trace's spans let go
        once its run is built, so memory falls as the runs are handed on."""
        traces: dict[str, list[Span]] = {}
        resources: dict[str, dict[str, Any]] = {}
        files: dict[str, list[Source]] = {}
        bad: dict[str, InputError] = {}  # (the first file's error, for a trace bad in several)
        for source, piece in items:
            for trace_id in list(piece.traces):
                traces.setdefault(trace_id, []).extend(piece.traces.pop(trace_id))
                files.setdefault(trace_id, []).append(source)
            for trace_id, resource in piece.resources.items():
                resources.setdefault(trace_id, resource)
            for trace_id, error in piece.bad.items():
                bad.setdefault(trace_id, error)
        errors: list[InputError] = []
        for trace_id in dict.fromkeys([*traces, *bad]):
            spans = traces.pop(trace_id, [])
            if trace_id in bad:
                errors.append(_not_imported(trace_id, bad[trace_id]))
                continue
            sources = files[trace_id]
            name = ", ".join(s.name for s in sources)
            metadata: dict[str, Any] = {"trace_id": trace_id, "source_file": sources[0].path.name}
            resource = resources.get(trace_id) or {}
            if resource:
                metadata["resource"] = resource
                if "service.name" in resource:
                    metadata["service_name"] = resource["service.name"]
            try:
                trajectory = spans_to_trajectory(
                    spans, trajectory_id=trace_id, source=name, metadata=metadata
                )
            except InputError as exc:
                errors.append(exc.located(source=name))
                continue
            except Exception as exc:  # a bug in agentdebug costs this trace only
                log.exception("building trace %r from %s failed unexpectedly", trace_id, name)
                said = f"unexpected {type(exc).__name__}: {str(exc)[:300]}"
                error = InputError(
                    f"trace {trace_id!r} not imported: {said} (a bug in agentdebug)",
                    source=name,
                )
                error.__cause__ = exc
                errors.append(error)
                continue
            yield ImportedRun(trajectory=trajectory), [s.path for s in sources]
        if errors:
            raise TracesSkipped(errors)


def _not_imported(trace_id: str, error: InputError) -> InputError:
    """``error``, a span's, as the reason its trace was not imported."""
    return InputError(
        f"trace {trace_id!r} not imported: {error.message}",
        source=error.source,
        record=error.record,
        field=error.field,
        lineno=error.lineno,
    )


def _collect(doc: Mapping[str, Any], name: str, line: int | None, piece: Gathered) -> None:
    """The spans of one export (a file's, or a JSON Lines file's ``line``), by
    trace, into ``piece``. A span that cannot be read (or whose resource's
    attributes cannot) marks its trace bad; one whose trace cannot be told, and
    anything else that cannot be read, is an error: it may belong to any run."""
    for r, resource_spans in enumerate(get(doc, "resourceSpans") or []):
        rpath = f"resourceSpans[{r}]"
        if not isinstance(resource_spans, Mapping):
            raise InputError(
                f"expected an object, got {type_name(resource_spans)}", source=name, field=rpath
            )
        resource = get(resource_spans, "resource") or {}
        resource_attrs: dict[str, Any] = {}
        resource_error: InputError | None = None
        try:
            resource_attrs = attributes(
                resource.get("attributes") if isinstance(resource, Mapping) else None,
                source=name,
                field=f"{rpath}.resource.attributes",
            )
        except InputError as exc:  # (costs the traces of its spans, found below)
            resource_error = exc
        costs = False  # (whether a trace was marked bad for it)
        scopes = get(resource_spans, "scopeSpans")
        if scopes is None:
            scopes = get(resource_spans, "instrumentationLibrarySpans") or []
        for s, scope_spans in enumerate(scopes):
            spath = f"{rpath}.scopeSpans[{s}]"
            if not isinstance(scope_spans, Mapping):
                raise InputError(
                    f"expected an object, got {type_name(scope_spans)}", source=name, field=spath
                )
            scope = get(scope_spans, "scope") or get(scope_spans, "instrumentationLibrary") or {}
            scope_name = scope.get("name") if isinstance(scope, Mapping) else None
            for i, raw in enumerate(get(scope_spans, "spans") or []):
                try:
                    span, trace_id = _span(raw, name, f"{spath}.spans[{i}]", scope_name)
                    if resource_error is not None:
                        raise resource_error
                except InputError as exc:
                    bad_trace = _trace_of(raw)
                    if bad_trace is None:
                        raise
                    piece.bad.setdefault(bad_trace, exc.located(lineno=line))
                    costs = True
                    continue
                span.line = line
                piece.traces.setdefault(trace_id, []).append(span)
                if resource_attrs:
                    piece.resources.setdefault(trace_id, resource_attrs)
        if resource_error is not None and not costs:
            raise resource_error


def _trace_of(raw: Any) -> str | None:
    """The trace id of a span that could not be read, if it can be told."""
    trace_id = get(raw, "traceId") if isinstance(raw, Mapping) else None
    return None if isinstance(trace_id, float) else normalise_id(trace_id)


def _span(raw: Any, name: str, path: str, scope_name: Any) -> tuple[Span, str]:
    if not isinstance(raw, Mapping):
        raise InputError(f"expected a span object, got {type_name(raw)}", source=name, field=path)
    for key in ("spanId", "traceId", "parentSpanId"):
        if isinstance(get(raw, key), float):  # (a JSON number past 64 bits: digits lost)
            raise InputError(
                f"expected the id as hex text, got the number {get(raw, key)!r}, which "
                "JSON cannot hold exactly (write ids as hex, as OTLP/JSON does)",
                source=name,
                record=path,
                field=f"{path}.{key}",
            )
    span_id = normalise_id(get(raw, "spanId"), 16)
    if span_id is None:
        raise InputError("missing", source=name, record=path, field=f"{path}.spanId")
    trace_id = normalise_id(get(raw, "traceId"))
    if trace_id is None:
        raise InputError("missing", source=name, record=span_id, field=f"{path}.traceId")
    start_raw = get(raw, "startTimeUnixNano")
    end_raw = get(raw, "endTimeUnixNano")
    start = from_unix_nano(start_raw)
    duration: float | None = None
    if start_raw is not None and end_raw is not None:
        nanos = _nanos(end_raw, name, span_id, f"{path}.endTimeUnixNano") - _nanos(
            start_raw, name, span_id, f"{path}.startTimeUnixNano"
        )
        duration = round(nanos / 1e6, 6) if nanos >= 0 else None
    status, message = _status(get(raw, "status"))
    events = []
    for e, event in enumerate(get(raw, "events") or []):
        if not isinstance(event, Mapping):
            raise InputError(
                f"expected a span event object, got {type_name(event)}",
                source=name,
                record=span_id,
                field=f"{path}.events[{e}]",
            )
        moment = from_unix_nano(get(event, "timeUnixNano"))
        events.append(
            {
                "name": event.get("name"),
                "timestamp": moment.isoformat() if moment else None,
                "attributes": attributes(
                    event.get("attributes"),
                    source=name,
                    record=span_id,
                    field=f"{path}.events[{e}].attributes",
                ),
            }
        )
    metadata: dict[str, Any] = {}
    if scope_name:
        metadata["scope"] = scope_name
    links = get(raw, "links")
    if links:
        metadata["links"] = links
    return (
        Span(
            span_id=span_id,
            parent_id=normalise_id(get(raw, "parentSpanId"), 16),
            name=str(raw.get("name") or ""),
            attributes=attributes(
                raw.get("attributes"), source=name, record=span_id, field=f"{path}.attributes"
            ),
            start=start,
            duration_ms=duration,
            status=status,
            status_message=message,
            events=events,
            otel_kind=_kind(raw.get("kind")),
            metadata=metadata,
            path=path,
            attributes_path="attributes",
        ),
        trace_id,
    )


def _nanos(raw: Any, name: str, span_id: str, field: str) -> int:
    """A span time in nanoseconds since the epoch; a bad one names its own field."""
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise InputError(
            f"expected nanoseconds since the epoch, got {raw!r}",
            source=name,
            record=span_id,
            field=field,
        ) from None
