"""What the commands say about a store that cannot take a write now: a file this
user cannot write, or another connection holding its write lock (a write waits
for that lock up to SQLite's 30 s, which a command should not do without a word)."""

from __future__ import annotations

from agentdebug.capture.store_health import locked_now
from agentdebug.store import TraceStore

__all__ = ["LOCKED", "locked_now", "unwritable"]

LOCKED = "is locked by another connection (a backup, `agentdebug prune --vacuum`, a sqlite3 shell?)"


def unwritable(store: TraceStore) -> str | None:
    """Why a report cannot be stored now, or None."""
    closed = getattr(store, "read_only", None)
    if closed:
        return f"is read-only here ({closed})"
    if locked_now(store):
        return f"{LOCKED}: run this again once the lock goes to keep it"
    return None
