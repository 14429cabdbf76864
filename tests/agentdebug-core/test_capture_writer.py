"""The background writer's bookkeeping: which run a queued event belongs to, how
long a session lives, and when the store folds its write-ahead log into the file."""

from __future__ import annotations

import gc
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.store import open_store
from agentdebug.store import wal as wal_module
from agentdebug.store.sqlite import SQLiteStore


def test_a_session_let_go_without_closing_still_has_its_events_stored(home: Path) -> None:
    dbg = AgentDebug(home, flush_interval=60)  # nothing is written before the flush below
    t = dbg.trace(goal="forgotten")
    run_id = t.id
    t.record(EventType.PLAN, output="start")
    dbg.flush()  # the run's start and first event are written ...
    dbg.flush()  # ... and the writer holds nothing of the session any more
    for i in range(3):
        t.record(EventType.TOOL_CALL, agent_name="a", input={"i": i})
    del t
    gc.collect()
    dbg.flush()
    events = open_store(home).load_trajectory(run_id).events
    assert [e.input for e in events[1:]] == [{"i": 0}, {"i": 1}, {"i": 2}]


def test_events_recorded_after_the_run_closed_are_stored_too(home: Path) -> None:
    dbg = AgentDebug(home)
    with dbg.trace(goal="late") as t:
        t.record(EventType.PLAN, output="first")
    t.record(EventType.MESSAGE, output="after close")
    t.record(EventType.MESSAGE, output="and again")
    dbg.flush()
    events = open_store(home).load_trajectory(t.id).events
    assert [e.output for e in events] == ["first", "after close", "and again"]


def test_runs_recorded_in_turn_keep_their_own_events(home: Path) -> None:
    dbg = AgentDebug(home, flush_interval=0.01)
    runs = [dbg.trace(goal=f"run {n}") for n in range(3)]
    for i in range(3000):
        runs[i % 3].record(EventType.TOOL_RESULT, agent_name=f"agent{i % 3}", output=i)
        if i % 1000 == 0:
            time.sleep(0.02)  # let the writer drain mid-way
    for run in runs:
        run.close()
    store = open_store(home)
    for n, run in enumerate(runs):
        events = store.load_trajectory(run.id).events
        assert [e.output for e in events] == list(range(n, 3000, 3))
        assert {e.agent_name for e in events} == {f"agent{n}"}


def _main_file_events(db: Path, run_id: str, scratch: Path) -> int:
    """Events of the run in the database file alone, without its write-ahead log."""
    scratch.mkdir(exist_ok=True)
    copy = scratch / "main-only.db"
    shutil.copyfile(db, copy)
    con = sqlite3.connect(copy)
    try:
        found = con.execute("SELECT n_events FROM runs WHERE id=?", (run_id,)).fetchone()
    except sqlite3.DatabaseError:
        return 0
    finally:
        con.close()
    return int(found[0]) if found else 0


def test_the_log_is_folded_into_the_database_file_once_the_writer_is_idle(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wal_module, "WAL_IDLE", 1)
    dbg = AgentDebug(home, flush_interval=0.02)
    with dbg.trace(goal="fold") as t:
        for i in range(2000):
            t.record(EventType.TOOL_RESULT, agent_name="a", output=f"result {i}")
    store = dbg.store
    assert isinstance(store, SQLiteStore)
    deadline = time.monotonic() + 10
    while _main_file_events(store.path, t.id, tmp_path / "s") != 2000:
        assert time.monotonic() < deadline, "the write-ahead log was never checkpointed"
        time.sleep(0.05)


def test_the_log_stays_bounded_while_an_agent_never_pauses(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wal_module, "WAL_MAX", 256 * 1024)
    monkeypatch.setattr(wal_module, "WAL_IDLE", 1 << 40)  # no idle checkpoints here
    dbg = AgentDebug(home, flush_interval=0.01)
    payload = "x" * 200
    with dbg.trace(goal="long") as t:
        for i in range(30_000):  # about 8 MB of events
            t.record(EventType.TOOL_RESULT, agent_name="a", output=payload, step_index=i)
            if i % 5000 == 0:
                time.sleep(0.02)
    store = dbg.store
    assert isinstance(store, SQLiteStore)
    wal = Path(f"{store.path}-wal")
    assert wal.stat().st_size < 4 * 1024 * 1024  # SQLite's default would not bound it lower
    assert len(store.load_trajectory(t.id).events) == 30_000


def test_queued_events_hold_nothing_the_garbage_collector_must_scan(home: Path) -> None:
    """A queued event that holds a tracked object (a session, an enum member, a
    payload container) is rescanned by every collection the agent's own
    allocations trigger while it waits: capture then slows the agent down in
    proportion to its backlog. Plain values and frozen payloads leave the
    collector's lists at its first pass."""
    dbg = AgentDebug(home, flush_interval=60)  # nothing is drained during the test
    with dbg.trace(goal="gc") as t:
        t.record(EventType.TOOL_RESULT, agent_name="a", output="plain", step_index=1)
        t.record(EventType.AGENT_START, agent_name="a", metadata={"triggers": ("x", "y")})
        t.record(EventType.LLM_RESPONSE, input=[{"role": "user"}], output={"k": [1, 2]})
        t.record(EventType.MESSAGE, output={1, 2})  # no JSON form as it is: kept raw
        writer = dbg._writer
        assert writer is not None
        events = [item for item in writer.queue if isinstance(item[0], int)]
        assert len(events) == 4
        gc.collect()
        assert [gc.is_tracked(item) for item in events[:3]] == [False, False, False]
    stored = open_store(home).load_trajectory(t.id).events
    assert stored[1].metadata == {"triggers": ["x", "y"]}
    assert stored[2].output == {"k": [1, 2]}
    assert sorted(stored[3].output) == [1, 2]
