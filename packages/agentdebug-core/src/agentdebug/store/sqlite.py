"""The default store: one embedded SQLite file in WAL mode, one row per event.

Runs, events, the agents of each run, reports, report failure modes and benchmark
labels have a table each, so that ``agentdebug list`` can filter by status,
framework, agent, failure mode and time without loading any trajectory. The schema
carries its version in ``PRAGMA user_version``; :data:`MIGRATIONS` (in
:mod:`agentdebug.store.sqlite_schema`, with the rest of the schema) brings an
older file up to date.

An event row is ``(key, data)``: ``key`` is ``run number << 32 | sequence``, so the
table's own b-tree keeps each run's events together and in order, with no second
index to maintain, and ``data`` is the event's JSON. Capture hands over a run's
events as one JSON array, which a single statement splits into rows (``json_each``
in a TEMP trigger), and a run loads as its rows concatenated by SQLite. These
choices come from measurement: per bound parameter, per statement and per Python
object is where Python's sqlite3 spends its time (and holds the GIL), and capture
must stay cheap.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from agentdebug.errors import NotFoundError, StoreError
from agentdebug.gcutil import gc_paused
from agentdebug.schema import AgentTrajectory, DiagnosticReport, GoldLabel, Outcome
from agentdebug.store.access import not_writable, write_refused
from agentdebug.store.base import (
    EventBatch,
    EventRow,
    RunQuery,
    RunSummary,
    StoreLocked,
    StoreReadOnly,
    ambiguous,
    assemble,
    damaged,
    event_row,
    header_json,
    metadata_json_path,
    verdict_of,
)
from agentdebug.store.sqlite_open import (
    BUSY_WAIT,
    CAPTURE_WAIT,
    connect,
    set_up_for_writing,
    write_locked,
)
from agentdebug.store.sqlite_prune import delete_in
from agentdebug.store.sqlite_query import list_statement, summary_of
from agentdebug.store.sqlite_schema import (
    BATCH_INSERT,
    BATCH_SCHEMA,
    CONCAT_EVENTS,
    FIRST_KEY,
    LAST_KEY,
    MIGRATIONS,
    PAGE_SIZE,
    RUN_START,
    SCHEMA_VERSION,
    VERDICT_COLUMNS,
    columns_of,
    concats_in_key_order,
    ensure_additions,
)
from agentdebug.store.sqlite_schema import has_json_each as _has_json_each
from agentdebug.store.wal import WalKeeper

log = logging.getLogger("agentdebug.store")

__all__ = ["LOAD_CHUNK", "MIGRATIONS", "PAGE_SIZE", "SCHEMA_VERSION", "SQLiteStore"]


_BUSY, _LOCKED, _READONLY = 5, 6, 8  # SQLite's primary result codes


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value else None


_SEQ_BITS = 32
_ROWS_PER_STATEMENT = 128
_MULTI_INSERT = "INSERT OR REPLACE INTO events(key, data) VALUES " + ",".join(
    ["(?,?)"] * _ROWS_PER_STATEMENT
)


def _insert_events(db: sqlite3.Connection, num: int, rows: Sequence[EventRow]) -> None:
    base = num << _SEQ_BITS
    full = len(rows) - len(rows) % _ROWS_PER_STATEMENT
    for start in range(0, full, _ROWS_PER_STATEMENT):
        params: list[object] = []
        for row in rows[start : start + _ROWS_PER_STATEMENT]:
            params.append(base + row.seq)
            params.append(row.data)
        db.execute(_MULTI_INSERT, params)
    if full < len(rows):
        db.executemany(
            "INSERT OR REPLACE INTO events(key, data) VALUES (?,?)",
            [(base + row.seq, row.data) for row in rows[full:]],
        )


# A run loads in chunks of this many keys, each concatenated by SQLite in one pass
LOAD_CHUNK = 4096
NUMS_KEPT = 4096  # run numbers cached (run id -> num), the latest used


def _run_columns(header: AgentTrajectory) -> tuple[Any, ...]:
    """A run's row from its header: id, goal, framework, status, start, end, parent."""
    return (
        header.id,
        header.goal,
        header.framework,
        header.outcome.status.value,
        _ts(header.started_at),
        _ts(header.ended_at),
        header.parent_id,
    )


def _event_range(num: int) -> tuple[int, int]:
    return num << _SEQ_BITS, ((num + 1) << _SEQ_BITS) - 1


