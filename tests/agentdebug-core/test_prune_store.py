"""Deleting runs from a store, underneath ``agentdebug prune``: a JSON Lines store's
rewrite against its readers and writers in other processes (file numbers used
again, a held lock, a link, appends made while the copy is made), and SQLite's
delete of a run begun again since it was chosen."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agentdebug.errors import StoreError
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType, Outcome, OutcomeStatus
from agentdebug.store import JSONLStore, RunQuery


def _saved(store: JSONLStore, run_id: str) -> None:
    event = AgentEvent(id="e0", type=EventType.USER_INPUT, step_index=0, input="x" * 50)
    store.save_trajectory(AgentTrajectory(id=run_id, goal="g", events=[event]))


def test_a_reader_is_not_fooled_by_a_file_number_used_again(tmp_path: Path) -> None:
    """A pruned file's inode number may be given to a later prune's file: a store
    kept open that read the first one (and did not read between the prunes) still
    reads the second from its start, not from where it stopped in the first."""
    where = tmp_path / "runs.jsonl"
    pruner = JSONLStore(where)
    for i in range(40):
        _saved(pruner, f"r{i:02d}")
    reader = JSONLStore(where)
    assert len(reader.list_runs(RunQuery(limit=None))) == 40
    for k in range(20):
        pruner.delete_runs([f"r{k:02d}"])
        _saved(reader, f"n{k:02d}")  # (its append handle moves to the new file)
        truth = {r.id for r in JSONLStore(where).list_runs(RunQuery(limit=None))}
        assert {r.id for r in reader.list_runs(RunQuery(limit=None))} == truth


def test_an_append_does_not_wait_for_ever_on_a_held_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holding the file's lock (a prune stopped with Ctrl-Z) makes
    an append fail after a while, saying so, rather than hold the agent up."""
    from agentdebug.store import jsonl

    monkeypatch.setattr(jsonl, "LOCK_WAIT", 0.3)
    where = tmp_path / "runs.jsonl"
    store = JSONLStore(where)
    _saved(store, "a")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            "f = open(sys.argv[1], 'rb')\n"
            "fcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(30)",
            str(where),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match="held the file's lock for over"):
            _saved(store, "b")
    finally:
        holder.kill()
        holder.wait()
    _saved(store, "c")  # let go of: appends go on
    assert {r.id for r in store.list_runs(RunQuery(limit=None))} == {"a", "c"}


def test_a_store_given_as_a_link_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "big-disk" / "runs.jsonl"
    real.parent.mkdir()
    link = tmp_path / "runs.jsonl"
    store = JSONLStore(real)
    for rid in ("a", "b"):
        _saved(store, rid)
    link.symlink_to(real)
    assert JSONLStore(link).delete_runs(["a"]) == 1
    assert link.is_symlink()
    assert {r.id for r in JSONLStore(real).list_runs(RunQuery(limit=None))} == {"b"}


def test_a_prune_holds_the_file_only_to_move_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy is made without the lock: an append made while it is being made
    does not wait (here it would fail after 0.3 s), and is in the new file."""
    from agentdebug.store import jsonl

    monkeypatch.setattr(jsonl, "LOCK_WAIT", 0.3)
    where = tmp_path / "runs.jsonl"
    pruner, writer = JSONLStore(where), JSONLStore(where)
    for rid in ("old", "kept"):
        _saved(pruner, rid)
    copy = jsonl._Rewrite._copy

    def appended_meanwhile(self: Any, start: int, *, whole_lines: bool) -> Any:
        if whole_lines:  # (the copy made before the lock)
            _saved(writer, "meanwhile")
        return copy(self, start, whole_lines=whole_lines)

    monkeypatch.setattr(jsonl._Rewrite, "_copy", appended_meanwhile)
    assert pruner.delete_runs(["old"]) == 1
    ids = {r.id for r in JSONLStore(where).list_runs(RunQuery(limit=None))}
    assert ids == {"kept", "meanwhile"}


def test_a_run_running_again_when_deleted_stays(tmp_path: Path) -> None:
    """Chosen while it had ended, begun again under its id before the delete: the
    SQLite store leaves it alone."""
    from agentdebug.store import SQLiteStore

    store = SQLiteStore(tmp_path / "agentdebug.db")
    store.save_trajectory(AgentTrajectory(id="again", goal="g"))
    store.save_trajectory(AgentTrajectory(id="done", goal="g"))
    store.begin_run(
        AgentTrajectory(id="again", goal="g", outcome=Outcome(status=OutcomeStatus.RUNNING))
    )
    assert store.delete_runs(["again", "done"]) == 1
    assert {r.id for r in store.list_runs(RunQuery(limit=None))} == {"again"}
