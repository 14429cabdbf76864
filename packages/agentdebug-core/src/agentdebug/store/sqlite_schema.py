"""The SQLite store's schema: its tables (versioned, with migrations) and the
TEMP views and triggers through which capture writes a batch or a run's start in
one statement, and the checks of what this SQLite can run. SQL text, in the main;
:mod:`agentdebug.store.sqlite` runs it."""

from __future__ import annotations

import logging
import sqlite3

log = logging.getLogger("agentdebug.store")

SCHEMA_VERSION = 1
# Pages of 16 KiB, not SQLite's 4 KiB: a capture burst's rows go in about twice as
# fast (a quarter as many pages to fill, split and log) and a run reads back in
# fewer page visits. A page size only takes on a new file; older stores keep theirs.
PAGE_SIZE = 16384

_SCHEMA_V1 = """
CREATE TABLE runs (
    num INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    goal TEXT,
    framework TEXT,
    status TEXT NOT NULL,
    started_at REAL,
    ended_at REAL,
    parent_id TEXT,
    n_events INTEGER NOT NULL DEFAULT 0,
    header BLOB NOT NULL
);
CREATE INDEX runs_status ON runs(status);
CREATE INDEX runs_framework ON runs(framework);
CREATE INDEX runs_started ON runs(started_at);
CREATE TABLE events (
    key INTEGER PRIMARY KEY,
    data BLOB NOT NULL
);
CREATE TABLE run_agents (
    run_id TEXT NOT NULL,
    agent_name TEXT NOT NULL,
    PRIMARY KEY (run_id, agent_name)
) WITHOUT ROWID;
CREATE INDEX run_agents_agent ON run_agents(agent_name);
CREATE TABLE reports (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    root_agent TEXT,
    root_step INTEGER,
    data BLOB NOT NULL
);
CREATE INDEX reports_run ON reports(run_id, created_at);
CREATE TABLE report_modes (
    report_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    mode_id TEXT NOT NULL,
    PRIMARY KEY (report_id, mode_id)
);
CREATE INDEX report_modes_mode ON report_modes(mode_id, run_id);
CREATE TABLE labels (
    run_id TEXT PRIMARY KEY,
    data BLOB NOT NULL
);
"""

# version reached -> script that reaches it from the version before
MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1}

# Indexes added after a version, made when a store opens if they are missing:
# an older agentdebug reads and writes a file that has them, so they need no new
# version (which an older agentdebug would refuse). The modes of each listed run
# (``agentdebug list``): without it every run's lookup scans all the modes
# (194 ms for 100 runs of 20,000, against 1.7 ms).
ENSURED_INDEXES = (  # (name, statement)
    (
        "report_modes_run",
        "CREATE INDEX IF NOT EXISTS report_modes_run ON report_modes(run_id, mode_id)",
    ),
)

# Columns added after a version, for the same reason made when a store opens if
# they are missing, without a new version: each may be NULL, and an older
# agentdebug names the columns it reads and writes, so it works with a file that
# has them (a report it stores leaves them empty). A file that lacks them (from
# an older agentdebug, or read-only here) is read with them empty.
# The reports table's: what a rerun said of the report's root cause (``verified``:
# 1 verified by rerun, 0 not confirmed, NULL not tried) and, when a later round's
# branch passed instead, that round, its branch, the run it forked and the agent
# and step it corrected there. ``agentdebug list`` reads them, not the report.
ENSURED_COLUMNS = (  # (table, column, type)
    ("reports", "verified", "INTEGER"),
    ("reports", "later_round", "INTEGER"),
    ("reports", "later_branch", "TEXT"),
    ("reports", "later_run", "TEXT"),
    ("reports", "later_agent", "TEXT"),
    ("reports", "later_step", "INTEGER"),
)
VERDICT_COLUMNS = tuple(column for table, column, _ in ENSURED_COLUMNS if table == "reports")


