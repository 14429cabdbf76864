"""Reading a file once, strictly, into a :class:`~agentdebug.stages.Source`.

A file is either one JSON document or JSON Lines (one JSON value per non-empty
line). It is parsed here, once, so every importer's ``sniff`` sees the same parsed
value and none re-reads the file. The reader is strict: broken JSON is an error
that says where it broke, never a guess at what was meant.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from agentdebug.errors import InputError
from agentdebug.limits import MAX_FILE_BYTES_ENV, max_file_bytes
from agentdebug.stages import Source

_BOM = b"\xef\xbb\xbf"
#: What orjson says of a JSON document followed by more (JSON values one after another).
_AFTER_DOCUMENT = "unexpected content after document"
_SPACE = re.compile(r"[ \t\r\n]*")
_JSONL_SUFFIXES = {".jsonl", ".ndjson"}
TEXT_SUFFIXES = {".txt", ".log"}


def read_source(
    path: str | Path,
    *,
    max_bytes: int | None = None,
    text_suffixes: Iterable[str] | None = None,
    text_fallback: bool = False,
) -> Source:
    """Read and parse ``path``; raise :class:`InputError` saying where it is broken.

    ``max_bytes`` (default ``$AGENTDEBUG_MAX_IMPORT_BYTES`` or 200 MiB) bounds the
    file size: a bigger file is refused before it is loaded into memory.

    A file named ``*.txt`` or ``*.log``, or with a suffix in ``text_suffixes``
    (default: those the installed importers declare, ``Importer.suffixes``), is
    handed over as text when it is not JSON; so is any file with
    ``text_fallback`` (an importer named for it may read text). Other files must
    be JSON or JSON Lines.
    """
    path = Path(path)
    name = str(path)
    limit = max_file_bytes() if max_bytes is None else max_bytes
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise InputError("is a directory, not a file", source=name)
        if size > limit:
            raise InputError(
                f"file of {size:,} bytes is over the import limit of {limit:,} bytes "
                f"(raise {MAX_FILE_BYTES_ENV} to import it)",
                source=name,
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", source=name) from None
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", source=name) from None

    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if not data.strip():
        raise InputError("the file is empty", source=name)
    _check_utf8(data, name)
    suffix = path.suffix.lower()
    parse = _parse_lines_first if suffix in _JSONL_SUFFIXES else _parse_document_first
    named_json = suffix in _JSONL_SUFFIXES or suffix == ".json"
    if text_fallback or (not named_json and suffix in _text_suffixes(text_suffixes)):
        try:  # (JSON saved as .log/.txt stays JSON)
            return parse(path, data)
        except InputError:
            return Source(path=path, text=data.decode("utf-8"))
    return parse(path, data)


def _text_suffixes(declared: Iterable[str] | None) -> set[str]:
    """The suffixes of files that may hold text: ``.txt``, ``.log``, and those
    declared that are not JSON's (default: the installed importers')."""
    if declared is None:
        from agentdebug.io.detect import declared_suffixes
        from agentdebug.plugins import get_registry

        declared = declared_suffixes(get_registry().importers.values())
    return TEXT_SUFFIXES | ({s.lower() for s in declared} - _JSONL_SUFFIXES - {".json"})


def parse_bytes(data: bytes, *, name: str = "<bytes>") -> Source:
    """Parse bytes already in memory as :func:`read_source` parses a file."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if not data.strip():
        raise InputError("the input is empty", source=name)
    _check_utf8(data, name)
    return _parse_document_first(Path(name), data)


STORE_HINT = (
    "to read its runs, give it as the store: agentdebug --store FILE list (or show, "
    "diagnose RUN_ID)"
)


def _check_utf8(data: bytes, name: str) -> None:
    if data.startswith(b"SQLite format 3\x00"):
        raise InputError(
            f"a SQLite database (an agentdebug store?), not a trace to import; {STORE_HINT}",
            source=name,
        )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start : exc.end].hex(" ")
        raise InputError(
            f"not UTF-8 text: invalid byte(s) {bad} at byte offset {exc.start} (line {line})",
            source=name,
        ) from None


def _document_error(exc: orjson.JSONDecodeError, name: str) -> InputError:
    return InputError(
        f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno} (character {exc.pos})",
        source=name,
    )


