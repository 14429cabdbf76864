"""A store another connection holds locked (a backup, ``agentdebug prune
--vacuum``, a ``sqlite3`` shell in a transaction): the agent's runs do not wait
for it past a few seconds, once, the log says so, and the runs are written when
the lock goes. Before, the end of each run waited up to 150 s (the store's 30 s
lock wait, five times), and then the run was kept in memory only."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.store import open_store


def locked_by_another(db: Path) -> sqlite3.Connection:
    """Another connection holding the store's write lock (as ``BEGIN IMMEDIATE``
    in a sqlite3 shell does) until it ends its transaction."""
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def test_a_locked_store_holds_up_one_run_end_a_few_seconds_and_loses_nothing(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agentdebug")
    dbg = AgentDebug(home)
    with dbg.trace(goal="before the lock") as t:
        t.record(EventType.PLAN, output="plan")
    holder = locked_by_another(home / "agentdebug.db")
    waited = []
    try:
        for n in range(3):
            start = time.monotonic()
            with dbg.trace(goal=f"while locked {n}", run_id=f"locked{n}") as t:
                for i in range(5):
                    t.record(EventType.TOOL_RESULT, agent_name="worker", output=f"r{i}")
                t.set_outcome("success", final_answer="done")
            waited.append(time.monotonic() - start)
    finally:
        holder.execute("ROLLBACK")  # the lock goes
        holder.close()
    assert waited[0] < 10, waited  # (a few seconds: END_WAIT; before, up to 150 s)
    assert max(waited[1:]) < 2.5, waited  # the next runs do not wait again
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1, [r.getMessage() for r in said]
    message = said[0].getMessage()
    where = home / "agentdebug.db"
    assert message.startswith(f"agentdebug: the store at {where} is locked by another connection")
    assert "run locked0 goes on without waiting: its events stay queued in memory" in message
    assert "written when the lock goes" in message

    dbg.close()  # (waits for the writes, now that the lock is gone)
    store = open_store(home)
    for n in range(3):
        run = store.load_trajectory(f"locked{n}")
        assert [e.output for e in run.events] == [f"r{i}" for i in range(5)] + ["done"]
        assert run.outcome.status.value == "success"
    assert not [r for r in caplog.records if "kept in memory only" in r.getMessage()]
    assert any("takes writes again" in r.getMessage() for r in caplog.records)


AGENT = """
import sys, time
from agentdebug import AgentDebug, EventType
from agentdebug.capture import store_health
store_health.END_WAIT = 1.0  # (the end of the run waits that long, as the store is locked)
store_health.EXIT_WAIT = float(sys.argv[2])
dbg = AgentDebug(sys.argv[1])
with dbg.trace(goal="ends as the process exits", run_id="at-exit") as t:
    t.record(EventType.PLAN, agent_name="planner", output="plan")