def _note_agents(db: sqlite3.Connection, run_id: str, rows: Sequence[EventRow]) -> None:
    agents = {r.agent_name for r in rows if r.agent_name}
    db.executemany(
        "INSERT OR IGNORE INTO run_agents(run_id, agent_name) VALUES (?,?)",
        [(run_id, a) for a in agents],
    )


def _verdict_values(report: DiagnosticReport) -> list[object]:
    """The ``VERDICT_COLUMNS`` of a report's row."""
    verified, later = verdict_of(report.model_dump(include={"verification", "verified_by_rerun"}))
    return [
        None if verified is None else int(verified),
        *(
            (later.round, later.branch_id, later.run_id, later.agent, later.step)
            if later
            else [None] * 5
        ),
    ]


class SQLiteStore:
    """A :class:`~agentdebug.store.base.TraceStore` on one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self._lock = threading.RLock()
        self._nums: dict[str, int] = {}
        self._indexed: set[str] = set()  # metadata paths index_metadata made sure of
        self._busy = BUSY_WAIT  # the connection's wait for another's write lock (s)
        self._capture = False  # a capture write is under way (see _capturing)
        self.read_only = not_writable(self.path)  # why it is open read-only, or None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = connect(self.path, read_only=self.read_only is not None)
            self._wal = WalKeeper(self.path)
            if self.read_only is None:
                set_up_for_writing(self._db, PAGE_SIZE)
                self._wal.configure(self._db)
            self._db.execute("PRAGMA foreign_keys=OFF")
            # the longest value SQLite takes (a batch of events is bound as one)
            self._max_length = self._db.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) // 2
            self._migrate()
            if self.read_only is None:
                ensure_additions(self._db, self.path)
            # (a file from an older agentdebug, read-only here, lacks them: read as empty)
            self._verdicts = set(VERDICT_COLUMNS) <= columns_of(self._db, "reports")
            for statement in BATCH_SCHEMA:
                self._db.execute(statement)
            self._json_each = _has_json_each(self._db)
            self._concat_ordered = concats_in_key_order(self._db)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot open the store: {exc}") from exc

    # -- schema -----------------------------------------------------------------

    def _migrate(self) -> None:
        with self._lock:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: store schema version {version} is newer than this "
                    f"agentdebug understands ({SCHEMA_VERSION}); upgrade agentdebug"
                )
            if version < SCHEMA_VERSION and self.read_only is not None:
                raise StoreError(
                    f"{self.path}: store schema version {version} is older than this "
                    f"agentdebug's ({SCHEMA_VERSION}), and the file cannot be upgraded "
                    f"here ({self.read_only}); open it once where it can be written"
                )
            for target in range(version + 1, SCHEMA_VERSION + 1):
                self._db.execute("BEGIN IMMEDIATE")
                try:  # (read again under the lock: workers opening a new store at once)
                    if self._db.execute("PRAGMA user_version").fetchone()[0] >= target:
                        self._db.execute("COMMIT")
                        continue
                    for statement in MIGRATIONS[target].split(";"):
                        if statement.strip():
                            self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version={target}")
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _query(self, sql: str, args: Sequence[object] = ()) -> list[Any]:
        with self._lock:
            try:
                self._wait(CAPTURE_WAIT if self._capture else BUSY_WAIT)
                return self._db.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{self.path}: read failed: {exc}") from exc

    def _tx(self, work: Callable[[sqlite3.Connection], None], nbytes: int = 0) -> None:
        """Run ``work`` in one write transaction (about ``nbytes`` of data)."""
        with self._lock:
            try:
                self._wait(CAPTURE_WAIT if self._capture else BUSY_WAIT)
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    work(self._db)
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise self._write_failed(exc) from exc
            self._wal.wrote(nbytes)

    def _write_failed(self, exc: sqlite3.DatabaseError) -> StoreError:
        """The error for a failed write: ``StoreLocked`` when another connection
        held the write lock past the wait (a later try may succeed; capture's
        writer keeps trying), ``StoreReadOnly`` when the file cannot be written."""
        if self.read_only is not None:
            return StoreReadOnly(write_refused(self.path, self.read_only, exc))
        code = getattr(exc, "sqlite_errorcode", None)
        kind = {_BUSY: StoreLocked, _LOCKED: StoreLocked, _READONLY: StoreReadOnly}.get(
            code & 0xFF if isinstance(code, int) else -1, StoreError
        )
        return kind(f"{self.path}: write failed: {exc}")

    def write_locked(self) -> bool:
        """Whether another connection holds the store's write lock now (capture's
        writer asks, to say why a run's end does not wait for the store)."""
        return self.read_only is None and write_locked(self.path)

    def idle(self) -> bool:
        """Nothing is being written: fold the write-ahead log into the file if
        enough waits (see :mod:`agentdebug.store.wal`); False if some is left."""
        return self._wal.idle()

    def index_metadata(self, path: str) -> None:
        """Keep an index of the runs' metadata values at dotted ``path``, so that
        ``list_runs(RunQuery(metadata=((path, value),)))`` finds them without
        reading every run's header (an integration that looks runs up by a key,
        as the LangGraph plugin does by thread, asks for it). Made once per file
        (one pass over the headers), then kept up by SQLite as runs are written."""
        if path in self._indexed:
            return
        json_path = metadata_json_path(path)
        name = "runs_md_" + hashlib.sha1(path.encode()).hexdigest()[:12]
        self._indexed.add(path)  # (tried once per process: a failure leaves it slower only)
        there = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?"
        if self._query(there, (name,)):
            return  # (made by another process: no write, no lock to wait for)

        def work(db: sqlite3.Connection) -> None:
            db.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON runs"
                f"(json_extract(CAST(header AS TEXT), '{json_path}'))"
            )

        self._tx(work)

    # -- capture ----------------------------------------------------------------

    def _upsert_run(
        self, db: sqlite3.Connection, header: AgentTrajectory, n_events: int | None
    ) -> int:
        db.execute(
            "INSERT INTO runs(id, goal, framework, status, started_at, ended_at, parent_id,"
            " n_events, header) VALUES (?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(id) DO UPDATE SET goal=excluded.goal, framework=excluded.framework,"
            " status=excluded.status, started_at=excluded.started_at, ended_at=excluded.ended_at,"
            " parent_id=excluded.parent_id, header=excluded.header"
            + (", n_events=excluded.n_events" if n_events is not None else ""),
            (*_run_columns(header), n_events or 0, header_json(header)),
        )
        num = int(db.execute("SELECT num FROM runs WHERE id=?", (header.id,)).fetchone()[0])
        return self._remember(header.id, num)

    def _num(self, db: sqlite3.Connection, run_id: str) -> int:
        num = self._nums.get(run_id)
        if num is None:
            row = db.execute("SELECT num FROM runs WHERE id=?", (run_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"no run with id '{run_id}' in {self.location}")
            num = self._remember(run_id, int(row[0]))
        return num

    def _remember(self, run_id: str, num: int) -> int:
        """Cache a run's number: the latest ``NUMS_KEPT`` runs' (a store open as long
        as a service must not grow with every run it writes)."""
        if len(self._nums) >= NUMS_KEPT:
            del self._nums[next(iter(self._nums))]  # (the oldest cached)
        self._nums[run_id] = num
        return num

    def _wait(self, seconds: float) -> None:
        """How long the connection waits for another's write lock: set when it
        changes (capture's writes, then another write or a read)."""
        if self._busy != seconds:
            self._db.execute(f"PRAGMA busy_timeout={int(seconds * 1000)}")
            self._busy = seconds

    @contextlib.contextmanager
    def _capturing(self) -> Iterator[None]:
        """For the writes capture makes (a run's start, events and end): wait
        ``CAPTURE_WAIT`` seconds for another connection's write lock, not the 30 s
        of the store's other writes and reads, and then raise ``StoreLocked``:
        capture's writer tries again in a moment, letting go of this store (its
        readers, its close) in between, while the agent goes on (see
        capture.store_health)."""
        with self._lock:
            try:
                self._wait(CAPTURE_WAIT)
            except sqlite3.DatabaseError as exc:
                raise self._write_failed(exc) from exc
            self._capture = True
            try:
                yield
            finally:
                self._capture = False

    def begin_run(self, header: AgentTrajectory) -> None:
        """Start a run; a run id used before starts afresh (its old events go)."""

        args = (*_run_columns(header), header_json(header))
        with self._capturing():
            try:
                self._db.execute(RUN_START, args)  # one statement, its own transaction
            except sqlite3.DatabaseError as exc:
                raise self._write_failed(exc) from exc
            self._wal.wrote(len(args[-1]))

    def append_events(self, run_id: str, rows: Sequence[EventRow]) -> None:
        with self._capturing():
            if isinstance(rows, EventBatch) and self._append_batch(run_id, rows):
                return

            def work(db: sqlite3.Connection) -> None:
                _insert_events(db, self._num(db, run_id), rows)
                db.execute(
                    "UPDATE runs SET n_events = n_events + ? WHERE id=?", (len(rows), run_id)
                )
                _note_agents(db, run_id, rows)

            self._tx(work, sum(len(r.data) for r in rows))

    def _append_batch(self, run_id: str, batch: EventBatch) -> bool:
        """Write a batch in one statement; False (nothing written) if SQLite will
        not take it as an array (too long, or JSON its parser refuses), for the
        row-by-row path instead."""
        if not self._json_each or len(batch.array) > self._max_length:
            return False
        with self._lock:
            try:
                num = self._num(self._db, run_id)
                self._db.execute(
                    BATCH_INSERT,
                    (
                        num,
                        run_id,
                        (num << _SEQ_BITS) + batch.first,
                        batch.array,
                        batch.length,
                        orjson.dumps(sorted(batch.agents)).decode(),
                    ),
                )
            except sqlite3.DataError:
                return False
            except sqlite3.OperationalError as exc:
                if "json" in str(exc).lower():
                    return False
                raise self._write_failed(exc) from exc
            except sqlite3.DatabaseError as exc:
                raise self._write_failed(exc) from exc
            self._wal.wrote(len(batch.array))
        return True

    def finish_run(self, run_id: str, outcome: Outcome, ended_at: datetime | None) -> None:
        with self._capturing():
            self._finish(run_id, outcome, ended_at)

    def _finish(self, run_id: str, outcome: Outcome, ended_at: datetime | None) -> None:
        rows = self._query("SELECT header FROM runs WHERE id=?", (run_id,))
        row = rows[0] if rows else None
        if row is None:
            raise NotFoundError(f"no run with id '{run_id}' in {self.location}")
        head = orjson.loads(row[0])
        head["outcome"] = outcome.model_dump(mode="json")
        head["ended_at"] = ended_at.isoformat() if ended_at else None

        def work(db: sqlite3.Connection) -> None:
            db.execute(
                "UPDATE runs SET status=?, ended_at=?, header=? WHERE id=?",
                (outcome.status.value, _ts(ended_at), orjson.dumps(head), run_id),
            )

        self._tx(work)

    # -- whole trajectories -------------------------------------------------------

    def save_trajectory(self, trajectory: AgentTrajectory, label: GoldLabel | None = None) -> None:
        rows = [event_row(i, e) for i, e in enumerate(trajectory.events)]

        def work(db: sqlite3.Connection) -> None:
            num = self._upsert_run(db, trajectory, len(rows))
            db.execute("DELETE FROM events WHERE key BETWEEN ? AND ?", _event_range(num))
            _insert_events(db, num, rows)
            db.execute("DELETE FROM run_agents WHERE run_id=?", (trajectory.id,))
            _note_agents(db, trajectory.id, rows)
            # a run saved again (a trace imported again) is that run now: the reports
            # and label of what it was go, as in a JSON Lines store
            for table in ("report_modes", "reports", "labels"):
                db.execute(f"DELETE FROM {table} WHERE run_id=?", (trajectory.id,))
            if label is not None:
                db.execute(
                    "INSERT OR REPLACE INTO labels(run_id, data) VALUES (?,?)",
                    (trajectory.id, label.model_dump_json().encode()),
                )

        self._tx(work, sum(len(r.data) for r in rows))

    def load_trajectory(self, run_id: str) -> AgentTrajectory:
        with self._lock, gc_paused():
            try:
                self._wait(BUSY_WAIT)
                self._db.execute("BEGIN")  # one snapshot: the header and every chunk
                try:
                    heads = self._db.execute(
                        "SELECT header, num FROM runs WHERE id=?", (run_id,)
                    ).fetchall()
                    chunks = self._event_chunks(heads[0][1]) if heads else []
                finally:
                    self._db.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{self.path}: read failed: {exc}") from exc
        if not heads:
            raise NotFoundError(f"no run with id '{run_id}' in {self.location}")
        try:
            return assemble(heads[0][0], chunks, self.location)
        except ValueError as exc:
            raise damaged(self.location, f"run '{run_id}'", exc) from exc

    def _event_chunks(self, num: int) -> list[bytes]:
        """The run's events in key order, as comma-separated JSON documents,
        ``LOAD_CHUNK`` events' worth of keys to a chunk.

        SQLite concatenates the rows itself (no Python object per row), in key
        order where the query plan is a range search of the key (see
        :func:`~agentdebug.store.sqlite_schema.concats_in_key_order`); otherwise,
        or when a chunk is too long for one value, the rows are fetched one by
        one, in ORDER BY order.
        """
        lo, hi = _event_range(num)
        db = self._db
        if self._concat_ordered:
            first = db.execute(FIRST_KEY, (lo, hi)).fetchone()[0]
            last = db.execute(LAST_KEY, (lo, hi)).fetchone()[0]
            if first is None:
                return []
            try:
                found = (
                    db.execute(
                        CONCAT_EVENTS, (start, min(start + LOAD_CHUNK - 1, last))
                    ).fetchone()[0]
                    for start in range(first, last + 1, LOAD_CHUNK)
                )
                return [data for data in found if data is not None]
            except sqlite3.DataError:  # too long for one value: row by row
                pass
        rows = db.execute(
            "SELECT data FROM events WHERE key BETWEEN ? AND ? ORDER BY key", (lo, hi)
        ).fetchall()
        docs = [r[0] if isinstance(r[0], bytes) else str(r[0]).encode() for r in rows]
        return [b",".join(docs[i : i + LOAD_CHUNK]) for i in range(0, len(docs), LOAD_CHUNK)]

    def resolve_id(self, prefix: str) -> str:
        """The full run id for an id or a unique prefix of one."""
        if self._query("SELECT id FROM runs WHERE id=?", (prefix,)):
            return prefix
        like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._query("SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' LIMIT 6", (like + "%",))
        if not rows:
            raise NotFoundError(f"no run with id '{prefix}' in {self.location}")
        if len(rows) > 1:
            (count,) = self._query(
                "SELECT count(*) FROM runs WHERE id LIKE ? ESCAPE '\\'", (like + "%",)
            )[0]
            raise NotFoundError(ambiguous(prefix, [r[0] for r in rows], int(count)))
        return str(rows[0][0])

    def list_runs(self, query: RunQuery | None = None) -> list[RunSummary]:
        sql, args = list_statement(query or RunQuery(), self._verdicts)
        return [summary_of(row) for row in self._query(sql, args)]

    # -- reports and labels -------------------------------------------------------

    def save_report(self, report: DiagnosticReport) -> None:
        root = report.root_cause

        def work(db: sqlite3.Connection) -> None:
            exists = db.execute("SELECT 1 FROM runs WHERE id=?", (report.trajectory_id,)).fetchone()
            if not exists:
                raise NotFoundError(
                    f"cannot store report {report.id}: no run '{report.trajectory_id}' in {self.location}"
                )
            names = ["id", "run_id", "created_at", "root_agent", "root_step", "data"]
            values = [
                report.id,
                report.trajectory_id,
                report.created_at.timestamp(),
                root.agent_name if root else None,
                root.step_index if root else None,
                report.model_dump_json().encode(),
            ]
            if self._verdicts:  # (what a rerun said of the root cause, for list)
                names += VERDICT_COLUMNS
                values += _verdict_values(report)
            db.execute(
                f"INSERT OR REPLACE INTO reports({', '.join(names)})"
                f" VALUES ({','.join('?' * len(names))})",
                values,
            )
            db.execute("DELETE FROM report_modes WHERE report_id=?", (report.id,))
            db.executemany(
                "INSERT INTO report_modes(report_id, run_id, mode_id) VALUES (?,?,?)",
                [(report.id, report.trajectory_id, m) for m in report.failure_modes],
            )

        self._tx(work)

    def load_reports(self, run_id: str) -> list[DiagnosticReport]:
        rows = self._query("SELECT data FROM reports WHERE run_id=? ORDER BY created_at", (run_id,))
        try:
            return [DiagnosticReport.model_validate_json(r[0]) for r in rows]
        except ValueError as exc:
            raise damaged(self.location, f"a report of run '{run_id}'", exc) from exc

    def load_label(self, run_id: str) -> GoldLabel | None:
        rows = self._query("SELECT data FROM labels WHERE run_id=?", (run_id,))
        try:
            return GoldLabel.model_validate_json(rows[0][0]) if rows else None
        except ValueError as exc:
            raise damaged(self.location, f"the label of run '{run_id}'", exc) from exc

    def delete_runs(self, run_ids: Collection[str]) -> int:
        """Delete runs whole, in one transaction (see :mod:`.sqlite_prune`); how many went."""
        return delete_in(self._tx, run_ids, self._nums)

    def close(self) -> None:
        self._wal.close()
        with self._lock:
            self._db.close()