def _parse_document_first(path: Path, data: bytes) -> Source:
    """One JSON document; failing that, JSON Lines if the first line stands alone."""
    name = str(path)
    try:
        return _document_source(path, orjson.loads(data))
    except orjson.JSONDecodeError as exc:
        document_error = exc
    lines = data.split(b"\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:  # pragma: no cover - empty input is refused earlier
        raise _document_error(document_error, name)
    try:
        orjson.loads(lines[first])
    except orjson.JSONDecodeError:
        # The first line is no JSON value by itself: one document, broken, or
        # several, each over several lines.
        if _AFTER_DOCUMENT in document_error.msg:
            return Source(path=path, records=_concatenated(data, name))
        raise _document_error(document_error, name) from None
    if sum(1 for line in lines if line.strip()) < 2:
        raise _document_error(document_error, name)
    return Source(path=path, records=_parse_lines(lines, name))


def _parse_lines_first(path: Path, data: bytes) -> Source:
    """A ``.jsonl`` file: JSON Lines; a pretty-printed single document is accepted too."""
    lines = data.split(b"\n")
    try:
        records = _parse_lines(lines, str(path))
        if records.unreadable:  # (lines set aside: one document over several lines?)
            with contextlib.suppress(orjson.JSONDecodeError):
                return _document_source(path, orjson.loads(data))
        return Source(path=path, records=records)
    except InputError as lines_error:
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            if _AFTER_DOCUMENT not in exc.msg:
                raise lines_error from None
            return Source(path=path, records=_concatenated(data, str(path)))
        return _document_source(path, document)


def _concatenated(data: bytes, name: str) -> JsonLines:
    """JSON values written one after another, each over as many lines as it needs
    (what OpenTelemetry's ``ConsoleSpanExporter`` prints: one indented object per
    span), as records with the line each starts on. A value that is not JSON is an
    error naming the line it starts on."""
    text = data.decode("utf-8")
    decoder = json.JSONDecoder()
    values: list[Any] = []
    numbers: list[int] = []
    at, line = 0, 1
    while True:
        start = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        line += text.count("\n", at, start)
        if start == len(text):
            return JsonLines(values, numbers)
        try:
            value, at = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            said = exc.msg.removesuffix(" at")  # ("Invalid control character at")
            raise InputError(
                f"not valid JSON: {said} at line {exc.lineno}, column {exc.colno} "
                f"(in the value that starts on this line)",
                source=name,
                lineno=line,
            ) from None
        values.append(value)
        numbers.append(line)
        line += text.count("\n", start, at)


def _document_source(path: Path, document: object) -> Source:
    if document is None:
        raise InputError("the file holds only 'null'", source=str(path))
    return Source(path=path, document=document)


class JsonLines(list[Any]):
    """The values of a JSON Lines file, one a line, with the line each was on
    (``line_numbers``, counted from 1, blank lines included), so an error names the
    line a user's editor shows, not the value's position among the non-blank ones."""

    def __init__(
        self, values: list[Any], line_numbers: list[int], unreadable: Sequence[InputError] = ()
    ) -> None:
        super().__init__(values)
        self.line_numbers = line_numbers
        # lines that were not JSON among records that were (a line a logger killed
        # mid-write cut off): each costs only its own record (detect.load_runs)
        self.unreadable = list(unreadable)


def _parse_lines(lines: list[bytes], name: str) -> JsonLines:
    """The records of a JSON Lines file. A few lines that are not JSON among records
    that are objects (at most one in ten, or two) are set aside, each an error naming
    its line, for the others to be read; more, or among values that are not objects
    (a pretty-printed document read line by line), are the file's error."""
    records: list[Any] = []
    numbers: list[int] = []
    unreadable: list[InputError] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError as exc:
            said = f"not valid JSON: {exc.msg} at column {exc.colno}"
            unreadable.append(InputError(said, source=name, lineno=number))
            continue
        numbers.append(number)
    if unreadable and (
        not records
        or len(unreadable) > max(2, len(records) // 10)
        or not all(isinstance(r, dict) for r in records)
    ):
        raise unreadable[0] from None
    return JsonLines(records, numbers, unreadable)
