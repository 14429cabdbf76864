"""A run its caller stopped (a stream closed, dropped or broken out of, a cancel,
Ctrl-C) did not fail: it is stored as unknown, ``stopped_by`` naming what stopped
it, with no error event, and its diagnosis blames no one."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncGenerator, Generator
from pathlib import Path

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.schema import AgentTrajectory
from agentdebug.store import open_store


def _stored(home: Path, run_id: str) -> AgentTrajectory:
    return open_store(home).load_trajectory(run_id)


def _stream(dbg: AgentDebug, ids: list[str]) -> Generator[str, None, None]:
    with dbg.trace(goal="stream", framework="my-agent") as t:
        ids.append(t.id)
        for i in range(10):
            t.record(EventType.TOOL_CALL, agent_name="streamer", input={"i": i})
            yield f"chunk {i}"
        t.set_outcome("success", final_answer="all chunks")


def _assert_stopped_by(run: AgentTrajectory, what: str) -> None:
    assert run.outcome.status is OutcomeStatus.UNKNOWN
    assert run.outcome.stopped_by == what
    assert run.outcome.error is None
    assert EventType.ERROR not in [e.type for e in run.events]


def test_a_stream_its_caller_closed_is_stopped_not_failed_and_blames_no_one(home: Path) -> None:
    dbg = AgentDebug()
    ids: list[str] = []
    stream = _stream(dbg, ids)
    assert [next(stream), next(stream)] == ["chunk 0", "chunk 1"]
    stream.close()
    run = _stored(home, ids[0])
    _assert_stopped_by(run, "GeneratorExit")
    assert "stopped before it ended" in (run.outcome.reason or "")
    assert [e.type for e in run.events] == [EventType.TOOL_CALL, EventType.TOOL_CALL]
    report = dbg.diagnose(run)
    assert report.root_cause is None
    assert "GeneratorExit" not in report.summary
    dbg.close()


def test_a_stream_dropped_by_its_caller_is_stopped(home: Path) -> None:
    dbg = AgentDebug()
    ids: list[str] = []

    def consume() -> None:
        stream = _stream(dbg, ids)
        next(stream)

    consume()
    gc.collect()
    _assert_stopped_by(_stored(home, ids[0]), "GeneratorExit")
    dbg.close()


def test_an_async_stream_broken_out_of_is_stopped(home: Path) -> None:
    dbg = AgentDebug()
    ids: list[str] = []

    async def stream() -> AsyncGenerator[int, None]:
        async with dbg.trace(goal="async stream") as t:
            ids.append(t.id)
            for i in range(10):
                t.record(EventType.TOOL_CALL, input={"i": i})
                yield i

    async def main() -> None:
        chunks = stream()
        async for i in chunks:
            if i == 2:
                break
        await chunks.aclose()  # (what `async with aclosing(...)` does)

    asyncio.run(main())
    _assert_stopped_by(_stored(home, ids[0]), "GeneratorExit")


def test_a_cancelled_task_and_ctrl_c_stop_the_run_and_are_re_raised(home: Path) -> None:
    dbg = AgentDebug()
    ids: list[str] = []

    async def agent() -> None:
        async with dbg.trace(goal="cancelled") as t:
            ids.append(t.id)
            t.record(EventType.TOOL_CALL, input="slow tool")
            await asyncio.sleep(30)

    async def main() -> None:
        task = asyncio.create_task(agent())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    with pytest.raises(KeyboardInterrupt), dbg.trace(goal="ctrl-c") as t:
        ids.append(t.id)
        t.record(EventType.TOOL_CALL, input="x")
        raise KeyboardInterrupt
    _assert_stopped_by(_stored(home, ids[0]), "CancelledError")
    _assert_stopped_by(_stored(home, ids[1]), "KeyboardInterrupt")
    assert "Ctrl-C" in (_stored(home, ids[1]).outcome.reason or "")


def test_an_outcome_the_agent_sets_as_it_is_stopped_is_kept(home: Path) -> None:
    dbg = AgentDebug()
    ids: list[str] = []

    def stream() -> Generator[int, None, None]:
        with dbg.trace(goal="stream") as t:
            ids.append(t.id)
            try:
                for i in range(10):
                    t.record(EventType.TOOL_CALL, input=i)
                    yield i
            except GeneratorExit:
                t.set_outcome("unknown", stopped_by="the client disconnected")
                raise

    chunks = stream()
    next(chunks)
    chunks.close()
    run = _stored(home, ids[0])
    assert run.outcome.status is OutcomeStatus.UNKNOWN
    assert run.outcome.stopped_by == "the client disconnected"
    assert EventType.ERROR not in [e.type for e in run.events]


def test_an_exception_still_fails_the_run(home: Path) -> None:
    dbg = AgentDebug()
    with pytest.raises(ValueError), dbg.trace(goal="g") as t:
        t.set_outcome("success")
        raise ValueError("boom")
    run = _stored(home, t.id)
    assert run.outcome.status is OutcomeStatus.FAILURE and run.outcome.stopped_by is None
    assert run.events[-1].type is EventType.ERROR
