"""A process forked after it recorded a run (a pre-fork server's workers) records
its own runs into the same store, and never waits for the parent's writer threads,
which a fork does not copy (before, the child's first run hung forever)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.store import open_store

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def record(dbg: AgentDebug, goal: str) -> str:
    with dbg.trace(goal) as t:
        t.record(EventType.USER_INPUT, agent_name="user", input=goal)
        t.record(EventType.FINAL_ANSWER, agent_name="agent", output="done")
    return t.trajectory().id


def test_a_forked_child_records_its_own_runs_without_hanging(tmp_path: Path) -> None:
    dbg = AgentDebug(tmp_path / "store")
    parent_run = record(dbg, "in the parent")  # the writer's threads are running now
    children = []
    for n in range(2):
        pid = os.fork()
        if pid == 0:  # the child: record a run and leave, however it went
            code = 1
            try:
                record(dbg, f"in child {n}")
                dbg.close()
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    deadline = time.monotonic() + 60
    codes = {}
    while len(codes) < len(children) and time.monotonic() < deadline:
        for pid in children:
            if pid not in codes:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    codes[pid] = os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    for pid in children:
        if pid not in codes:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    assert sorted(codes.values()) == [0, 0], f"children hung or failed: {codes}"
    dbg.close()
    store = open_store(tmp_path / "store")
    goals = {r.goal for r in store.list_runs()}
    assert goals == {"in the parent", "in child 0", "in child 1"}
    assert store.load_trajectory(parent_run).events[-1].output == "done"
    store.close()


def test_a_fork_lets_the_settling_under_way_finish_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pre-fork server's warm-up run starts the debugger's settling of abandoned
    runs on a thread; a fork right after waits for it (a second at most), so no
    child inherits the store in the middle of its query."""
    import threading

    from agentdebug.capture import debugger as debugger_module

    done = threading.Event()

    def slow(store: Any, **kwargs: Any) -> dict[str, str]:
        time.sleep(0.3)
        done.set()
        return {}

    monkeypatch.setattr(debugger_module, "settle_abandoned", slow)
    dbg = AgentDebug(tmp_path / "store")
    with dbg.trace(goal="warm-up"):
        pass
    pid = os.fork()
    if pid == 0:  # the child
        os._exit(0)
    settled_before = done.is_set()
    os.waitpid(pid, 0)
    dbg.close()
    assert settled_before
