"""Answers already paid for: a SQLite table keyed by the exact request.

The key is the sha256 of the canonical JSON of everything that shapes the answer
(endpoint, model, messages, temperature, max_tokens, response_format, as sent), so
a changed prompt, schema or setting misses. Only answers that passed validation are
stored. The cache is a convenience: if its file is corrupt or unwritable it logs
once and switches itself off instead of failing the diagnosis.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_responses (
    key TEXT PRIMARY KEY,
    raw TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


def request_key(request: dict[str, Any]) -> str:
    """sha256 hex of the request's canonical JSON (sorted keys, no whitespace)."""
    return hashlib.sha256(orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    raw: str
    input_tokens: int
    output_tokens: int
    created: float


class ResponseCache:
    """A thread-safe SQLite cache (WAL) of validated model answers."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.disabled = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10.0)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(_SCHEMA)
                conn.commit()
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        except (sqlite3.Error, OSError) as exc:
            self._disable(exc)

    def _disable(self, exc: BaseException) -> None:
        if not self.disabled:
            log.warning(
                "LLM response cache %s is unusable, continuing without it: %s", self.path, exc
            )
        self.disabled = True
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def get(self, key: str) -> CachedAnswer | None:
        with self._lock:
            if self._conn is None:
                return None
            try:
                row = self._conn.execute(
                    "SELECT raw, input_tokens, output_tokens, created FROM llm_responses WHERE key = ?",
                    (key,),
                ).fetchone()
            except sqlite3.Error as exc:
                self._disable(exc)
                return None
        if row is None:
            return None
        return CachedAnswer(raw=row[0], input_tokens=row[1], output_tokens=row[2], created=row[3])

    def put(self, key: str, raw: str, *, input_tokens: int, output_tokens: int) -> None:
        with self._lock:
            if self._conn is None:
                return
            try:
                self._conn.execute(
                    "INSERT OR REPLACE INTO llm_responses VALUES (?, ?, ?, ?, ?)",
                    (key, raw, input_tokens, output_tokens, time.time()),
                )
                self._conn.commit()
            except sqlite3.Error as exc:
                self._disable(exc)

    def __len__(self) -> int:
        with self._lock:
            if self._conn is None:
                return 0
            try:
                return int(self._conn.execute("SELECT COUNT(*) FROM llm_responses").fetchone()[0])
            except sqlite3.Error as exc:
                self._disable(exc)
                return 0

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
