"""When the SQLite store folds its write-ahead log back into the database file.

SQLite's default is to checkpoint inside the commit that takes the log past 1,000
pages: the thread that commits copies the log into the database file and syncs
both, while it writes. For capture that thread is the background writer, and a
fast agent's run passes 1,000 pages every few thousand events, so most of a run's
write time went to copying pages that were already durable in the log.

So the store checkpoints:

- when the writer is idle and at least :data:`WAL_IDLE` bytes were written since
  the last checkpoint, on a connection of its own, so that readers (loading a
  run, listing runs) are not held behind it;
- and, as SQLite does, inside a commit, but only once the log holds
  :data:`WAL_MAX_BYTES` of pages (SQLite counts them itself, so the log stays
  bounded whatever writes it: a long burst of capture, reports, imports); after
  such a checkpoint the log file is cut back to :data:`WAL_FILE_LIMIT` bytes.

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

WAL_IDLE = 4 * 1024 * 1024  # SQLite's own default, 1,000 pages, at 4 KiB each
WAL_MAX_BYTES = 64 * 1024 * 1024  # SQLite's in-commit checkpoint, as a backstop
WAL_FILE_LIMIT = 64 * 1024 * 1024


class WalKeeper:
    """Counts what a store's connection writes and checkpoints its log when idle."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pending = 0  # bytes written since the last complete checkpoint (estimate)
        self.page_size = 4096  # what any committed transaction adds at least
        self._lock = threading.Lock()
        self._count = threading.Lock()  # (pending: never held while a checkpoint runs)
        self._own: sqlite3.Connection | None = None
        self._closed = False

    def configure(self, db: sqlite3.Connection) -> None:
        """SQLite's in-commit checkpoints only as a backstop, on a connection."""
        self.page_size = int(db.execute("PRAGMA page_size").fetchone()[0])
        pages = max(1, WAL_MAX_BYTES // self.page_size)
        db.execute(f"PRAGMA wal_autocheckpoint={pages}")
        db.execute(f"PRAGMA journal_size_limit={int(WAL_FILE_LIMIT)}")

    def wrote(self, nbytes: int) -> None:
        """After a commit: about ``nbytes`` more wait in the log."""
        with self._count:  # (the store thread counts, the writer's idle moment resets)
            self.pending += max(nbytes, self.page_size)

    def idle(self) -> bool:
        """The writer has nothing queued: checkpoint if enough is waiting. False
        when it could not all be moved (a reader's snapshot held part of the log,
        or the checkpoint failed): the writer asks again at its next wake."""
        taken = self.pending  # (what the checkpoint below moves; a commit during it
        if taken < WAL_IDLE:  # is counted for the next one)
            return True
        with self._lock:
            if self._closed:
                return True
            try:
                if self._own is None:
                    self._own = sqlite3.connect(
                        self.path, check_same_thread=False, isolation_level=None, timeout=5
                    )
                    self.configure(self._own)
                busy, frames, done = self._own.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            except sqlite3.Error as exc:  # the next idle moment tries again
                log.warning("agentdebug: checkpoint of %s failed: %s", self.path, exc)
                return False
            if not busy and frames == done:
                with self._count:
                    self.pending = max(0, self.pending - taken)
                return True
            return False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._own is not None:
                self._own.close()
                self._own = None
