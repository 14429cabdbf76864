"""Which run is current: never one that has ended (generators that end out of
order), and a worker thread that finds none while a run is open elsewhere says
so, once, with the fix."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import agentdebug
import pytest
from agentdebug import AgentDebug, EventType, current_session
from agentdebug.capture import current
from agentdebug.store import open_store


def _stream(dbg: AgentDebug, goal: str, ids: dict[str, str]) -> Iterator[int]:
    with dbg.trace(goal=goal) as t:
        ids[goal] = t.id
        for i in range(3):
            t.record(EventType.TOOL_CALL, agent_name="streamer", input={"i": i})
            yield i


def test_streams_that_end_out_of_order_leave_no_ended_run_current(home: Path) -> None:
    dbg = AgentDebug()
    ids: dict[str, str] = {}
    a, b = _stream(dbg, "A", ids), _stream(dbg, "B", ids)
    next(a)
    next(b)
    list(a)
    list(b)  # B's end restored what was current when it began: A, which has ended
    assert current_session() is None
    assert agentdebug.record(EventType.MESSAGE, agent_name="app", output="unrelated") is None
    store = open_store(home)
    for goal in ("A", "B"):
        events = store.load_trajectory(ids[goal]).events
        assert [e.agent_name for e in events] == ["streamer"] * 3


def test_the_enclosing_live_run_is_current_again_after_an_inner_one_ends(home: Path) -> None:
    dbg = AgentDebug()
    ids: dict[str, str] = {}
    with dbg.trace(goal="outer") as outer:
        a, b = _stream(dbg, "A", ids), _stream(dbg, "B", ids)
        next(a)
        next(b)
        list(a)
        list(b)
        assert current_session() is outer
        agentdebug.record(EventType.MESSAGE, agent_name="app", output="the outer run's")
    assert current_session() is None
    events = open_store(home).load_trajectory(outer.id).events
    own = [e for e in events if "sub_run" not in e.metadata]  # (A and B are its sub-runs)
    assert [e.output for e in own] == ["the outer run's"]
    # both streams are the outer run's sub-runs: B, begun while A's stream waited at
    # its yield, is not A's
    assert [e.metadata["sub_run"] for e in events if e not in own] == [ids["A"], ids["B"]]
    assert open_store(home).load_trajectory(ids["B"]).metadata["within_run"] == outer.id


def test_a_stream_waiting_at_its_yield_is_not_the_run_its_driver_records_into(
    home: Path,
) -> None:
    dbg = AgentDebug()
    ids: dict[str, str] = {}
    a, b = _stream(dbg, "A", ids), _stream(dbg, "B", ids)
    next(a)
    assert current_session() is None  # A waits at its yield: its run is not the caller's
    assert agentdebug.record(EventType.MESSAGE, agent_name="app", output="caller's") is None
    next(b)  # a second stream, begun while A waits: a run of its own, not A's sub-run
    with dbg.trace(goal="caller") as caller:
        assert current_session() is caller
        next(a)  # A runs again in the caller's run: A's records still go to A
        agentdebug.record(EventType.MESSAGE, agent_name="app", output="in the caller's run")
    list(a)
    list(b)
    store = open_store(home)
    for goal in ("A", "B"):
        run = store.load_trajectory(ids[goal])
        assert "within_run" not in run.metadata
        assert [e.agent_name for e in run.events] == ["streamer"] * 3
    assert [e.output for e in store.load_trajectory(caller.id).events] == ["in the caller's run"]


def test_a_run_begun_inside_a_running_generator_is_its_sub_run(home: Path) -> None:
    dbg = AgentDebug()
    inner_ids: list[str] = []

    def agent() -> Iterator[str]:
        with dbg.trace(goal="orchestrate") as outer:
            with dbg.trace(goal="research") as inner:  # while the generator runs
                inner_ids.append(inner.id)
                inner.record(EventType.FINAL_ANSWER, agent_name="researcher", output="3 sources")
            yield outer.id
            assert current_session() is outer  # resumed: its run is current again
            agentdebug.record(EventType.FINAL_ANSWER, agent_name="boss", output="done")

    outer_id = next(stream := agent())
    list(stream)
    store = open_store(home)
    assert store.load_trajectory(inner_ids[0]).metadata["within_run"] == outer_id
    events = store.load_trajectory(outer_id).events
    assert [(e.agent_name, e.output) for e in events] == [
        ("researcher", "3 sources"),
        ("boss", "done"),
    ]


def test_a_run_closed_inside_its_with_block_is_no_longer_current(home: Path) -> None:
    dbg = AgentDebug()
    with dbg.trace(goal="g") as t:
        t.close()
        assert current_session() is None
        assert agentdebug.record(EventType.MESSAGE, output="after close") is None
    assert open_store(home).load_trajectory(t.id).events == []


def test_a_worker_thread_without_the_run_says_so_once_with_the_fix(
    home: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(current, "_warned", False)

    def tool(i: int) -> str | None:
        return agentdebug.record(EventType.TOOL_RESULT, agent_name="worker", output=f"r{i}")

    dbg = AgentDebug()
    with caplog.at_level(logging.WARNING, "agentdebug.capture"), dbg.trace(goal="g") as t:
        with ThreadPoolExecutor(2) as pool:
            assert list(pool.map(tool, range(3))) == [None, None, None]
            # the documented fix: the work run in the run's context
            ctx = contextvars.copy_context()
            assert pool.submit(ctx.run, tool, 9).result() is not None
        thread = threading.Thread(target=tool, args=(5,))
        thread.start()
        thread.join()
    said = [r.getMessage() for r in caplog.records if "no run is current" in r.getMessage()]
    assert len(said) == 1
    assert t.id in said[0] and "copy_context().run" in said[0] and "session.record" in said[0]
    events = open_store(home).load_trajectory(t.id).events
    assert [e.output for e in events] == ["r9"]


def test_no_warning_outside_any_run(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(current, "_warned", False)
    with caplog.at_level(logging.WARNING, "agentdebug.capture"), ThreadPoolExecutor(1) as pool:
        assert pool.submit(agentdebug.record, EventType.MESSAGE, output="x").result() is None
    assert not [r for r in caplog.records if "no run is current" in r.getMessage()]


@contextlib.contextmanager
def _traced(dbg: AgentDebug, goal: str) -> Iterator[agentdebug.TraceSession]:
    with dbg.trace(goal=goal) as t:
        yield t


def test_a_contextmanager_helper_s_run_is_current_in_its_with_body(home: Path) -> None:
    dbg = AgentDebug()
    with _traced(dbg, "helper") as t:
        assert current_session() is t  # (its generator waits at the yield: its body runs)
        agentdebug.record(EventType.MESSAGE, agent_name="app", output="in the body")
        with dbg.trace(goal="inner") as inner:
            pass
    assert inner.metadata["within_run"] == t.id
    events = open_store(home).load_trajectory(t.id).events
    assert [e.output for e in events if "sub_run" not in e.metadata] == ["in the body"]


@pytest.fixture
def traced_fixture(home: Path) -> Iterator[agentdebug.TraceSession]:
    with AgentDebug().trace(goal="fixture") as t:
        yield t


def test_a_yield_fixture_s_run_is_current_in_the_test(
    home: Path, traced_fixture: agentdebug.TraceSession
) -> None:
    assert current_session() is traced_fixture
    assert agentdebug.record(EventType.MESSAGE, agent_name="test", output="x") is not None


def test_an_async_generator_s_run_is_current_in_the_tasks_it_awaits(home: Path) -> None:
    dbg = AgentDebug()

    async def worker(i: int) -> None:
        await asyncio.sleep(0)
        agentdebug.record(EventType.TOOL_CALL, agent_name="worker", input={"i": i})

    async def stream() -> AsyncIterator[str]:
        async with dbg.trace(goal="async stream") as t:
            await asyncio.gather(worker(1), worker(2))
            await asyncio.to_thread(
                agentdebug.record, EventType.MESSAGE, agent_name="thread", output="t"
            )
            yield t.id

    async def main() -> str:
        (only,) = [i async for i in stream()]
        return only

    run_id = asyncio.run(main())
    events = open_store(home).load_trajectory(run_id).events
    assert sorted(str(e.agent_name) for e in events) == ["thread", "worker", "worker"]


async def _astream(dbg: AgentDebug, goal: str, ids: dict[str, str]) -> AsyncIterator[int]:
    async with dbg.trace(goal=goal) as t:
        ids[goal] = t.id
        for i in range(3):
            await asyncio.sleep(0)
            t.record(EventType.TOOL_CALL, agent_name="streamer", input={"i": i})
            yield i


def test_an_async_stream_waiting_at_its_yield_is_not_the_run_its_driver_records_into(
    home: Path,
) -> None:
    """As a generator's: before, the waiting stream's run stayed current, the
    driver's records went into it, and a second stream was taken for its sub-run."""
    dbg = AgentDebug()
    ids: dict[str, str] = {}

    async def main() -> str:
        a, b = _astream(dbg, "A", ids), _astream(dbg, "B", ids)
        await anext(a)
        assert current_session() is None  # A waits at its yield
        assert agentdebug.record(EventType.MESSAGE, agent_name="app", output="x") is None
        await anext(b)  # begun while A waits: a run of its own
        async with dbg.trace(goal="caller") as caller:
            await anext(a)  # A runs again inside the caller's run: its records go to A
            agentdebug.record(EventType.MESSAGE, agent_name="app", output="in the caller's run")
        _ = [i async for i in a], [i async for i in b]
        return caller.id

    caller_id = asyncio.run(main())
    store = open_store(home)
    for goal in ("A", "B"):
        run = store.load_trajectory(ids[goal])
        assert "within_run" not in run.metadata
        assert [e.agent_name for e in run.events] == ["streamer"] * 3
    assert [e.output for e in store.load_trajectory(caller_id).events] == ["in the caller's run"]


