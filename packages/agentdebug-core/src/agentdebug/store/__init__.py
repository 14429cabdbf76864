"""Where runs, reports and labels are kept: SQLite by default, JSON Lines on request."""

from __future__ import annotations

from pathlib import Path

from agentdebug.errors import InputError
from agentdebug.store.base import EventRow, RunQuery, RunSummary, TraceStore, default_home
from agentdebug.store.jsonl import JSONLStore
from agentdebug.store.run_file import read_it_instead
from agentdebug.store.sqlite import SQLiteStore

DB_NAME = "agentdebug.db"


def open_store(location: str | Path | None = None) -> TraceStore:
    """Open the store at ``location``.

    ``None`` means ``$AGENTDEBUG_HOME`` or ``./.agentdebug``. A path ending in
    ``.jsonl`` opens an append-only JSON Lines store (a run file there, one whose
    lines are not a store's, is refused: :mod:`agentdebug.store.run_file`); a path
    ending in ``.db``, ``.sqlite`` or ``.sqlite3`` opens that SQLite file; any other
    path is a folder that holds ``agentdebug.db`` (a file there is refused).
    """
    path = store_file(location)
    if path.suffix == ".jsonl":
        return JSONLStore(path)
    if path.parent.is_file():  # (a run file given as the store, say)
        raise InputError(
            f"is a file, not a store folder: {read_it_instead(path.parent)}",
            source=str(path.parent),
        )
    return SQLiteStore(path)


def store_file(location: str | Path | None = None) -> Path:
    """The file the store at ``location`` (as :func:`open_store` reads it) keeps
    its runs in: the ``.jsonl`` or SQLite file given, or ``agentdebug.db`` in the
    folder given."""
    path = Path(location) if location is not None else default_home()
    if path.suffix == ".jsonl" or path.suffix in {".db", ".sqlite", ".sqlite3"}:
        return path
    return path / DB_NAME


__all__ = [
    "EventRow",
    "JSONLStore",
    "RunQuery",
    "RunSummary",
    "SQLiteStore",
    "TraceStore",
    "default_home",
    "open_store",
    "store_file",
]
