"""Deleting runs from the SQLite store, and giving the file's space back.

A run is kept in six tables: its row in ``runs``, its events (the keys
``run number << 32 | sequence``, one range per run), its agents, its reports, their
failure modes, and its benchmark label. :func:`delete_runs` deletes all of them in
the caller's transaction, so a run is gone whole or not at all;
``SQLiteStore.delete_runs`` runs it in the store's write transaction.

Deleted rows leave free pages in the file, which SQLite reuses for new runs; the
file does not shrink until :func:`vacuum` rewrites it (``agentdebug prune
--vacuum``).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Collection
from pathlib import Path
from typing import NamedTuple

from agentdebug.errors import StoreError

KEY_BITS = 32  # an event's key is its run's number shifted by this, plus its sequence
IDS_PER_STATEMENT = 500  # (SQLite before 3.32 takes at most 999 parameters a statement)
# the tables that keep a row (or several) per run, by run id
RUN_TABLES = ("run_agents", "report_modes", "reports", "labels")

Transaction = Callable[[Callable[[sqlite3.Connection], None]], None]


def delete_runs(db: sqlite3.Connection, run_ids: Collection[str]) -> int:
    """Delete these runs and everything kept for them, inside a transaction the
    caller holds; how many of them were there (an id not in the store is no error,
    and a run that is running now is left alone)."""
    ids = list(dict.fromkeys(run_ids))
    gone = 0
    for start in range(0, len(ids), IDS_PER_STATEMENT):
        part = ids[start : start + IDS_PER_STATEMENT]
        marks = ",".join("?" * len(part))
        # one running now (begun again under its id since the runs were chosen) stays
        live = {
            row[0]
            for row in db.execute(
                f"SELECT id FROM runs WHERE id IN ({marks}) AND status = 'running'", part
            )
        }
        if live:
            part = [i for i in part if i not in live]
            if not part:
                continue
            marks = ",".join("?" * len(part))
        nums = [
            int(row[0]) for row in db.execute(f"SELECT num FROM runs WHERE id IN ({marks})", part)
        ]
        db.executemany(
            "DELETE FROM events WHERE key BETWEEN ? AND ?",
            [(num << KEY_BITS, ((num + 1) << KEY_BITS) - 1) for num in nums],
        )
        for table in RUN_TABLES:
            db.execute(f"DELETE FROM {table} WHERE run_id IN ({marks})", part)
        gone += db.execute(f"DELETE FROM runs WHERE id IN ({marks})", part).rowcount
    return gone


def delete_in(transaction: Transaction, run_ids: Collection[str], numbers: dict[str, int]) -> int:
    """:func:`delete_runs` in one ``transaction`` of the store (its ``_tx``), the
    deleted runs' numbers dropped from its cache ``numbers`` (SQLite gives the number
    of a deleted last run to the next run made: a cached one would put a re-made
    run's events under another run)."""
    gone = 0

    def work(db: sqlite3.Connection) -> None:
        nonlocal gone
        gone = delete_runs(db, run_ids)
        for run_id in run_ids:
            numbers.pop(run_id, None)

    transaction(work)
    return gone


def file_bytes(path: Path) -> int:
    """What the store takes on disk: the file and its write-ahead log."""
    total = 0
    for part in (path, Path(f"{path}-wal")):
        with contextlib.suppress(FileNotFoundError):
            total += part.stat().st_size
    return total


class Vacuumed(NamedTuple):
    """What a :func:`vacuum` did: the file's pages before and after (of
    ``page_size`` bytes), and whether the write-ahead log was folded back and cut."""

    pages_before: int
    free_before: int  # of pages_before, free (left by deleted runs)
    pages_after: int
    page_size: int
    folded: bool

    @property
    def freed(self) -> int:
        """Bytes the rewrite gave back (its pages fewer)."""
        return max(self.pages_before - self.pages_after, 0) * self.page_size


def vacuum(path: Path) -> Vacuumed:
    """Rewrite the file without its free pages (``VACUUM``), then fold the log back
    into it and cut the log to nothing, so the space goes back to the disk.

    ``VACUUM`` takes the write lock for as long as it copies the store (writers
    wait, up to the 30 s every connection of the store waits) and needs about the
    store's size free on the disk for the copy. A reader holding an old snapshot
    keeps the log from being cut; the space comes back at a later checkpoint.

    What it freed is counted in pages, before and after, on its own connection:
    the files' sizes also move with what other processes write meanwhile (a
    service's writers, between the prune's deletes and the rewrite), which once
    made a prune of 147 MB of runs report "0 B freed"."""
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=30)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot open the store to vacuum it: {exc}") from exc
    try:
        size = int(db.execute("PRAGMA page_size").fetchone()[0])
        before = int(db.execute("PRAGMA page_count").fetchone()[0])
        free = int(db.execute("PRAGMA freelist_count").fetchone()[0])
        db.execute("VACUUM")
        after = int(db.execute("PRAGMA page_count").fetchone()[0])
        busy, log, done = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"{path}: vacuum failed ({exc}); the runs are deleted, their space is kept for new runs"
        ) from exc
    finally:
        db.close()
    return Vacuumed(before, free, after, size, folded=not busy and log == done)