def test_an_async_context_manager_around_a_run_keeps_it_current_in_its_body(
    home: Path,
) -> None:
    dbg = AgentDebug()

    @contextlib.asynccontextmanager
    async def traced() -> AsyncIterator[str]:
        async with dbg.trace(goal="helper") as t:
            yield t.id

    async def main() -> str:
        async with traced() as run_id:
            await asyncio.sleep(0)
            agentdebug.record(EventType.MESSAGE, agent_name="app", output="in the body")
        return run_id

    run_id = asyncio.run(main())
    assert [e.output for e in open_store(home).load_trajectory(run_id).events] == ["in the body"]


def test_a_bytecode_whose_awaits_cannot_be_read_keeps_the_run_current(
    home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(current, "_AWAITS", {})
    monkeypatch.setattr(current, "_unreadable_said", False)
    monkeypatch.setattr(current.dis, "get_instructions", _unreadable)
    dbg = AgentDebug()
    ids: dict[str, str] = {}

    async def main() -> None:
        a = _astream(dbg, "A", ids)
        await anext(a)
        assert current_session() is not None  # (as before async waits were told apart)
        await anext(a)
        assert current_session() is not None
        await a.aclose()

    with caplog.at_level(logging.WARNING, logger="agentdebug.capture"):
        asyncio.run(main())
    said = [r for r in caplog.records if "does not say where an async generator" in r.message]
    assert len(said) == 1


def _unreadable(code: object) -> Iterator[object]:
    raise ValueError("an unknown bytecode")
