"""What a node writes with LangGraph's stream writer is the node's observation:
in any stream mode, in a subgraph, through an injected ``Runtime``, in a tool, in
an async graph; once, and without changing what the caller's stream gets."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypedDict

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.schema import AgentEvent, AgentTrajectory
from agentdebug_langgraph import AgentDebugCallback, instrument
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy


class S(TypedDict):
    n: int


def _search(state: S) -> dict[str, Any]:
    write = get_stream_writer()
    write({"progress": "searching flights"})
    write("3 results")
    return {"n": state["n"] + 1}


def _linear(first: Any = _search) -> Any:
    g = StateGraph(S)
    g.add_node("search", first)
    g.add_node("answer", lambda s: {"n": s["n"] * 10})
    g.add_edge(START, "search")
    g.add_edge("search", "answer")
    g.add_edge("answer", END)
    return g.compile()


def _writes(run: AgentTrajectory) -> list[AgentEvent]:
    return [e for e in run.events if e.metadata.get("stream_writer")]


def _run_of(dbg: AgentDebug, callback: AgentDebugCallback) -> AgentTrajectory:
    assert callback.last_run_id is not None
    return callback.trajectory()  # (an async run's end is written after it returns)


def test_a_write_is_an_observation_of_the_node_that_wrote_it(dbg: AgentDebug) -> None:
    callback = AgentDebugCallback(dbg)
    assert _linear().invoke({"n": 1}, config={"callbacks": [callback]}) == {"n": 20}
    run = _run_of(dbg, callback)
    start = next(e for e in run.events if e.type is EventType.AGENT_START)
    writes = _writes(run)
    assert [w.output for w in writes] == [{"progress": "searching flights"}, "3 results"]
    for w in writes:
        assert w.type is EventType.OBSERVATION
        assert (w.agent_name, w.step_index, w.parent_id) == ("search", start.step_index, start.id)
    # between the node's start and its end, in order
    ids = [e.id for e in run.events]
    end = next(e for e in run.events if e.type is EventType.AGENT_END and e.agent_name == "search")
    assert ids.index(start.id) < ids.index(writes[0].id) < ids.index(end.id)


@pytest.mark.parametrize("modes", [["custom"], ["updates", "custom"], ["values"]])
def test_the_stream_gets_the_same_writes_and_each_is_recorded_once(
    dbg: AgentDebug, modes: list[str]
) -> None:
    callback = AgentDebugCallback(dbg)
    got = list(_linear().stream({"n": 1}, config={"callbacks": [callback]}, stream_mode=modes))
    without = list(_linear().stream({"n": 1}, stream_mode=modes))
    assert got == without
    if "custom" in modes:
        assert ("custom", "3 results") in got or "3 results" in got
    assert [w.output for w in _writes(_run_of(dbg, callback))] == [
        {"progress": "searching flights"},
        "3 results",
    ]


def test_a_graph_without_the_callback_keeps_langgraph_s_writer(dbg: AgentDebug) -> None:
    AgentDebugCallback(dbg)  # (made, not given to the graph)
    seen: list[Any] = []

    def node(state: S) -> dict[str, Any]:
        seen.append(get_stream_writer())
        return {}

    g = StateGraph(S)
    g.add_node("node", node)
    g.add_edge(START, "node")
    g.compile().invoke({"n": 1}, config={"callbacks": [AgentDebugCallback(dbg)]})
    g.compile().invoke({"n": 1})
    recorded_writer, plain_writer = seen
    assert getattr(recorded_writer, "__agentdebug_records__", False)
    assert not getattr(plain_writer, "__agentdebug_records__", False)


def test_a_subgraph_node_s_write_is_recorded_once_under_its_namespace(dbg: AgentDebug) -> None:
    inner = StateGraph(S)
    inner.add_node("lookup", _search)
    inner.add_edge(START, "lookup")
    outer = StateGraph(S)
    outer.add_node("research", inner.compile())
    outer.add_edge(START, "research")
    callback = AgentDebugCallback(dbg)
    chunks = list(
        outer.compile().stream(
            {"n": 1}, config={"callbacks": [callback]}, stream_mode="custom", subgraphs=True
        )
    )
    assert [c for _, c in chunks] == [{"progress": "searching flights"}, "3 results"]
    writes = _writes(_run_of(dbg, callback))
    assert [(w.agent_name, w.output) for w in writes] == [
        ("research/lookup", {"progress": "searching flights"}),
        ("research/lookup", "3 results"),
    ]


def test_an_injected_runtime_s_writer_records_too(dbg: AgentDebug) -> None:
    def node(state: S, runtime: Runtime) -> dict[str, Any]:
        runtime.stream_writer({"stage": "drafting"})
        return {"n": 2}

    callback = AgentDebugCallback(dbg)
    _linear(node).invoke({"n": 1}, config={"callbacks": [callback]})
    assert [(w.agent_name, w.output) for w in _writes(_run_of(dbg, callback))] == [
        ("search", {"stage": "drafting"})
    ]


def test_a_write_inside_a_tool_is_filed_under_the_node_that_ran_the_tool(
    dbg: AgentDebug,
) -> None:
    @tool
    def book(city: str) -> str:
        """Book a hotel."""
        get_stream_writer()({"booking": city})
        return "booked"

    def agent(state: MessagesState) -> dict[str, Any]:
        if any(isinstance(m, ToolMessage) for m in state["messages"]):
            return {"messages": [AIMessage("done")]}
        call = {"name": "book", "args": {"city": "Oslo"}, "id": "c1", "type": "tool_call"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([book]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END)
    g.add_edge("tools", "agent")
    callback = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [("user", "book Oslo")]}, config={"callbacks": [callback]})
    (write,) = _writes(_run_of(dbg, callback))
    assert (write.agent_name, write.output) == ("tools", {"booking": "Oslo"})


def test_an_async_graph_s_writes_are_recorded(dbg: AgentDebug) -> None:
    async def search(state: S) -> dict[str, Any]:
        await asyncio.sleep(0)
        get_stream_writer()("async progress")
        return {"n": 2}

    callback = AgentDebugCallback(dbg)
    got = asyncio.run(_collect(_linear(search), callback))
    assert got == ["async progress"]
    assert [w.output for w in _writes(_run_of(dbg, callback))] == ["async progress"]


async def _collect(graph: Any, callback: AgentDebugCallback) -> list[Any]:
    return [
        c
        async for c in graph.astream(
            {"n": 1}, config={"callbacks": [callback]}, stream_mode="custom"
        )
    ]


def test_instrument_records_writes_of_every_graph(dbg: AgentDebug) -> None:
    instrument(debugger=dbg)
    _linear().invoke({"n": 1})
    (run,) = [dbg.store.load_trajectory(r.id) for r in dbg.store.list_runs()]
    assert [w.output for w in _writes(run)] == [{"progress": "searching flights"}, "3 results"]


def test_a_retried_node_s_writes_are_each_attempt_s(dbg: AgentDebug) -> None:
    tries: list[int] = []

    def flaky(state: S) -> dict[str, Any]:
        tries.append(1)
        get_stream_writer()(f"attempt {len(tries)}")
        if len(tries) == 1:
            raise ConnectionError("the API is down")
        return {"n": 2}

    g = StateGraph(S)
    g.add_node("flaky", flaky, retry_policy=RetryPolicy(initial_interval=0, jitter=False))
    g.add_edge(START, "flaky")
    callback = AgentDebugCallback(dbg)
    g.compile().invoke({"n": 1}, config={"callbacks": [callback]})
    run = _run_of(dbg, callback)
    starts = [e for e in run.events if e.type is EventType.AGENT_START]
    writes = _writes(run)
    assert [w.output for w in writes] == ["attempt 1", "attempt 2"]
    assert [w.parent_id for w in writes] == [s.id for s in starts]


def test_a_write_that_cannot_be_recorded_still_reaches_the_stream(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from agentdebug_langgraph import _stream_writes

    def broken(chunk: Any) -> None:
        raise RuntimeError("the recorder broke")

    monkeypatch.setattr(_stream_writes, "recorded", broken)
    callback = AgentDebugCallback(dbg)
    with caplog.at_level(logging.ERROR, logger="agentdebug.langgraph"):
        got = list(
            _linear().stream({"n": 1}, config={"callbacks": [callback]}, stream_mode="custom")
        )
    assert got == [{"progress": "searching flights"}, "3 results"]
    assert "a stream write could not be recorded" in caplog.text
    assert _run_of(dbg, callback).outcome.status.value == "success"


def test_a_write_through_a_timed_node_s_guard_is_recorded_once(dbg: AgentDebug) -> None:
    # a node with a timeout gets LangGraph's guard around the run's writer, and a
    # subgraph in it takes that guarded writer for its own: two of ours in one chain
    async def lookup(state: S) -> dict[str, Any]:
        get_stream_writer()("found it")
        return {"n": 2}

    inner = StateGraph(S)
    inner.add_node("lookup", lookup)
    inner.add_edge(START, "lookup")
    outer = StateGraph(S)
    outer.add_node("research", inner.compile(), timeout=30)
    outer.add_edge(START, "research")
    callback = AgentDebugCallback(dbg)

    async def main() -> list[Any]:
        return [
            c
            async for c in outer.compile().astream(
                {"n": 1}, config={"callbacks": [callback]}, stream_mode="custom", subgraphs=True
            )
        ]

    assert [c for _, c in asyncio.run(main())] == ["found it"]
    writes = _writes(_run_of(dbg, callback))
    assert [(w.agent_name, w.output) for w in writes] == [("research/lookup", "found it")]


@pytest.mark.parametrize(
    "write",
    [
        {"error": "primary flight API timed out", "action": "using the backup API"},
        {"status": "error", "message": "primary API timed out, trying the backup"},
    ],
)
def test_a_progress_write_that_mentions_an_error_is_no_failed_call(
    dbg: AgentDebug, write: dict[str, str]
) -> None:
    """A note of the node's own, not a tool's result: before, it read as a failed call
    of a tool named "langgraph.stream_writer", in a run that succeeded too."""
    from agentdebug.diagnose import diagnose

    def search(state: S) -> dict[str, Any]:
        get_stream_writer()(write)
        return {"n": 2}

    callback = AgentDebugCallback(dbg)
    _linear(search).invoke({"n": 1}, config={"callbacks": [callback]})
    report = diagnose(_run_of(dbg, callback))
    assert report.findings == [] and report.root_cause is None


def test_a_graph_starting_in_another_thread_waits_for_the_wrap() -> None:
    """The wraps of LangGraph's loop classes (stream writes, cache hits) are installed
    by ``Once``. Before, the flag was set before the wrap: a second thread's first
    graph could start in between, with LangGraph's writer, and its writes were lost."""
    import threading
    import time

    from agentdebug_langgraph import _cache_hits, _stream_writes
    from agentdebug_langgraph._once import Once

    assert isinstance(_stream_writes.install, Once) and isinstance(_cache_hits.install, Once)
    done: list[bool] = []

    def slow_install() -> None:
        time.sleep(0.2)
        done.append(True)

    install = Once(slow_install)
    seen: list[bool] = []

    def start() -> None:
        install()
        seen.append(bool(done))

    threads = [threading.Thread(target=start) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [True, True, True] and done == [True]
