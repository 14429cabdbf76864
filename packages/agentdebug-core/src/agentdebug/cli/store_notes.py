"""What the commands say about a store that cannot take a write now: a file this
user cannot write, or another connection holding its write lock (a write waits
for that lock up to SQLite's 30 s, which a command should not do without a word)."""

from __future__ import annotations

from agentdebug.store import TraceStore

LOCKED = "is locked by another connection (a backup, `agentdebug prune --vacuum`, a sqlite3 shell?)"


def locked_now(store: TraceStore) -> bool:
    """Whether another connection holds ``store``'s write lock now (SQLite, JSON Lines)."""
    probe = getattr(store, "write_locked", None)
    try:
        return bool(probe()) if callable(probe) else False
    except Exception:
        return False


def unwritable(store: TraceStore) -> str | None:
    """Why a report cannot be stored now, or None."""
    closed = getattr(store, "read_only", None)
    if closed:
        return f"is read-only here ({closed})"
    if locked_now(store):
        return f"{LOCKED}: run this again once the lock goes to keep it"
    return None
