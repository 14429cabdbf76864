"""Turning what an agent recorded into event JSON, whatever it passed.

``record`` accepts anything and must never raise, so everything here is total: a
field of the wrong type is coerced (and the coercion noted in the event's
metadata), a value that cannot be serialised is kept as its ``repr`` (only that
field, never the rest of the event), and an event over the size limit is
truncated with a note. The result always validates as an ``AgentEvent``.
"""

from __future__ import annotations

import base64
import logging
import math
import re
import traceback
from typing import Any

import orjson
from pydantic import BaseModel

from agentdebug.capture.walk import (
    CUT_DEPTH,
    Walk,
    coerced,
    cut,
    distinct_keys,
    printed,
    safe_repr,
    safe_str,
    uncycled,
    walk_leaves,
)
from agentdebug.limits import max_event_bytes
from agentdebug.schema import ErrorInfo

__all__ = ["Walk", "distinct_keys", "safe_repr", "safe_str"]  # (here for integrations too)

log = logging.getLogger("agentdebug.capture")

_HEAD_BYTES = 64 * 1024
_AUTO_ID = re.compile(r"^e\d+$")
_INF = math.inf
_OPTIONS = NON_STR_KEYS = orjson.OPT_NON_STR_KEYS

# Slots of a queued event tuple, in order (see TraceSession.record). EVENT_ID is
# the id the caller gave, if any; AUTO_ID the automatic ``e<seq>``, which
# ``record`` makes anyway for its return value (so the writer need not again).
(
    RUN_KEY,
    SEQ,
    TYPE,
    AGENT,
    STEP,
    INPUT,
    OUTPUT,
    ERROR,
    MODULE,
    PARENT,
    DURATION,
    METADATA,
    EXTRA,
    EVENT_ID,
    TS,
    AUTO_ID,
) = range(16)

# An event ``record`` encoded itself is queued as (run key, seq, its JSON, agent):
# the JSON sits where a raw event has its type, the agent where a raw one has it.
ENCODED = TYPE
ENCODED_LEN = 4


# A payload serialised when it was recorded, so later mutation by the agent
# (appending to the message list it passed, say) does not change the record. An
# orjson fragment is written into the event's JSON as it is, and, unlike a bytes
# subclass, is not tracked by the garbage collector: a queued event holding one
# leaves the collector's lists at its first pass instead of being scanned again by
# every collection the agent's own allocations trigger while it waits.
Snapshot = orjson.Fragment


