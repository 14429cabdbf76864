"""When the SQLite store folds its write-ahead log back into the database file.

SQLite's default is to checkpoint inside the commit that takes the log past 1,000
pages: the thread that commits copies the log into the database file and syncs
both, while it writes. For capture that thread is the background writer, and a
fast agent's run passes 1,000 pages every few thousand events, so most of a run's
write time went to copying pages that were already durable in the log.

The store turns that off (``wal_autocheckpoint=0``) and checkpoints itself:

- when the log has taken :data:`WAL_MAX` bytes since the last checkpoint, in line
  (so the log stays bounded however long an agent writes without a pause);
- when the writer is idle and at least :data:`WAL_IDLE` bytes wait, on a
  connection of its own, so readers (loading a run, listing runs) are not held
  behind it.

A commit is durable in the log either way; a checkpoint only moves pages, and one
that is interrupted (the process exits) is finished by the next connection.
Checkpoints are ``PASSIVE``: they never wait for readers or writers.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

log = logging.getLogger("agentdebug.store")

WAL_IDLE = 4 * 1024 * 1024  # about SQLite's own 1,000 pages
WAL_MAX = 64 * 1024 * 1024
MIN_WRITE = 4096  # what any committed transaction adds at least (one page)


class WalKeeper:
    """Counts what a store's connection writes and checkpoints its log."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pending = 0  # bytes written since the last complete checkpoint (estimate)
        self._lock = threading.Lock()
        self._own: sqlite3.Connection | None = None
        self._closed = False

    @staticmethod
    def configure(db: sqlite3.Connection) -> None:
        """Turn SQLite's in-commit checkpoints off on the store's connection."""
        db.execute("PRAGMA wal_autocheckpoint=0")

    def wrote(self, db: sqlite3.Connection, nbytes: int) -> None:
        """After a commit on ``db`` (under the store's lock): checkpoint in line
        once the log is past :data:`WAL_MAX`."""
        self.pending += max(nbytes, MIN_WRITE)
        if self.pending >= WAL_MAX:
            self._checkpoint(db)

    def idle(self) -> None:
        """The writer has nothing queued: checkpoint if enough is waiting."""
        if self.pending < WAL_IDLE:
            return
        with self._lock:
            if self._closed:
                return
            if self._own is None:
                self._own = sqlite3.connect(
                    self.path, check_same_thread=False, isolation_level=None, timeout=5
                )
                self.configure(self._own)
            self._checkpoint(self._own)

    def _checkpoint(self, db: sqlite3.Connection) -> None:
        try:
            busy, frames, done = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.DatabaseError as exc:  # the next write or idle moment tries again
            log.warning("agentdebug: checkpoint of %s failed: %s", self.path, exc)
            return
        if not busy and frames == done:
            self.pending = 0

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._own is not None:
                self._own.close()
                self._own = None
