"""The stores: SQLite (default) and append-only JSON Lines behave alike."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from agentdebug.diagnose import diagnose
from agentdebug.errors import NotFoundError, StoreError
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    ErrorInfo,
    EventType,
    GoldLabel,
    Outcome,
    OutcomeStatus,
)
from agentdebug.store import JSONLStore, RunQuery, SQLiteStore, TraceStore, open_store
from agentdebug.store.sqlite import PAGE_SIZE, SCHEMA_VERSION


def make_run(
    run_id: str,
    *,
    framework: str = "fw",
    status: str = "failure",
    agent: str = "a",
    hours_ago: int = 0,
) -> AgentTrajectory:
    start = datetime(2026, 11, 1, tzinfo=UTC) - timedelta(hours=hours_ago)
    return AgentTrajectory(
        id=run_id,
        goal=f"goal of {run_id}",
        framework=framework,
        started_at=start,
        outcome=Outcome(status=OutcomeStatus(status)),
        events=[
            AgentEvent(id="e0", type=EventType.PLAN, step_index=0, agent_name=agent, output="plan"),
            AgentEvent(
                id="e1",
                type=EventType.TOOL_RESULT,
                step_index=1,
                agent_name=agent,
                error=ErrorInfo(message="HTTP 429 Too Many Requests"),
            ),
        ],
    )


@pytest.fixture(params=["sqlite", "jsonl"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> TraceStore:
    if request.param == "sqlite":
        return SQLiteStore(tmp_path / "s.db")
    return JSONLStore(tmp_path / "s.jsonl")


def test_round_trip_keeps_every_field(store: TraceStore) -> None:
    run = make_run("run-1")
    label = GoldLabel(source="test", agent_name="a", step_index=1)
    store.save_trajectory(run, label)
    assert store.load_trajectory("run-1") == run
    assert store.load_label("run-1") == label


def test_reports_live_beside_the_trajectory_not_inside(store: TraceStore) -> None:
    run = make_run("run-1")
    store.save_trajectory(run)
    report = diagnose(run)
    store.save_report(report)
    assert store.load_trajectory("run-1") == run
    assert [r.id for r in store.load_reports("run-1")] == [report.id]
    assert "findings" not in store.load_trajectory("run-1").model_dump_json()


def test_list_filters_by_status_framework_agent_mode_and_time(store: TraceStore) -> None:
    store.save_trajectory(make_run("old", framework="crewai", agent="writer", hours_ago=48))
    store.save_trajectory(make_run("new", framework="langgraph", agent="coder", status="success"))
    store.save_report(diagnose(store.load_trajectory("old")))

    def ids(**kw: object) -> list[str]:
        return [r.id for r in store.list_runs(RunQuery(**kw))]  # type: ignore[arg-type]

    assert ids() == ["new", "old"]
    assert ids(status="failure") == ["old"]
    assert ids(framework="langgraph") == ["new"]
    assert ids(agent="writer") == ["old"]
    assert ids(agent="nobody") == []
    assert ids(failure_mode="system.rate_limited") == ["old"]
    assert ids(since=datetime(2026, 10, 31, 12, tzinfo=UTC)) == ["new"]
    assert ids(until=datetime(2026, 10, 31, 12, tzinfo=UTC)) == ["old"]
    (old,) = [r for r in store.list_runs() if r.id == "old"]
    assert (old.root_agent, old.root_step) == ("writer", 1)
    assert old.failure_modes == ["system.rate_limited"]
    assert old.n_events == 2


def test_list_finds_the_branches_of_a_run(store: TraceStore) -> None:
    store.save_trajectory(make_run("orig"))
    store.save_trajectory(make_run("b1").model_copy(update={"parent_id": "orig"}))
    store.save_trajectory(make_run("b2", hours_ago=1).model_copy(update={"parent_id": "orig"}))
    store.save_trajectory(make_run("other").model_copy(update={"parent_id": "b1"}))
    found = store.list_runs(RunQuery(parent_id="orig"))
    assert sorted(r.id for r in found) == ["b1", "b2"]
    assert all(r.parent_id == "orig" for r in found)


def test_list_filters_by_metadata_paths(store: TraceStore) -> None:
    """``RunQuery(metadata=...)``: runs whose metadata has the given string values
    at dotted paths (a framework's thread id), newest first; a path that is not
    names, or a value that is not a string, is refused."""

    def run(run_id: str, hours_ago: int, **meta: Any) -> AgentTrajectory:
        return make_run(run_id, hours_ago=hours_ago).model_copy(update={"metadata": meta})

    store.save_trajectory(run("old", 2, lg={"thread_id": "t1", "graph": "g", "nodes": ["a"]}))
    store.save_trajectory(run("new", 1, lg={"thread_id": "t1", "graph": "g", "nodes": ["a", "b"]}))
    store.save_trajectory(run("other", 0, lg={"thread_id": "t2", "graph": "g"}))
    store.save_trajectory(run("flat", 0, thread_id="t1"))
    store.save_trajectory(run("texts", 0, lg={"thread_id": '["a"]', "nodes": '["a", "b"]'}))
    store.save_trajectory(run("lists", 0, lg={"thread_id": ["a"]}))

    def ids(*pairs: tuple[str, Any]) -> list[str]:
        return [r.id for r in store.list_runs(RunQuery(metadata=pairs))]

    for indexed in (False, True):  # the same answers through an index
        if indexed:
            store.index_metadata("lg.thread_id")  # type: ignore[attr-defined]
            store.index_metadata("lg.nodes")  # type: ignore[attr-defined]
        assert ids(("lg.thread_id", "t1"), ("lg.graph", "g")) == ["new", "old"]
        assert ids(("lg.thread_id", "t1"), ("lg.nodes", ("a", "b"))) == ["new"]
        assert ids(("thread_id", "t1")) == ["flat"]
        assert ids(("lg.thread_id", "t3")) == []
        # a value matches only a value of its own kind: not a list's or a dict's JSON text
        assert ids(("lg.thread_id", '["a"]')) == ["texts"]
        assert ids(("lg.thread_id", ("a",))) == ["lists"]
        assert ids(("lg.nodes", ("a", "b"))) == ["new"]
    for bad in (
        (("lg.thread_id') OR 1=1 --", "x"),),
        (("lg.n", 1),),
        (("lg.n", (1,)),),
        ("ab", "cd"),
        (("lg.a", "b", "c"),),
    ):
        with pytest.raises(ValueError, match="not a dotted path of names"):
            RunQuery(metadata=bad)  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=r"takes a tuple of \(dotted path, value\) pairs, not dict"
    ):
        RunQuery(metadata={"lg": "t1"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a dotted path of names"):
        store.index_metadata("lg.x') --")  # type: ignore[attr-defined]


def test_an_indexed_metadata_lookup_reads_one_run_not_every_header(tmp_path: Path) -> None:
    """SQLite looks a thread's runs up through the index (the plan says so), which
    stays in the file for the next process, and is kept up as runs are written."""
    store = SQLiteStore(tmp_path / "s.db")
    for i in range(3):
        run = make_run(f"r{i}").model_copy(update={"metadata": {"lg": {"thread_id": f"t{i}"}}})
        store.save_trajectory(run)
    store.index_metadata("lg.thread_id")
    store.close()
    again = SQLiteStore(tmp_path / "s.db")
    again.save_trajectory(
        make_run("late").model_copy(update={"metadata": {"lg": {"thread_id": "t9"}}})
    )
    ran: list[str] = []
    again._db.set_trace_callback(ran.append)  # the statement list_runs runs, values in
    query = RunQuery(metadata=(("lg.thread_id", "t9"),))
    assert [r.id for r in again.list_runs(query)] == ["late"]
    again._db.set_trace_callback(None)
    (statement,) = [sql for sql in ran if "FROM runs r" in sql]
    plan = again._query("EXPLAIN QUERY PLAN " + statement)
    assert any("SEARCH r USING INDEX runs_md_" in str(row) for row in plan), plan
    again.close()


def test_unknown_and_ambiguous_ids_are_clear_errors(store: TraceStore) -> None:
    store.save_trajectory(make_run("abc-1"))
    store.save_trajectory(make_run("abc-2"))
    assert store.resolve_id("abc-1") == "abc-1"
    with pytest.raises(NotFoundError, match="ambiguous"):
        store.resolve_id("abc")
    for n in range(3, 9):
        store.save_trajectory(make_run(f"abc-{n}"))
    with pytest.raises(NotFoundError) as caught:  # (before: five ids, and no count)
        store.resolve_id("abc")
    assert "run id 'abc' is ambiguous: 8 runs' ids start with it (" in str(caught.value)
    assert " and 3 more); give more of the id" in str(caught.value)
    with pytest.raises(NotFoundError, match="no run with id 'zzz'"):
        store.resolve_id("zzz")
    with pytest.raises(NotFoundError, match="no run with id 'zzz'"):
        store.load_trajectory("zzz")


def test_reimport_replaces_the_run_instead_of_duplicating_it(store: TraceStore) -> None:
    store.save_trajectory(make_run("r"))
    shorter = make_run("r").model_copy(update={"events": make_run("r").events[:1]})
    store.save_trajectory(shorter)
    assert len(store.load_trajectory("r").events) == 1
    assert [r.id for r in store.list_runs()] == ["r"]


def test_jsonl_tolerates_a_torn_last_line_and_appends_after_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    store = JSONLStore(path)
    store.save_trajectory(make_run("kept"))
    store.close()
    with open(path, "ab") as fh:
        fh.write(b'{"kind":"run","header":{"id":"torn","go')  # a write cut off by a crash
    store = JSONLStore(path)
    assert [r.id for r in store.list_runs()] == ["kept"]
    assert store.skipped_lines == [3]
    store.save_trajectory(make_run("after"))
    assert sorted(r.id for r in store.list_runs()) == ["after", "kept"]
    assert store.load_trajectory("kept") == make_run("kept")


def test_sqlite_schema_is_versioned_and_a_newer_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    assert store.schema_version == SCHEMA_VERSION
    store.close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer than this agentdebug understands"):
        SQLiteStore(path)


def test_a_store_made_by_an_older_version_keeps_its_page_size_and_works(
    tmp_path: Path,
) -> None:
    """New stores use 16 KiB pages; a file made with SQLite's default 4 KiB pages
    (earlier versions of agentdebug) opens, is written and read as it is."""
    fresh = SQLiteStore(tmp_path / "new.db")
    assert fresh._db.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE == 16384
    fresh.close()
    old_path = tmp_path / "old.db"
    old = SQLiteStore(old_path)
    old.close()
    old_path.unlink()
    db = sqlite3.connect(old_path)  # an empty file with 4 KiB pages, schema made by us
    db.execute("PRAGMA page_size=4096")
    db.execute("PRAGMA journal_mode=WAL")
    db.close()
    store = SQLiteStore(old_path)
    assert store._db.execute("PRAGMA page_size").fetchone()[0] == 4096
    run = make_run("run-old")
    store.save_trajectory(run)
    store.close()
    assert SQLiteStore(old_path).load_trajectory("run-old") == run


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "not.db"
    path.write_text("hello, I am text")
    with pytest.raises(StoreError, match=r"not\.db"):
        SQLiteStore(path)


def test_open_store_picks_the_backend_from_the_path(tmp_path: Path, home: Path) -> None:
    assert isinstance(open_store(tmp_path / "x.jsonl"), JSONLStore)
    assert isinstance(open_store(tmp_path / "x.db"), SQLiteStore)
    folder = open_store(tmp_path / "folder")
    assert isinstance(folder, SQLiteStore) and folder.location.endswith("folder/agentdebug.db")
    default = open_store()
    assert default.location == str(home / "agentdebug.db")


def test_a_failed_write_leaves_earlier_data_intact(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    store.save_trajectory(make_run("good"))
    bad = make_run("good").model_copy(update={"id": "bad"})
    with pytest.raises(NotFoundError):
        store.save_report(diagnose(bad))  # report for a run that is not stored
    assert store.load_trajectory("good") == make_run("good")
    assert [r.id for r in store.list_runs()] == ["good"]


def test_a_damaged_stored_event_is_one_clear_line(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    store.save_trajectory(make_run("r"))
    store.close()
    db = sqlite3.connect(tmp_path / "s.db")
    db.execute(
        """UPDATE events SET data = '{"id":"e0","type":"plan","step_index":"abc"}' WHERE rowid = (SELECT min(rowid) FROM events)"""
    )
    db.commit()
    db.close()
    with pytest.raises(StoreError) as err:
        SQLiteStore(tmp_path / "s.db").load_trajectory("r")
    message = str(err.value)
    assert "\n" not in message
    assert message.endswith(
        "run 'r' is stored damaged: field '0.step_index': Input should be a valid integer, unable to parse string as an integer"
    )


def test_a_store_from_before_the_run_modes_index_gets_it_when_opened(tmp_path: Path) -> None:
    """``agentdebug list`` reads each listed run's failure modes through an index by
    run (without it, every run's lookup scans all the modes): a file made before
    the index gets it when it is opened, with no new schema version (which an older
    agentdebug would refuse)."""
    store = SQLiteStore(tmp_path / "s.db")
    store.save_trajectory(make_run("r1"))
    store._db.execute("DROP INDEX report_modes_run")  # as a file from before it
    store.close()
    again = SQLiteStore(tmp_path / "s.db")
    assert again.schema_version == SCHEMA_VERSION
    ran: list[str] = []
    again._db.set_trace_callback(ran.append)
    assert [r.id for r in again.list_runs()] == ["r1"]
    again._db.set_trace_callback(None)
    (statement,) = [sql for sql in ran if "FROM runs r" in sql]
    plan = " ".join(str(row) for row in again._query("EXPLAIN QUERY PLAN " + statement))
    assert "report_modes_run" in plan, plan
    again.close()


def test_opening_does_not_wait_on_another_writer_for_a_missing_index(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file without the index, and another process in a write transaction on it:
    the store opens at once, without the index (said), and works; the next open
    makes it."""
    import logging
    import sqlite3

    from agentdebug.testing import finishes_within

    store = SQLiteStore(tmp_path / "s.db")
    store.save_trajectory(make_run("r1"))
    store._db.execute("DROP INDEX report_modes_run")
    store.close()
    writer = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # (held for as long as a long write)
    with caplog.at_level(logging.WARNING, logger="agentdebug.store"):
        opened = finishes_within(10, lambda: SQLiteStore(tmp_path / "s.db"))
    assert "index report_modes_run not made now" in caplog.text
    assert [r.id for r in opened.list_runs()] == ["r1"]
    opened.close()
    writer.execute("ROLLBACK")
    writer.close()
    again = SQLiteStore(tmp_path / "s.db")
    assert again._query("SELECT 1 FROM sqlite_master WHERE name = 'report_modes_run'")
    again.close()


def test_a_long_lived_store_caches_few_run_numbers_and_still_writes_every_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service's store stays open for good: it keeps the numbers of its latest
    runs only (here 8; before, one per run written, for as long as it was open),
    and a run whose number it let go still takes its events."""
    from agentdebug import AgentDebug, EventType
    from agentdebug.store import sqlite as sqlite_module

    monkeypatch.setattr(sqlite_module, "NUMS_KEPT", 8)
    dbg = AgentDebug(tmp_path)
    early = dbg.trace(goal="outlives twenty runs")
    early.record(EventType.PLAN, output="first")
    dbg.flush()
    for n in range(20):
        with dbg.trace(goal=f"run {n}") as t:
            t.record(EventType.MESSAGE, output=n)
    early.record(EventType.MESSAGE, output="last")
    early.close()
    store = dbg.store
    assert isinstance(store, SQLiteStore) and len(store._nums) <= 8
    assert [e.output for e in store.load_trajectory(early.id).events] == ["first", "last"]
    assert len(store.list_runs(RunQuery(limit=100))) == 21
    dbg.close()
