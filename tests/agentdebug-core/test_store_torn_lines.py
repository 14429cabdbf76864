"""A JSON Lines store shared by processes, one of which died in the middle of an
append: the torn line costs only itself, and reading says what was lost, in
words, once per process."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.schema import AgentTrajectory, Outcome, OutcomeStatus
from agentdebug.store import open_store
from agentdebug.store.jsonl import JSONLStore
from conftest import run_cli

TORN = b'{"kind":"run","id":"vic'  # a record cut off as its process was killed


def test_a_run_appended_after_another_process_died_mid_append_is_kept(tmp_path: Path) -> None:
    """The survivor's next record used to be glued onto the torn line, and its run
    lost on every read ("no run with id 'second'")."""
    path = tmp_path / "runs.jsonl"
    dbg = AgentDebug(path)  # (its store open, as another process's was, before the tear)
    with dbg.trace(goal="first", run_id="first") as t:
        t.record(EventType.MESSAGE, agent_name="a", output="hello")
    with open(path, "ab") as fh:  # another process, killed mid-append (no newline)
        fh.write(TORN)
    with dbg.trace(goal="second", run_id="second") as t:
        t.record(EventType.MESSAGE, agent_name="a", output="hello again")
    dbg.close()

    shown = run_cli("--store", str(path), "show", "second")
    assert shown.returncode == 0, shown.stderr
    assert "hello again" in shown.stdout
    assert "line 4 is not a whole record (cut off" in shown.stderr
    store = JSONLStore(path)
    assert [e.output for e in store.load_trajectory("second").events] == ["hello again"]
    assert [e.output for e in store.load_trajectory("first").events] == ["hello"]
    assert store.skipped_lines == [4]  # the torn line alone
    store.close()


def test_a_store_opened_before_the_tear_starts_its_record_on_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    """Two stores on one file (two processes): one's torn append, then the
    other's whole one, which the other's store had no reason to repair at open."""
    path = tmp_path / "runs.jsonl"
    survivor = JSONLStore(path)
    dying = JSONLStore(path)
    dying.save_trajectory(AgentTrajectory(id="a", goal="a"))
    with open(path, "ab") as fh:
        fh.write(TORN)
    survivor.save_trajectory(AgentTrajectory(id="b", goal="b"))
    survivor.finish_run("b", Outcome(status=OutcomeStatus.SUCCESS), None)
    reader = JSONLStore(path)
    assert sorted(r.id for r in reader.list_runs()) == ["a", "b"]
    assert reader.load_trajectory("b").outcome.status is OutcomeStatus.SUCCESS
    assert path.read_bytes().count(TORN + b"\n") == 1
    for store in (survivor, dying, reader):
        store.close()


def glued_file(path: Path) -> None:
    """A store written before appends checked for a torn line: run ``second``'s
    header glued onto the torn line, its events and end on the lines after it."""
    dbg = AgentDebug(path)
    with dbg.trace(goal="first", run_id="first") as t:
        t.record(EventType.MESSAGE, agent_name="a", output="hello")
    dbg.close()
    lines = path.read_bytes().splitlines(keepends=True)
    other = tmp_second(path.parent)
    with open(path, "wb") as fh:
        fh.writelines(lines)
        fh.write(TORN + other[0])  # the glued line (line 4)
        fh.writelines(other[1:])  # its events (5) and end (6)


def tmp_second(folder: Path) -> list[bytes]:
    scratch = folder / "scratch.jsonl"
    dbg = AgentDebug(scratch)
    with dbg.trace(goal="second", run_id="second") as t:
        t.record(EventType.MESSAGE, agent_name="a", output="hello again")
    dbg.close()
    return scratch.read_bytes().splitlines(keepends=True)


def test_a_damaged_line_is_said_in_words_once_per_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: a warning per line at every read, the lines after the torn one
    "line 5 skipped ('second')" (a KeyError's repr)."""
    path = tmp_path / "runs.jsonl"
    glued_file(path)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agentdebug.store"):
        for _ in range(2):  # two stores on the file (a service's reads), each read twice
            store = open_store(path)
            assert [r.id for r in store.list_runs()] == ["first"]
            assert [r.id for r in store.list_runs()] == ["first"]
            store.close()
    said = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(said) == 1, said
    message = said[0]
    assert "3 damaged line(s) skipped, what they held is lost" in message
    assert "line 4 is not a whole record (cut off: a process stopped while writing it?)" in message
    assert "line 5 holds events of run 'second', whose run line is missing" in message
    assert "line 6 holds the end of run 'second'" in message
    assert "('second')" not in message

    listed = run_cli("--store", str(path), "list")  # another process: said again, once
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr.count("damaged line(s) skipped") == 1, listed.stderr