def to_json(value: Any) -> Any:
    """orjson's ``default``: the JSON form of objects it does not know."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes_json(bytes(value))
    if isinstance(value, BaseException):
        return error_dict(value)
    if isinstance(value, float):  # a subclass (numpy.float64): orjson takes only float
        return float(value)
    return _array_like(value)


def _array_like(value: Any) -> Any:
    """An object with a ``tolist()`` (a numpy array or scalar, an ``array.array``, a
    pandas series, a tensor) as the list or number it gives, not its repr (numpy's
    elides all but six items); one of more bytes than an event holds is a
    truncation marker, not turned into a list first. Anything else: its repr."""
    tolist = getattr(type(value), "tolist", None)
    if callable(tolist):
        try:
            size = getattr(value, "nbytes", None)
            if size.__class__ is int and size > max_event_bytes():
                head = safe_repr(value)[:_HEAD_BYTES]
                return {"truncated": True, "original_bytes": size, "head": head}
            return tolist(value)
        except Exception:
            pass
    return safe_repr(value)  # (a repr that raises must not cost the values beside it)


def bytes_json(data: bytes) -> Any:
    """Bytes as text when they are UTF-8, else all of them in base64 (``{"bytes_base64",
    "length"}``): a payload's bytes are not lost to replacement characters. Text with
    a few bytes UTF-8 cannot read (a program's output in another code page) keeps
    its ``text`` beside them, so it can still be read (and searched for errors)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: dict[str, Any] = {"bytes_base64": base64.b64encode(data).decode("ascii")}
    out["length"] = len(data)
    text = data.decode("utf-8", errors="replace")
    if text.count("\ufffd") * 10 <= len(text):  # mostly text
        out["text"] = text
    return out


def dumps(value: Any) -> bytes:
    """``value`` as JSON; dict keys that are not strings become strings, and text
    that is not valid Unicode (a lone surrogate, as from a broken decode) has the
    offending code points written as ``\\udXXX`` escapes (see :func:`clean_text`).

    orjson serialises about twice as fast without ``OPT_NON_STR_KEYS``, and keys
    that are not strings are rare, so that option is used only when it is needed."""
    try:
        return orjson.dumps(value, default=to_json)
    except orjson.JSONEncodeError as first:
        try:
            return orjson.dumps(distinct_keys(value, Walk()), default=to_json, option=_OPTIONS)
        except orjson.JSONEncodeError as exc:
            if _SURROGATES not in str(exc) and _SURROGATES not in str(first):
                raise
            return orjson.dumps(clean_text(value), default=clean_json, option=_OPTIONS)


_SURROGATES = "surrogates not allowed"  # orjson's words for text that is not UTF-8


def clean_json(value: Any) -> Any:
    """:func:`to_json`, its result made valid text (see :func:`clean_text`)."""
    return clean_text(to_json(value))


def clean_text(value: Any) -> Any:
    """``value`` with every string that UTF-8 cannot hold (lone surrogates) made
    valid by writing those code points as backslash escapes, so that nothing else
    of it is lost; in dicts (keys too), lists and tuples, as deep as JSON goes."""
    return walk_leaves(value, _clean_leaf, _clean_leaf, Walk())


def _clean_leaf(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def dumps_kept(value: Any) -> bytes:
    """:func:`dumps` for JSON that is kept a while (queued events, snapshots): a
    copy sized to fit. orjson builds its result in a buffer of at least 1 KiB and
    shrinks it in place; keeping many of those leaves the heap a sieve of holes
    too small for the next buffer, and every event then costs fresh pages (about
    2 us more each, measured). The copy comes from Python's small-object pool."""
    return memoryview(dumps(value)).tobytes()


def snapshot(value: Any) -> Any:
    """``value`` frozen as JSON now if it is a container (so it cannot change under
    us); anything else unchanged. Never raises: an unserialisable container is
    left to the writer's per-field fallback."""
    if isinstance(value, (dict, list)):
        try:
            return Snapshot(dumps_kept(value))
        except Exception:
            return value
    return value


def jsonable(value: Any, limit: int | None = None) -> Any:
    """``value`` as plain JSON data (its ``repr`` if it has no JSON form); over
    ``limit`` bytes of JSON, fitted into them, its large parts truncation markers
    with their heads (see :func:`_fitted`; for what a run's header keeps, which,
    unlike an event, has no careful path of its own)."""
    if value is None or isinstance(value, (int, float, bool)):
        return value
    try:
        data = dumps(value)  # (text UTF-8 cannot hold comes back escaped)
    except Exception:
        acyclic = _acyclic(value, {}, "value")
        if acyclic is None:
            return safe_repr(value)
        data = dumps(acyclic)
    if limit is not None and len(data) > limit:
        return _fitted(orjson.loads(data), len(data), limit, min(_HEAD_BYTES, limit // 8))
    return orjson.loads(data)


def error_dict(error: Any) -> dict[str, Any]:
    if isinstance(error, BaseException):
        out: dict[str, Any] = {
            "message": printed(str, error) or type(error).__name__,  # (its __str__ may raise)
            "type": type(error).__name__,
        }
        if error.__traceback__ is not None:
            out["traceback"] = "".join(
                traceback.format_exception(type(error), error, error.__traceback__)
            )
        return out
    if isinstance(error, ErrorInfo):
        return error.model_dump(exclude_none=True)
    if isinstance(error, dict):
        return {
            "message": str(error.get("message", error)),
            **{k: str(v) for k, v in error.items() if k in ("type", "traceback") and v is not None},
        }
    return {"message": str(error)}


def _field(value: Any, notes: dict[str, Any], key: str) -> Any:
    """A payload field as JSON data or a pre-serialised fragment; its repr (noted)
    when it has no JSON form."""
    if value.__class__ is Snapshot:
        return value
    if isinstance(value, (str, float, bool)) or (
        isinstance(value, int) and -(2**63) <= value < 2**64
    ):
        return value
    try:
        dumps(value)
        return value
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
    given, value = value, distinct_keys(value, Walk())  # ({1: "a", "1": "b"}: both kept)
    kept = coerced(value)  # keys and numbers JSON lacks, as text: the structure is kept
    try:
        dumps(kept)
    except Exception as exc:
        acyclic = _acyclic(given, notes, key)
        if acyclic is not None:
            return acyclic
        # nested past orjson's 255 levels: cut, the rest kept (its repr would be one
        # text; Python 3.12 and later print what 3.11 raises RecursionError for)
        text = None if "Recursion limit" in str(exc) else printed(repr, value)
        if text is None:  # (or nested past Python's recursion limit: its repr raises)
            notes[f"{key}_cut"] = why
            return cut(value, Walk(deepest=CUT_DEPTH))
        notes[f"{key}_unserialisable"] = why
        return text
    notes[f"{key}_coerced"] = (  # (what was done, not orjson's words for why)
        f"keys or integers JSON cannot hold were written as their text, the rest kept ({why})"
    )
    return kept


def _acyclic(value: Any, notes: dict[str, Any], key: str) -> Any:
    """``value`` with its references back to a container holding them as markers
    (see :func:`uncycled`), keys and numbers JSON lacks as text, noted; None when
    it has no such reference, or still no JSON form."""
    walk = Walk()
    kept = uncycled(value, walk)
    if not walk.cycles:
        return None
    kept = coerced(distinct_keys(kept, Walk()))
    try:
        dumps(kept)
    except Exception:
        return None
    notes[f"{key}_cycles"] = (
        f"{walk.cycles} reference(s) back to a value holding them, each kept as a marker"
    )
    return kept


def _text_or_none(value: Any, notes: dict[str, Any], key: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    notes[f"{key}_coerced_from"] = type(value).__name__
    return safe_repr(value) if not isinstance(value, (int, float)) else str(value)


def event_id(item: tuple[Any, ...]) -> str:
    """The event's id: the caller's, else ``e<seq>``. A caller's id shaped like an
    automatic one (``e12``) gets a suffix, so it can never collide with one."""
    given = item[EVENT_ID]
    if given is None:
        return item[AUTO_ID]  # type: ignore[no-any-return]
    text = given if isinstance(given, str) else safe_str(given)
    return f"{text}#u" if _AUTO_ID.match(text) and text != item[AUTO_ID] else text


def _truncated(value: Any, size: int, head: int) -> dict[str, Any]:
    """A truncation marker: the value's size and the head of its text (of its JSON
    for anything but a string, a payload frozen at record time included)."""
    text = value if isinstance(value, str) else dumps(value).decode("utf-8", errors="replace")
    return {"truncated": True, "original_bytes": size, "head": text[:head]}


_FIT_DEPTH = 4  # mapping levels the fitting goes down before truncating a value whole
_FIT_KEYS = 1000  # a mapping with more keys is truncated whole
_FIT_LEAST = 512  # the fewest bytes a value fitted in its own share is given


def _fitted(value: Any, size: int, budget: int, head: int, depth: int = 0) -> Any:
    """``value`` (``size`` bytes of JSON) made to fit in ``budget`` bytes. A mapping
    keeps its keys: its largest values, as many as must go for the rest to fit,
    share what is left of the budget, each fitted in its share (a few levels
    down), so the small fields beside a huge one (a state's counters beside its
    message list) are kept as they were. Anything else, or a mapping that still
    does not fit, becomes a truncation marker with ``head`` characters."""
    mapping = value
    if value.__class__ is Snapshot:  # frozen at record time: its structure back
        mapping = orjson.loads(dumps(value))
    if isinstance(mapping, dict) and depth < _FIT_DEPTH and 0 < len(mapping) <= _FIT_KEYS:
        sizes = {k: len(dumps(v)) for k, v in mapping.items()}
        rest, large = size, []
        for k in sorted(sizes, key=sizes.__getitem__, reverse=True):
            if rest <= budget:
                break
            large.append(k)
            rest -= sizes[k]
        share = (budget - rest) // max(len(large), 1)
        if large and share >= _FIT_LEAST:
            out = dict(mapping)
            for k in large:
                out[k] = _fitted(mapping[k], sizes[k], share, min(head, share // 2), depth + 1)
            if len(dumps(out)) <= budget:
                return out
    return _truncated(value, size, head)


def event_json(item: tuple[Any, ...], limit: int, event_id_: str | None = None) -> bytes:
    """The JSON document, shaped like AgentEvent, for one queued tuple. Total: what
    cannot be kept of the event is noted, the rest is kept."""
    try:
        return _event_json(item, limit, event_id_)
    except Exception as exc:  # a last resort: the event's identity and the reason
        log.warning("agentdebug: event %s kept without its payload: %s", item[SEQ], exc)
        return dumps(
            {
                "id": event_id_ or event_id(item),
                "type": item[TYPE],
                "step_index": item[STEP],
                "timestamp": item[TS],
                "metadata": {
                    "capture_notes": {"event_unserialisable": f"{type(exc).__name__}: {exc}"}
                },
            }
        )


def _event_json(item: tuple[Any, ...], limit: int, event_id_: str | None) -> bytes:
    # Written for the common case (strings and None, no notes): this runs once per
    # event on the writer thread, and its cost is most of the writer's.
    notes: dict[str, Any] = {}
    doc: dict[str, Any] = {
        "id": event_id_ or (item[AUTO_ID] if item[EVENT_ID] is None else event_id(item)),
        "type": item[TYPE],
        "step_index": item[STEP],
        "timestamp": item[TS],
    }
    value = item[AGENT]
    if value is not None:
        doc["agent_name"] = (
            value if value.__class__ is str else _text_or_none(value, notes, "agent_name")
        )
    value = item[MODULE]
    if value is not None:
        doc["module"] = value if value.__class__ is str else _text_or_none(value, notes, "module")
    value = item[PARENT]
    if value is not None:
        doc["parent_id"] = (
            value if value.__class__ is str else _text_or_none(value, notes, "parent_id")
        )
    value = item[DURATION]
    if value is not None:
        if isinstance(value, (int, float)) and math.isfinite(value) and value >= 0:
            doc["duration_ms"] = value
        else:
            notes["duration_ms_dropped"] = safe_repr(value)
    value = item[INPUT]
    if value is not None:
        doc["input"] = value if value.__class__ is str else _field(value, notes, "input")
    value = item[OUTPUT]
    if value is not None:
        doc["output"] = value if value.__class__ is str else _field(value, notes, "output")
    if item[ERROR] is not None:
        try:
            doc["error"] = error_dict(item[ERROR])
        except Exception as exc:
            doc["error"] = {"message": safe_repr(item[ERROR])}
            notes["error_coerced"] = str(exc)
    metadata = item[METADATA]
    if metadata:
        if metadata.__class__ is Snapshot:  # frozen by record; a dict again, for the notes
            metadata = orjson.loads(dumps(metadata))
        if isinstance(metadata, dict):
            metadata = _field(metadata, notes, "metadata")
        if not isinstance(metadata, dict):
            notes["metadata_coerced_from"] = type(item[METADATA]).__name__
            metadata = {"value": metadata}
        doc["metadata"] = metadata
    if item[EXTRA]:
        for key, extra in item[EXTRA].items():
            if extra:
                doc[key] = _field(extra, notes, key)
    if notes:
        doc["metadata"] = {**(doc.get("metadata") or {}), "capture_notes": notes}
    data = dumps(doc)
    if len(data) > limit:
        data = _shrink(doc, data, limit)
    return data


def _shrink(doc: dict[str, Any], data: bytes, limit: int) -> bytes:
    notes = dict(doc.get("metadata") or {})
    for key in ("input", "output"):
        if key in doc:
            size = len(dumps(doc[key]))
            if size > limit // 4:
                head = min(_HEAD_BYTES, limit // 8)
                doc[key] = _fitted(doc[key], size, limit // 4, head)
                notes[f"{key}_truncated_bytes"] = size
    doc["metadata"] = notes
    shrunk = dumps(doc)
    if len(shrunk) > limit and notes:  # the bulk is in metadata (a tool's artifact)
        size = len(dumps(notes))  # its largest values fitted into what is left
        room = limit - (len(shrunk) - size) - 256  # (the note's own bytes, and a margin)
        if room > 0:
            fitted = _fitted(notes, size, room, min(_HEAD_BYTES, room // 4))
            if fitted.get("truncated") is not True:  # (not one marker for it all)
                doc["metadata"] = {**fitted, "metadata_truncated_bytes": size}
                shrunk = dumps(doc)
    if len(shrunk) > limit:  # the bulk is somewhere else still: keep the core only
        keep: dict[str, Any] = {
            k: doc[k]
            for k in ("id", "type", "step_index", "agent_name", "timestamp", "parent_id")
            if k in doc
        }
        keep["metadata"] = {"truncated": True, "original_bytes": len(data)}
        shrunk = dumps(keep)
    log.warning("event %s exceeded %d bytes and was truncated", doc.get("id"), limit)
    return shrunk


def batch_json(items: list[tuple[Any, ...]], ids: dict[int, str], limit: int) -> bytes | None:
    """The events of ``items`` as one JSON array, built with a single serialisation:
    the writer's common case. ``ids`` maps positions in ``items`` to the ids the
    writer settled for events that came with their own.

    Each element is exactly what :func:`event_json` makes of the item, and the
    loop is that function's common case unrolled (no notes to take, payloads left
    to the one serialisation to check). None when the careful path is needed: a
    field to coerce or note, a value that does not serialise, or a batch big
    enough that one of its events could be over ``limit`` (an array no bigger than
    the limit cannot hold an event that is)."""
    docs: list[dict[str, Any]] = []
    append = docs.append
    i = -1
    for (
        _,
        _,
        type_,
        agent,
        step,
        input_,
        output,
        error,
        module,
        parent,
        duration,
        metadata,
        extra,
        _,
        ts,
        auto_id,
    ) in items:
        i += 1
        doc: dict[str, Any] = {
            "id": (ids.get(i) if ids else None) or auto_id,
            "type": type_,
            "step_index": step,
            "timestamp": ts,
        }
        if agent is not None:
            if agent.__class__ is not str:
                return None
            doc["agent_name"] = agent
        if module is not None:
            if module.__class__ is not str:
                return None
            doc["module"] = module
        if parent is not None:
            if parent.__class__ is not str:
                return None
            doc["parent_id"] = parent
        if duration is not None:
            cls = duration.__class__
            if not ((cls is float or cls is int) and 0 <= duration < _INF):
                return None
            doc["duration_ms"] = duration
        if input_ is not None:
            doc["input"] = input_
        if output is not None:
            doc["output"] = output
        if error is not None:
            try:
                doc["error"] = error_dict(error)
            except Exception:
                return None
        if metadata:
            if metadata.__class__ is not Snapshot and metadata.__class__ is not dict:
                return None
            doc["metadata"] = metadata
        if extra:
            for key, value in extra.items():
                if value:
                    doc[key] = value
        append(doc)
    try:
        data = dumps(docs)
    except Exception:
        return None
    return data if len(data) <= limit else None
