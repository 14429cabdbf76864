"""A run whose session is let go of without being closed (no ``with`` block, no
``close()``) is ended in the store with that said, not left "running" for good."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from agentdebug import AgentDebug, EventType
from agentdebug.capture.writer import LET_GO
from agentdebug.schema import OutcomeStatus
from agentdebug.store import RunQuery, open_store


def _let_go(dbg: AgentDebug) -> None:
    """What the writer holds of dropped sessions is released after its drains."""
    for _ in range(3):
        dbg.flush()
        gc.collect()
    dbg.flush()


def test_a_session_let_go_of_ends_its_run_with_its_events_kept(tmp_path: Path) -> None:
    dbg = AgentDebug(tmp_path)
    failed = dbg.trace(goal="dropped after an error")
    failed.record(EventType.TOOL_CALL, agent_name="worker", input={"q": "x"})
    failed.record(EventType.TOOL_RESULT, agent_name="worker", error=TimeoutError("slow"))
    marked = dbg.trace(goal="dropped after it was marked")
    marked.record(EventType.TOOL_CALL, agent_name="worker", input={"q": "y"})
    marked.set_outcome("success", final_answer="42")
    kept = dbg.trace(goal="still held")
    ids = failed.id, marked.id
    del failed, marked
    _let_go(dbg)

    store = open_store(tmp_path)  # (another reader: what the CLI would see)
    first, second = (store.load_trajectory(i) for i in ids)
    assert first.outcome.status is OutcomeStatus.FAILURE
    assert first.outcome.reason == (
        f"1 event(s) carried an error and no final answer was given; {LET_GO}"
    )
    assert [e.type for e in first.events] == [EventType.TOOL_CALL, EventType.TOOL_RESULT]
    assert first.ended_at is not None
    assert second.outcome.status is OutcomeStatus.SUCCESS
    assert second.outcome.final_answer == "42" and second.outcome.reason == LET_GO
    # a session still held stays open
    assert store.load_trajectory(kept.id).outcome.status is OutcomeStatus.RUNNING
    running = store.list_runs(RunQuery(status="running"))
    assert [r.id for r in running] == [kept.id]
    kept.close()
    dbg.close()


def test_a_session_closed_or_in_a_with_block_is_not_ended_again(tmp_path: Path) -> None:
    dbg = AgentDebug(tmp_path)
    with dbg.trace(goal="in a block") as block:
        block.record(EventType.FINAL_ANSWER, agent_name="a", output="done")
    closed = dbg.trace(goal="closed")
    closed.set_outcome("failure", reason="the user said so")
    closed.close()
    ids = block.id, closed.id
    del block, closed
    _let_go(dbg)
    store = open_store(tmp_path)
    first, second = (store.load_trajectory(i) for i in ids)
    assert first.outcome.final_answer == "done" and first.outcome.reason is None
    assert second.outcome.reason == "the user said so"
    dbg.close()


def test_a_session_let_go_of_on_another_thread_is_ended(tmp_path: Path) -> None:
    """The collection may run on any thread: the end is queued, not written there."""
    dbg = AgentDebug(tmp_path)
    made: list[str] = []

    def worker() -> None:
        session = dbg.trace(goal="a worker's, never closed")
        session.record(EventType.TOOL_CALL, agent_name="worker", input={"q": "z"})
        made.append(session.id)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    _let_go(dbg)
    run = open_store(tmp_path).load_trajectory(made[0])
    assert run.outcome.status is OutcomeStatus.UNKNOWN and run.outcome.reason == LET_GO
    dbg.close()


def test_a_session_let_go_of_after_its_debugger_closed_writes_nothing(tmp_path: Path) -> None:
    dbg = AgentDebug(tmp_path)
    session = dbg.trace(goal="open at close")
    run_id = session.id
    dbg.close()  # ends it, in the close's words
    del session
    gc.collect()
    run = open_store(tmp_path).load_trajectory(run_id)
    assert run.outcome.reason == "the debugger was closed with the run still open"