print("ended", flush=True)
"""  # (exits without closing the debugger: the exit writes what is queued)


def exiting_agent(home: Path, exit_wait: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", AGENT, str(home), str(exit_wait)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_at_exit_a_run_queued_for_a_locked_store_is_written_once_the_lock_goes(
    home: Path,
) -> None:
    open_store(home).close()
    holder = locked_by_another(home / "agentdebug.db")
    agent = exiting_agent(home, exit_wait=30)
    try:
        assert agent.stdout is not None and agent.stdout.readline() == "ended\n"
        time.sleep(1)  # it exits, and its exit waits for the store
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    _, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    assert "were not written" not in err, err
    run = open_store(home).load_trajectory("at-exit")
    assert [e.output for e in run.events] == ["plan"]


def test_at_exit_a_store_still_locked_is_waited_for_a_bounded_time_and_said(home: Path) -> None:
    open_store(home).close()
    holder = locked_by_another(home / "agentdebug.db")
    try:
        start = time.monotonic()
        agent = exiting_agent(home, exit_wait=1)
        _, err = agent.communicate(timeout=60)  # (before: 150 s)
        took = time.monotonic() - start
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert agent.returncode == 0, err
    assert took < 15, took
    assert "is still locked by another connection as the debugger closes; the events of " in err
    assert "run at-exit that waited for it were not written" in err, err


def test_a_run_analyzed_while_the_store_is_locked_sees_its_events_and_its_report_waits(
    home: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentdebug.capture import store_health

    monkeypatch.setattr(store_health, "END_WAIT", 1.0)
    caplog.set_level(logging.INFO, logger="agentdebug")
    dbg = AgentDebug(home)
    with dbg.trace(goal="before the lock") as t:
        t.record(EventType.PLAN, output="plan")
    holder = locked_by_another(home / "agentdebug.db")
    try:
        with dbg.trace(goal="look the city up", run_id="locked-analyzed") as t:
            t.record(EventType.USER_INPUT, agent_name="user", input="where?")
            t.record(EventType.TOOL_CALL, agent_name="searcher", input={"q": "city"})
            t.record(EventType.ERROR, agent_name="searcher", error="lookup failed: timeout")
            t.set_outcome("failure", reason="no answer")
        start = time.monotonic()
        report = t.analyze()  # before: "run 'locked-analyzed' has no events to diagnose"
        took = time.monotonic() - start
        assert [e.type for e in t.trajectory().events] == [
            EventType.USER_INPUT,
            EventType.TOOL_CALL,
            EventType.ERROR,
        ]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert took < 5, took  # (before: the report's write waited out the 30 s lock timeout)
    assert report.root_cause is not None and report.root_cause.agent_name == "searcher"
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not said, said  # (no "could not be read back", no "report not stored")
    dbg.close()  # the lock is gone: the run, then its report, are written
    store = open_store(home)
    assert len(store.load_trajectory("locked-analyzed").events) == 3
    assert [r.id for r in store.load_reports("locked-analyzed")] == [report.id]


def test_diagnose_on_the_command_line_shows_the_diagnosis_of_a_locked_store_at_once(
    home: Path,
) -> None:
    """Before: the command waited out SQLite's 30 s lock wait and then printed only
    "error: ...: write failed: database is locked": no diagnosis at all."""
    booking = Path(__file__).parents[2] / "examples" / "failed_booking.json"

    def agentdebug(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentdebug", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "AGENTDEBUG_HOME": str(home)},
            timeout=120,
            check=False,
        )

    assert agentdebug("ingest", str(booking)).returncode == 0
    holder = locked_by_another(home / "agentdebug.db")
    try:
        shown = agentdebug("diagnose", "example-failed-booking")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert shown.returncode == 0, shown.stderr
    assert "Root cause: searcher at step 3" in shown.stdout
    assert f"the store {home / 'agentdebug.db'} is locked by another connection" in shown.stderr
    assert "the diagnosis is shown, not stored" in shown.stderr
    assert not open_store(home).load_reports("example-failed-booking")
    kept = agentdebug("diagnose", "example-failed-booking")  # the lock gone: kept
    assert kept.returncode == 0 and "not stored" not in kept.stderr, kept.stderr
    assert len(open_store(home).load_reports("example-failed-booking")) == 1


def test_ingest_into_a_locked_store_says_it_waits_and_imports_once_the_lock_goes(
    home: Path,
) -> None:
    """Before: the command sat silent for as long as the lock was held (up to 30 s)."""
    open_store(home).close()
    booking = Path(__file__).parents[2] / "examples" / "failed_booking.json"
    holder = locked_by_another(home / "agentdebug.db")
    ingest = subprocess.Popen(
        [sys.executable, "-m", "agentdebug", "ingest", str(booking)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGENTDEBUG_HOME": str(home)},
    )
    try:
        assert ingest.stderr is not None
        said = ingest.stderr.readline()
    finally:
        holder.execute("ROLLBACK")  # the lock goes while the command waits
        holder.close()
    out, err = ingest.communicate(timeout=60)
    where = home / "agentdebug.db"
    assert said == f"Note: the store {where} is locked by another connection (a backup, " + (
        "`agentdebug prune --vacuum`, a sqlite3 shell?); waiting for it...\n"
    )
    assert ingest.returncode == 0, err
    assert out.startswith("imported 1 run(s) from 1 file(s)")
    assert open_store(home).load_trajectory("example-failed-booking").events


def test_a_command_whose_write_a_lock_kept_out_says_what_may_hold_it(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentdebug.cli import main
    from agentdebug.store.base import StoreLocked
    from agentdebug.store.sqlite import SQLiteStore

    def kept_out(store: SQLiteStore, *args: object, **kwargs: object) -> None:
        raise StoreLocked(f"{store.path}: write failed: database is locked")  # (after 30 s)

    monkeypatch.setenv("AGENTDEBUG_HOME", str(home))
    monkeypatch.setattr(SQLiteStore, "_tx", kept_out)
    booking = Path(__file__).parents[2] / "examples" / "failed_booking.json"
    with pytest.raises(SystemExit) as exited:
        main(["ingest", str(booking)])
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert "write failed: database is locked (another connection holds the store's " in err
    assert "write lock: a backup, `agentdebug prune --vacuum`, a sqlite3 shell? " in err
    assert "Traceback" not in err


def test_a_lock_taken_after_the_run_ended_holds_up_its_analysis_a_few_seconds_at_most(
    home: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock comes after the run's last write (a backup starting then), so the
    writer has met no lock yet. Before: the report's write waited out SQLite's 30 s
    on the agent's thread, then an ERROR said it was not stored."""
    from agentdebug.capture import store_health

    monkeypatch.setattr(store_health, "END_WAIT", 1.0)
    caplog.set_level(logging.INFO, logger="agentdebug")
    dbg = AgentDebug(home)
    with dbg.trace(goal="look the city up", run_id="late-lock") as t:
        t.record(EventType.TOOL_CALL, agent_name="searcher", input={"q": "city"})
        t.record(EventType.ERROR, agent_name="searcher", error="lookup failed: timeout")
        t.set_outcome("failure", reason="no answer")
    holder = locked_by_another(home / "agentdebug.db")
    try:
        start = time.monotonic()
        report = t.analyze()
        took = time.monotonic() - start
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert took < 5, took
    assert report.root_cause is not None and report.root_cause.agent_name == "searcher"
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    dbg.close()
    assert [r.id for r in open_store(home).load_reports("late-lock")] == [report.id]


