"""Opening the store's SQLite file: for writing, or read-only when this user cannot
write it.

A store is often read by someone who did not write it: a colleague's file, one
kept by a service under another user, a CI artifact on a read-only mount. SQLite
opened for writing fails on such a file ("attempt to write a readonly database")
before anything is read, so a file (or its folder, where the write-ahead log
lives) that this process cannot write is opened read-only instead: every read
works, and a write is an error saying why (:mod:`agentdebug.store.access`).

A WAL-mode file is read through its ``-shm`` index when one is there (its writer
has it open); otherwise no one is writing it, and it is opened ``immutable``, read
as it is: a reader opening it ``mode=ro`` would create the index (and an empty
log) as this user, with the file's permissions, and its owner could not write the
store after. A run its owner starts writing after the open is not seen by it.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

log = logging.getLogger("agentdebug.store")

BUSY_WAIT = 30.0  # seconds a write waits for another connection's write lock
# ... when capture makes it (its writer tries again, the agent not waiting)
CAPTURE_WAIT = 5.0


def connect(path: Path, read_only: bool) -> sqlite3.Connection:
    """A connection to ``path``, as the store uses it (autocommit, shared across
    threads); read-only as described above when ``read_only``."""
    if not read_only:
        return sqlite3.connect(
            path, check_same_thread=False, isolation_level=None, timeout=BUSY_WAIT
        )
    uri = "file:" + quote(str(path.resolve()))
    if Path(f"{path}-shm").exists():  # its writer keeps the log's index: read through it
        return sqlite3.connect(
            uri + "?mode=ro",
            uri=True,
            check_same_thread=False,
            isolation_level=None,
            timeout=BUSY_WAIT,
        )
    # No index, so no writer: a reader opening it ``mode=ro`` would create one (and
    # an empty log) as this user, with the file's permissions, which its owner then
    # cannot write.
    log.info("agentdebug: %s is read-only here; opened as it is (immutable)", path)
    return sqlite3.connect(
        uri + "?immutable=1",
        uri=True,
        check_same_thread=False,
        isolation_level=None,
        timeout=BUSY_WAIT,
    )


BUSY_RETRIES = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def set_up_for_writing(db: sqlite3.Connection, page_size: int) -> None:
    """The page size (for a new file), WAL mode and its sync level. Workers opening a
    new store at once (a first deploy with several workers) contend for the switch
    to WAL, which SQLite answers "database is locked" at once rather than waiting:
    it is tried again a few times, then the error stands."""
    for pause in (*BUSY_RETRIES, None):
        try:
            db.execute(f"PRAGMA page_size={page_size}")  # (new files only)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if pause is None or ("locked" not in text and "busy" not in text):
                raise
            time.sleep(pause)


def write_locked(path: Path) -> bool:
    """Whether another connection holds the file's write lock now (asked at once,
    on a connection of its own, without waiting)."""
    try:
        probe = sqlite3.connect(path, isolation_level=None, timeout=0)
    except sqlite3.Error:
        return False
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as exc:
        return "locked" in str(exc) or "busy" in str(exc)
    finally:
        probe.close()