def columns_of(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


def ensure_additions(db: sqlite3.Connection, path: object) -> None:
    """``ENSURED_INDEXES`` and ``ENSURED_COLUMNS`` made if missing, without waiting
    long: a file another process is writing is used without them (a later open
    tries again). The columns are added in one transaction, all or none."""
    have = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    missing = [(name, sql) for name, sql in ENSURED_INDEXES if name not in have]
    lacking = any(column not in columns_of(db, table) for table, column, _ in ENSURED_COLUMNS)
    if not missing and not lacking:
        return
    db.execute("PRAGMA busy_timeout=200")
    try:
        for name, statement in missing:
            try:
                db.execute(statement)
            except sqlite3.OperationalError as exc:
                log.warning("agentdebug: %s: index %s not made now (%s)", path, name, exc)
        if lacking:
            try:
                _add_columns(db)
            except sqlite3.OperationalError as exc:
                log.warning("agentdebug: %s: report columns not added now (%s)", path, exc)
    finally:
        db.execute("PRAGMA busy_timeout=30000")  # (the connection's timeout=30)


def _add_columns(db: sqlite3.Connection) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:  # (read again under the lock: another process may have added them)
        for table, column, kind in ENSURED_COLUMNS:
            if column not in columns_of(db, table):
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


# A batch from capture is written by one statement: an insert into this view,
# whose trigger splits the batch's JSON array into rows (json_each), counts them
# into the run and notes its agents. One statement is its own transaction, and
# all of it runs inside sqlite3_step, which does not hold Python's GIL: the
# writer thread hands the GIL back once per batch, and the agent's thread runs
# while SQLite works. TEMP objects live in this connection only (not in the file).
BATCH_SCHEMA: tuple[str, ...] = (
    "CREATE TEMP VIEW IF NOT EXISTS event_batches(num, run_id, base, events, n, agents)"
    " AS SELECT NULL, NULL, NULL, NULL, NULL, NULL WHERE 0",
    "CREATE TEMP TRIGGER IF NOT EXISTS event_batches_insert INSTEAD OF INSERT ON event_batches"
    " BEGIN"
    " INSERT OR REPLACE INTO events(key, data)"
    "  SELECT NEW.base + key, CAST(value AS BLOB) FROM json_each(NEW.events);"
    " UPDATE runs SET n_events = n_events + NEW.n WHERE num = NEW.num;"
    " INSERT OR IGNORE INTO run_agents(run_id, agent_name)"
    "  SELECT NEW.run_id, value FROM json_each(NEW.agents);"
    " END",
)
BATCH_INSERT = (
    "INSERT INTO event_batches(num, run_id, base, events, n, agents) VALUES (?,?,?,?,?,?)"
)

# A run's start, in one statement for the same reason: its row (a run id used
# before starts afresh, keeping its number) and none of its old events or agents.
BATCH_SCHEMA += (
    "CREATE TEMP VIEW IF NOT EXISTS run_starts(id, goal, framework, status, started_at,"
    " ended_at, parent_id, header) AS SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
    " WHERE 0",
    "CREATE TEMP TRIGGER IF NOT EXISTS run_starts_insert INSTEAD OF INSERT ON run_starts"
    " BEGIN"
    " INSERT INTO runs(id, goal, framework, status, started_at, ended_at, parent_id, n_events,"
    "  header) VALUES (NEW.id, NEW.goal, NEW.framework, NEW.status, NEW.started_at,"
    "  NEW.ended_at, NEW.parent_id, 0, NEW.header)"
    "  ON CONFLICT(id) DO UPDATE SET goal=excluded.goal, framework=excluded.framework,"
    "  status=excluded.status, started_at=excluded.started_at, ended_at=excluded.ended_at,"
    "  parent_id=excluded.parent_id, header=excluded.header, n_events=0;"
    " DELETE FROM events WHERE key BETWEEN (SELECT num FROM runs WHERE id = NEW.id) << 32"
    "  AND ((SELECT num FROM runs WHERE id = NEW.id) << 32) + 4294967295;"
    " DELETE FROM run_agents WHERE run_id = NEW.id;"
    " END",
)
RUN_START = (
    "INSERT INTO run_starts(id, goal, framework, status, started_at, ended_at, parent_id,"
    " header) VALUES (?,?,?,?,?,?,?,?)"
)

CONCAT_EVENTS = "SELECT CAST(group_concat(data, ',') AS BLOB) FROM events WHERE key BETWEEN ? AND ?"
FIRST_KEY = "SELECT min(key) FROM events WHERE key BETWEEN ? AND ?"
LAST_KEY = "SELECT max(key) FROM events WHERE key BETWEEN ? AND ?"


def concats_in_key_order(db: sqlite3.Connection) -> bool:
    """Whether this SQLite reads a run's rows for ``CONCAT_EVENTS`` by a range
    search of the table's integer key: a b-tree cursor visits them in key order,
    and an aggregate without GROUP BY takes rows in the order it is fed them.
    (group_concat itself promises no order, so the plan is checked once, at open.)"""
    try:
        plan = db.execute("EXPLAIN QUERY PLAN " + CONCAT_EVENTS, (0, 0)).fetchall()
    except sqlite3.DatabaseError:
        return False
    return len(plan) == 1 and str(plan[0][-1]).startswith("SEARCH events USING INTEGER PRIMARY KEY")


def has_json_each(db: sqlite3.Connection) -> bool:
    """Whether this SQLite has JSON1's ``json_each`` (builds before 3.38 may lack
    it; the batch trigger is created either way, and fails only when it runs)."""
    try:
        db.execute("SELECT count(*) FROM json_each('[1]')").fetchone()
    except sqlite3.OperationalError:
        return False
    return True
