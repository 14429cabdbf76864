"""A run file given where a store was meant: refused before anything is written to it.

A JSON Lines store and a JSON Lines run file (an exported trajectory, events,
OTLP or Phoenix spans, chat messages) share the suffix. Opened as a store, a run
file warned once per line it could not read as a store record, listed no runs,
and a write (``ingest``, a captured run) appended store records to the user's own
file. Every line a store writes is an object with ``kind`` first
(``{"kind":"run",...}``); the first line that reads as JSON tells the two apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from agentdebug.errors import StoreError

#: What a store's line holds in ``kind`` (see :mod:`agentdebug.store.jsonl`).
STORE_KINDS = frozenset({"run", "events", "finish", "report", "label", "generation"})
_STORE_LINE = re.compile(rb'^\s*\{\s*"kind"\s*:')
_LOOKED_AT = 8  # lines read past (blank, torn) before the file is left to the store

#: A run file's first record, by a field only it has: what it holds, in words.
_SHAPES = (
    ("events", "agentdebug trajectories"),
    ("resourceSpans", "OTLP spans"),
    ("resource_spans", "OTLP spans"),
    ("context", "Phoenix spans"),
    ("messages", "chat conversations"),
    ("role", "chat messages"),
    ("type", "agentdebug events"),
)


def refuse_run_file(path: Path) -> None:
    """Raise :class:`StoreError` when ``path`` holds something other than a JSON
    Lines store (a file that is not there, is empty, or whose lines do not read
    yet, a store's torn first write, is left to the store)."""
    found = _not_a_store(path)
    if found is None:
        return
    run_file, what = found
    said = f"a run file ({what}), not a store" if run_file else f"not a store ({what})"
    raise StoreError(f"{path} is {said}: {read_it_instead(path)}")


def read_it_instead(path: Path) -> str:
    """What to do with a file given as the store, and what a store may be."""
    return (
        f"import it with `agentdebug ingest {path}` or diagnose it with "
        f"`agentdebug diagnose {path}`; --store takes a folder (SQLite inside), a .db, "
        ".sqlite or .sqlite3 file, or a .jsonl store (a new file, or one agentdebug wrote)"
    )


def _not_a_store(path: Path) -> tuple[bool, str] | None:
    """Whether the file is a run file and what it holds, in words, when its first
    record is not a store's."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:  # (not there, a folder, unreadable: the store's open says)
        return None
    with fh:
        for _ in range(_LOOKED_AT):
            head = fh.readline(256)
            if not head:
                return None
            if not head.strip():
                continue
            if _STORE_LINE.match(head):
                return None
            line = head if head.endswith(b"\n") else head + fh.readline()
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # (a torn line: the next says what the file is)
            return _shape(value)
    return None


def _shape(value: Any) -> tuple[bool, str] | None:
    if not isinstance(value, Mapping):
        kind = "list" if isinstance(value, list) else type(value).__name__
        return False, f"its first line is a JSON {kind}, not a store record"
    if value.get("kind") in STORE_KINDS:
        return None
    for key, what in _SHAPES:
        if key in value:
            return True, what
    keys = ", ".join(repr(k) for k in list(value)[:4])
    return False, f"its first line is an object with {keys or 'no fields'}, not a store record"