def test_events_given_one_id_twice_are_both_seen_while_the_store_is_locked(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer renames the second ``call`` to ``call#<n>`` as it writes it; the
    view of the queued events must do the same, not take it for the first."""
    from agentdebug.capture import store_health

    monkeypatch.setattr(store_health, "END_WAIT", 1.0)
    dbg = AgentDebug(home)
    with dbg.trace(goal="before the lock") as t:
        t.record(EventType.PLAN, output="plan")
    holder = locked_by_another(home / "agentdebug.db")
    try:
        for n in range(6):  # the store thread's backlog full: later events stay queued
            with dbg.trace(goal=f"filler {n}") as filler:
                filler.record(EventType.PLAN, output="plan")
        with dbg.trace(goal="two calls", run_id="same-ids") as t:
            t.record(EventType.TOOL_CALL, agent_name="a", input={"q": 1}, event_id="call")
            t.record(EventType.TOOL_CALL, agent_name="a", input={"q": 2}, event_id="call")
        seen = [(e.id, e.input) for e in t.trajectory().events]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(seen) == 2, seen
    assert seen[0] == ("call", {"q": 1}) and seen[1][1] == {"q": 2}
    dbg.close()
    stored = open_store(home).load_trajectory("same-ids")
    assert [(e.id, e.input) for e in stored.events] == seen  # the same ids as written


def test_diagnose_on_a_locked_store_leaves_an_abandoned_run_for_later(tmp_path: Path) -> None:
    """A killed process left a run "running": the command would settle it first, a
    write the lock holds up. Before: a 5 s wait and a warning that it could not be
    settled, beside the diagnosis."""
    from test_abandoned import RECORDER

    store = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, "-c", RECORDER, str(store)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "OTEL_SDK_DISABLED": "true"},
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    proc.kill()
    proc.wait(timeout=30)
    holder = locked_by_another(store / "agentdebug.db")
    try:
        shown = subprocess.run(
            [sys.executable, "-m", "agentdebug", "diagnose", run_id],
            capture_output=True,
            text=True,
            env={**os.environ, "AGENTDEBUG_HOME": str(store)},
            timeout=120,
            check=False,
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert shown.returncode == 0, shown.stderr
    assert f"Diagnosis of run {run_id}" in shown.stdout
    assert "the diagnosis is shown, not stored" in shown.stderr
    assert "could not be settled" not in shown.stderr, shown.stderr


def test_an_ingest_the_lock_cuts_off_says_how_many_runs_it_had_imported(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before: only the lock's error, so the user did not know what was in the store."""
    from agentdebug.cli import main
    from agentdebug.store.base import StoreLocked
    from agentdebug.store.sqlite import SQLiteStore

    booking = Path(__file__).parents[2] / "examples" / "failed_booking.json"
    second = tmp_path / "second.json"
    second.write_text(booking.read_text().replace("example-failed-booking", "second-booking"))
    saved = SQLiteStore.save_trajectory

    def locked_at_the_second(store: SQLiteStore, trajectory: object, *args: object) -> None:
        if getattr(trajectory, "id", None) == "second-booking":
            raise StoreLocked(f"{store.path}: write failed: database is locked")
        saved(store, trajectory, *args)  # type: ignore[arg-type]

    monkeypatch.setenv("AGENTDEBUG_HOME", str(home))
    monkeypatch.setattr(SQLiteStore, "save_trajectory", locked_at_the_second)
    with pytest.raises(SystemExit) as exited:
        main(["ingest", str(booking), str(second)])
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert (
        f"stopped: the store's lock outlasted the wait while run 'second-booking' of "
        f"{second} was saved, with 1 run(s) imported from the 2 file(s) read; importing "
        "the same files again replaces those runs, so nothing is doubled"
    ) in err
    assert "write failed: database is locked (another connection holds" in err
    monkeypatch.setattr(SQLiteStore, "save_trajectory", saved)
    assert open_store(home).load_trajectory("example-failed-booking").events


def test_an_ingest_the_lock_cuts_off_while_saving_a_joined_trace_names_its_files(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A trace joined from several files is saved after every file is read: naming
    the last file read, as the cut came, would say the first was done. And a file
    that failed before the cut is still said."""
    from agentdebug.cli import main
    from agentdebug.store.base import StoreLocked
    from agentdebug.store.sqlite import SQLiteStore

    def span(span_id: str, parent: str | None, name: str) -> str:
        span = {
            "name": name,
            "context": {"trace_id": "0x" + "a" * 32, "span_id": "0x" + span_id},
            "parent_id": "0x" + parent if parent else None,
            "start_time": "2026-05-04T03:51:19.309091Z",
            "end_time": "2026-05-04T03:51:19.409171Z",
            "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
        }
        return json.dumps(span) + "\n"

    folder = tmp_path / "spans"
    folder.mkdir()
    (folder / "0-bad.json").write_text("{")
    (folder / "1.jsonl").write_text(span("1" * 16, None, "planner"))
    (folder / "2.jsonl").write_text(span("2" * 16, "1" * 16, "booker"))

    def locked(store: SQLiteStore, *args: object) -> None:
        raise StoreLocked(f"{store.path}: write failed: database is locked")

    monkeypatch.setenv("AGENTDEBUG_HOME", str(home))
    monkeypatch.setattr(SQLiteStore, "save_trajectory", locked)
    with pytest.raises(SystemExit):
        main(["ingest", str(folder)])
    err = capsys.readouterr().err
    assert (
        f"while run '{'a' * 32}' of {(folder / '1.jsonl').resolve()} (joined from 2 files) " in err
    )
    assert "with 0 run(s) imported from the 2 file(s) read" in err
    assert "1 file(s) failed, in whole or in part:" in err and "0-bad.json" in err
