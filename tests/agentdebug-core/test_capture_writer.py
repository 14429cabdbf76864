"""The background writer's bookkeeping: which run a queued event belongs to, how
long a session lives, and when the store folds its write-ahead log into the file."""

from __future__ import annotations

import gc
import logging
import shutil
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.capture import session as session_module
from agentdebug.capture import writer as writer_module
from agentdebug.store import open_store
from agentdebug.store import wal as wal_module
from agentdebug.store.jsonl import JSONLStore
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


def test_a_fold_a_reader_held_back_is_tried_again_once_it_is_gone(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader's snapshot (another process listing runs) keeps the pages written
    after it in the log; the writer's fold then stops short, and is tried again at
    its next wake, not only after the next write (before, the log stayed unfolded
    until something else was recorded)."""
    monkeypatch.setattr(wal_module, "WAL_IDLE", 1)
    dbg = AgentDebug(home, flush_interval=0.02)
    with dbg.trace(goal="first"):
        pass
    store = dbg.store
    assert isinstance(store, SQLiteStore)
    reader = sqlite3.connect(store.path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM runs").fetchone()  # (its snapshot, held)
    with dbg.trace(goal="fold") as t:
        for i in range(2000):
            t.record(EventType.TOOL_RESULT, agent_name="a", output=f"result {i}")
    time.sleep(0.5)  # the writer is idle; its fold stops at the reader's snapshot
    assert _main_file_events(store.path, t.id, tmp_path / "s") != 2000
    reader.execute("ROLLBACK")
    reader.close()
    deadline = time.monotonic() + 30  # (its next wake, a second on; 10 s once ran out
    while _main_file_events(store.path, t.id, tmp_path / "s") != 2000:  # under load)
        assert time.monotonic() < deadline, "the write-ahead log was never folded"
        time.sleep(0.05)
    dbg.close()


def test_the_log_stays_bounded_while_an_agent_never_pauses(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wal_module, "WAL_MAX_BYTES", 256 * 1024)
    monkeypatch.setattr(wal_module, "WAL_FILE_LIMIT", 256 * 1024)
    monkeypatch.setattr(wal_module, "WAL_IDLE", 1 << 40)  # no idle checkpoints here
    dbg = AgentDebug(home, flush_interval=0.01)
    payload = "x" * 200
    with dbg.trace(goal="long") as t:
        for i in range(30_000):  # about 8 MB of events
            t.record(EventType.TOOL_RESULT, agent_name="a", output=payload, step_index=i)
            if i % 1000 == 0:
                time.sleep(0.02)  # let the writer take them in small transactions
    store = dbg.store
    assert isinstance(store, SQLiteStore)
    wal = Path(f"{store.path}-wal")
    assert wal.stat().st_size < 2 * 1024 * 1024
    assert len(store.load_trajectory(t.id).events) == 30_000


def test_reports_alone_do_not_grow_the_log_without_bound(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wal_module, "WAL_MAX_BYTES", 256 * 1024)
    monkeypatch.setattr(wal_module, "WAL_FILE_LIMIT", 256 * 1024)
    dbg = AgentDebug(home)
    with dbg.trace(goal="reports") as t:
        t.record(EventType.ERROR, error="boom")
    store = dbg.store
    assert isinstance(store, SQLiteStore)
    report = t.analyze()
    big = report.model_copy(update={"summary": "y" * 20_000})
    for i in range(300):  # about 6 MB of reports, no capture writer involved
        store.save_report(big.model_copy(update={"id": f"r{i}"}))
    assert Path(f"{store.path}-wal").stat().st_size < 2 * 1024 * 1024
    assert len(store.load_reports(t.id)) >= 300


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


def test_a_run_recording_after_the_debugger_closed_keeps_its_events(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dbg = AgentDebug(home)
    t = dbg.trace(goal="outlives its debugger")
    t.record(EventType.PLAN, output="before")
    dbg.close()
    t.record(EventType.MESSAGE, output="after")  # nothing is left to write it ...
    t.close()
    # ... so it is kept in memory, and said so, not queued for a thread that is gone
    assert [e.output for e in t.trajectory().events] == ["before", "after"]
    assert t.store_failed
    assert any("kept in memory" in r.getMessage() for r in caplog.records)


def test_work_a_plugin_leaves_for_close_is_done_before_the_store_closes(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``on_close``: a plugin closes a run it holds open (a run waiting for a human)
    when the debugger closes, while its store can still take it; each hook runs
    once, and one that raises is logged, not raised from ``close``. One given while
    the debugger closes (a run that paused meanwhile) runs at once."""
    dbg = AgentDebug(home)
    held = dbg.trace(goal="waits for a human")
    late = dbg.trace(goal="paused while the debugger closed")
    calls: list[str] = []

    def finish_held() -> None:
        calls.append("finish")
        held.close()
        dbg.on_close(lambda: (calls.append("late"), late.close()))

    def broken() -> None:
        raise RuntimeError("plugin bug")

    dbg.on_close(broken)
    dbg.on_close(finish_held)
    dbg.close()
    dbg.close()
    assert calls == ["finish", "late"] and not held.store_failed and not late.store_failed
    assert any("a plugin's work at close failed" in r.getMessage() for r in caplog.records)
    stored = open_store(home / "agentdebug.db").load_trajectory(held.id)
    assert stored.outcome.status.value != "running"


def test_a_store_without_an_idle_hook_is_written_without_complaint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class MinimalStore:  # a user's store, written to the protocol's older shape
        def __init__(self) -> None:
            self.inner = JSONLStore(tmp_path / "runs.jsonl")
            self.location = "minimal"

        def begin_run(self, header: Any) -> None:
            self.inner.begin_run(header)

        def append_events(self, run_id: str, rows: Any) -> None:
            self.inner.append_events(run_id, rows)

        def finish_run(self, *args: Any) -> None:
            self.inner.finish_run(*args)

        def load_trajectory(self, run_id: str) -> Any:
            return self.inner.load_trajectory(run_id)

        def close(self) -> None:
            self.inner.close()

    store = MinimalStore()
    dbg = AgentDebug(store, flush_interval=0.02)  # type: ignore[arg-type]
    with dbg.trace(goal="minimal") as t:
        for burst in range(3):
            t.record(EventType.PLAN, output=f"burst {burst}")
            time.sleep(0.1)  # the writer has idle moments in between
    assert len(store.load_trajectory(t.id).events) == 3
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_an_event_whose_recording_spans_two_drains_is_kept(home: Path) -> None:
    """The anchor that keeps an unclosed session alive is queued just before its
    event, not before the event is encoded: encoding can run arbitrary code (a
    payload's ``repr``) and take any time, drains included."""
    dbg = AgentDebug(home, flush_interval=60)
    entered, go = threading.Event(), threading.Event()

    class Slow:
        def __repr__(self) -> str:  # orjson falls back to it
            entered.set()
            go.wait(5)
            return "slow"

    holder = {"s": dbg.trace(goal="race")}
    run_id = holder["s"].id
    holder["s"].record(EventType.PLAN, output="first")
    dbg.flush()
    dbg.flush()

    def worker() -> None:
        holder.pop("s").record(EventType.TOOL_CALL, input={"x": Slow()}, output="second")

    th = threading.Thread(target=worker)
    th.start()
    assert entered.wait(5)
    dbg.flush()
    dbg.flush()
    go.set()
    th.join()
    gc.collect()
    dbg.flush()
    events = open_store(home).load_trajectory(run_id).events
    assert [e.output for e in events] == ["first", "second"]


def test_a_burst_faster_than_the_writer_is_written_as_it_goes_with_a_bounded_queue(
    home: Path,
) -> None:
    """An agent that records faster than the writer wakes up encodes batches on its
    own thread: the queue (and the memory it holds) stays near ``BEHIND`` events,
    and the events reach the database while the run is still going.

    While the store keeps up, that is: the run's start is written first (the
    first write, during a burst, may take longer than the burst, and a store
    ``AHEAD`` batches behind leaves events queued, as
    ``test_an_agent_never_waits_for_a_store_that_is_stuck`` asks)."""
    dbg = AgentDebug(home, flush_interval=3600)  # the writer thread never comes round
    n = 4 * writer_module.BEHIND
    longest = 0
    with dbg.trace(goal="burst") as t:
        writer = dbg._writer
        assert writer is not None
        dbg.flush()  # the run's start is written: three helps fit in AHEAD
        _wait_until_asleep(writer)
        for i in range(n):
            t.record(EventType.TOOL_RESULT, agent_name="a", output=f"r{i}", step_index=i)
            longest = max(longest, len(writer.queue))
        deadline = time.monotonic() + 10
        store = dbg.store
        assert isinstance(store, SQLiteStore)
        while _events_on_disk(store.path) < n - writer_module.BEHIND:
            assert time.monotonic() < deadline, "a burst waited for the end of the run"
            time.sleep(0.02)
    assert longest <= writer_module.BEHIND + session_module._LOOK + 1  # looked at every 256
    assert len(store.load_trajectory(t.id).events) == n


def test_after_the_exit_flush_a_recording_thread_writes_its_own_batches(home: Path) -> None:
    """At exit the writer's threads are stopped (they freeze as the interpreter
    tears down); a daemon thread that goes on recording writes its batches itself,
    so the queue stays bounded instead of holding everything it records."""
    dbg = AgentDebug(home)
    with dbg.trace(goal="outlives the exit flush") as t:
        t.record(EventType.PLAN, output="before")
        writer = dbg._writer
        assert writer is not None
        writer.close()  # as the exit's flush closes every writer still open
        n = 3 * writer_module.BEHIND
        longest = 0
        for i in range(n):
            t.record(EventType.TOOL_RESULT, output=f"r{i}", step_index=i + 1)
            longest = max(longest, len(writer.queue))
    assert longest <= writer_module.BEHIND + session_module._LOOK + 1
    assert len(open_store(home).load_trajectory(t.id).events) == n + 1


def test_debuggers_opened_and_closed_leave_no_exit_hook_behind(home: Path) -> None:
    """A service may open and close a debugger per tenant or request: the exit
    flushes the writers still open with one hook, so closed ones add nothing to
    the interpreter's exit list (one hook per writer stayed there for good)."""
    import atexit

    before = atexit._ncallbacks()
    for i in range(20):
        dbg = AgentDebug(home)
        with dbg.trace(goal=f"request {i}") as t:
            t.record(EventType.PLAN, output="x")
        dbg.close()
    assert atexit._ncallbacks() == before


def test_an_agent_never_waits_for_a_store_that_is_stuck(tmp_path: Path) -> None:
    """Helping the writer must not hand the agent the store's delays: with the
    store thread stuck in a write, recording goes on and the events wait."""
    release = threading.Event()
    store = StuckStore(tmp_path / "runs.jsonl", release)
    dbg = AgentDebug(store, flush_interval=3600)
    n = (writer_module.AHEAD + 3) * writer_module.BEHIND
    session = dbg.trace(goal="stuck")

    def agent() -> None:
        for i in range(n):
            session.record(EventType.TOOL_RESULT, output=f"r{i}", step_index=i)

    th = threading.Thread(target=agent)
    th.start()
    th.join(20)
    recorded_while_stuck = not th.is_alive()
    release.set()
    th.join()
    session.close()
    assert recorded_while_stuck, "the agent waited for the stuck store"
    assert len(store.load_trajectory(session.id).events) == n


class StuckStore(JSONLStore):
    """A store whose event writes wait until ``release`` is set."""

    def __init__(self, path: Path, release: threading.Event) -> None:
        super().__init__(path)
        self.release = release

    def append_events(self, run_id: str, rows: Any) -> None:
        self.release.wait(30)
        super().append_events(run_id, rows)


def _wait_until_asleep(writer: writer_module.BackgroundWriter) -> None:
    """Until the writer thread is back in its interval's wait, with no wake-up
    pending: a run's start wakes it, and on a busy machine it may come round only
    after the test has queued events it means to drain itself."""
    deadline = time.monotonic() + 10
    while True:
        frame = sys._current_frames().get(writer._thread.ident or 0)
        caller = frame.f_back.f_back if frame is not None and frame.f_back else None
        if not writer._wake.is_set() and caller is not None and caller.f_code.co_name == "_loop":
            return
        assert time.monotonic() < deadline, "the writer thread never went back to sleep"
        time.sleep(0.005)


def _events_on_disk(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        db.close()


def test_a_dropped_run_keeps_a_long_backlog_written_a_batch_at_a_time(
    home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A run let go (never closed) with more than a few batches of events queued
    behind one anchor (the writer was behind): recording threads then write that
    backlog a batch at a time (``help``), and no event of the run may be dropped
    because its session was let go between those batches."""
    monkeypatch.setattr(session_module, "BEHIND", 1 << 40)  # help only when told below
    dbg = AgentDebug(home, flush_interval=3600)  # only this test drains
    dropped = dbg.trace(goal="dropped")
    writer = dbg._writer
    assert writer is not None
    dbg.flush()  # the run's start is written; its events all queue behind one anchor
    _wait_until_asleep(writer)
    n = 3 * writer_module.BATCH + 100
    for i in range(n):
        dropped.record(EventType.TOOL_RESULT, output=f"r{i}", step_index=i)
    run_id = dropped.id
    del dropped
    for _ in range(4):  # a batch at a time, each written before the next is taken
        writer.help()
        deadline = time.monotonic() + 10
        while writer._done < writer._submitted:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        gc.collect()
    dbg.flush()
    assert not [r for r in caplog.records if "dropped" in r.getMessage()]
    assert len(open_store(home).load_trajectory(run_id).events) == n


def test_helping_never_waits_for_the_store_even_across_a_run_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that meets a run's start or end is handed over in two parts; with
    the store stuck and its queue of batches nearly full, the recording thread
    must still not wait for it."""
    monkeypatch.setattr(session_module, "BEHIND", 1 << 40)  # help only when told below
    release = threading.Event()
    store = StuckStore(tmp_path / "runs.jsonl", release)
    dbg = AgentDebug(store, flush_interval=3600)
    first = dbg.trace(goal="first")
    writer = dbg._writer
    assert writer is not None
    dbg.flush()  # the run's start is written; event writes will block
    step = 0
    while writer._submitted - writer._done < writer_module.AHEAD - 1:
        for _ in range(writer_module.BATCH):
            first.record(EventType.TOOL_RESULT, output="x", step_index=step)
            step += 1
        writer.help()
    monkeypatch.setattr(writer._wake, "set", lambda: None)  # keep the writer thread out
    second = dbg.trace(goal="second")  # its start is queued among the events
    for _ in range(10):
        first.record(EventType.TOOL_RESULT, output="x", step_index=step)
        step += 1
    helper = threading.Thread(target=writer.help)
    helper.start()
    helper.join(10)
    returned_while_stuck = not helper.is_alive()
    release.set()
    helper.join()
    second.close()
    first.close()
    assert returned_while_stuck, "help() waited for the stuck store"
    assert [e.step_index for e in store.load_trajectory(first.id).events] == list(range(step))
    assert store.load_trajectory(second.id).outcome.status.value != "running"


def test_an_interrupt_while_helping_keeps_every_event(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C lands in the main thread, which is often the one recording, and so
    the one encoding a batch when the writer is behind: the events it had taken
    go back to the queue, and the run still has all of them."""
    monkeypatch.setattr(session_module, "BEHIND", 1 << 40)
    dbg = AgentDebug(home, flush_interval=3600)
    writer = dbg._writer_for_capture()
    assert writer is not None
    original = writer._safe_rows
    calls = {"n": 0, "helping": False}

    def interrupted(items: Any, ids: Any) -> Any:
        if calls["helping"]:  # on the main thread, where signals land
            calls["n"] += 1
            if calls["n"] == 2:  # mid-drain, after a first chunk
                raise KeyboardInterrupt
        return original(items, ids)

    monkeypatch.setattr(writer, "_safe_rows", interrupted)
    n = 3 * writer_module.CHUNK
    with dbg.trace(goal="interrupted") as t:
        dbg.flush()
        _wait_until_asleep(writer)  # so that the events below wait for help() alone
        for i in range(n):
            given = f"call-{i}" if i % 7 == 0 else None  # ids the caller chose
            t.record(EventType.TOOL_RESULT, output=f"r{i}", step_index=i, event_id=given)
        calls["helping"] = True
        try:
            with pytest.raises(KeyboardInterrupt):
                writer.help()
        finally:
            calls["helping"] = False
    events = open_store(home).load_trajectory(t.id).events
    assert [e.output for e in events] == [f"r{i}" for i in range(n)]
    # an event whose id was settled before the interrupt keeps it when written
    assert [e.id for e in events if e.id.startswith("call-")] == [
        f"call-{i}" for i in range(0, n, 7)
    ]


def test_an_event_id_that_cannot_be_printed_costs_nothing_else(home: Path) -> None:
    """A caller's ``event_id`` object whose ``str`` raises is kept as its repr;
    the events around it, and other runs' events, are all written."""

    class Odd:
        def __str__(self) -> str:
            raise RuntimeError("no text")

        def __repr__(self) -> str:
            return "<odd id>"

    dbg = AgentDebug(home, flush_interval=3600)
    with dbg.trace(goal="a") as a, dbg.trace(goal="b") as b:
        for i in range(100):
            a.record(EventType.PLAN, output=f"a{i}", event_id=Odd() if i == 50 else None)  # type: ignore[arg-type]
            b.record(EventType.PLAN, output=f"b{i}")
    store = open_store(home)
    assert len(store.load_trajectory(b.id).events) == 100
    events = [e for e in store.load_trajectory(a.id).events if "sub_run" not in e.metadata]
    assert len(events) == 100  # (beside b's end: b is a's sub-run)
    assert events[50].id == "<odd id>"


def test_a_payload_whose_repr_raises_system_exit_is_noted_not_fatal(home: Path) -> None:
    """Capture turns odd values into text with their ``repr``; one that raises even
    ``SystemExit`` is kept as ``<unprintable ...>``, and neither the writer nor
    the runs around it stop."""

    class Poison:
        def __repr__(self) -> str:
            raise SystemExit("repr")

    dbg = AgentDebug(home, flush_interval=0.02)
    with dbg.trace(goal="a") as a, dbg.trace(goal="b") as b:
        a.record(EventType.TOOL_RESULT, output="x", agent_name=Poison())  # type: ignore[arg-type]
        for i in range(10):
            b.record(EventType.TOOL_RESULT, output=f"b{i}", step_index=i)
    store = open_store(home)
    (odd,) = [e for e in store.load_trajectory(a.id).events if "sub_run" not in e.metadata]
    assert odd.agent_name == "<unprintable Poison>"
    assert len(store.load_trajectory(b.id).events) == 10
