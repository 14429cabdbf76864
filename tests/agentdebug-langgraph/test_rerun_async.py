"""Reruns of runs an async app made (``ainvoke``, ``astream``: graphs of coroutine
nodes) and the savers a branch runs on: the async SQLite saver's file, a saver
with no async methods, one that cannot delete a thread."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, OutcomeStatus
from agentdebug.errors import AgentDebugError
from agentdebug.rerun import closed_loop
from agentdebug.schema import RerunRequest
from agentdebug_langgraph import (
    AgentDebugCallback,
    LangGraphRerunExecutor,
    branch_threads,
    prune_branch_threads,
)
from agentdebug_langgraph._live import live_graph
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from lg_graphs import (
    Heeding,
    linear_graph,
    planned_answer,
    refund_given,
    sqlite_saver,
)
from rerun_support import (
    one_round,
)


@pytest.mark.parametrize("asynchronous", [None, False])
def test_a_run_made_with_ainvoke_is_rerun_with_ainvoke_by_the_registered_executor(
    dbg: AgentDebug, asynchronous: bool | None
) -> None:
    """A graph of coroutine nodes cannot run under ``invoke`` (LangGraph: "No
    synchronous function provided"). The run records that it was made with
    ``ainvoke``; the executor the loop finds by itself (none given), and one given
    without ``asynchronous``, rerun it so, and the right diagnosis is verified.
    Told ``asynchronous=False``, the executor refuses before the gate, saying why
    (before, it did as told, and each round's branch failed in LangGraph, which
    the next round then blamed on the agent)."""
    import asyncio

    planner = Heeding(
        cue="does not give the refund amount",
        default="Plan: tell them when it ships.",
        heeded="Plan: give the refund amount.",
    )
    graph = planned_answer(planner, InMemorySaver(), coroutines=True)
    cb = AgentDebugCallback(dbg, success_check=refund_given)
    config = {"configurable": {"thread_id": f"t-async-{asynchronous}"}, "callbacks": [cb]}
    asyncio.run(graph.ainvoke({"messages": [HumanMessage("How much is my refund?")]}, config))
    original = cb.trajectory()
    assert original.metadata["langgraph"]["asynchronous"] is True
    if asynchronous is None:
        executors = [None, LangGraphRerunExecutor(graph, debugger=dbg)]
    else:
        executors = [LangGraphRerunExecutor(graph, debugger=dbg, asynchronous=False)]
    for executor in executors:
        if asynchronous is None:
            result, branch = one_round(dbg, original, executor, cb)
            assert result.status == "succeeded" and result.verified_by_rerun is True
            assert branch.outcome.final_answer == "Your refund is $42."
            assert branch.metadata["langgraph"]["asynchronous"] is True  # (its branches too)
            continue
        refused = closed_loop(
            original, debugger=dbg, executor=executor, report=cb.reports[0], policy="ask"
        )
        assert refused.status == "error" and refused.attempts[0].decision is None
        assert "with invoke (asynchronous=False)" in refused.detail
        assert "nodes that only run as coroutines" in refused.detail
        assert not refused.attempts[0].branch_id


def test_a_run_started_with_invoke_and_resumed_with_ainvoke_is_rerun_with_ainvoke(
    dbg: AgentDebug,
) -> None:
    """A request handler that asks for confirmation synchronously and resumes in
    an async one: the nodes after the interrupt are coroutines. The resume's
    event says it was made with ``ainvoke``, so the branch from the planner runs
    so (with ``invoke`` LangGraph refuses the coroutine nodes) and passes."""
    import asyncio

    from langgraph.graph import MessagesState
    from langgraph.types import Command, interrupt

    planner = Heeding(
        cue="does not give the refund amount",
        default="Plan: tell them when it ships.",
        heeded="Plan: give the refund amount.",
    )
    inner = planned_answer(planner, coroutines=True)

    def confirm(state: MessagesState) -> dict[str, Any]:
        interrupt("go ahead?")
        return {}

    g = StateGraph(MessagesState)
    g.add_node("confirm", confirm)
    g.add_node("planner", inner.nodes["planner"].bound)
    g.add_node("writer", inner.nodes["writer"].bound)
    g.add_edge(START, "confirm")
    g.add_edge("confirm", "planner")
    g.add_edge("planner", "writer")
    graph = g.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t-sync-then-async"}}
    graph.invoke(
        {"messages": [HumanMessage("How much is my refund?")]},
        {**thread, "callbacks": [AgentDebugCallback(dbg, success_check=refund_given)]},
    )
    cb = AgentDebugCallback(dbg, success_check=refund_given)
    asyncio.run(graph.ainvoke(Command(resume="yes"), {**thread, "callbacks": [cb]}))
    original = cb.trajectory()
    assert "asynchronous" not in original.metadata["langgraph"]  # (its start was sync)
    assert cb.reports[0].root_cause is not None
    assert cb.reports[0].root_cause.agent_name == "planner"
    result, branch = one_round(dbg, original, None, cb)
    assert result.status == "succeeded" and result.verified_by_rerun is True
    assert branch.outcome.final_answer == "Your refund is $42."
    assert branch.metadata["langgraph"]["asynchronous"] is True


def test_a_run_saved_by_the_async_sqlite_saver_reruns_through_the_sync_one(
    dbg: AgentDebug, tmp_path: Path
) -> None:
    """AsyncSqliteSaver works only on the event loop that opened it: the executor
    refuses it in one line, saying what to give instead (it raised from deep inside
    LangGraph, or ran every branch into a lock of another loop and reported the
    diagnosis not confirmed), and the synchronous saver on the same file reruns it."""
    import asyncio

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    db = str(tmp_path / "async.db")
    cb = AgentDebugCallback(dbg)

    def request() -> RerunRequest:
        return RerunRequest(
            trajectory=cb.trajectory(),
            resume_step=2,
            directive="x",
            state_patch={"trail": ["fixed"]},
        )

    async def capture() -> None:
        async with AsyncSqliteSaver.from_conn_string(db) as saver:
            graph = linear_graph(saver)
            config = {"configurable": {"thread_id": "t-aio"}, "callbacks": [cb]}
            await graph.ainvoke({"n": 0, "trail": []}, config)
            with pytest.raises(AgentDebugError, match=r"uses AsyncSqliteSaver.*SqliteSaver"):
                LangGraphRerunExecutor(graph, debugger=dbg, asynchronous=True).rerun(request())

    asyncio.run(capture())
    branch = LangGraphRerunExecutor(linear_graph(sqlite_saver(db)), debugger=dbg).rerun(request())
    assert branch.outcome.final_answer["trail"] == ["plan", "fixed", "act", "report"]


def test_branches_on_the_async_sqlite_saver_are_listed_and_pruned_off_its_loop(
    dbg: AgentDebug, tmp_path: Path
) -> None:
    """``branch_threads`` and ``prune_branch_threads`` read the saver synchronously:
    on AsyncSqliteSaver's own event loop they refuse in one line saying how
    (before, LangGraph's InvalidStateError came from deep inside), and from a
    thread of their own (``asyncio.to_thread``) they list and prune."""
    import asyncio

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    db = str(tmp_path / "async.db")
    cb = AgentDebugCallback(dbg, diagnose=False)

    async def capture() -> None:
        async with AsyncSqliteSaver.from_conn_string(db) as saver:
            config = {"configurable": {"thread_id": "t-aio"}, "callbacks": [cb]}
            await linear_graph(saver).ainvoke({"n": 0, "trail": []}, config)

    asyncio.run(capture())
    LangGraphRerunExecutor(linear_graph(sqlite_saver(db)), debugger=dbg).rerun(
        RerunRequest(trajectory=cb.trajectory(), resume_step=2, directive="x", state_patch={"n": 1})
    )
    made = branch_threads(sqlite_saver(db), "t-aio")
    assert len(made) == 1

    async def tidy() -> list[str]:
        async with AsyncSqliteSaver.from_conn_string(db) as saver:
            graph = linear_graph(saver)
            with pytest.raises(AgentDebugError, match=r"^branch_threads\(\).*AsyncSqliteSaver"):
                branch_threads(graph)
            with pytest.raises(AgentDebugError, match=r"^prune_branch_threads\(\).*to_thread"):
                prune_branch_threads(graph, "t-aio")
            assert await asyncio.to_thread(branch_threads, graph, "t-aio") == made
            return await asyncio.to_thread(prune_branch_threads, graph, "t-aio")

    assert asyncio.run(tidy()) == made
    assert branch_threads(sqlite_saver(db)) == []


class Tagged(JsonPlusSerializer):
    """A serializer of the app's own (as an encrypting one is): the default cannot
    read what it writes."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = super().dumps_typed(obj)
        return f"tagged-{kind}", data

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, raw = data
        return super().loads_typed((kind.removeprefix("tagged-"), raw))


class SyncOnly(BaseCheckpointSaver[str]):
    """A saver with the synchronous methods a rerun uses, and no async ones and
    no ``delete_thread`` (the base class's refusals)."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = InMemorySaver()

    def get_tuple(self, config: Any) -> Any:
        return self.inner.get_tuple(config)

    def list(self, config: Any, **kw: Any) -> Any:
        return self.inner.list(config, **kw)

    def put(self, config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
        return self.inner.put(config, checkpoint, metadata, versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.inner.put_writes(config, writes, task_id, task_path)


@pytest.mark.parametrize("caller", ["sync", "async"])
@pytest.mark.parametrize("saver", ["SqliteSaver", "the app's own"])
def test_a_graph_of_coroutines_saved_to_a_sqlite_file_reruns_asynchronously(
    dbg: AgentDebug, tmp_path: Path, caller: str, saver: str
) -> None:
    """Captured through AsyncSqliteSaver in one event loop; rerun (from sync code,
    or from async code in another loop) with the graph built on SqliteSaver for the
    same file: the fork is made synchronously, and the branch's coroutine nodes run
    through AsyncSqliteSaver opened on the branch's own loop, with the saver's own
    serializer. "The app's own" is a SqliteSaver subclass with its own serializer,
    on a connection only its thread may use. The branch is on file: a synchronous
    reader of the file sees its thread."""
    import asyncio

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    class OwnSaver(SqliteSaver):
        pass

    own = saver != "SqliteSaver"
    db = str(tmp_path / "async.db")
    cb = AgentDebugCallback(dbg)

    async def capture() -> None:
        async with AsyncSqliteSaver.from_conn_string(db) as writer:
            if own:
                writer.serde = Tagged()
            config = {"configurable": {"thread_id": "t-co"}, "callbacks": [cb]}
            await linear_graph(writer, coroutines=True).ainvoke({"n": 0, "trail": []}, config)

    asyncio.run(capture())
    request = RerunRequest(
        trajectory=cb.trajectory(), resume_step=2, directive="x", state_patch={"trail": ["fixed"]}
    )
    checkpointer = OwnSaver(sqlite3.connect(db), serde=Tagged()) if own else sqlite_saver(db)
    graph = linear_graph(checkpointer, coroutines=True)
    executor = LangGraphRerunExecutor(graph, debugger=dbg, asynchronous=True)
    if caller == "sync":
        branch = executor.rerun(request)
    else:

        async def from_async_code() -> Any:
            return executor.rerun(request)

        branch = asyncio.run(from_async_code())
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    assert branch.outcome.final_answer["trail"] == ["plan", "fixed", "act", "report"]
    thread = branch.metadata["langgraph"]["fork"]["thread_id"]
    assert graph.get_state({"configurable": {"thread_id": thread}}).values["n"] == 3
    assert live_graph(branch.id) is graph  # a later round reruns the branch on it


def test_an_asynchronous_rerun_needs_a_saver_with_async_methods(dbg: AgentDebug) -> None:
    """A saver with only the synchronous half (not SqliteSaver, which the executor
    pairs with AsyncSqliteSaver) is refused before anything runs."""
    graph = linear_graph(SyncOnly())
    cb = AgentDebugCallback(dbg)
    graph.invoke({"n": 0, "trail": []}, {"configurable": {"thread_id": "s"}, "callbacks": [cb]})
    request = RerunRequest(trajectory=cb.trajectory(), resume_step=2, directive="x", state_patch={})
    with pytest.raises(AgentDebugError, match=r"SyncOnly, has no async methods"):
        LangGraphRerunExecutor(graph, debugger=dbg, asynchronous=True).rerun(request)


def test_a_run_made_with_ainvoke_reruns_with_invoke_where_the_saver_has_no_async_methods(
    dbg: AgentDebug,
) -> None:
    """A run an async app made, of nodes that also run synchronously, rerun with a
    graph whose saver has only the synchronous half: by default the branch runs
    with invoke, as before runs recorded how they were made (given
    ``asynchronous=True``, the executor refuses, as the test above shows)."""
    import asyncio

    class NoAsync(InMemorySaver):
        aget_tuple = BaseCheckpointSaver.aget_tuple  # the base class's refusal

    made = InMemorySaver()  # the app's (async) saver; the rerun's shares its storage
    cb = AgentDebugCallback(dbg)
    config = {"configurable": {"thread_id": "a-sync"}, "callbacks": [cb]}
    asyncio.run(linear_graph(made).ainvoke({"n": 0, "trail": []}, config))
    saver = NoAsync()
    saver.storage, saver.writes, saver.blobs = made.storage, made.writes, made.blobs
    original = cb.trajectory()
    assert original.metadata["langgraph"]["asynchronous"] is True
    request = RerunRequest(
        trajectory=original, resume_step=2, directive="x", state_patch={"trail": ["fixed"]}
    )
    branch = LangGraphRerunExecutor(linear_graph(saver), debugger=dbg).rerun(request)
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    assert branch.outcome.final_answer["trail"] == ["plan", "fixed", "act", "report"]
    assert "asynchronous" not in branch.metadata["langgraph"]
    # nodes that only run as coroutines cannot: refused, not a branch that fails
    cb = AgentDebugCallback(dbg)
    config = {"configurable": {"thread_id": "a-co"}, "callbacks": [cb]}
    asyncio.run(linear_graph(made, coroutines=True).ainvoke({"n": 0, "trail": []}, config))
    request = RerunRequest(
        trajectory=cb.trajectory(), resume_step=2, directive="x", state_patch={"trail": []}
    )
    with pytest.raises(AgentDebugError, match=r"nodes that only run so.*NoAsync, has no async"):
        LangGraphRerunExecutor(linear_graph(saver, coroutines=True), debugger=dbg).rerun(request)


def test_an_asynchronous_rerun_on_an_in_memory_sqlite_saver_is_refused(dbg: AgentDebug) -> None:
    """The branch's AsyncSqliteSaver needs the file the run was saved to; an
    in-memory database has none, which is said before anything runs."""
    graph = linear_graph(sqlite_saver(":memory:"))
    cb = AgentDebugCallback(dbg)
    graph.invoke({"n": 0, "trail": []}, {"configurable": {"thread_id": "m"}, "callbacks": [cb]})
    request = RerunRequest(
        trajectory=cb.trajectory(), resume_step=2, directive="x", state_patch={"n": 0}
    )
    with pytest.raises(
        AgentDebugError, match=r"in-memory SqliteSaver.*use a file, or InMemorySaver"
    ):
        LangGraphRerunExecutor(graph, debugger=dbg, asynchronous=True).rerun(request)


@pytest.mark.parametrize("saver", ["InMemorySaver", "a saver that cannot delete"])
def test_a_refused_rerun_leaves_no_branch_thread_and_keeps_its_reason(
    dbg: AgentDebug, saver: str
) -> None:
    """Refused after its thread was made (the state has nowhere to carry the
    directive): the thread is deleted, and where the saver cannot delete, the
    refusal still comes through as itself, not as the saver's error."""
    checkpointer: Any = InMemorySaver() if saver == "InMemorySaver" else SyncOnly()
    graph = linear_graph(checkpointer)
    cb = AgentDebugCallback(dbg)
    graph.invoke({"n": 0, "trail": []}, {"configurable": {"thread_id": "r"}, "callbacks": [cb]})
    request = RerunRequest(trajectory=cb.trajectory(), resume_step=2, directive="x")
    with pytest.raises(AgentDebugError, match="no 'messages' key to carry the directive"):
        LangGraphRerunExecutor(graph, debugger=dbg).rerun(request)
    # a key that holds a value, not messages: the directive would replace the value
    with pytest.raises(AgentDebugError, match="'n' holds int, not a list of messages"):
        LangGraphRerunExecutor(graph, debugger=dbg, directive_key="n").rerun(request)
    if saver == "InMemorySaver":
        assert branch_threads(graph) == []


def test_a_recorded_factorys_coroutine_graph_is_refused_asynchronous_false_before_the_gate(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In another process (``agentdebug act --rerun --executor-option
    asynchronous=false``) the graph comes from the run's recorded factory: the
    preflight calls it and refuses as for a graph given in code (before, it only
    imported the factory, so the user was asked at the gate and refused after),
    and the rerun uses the graph it made, the factory called once."""
    import asyncio
    from collections import OrderedDict

    import lg_graphs
    from agentdebug.errors import AgentDebugError
    from agentdebug_langgraph import _live

    made: list[Any] = []
    saver = InMemorySaver()  # (the factory's graph holds the run's checkpoints, as on disk)

    def counted() -> Any:
        made.append(lg_graphs.linear_graph(saver, coroutines=True))
        return made[-1]

    monkeypatch.setattr(lg_graphs, "coroutine_graph", counted)
    graph = lg_graphs.linear_graph(saver, coroutines=True)
    cb = AgentDebugCallback(dbg, diagnose=False, graph_factory="lg_graphs:coroutine_graph")
    config = {"configurable": {"thread_id": "t-factory-async"}, "callbacks": [cb]}
    asyncio.run(graph.ainvoke({"n": 0, "trail": []}, config))
    run = cb.trajectory()
    monkeypatch.setattr(_live, "_LIVE_GRAPHS", OrderedDict())  # (as in another process)
    refusing = LangGraphRerunExecutor(debugger=dbg, asynchronous=False)
    with pytest.raises(AgentDebugError, match=r"with invoke \(asynchronous=False\)"):
        refusing.preflight(run, scorer="llm")
    assert len(made) == 1
    executor = LangGraphRerunExecutor(debugger=dbg)
    executor.preflight(run, scorer="llm")
    assert len(made) == 2
    assert executor._graph_for(run) == (made[-1], "lg_graphs:coroutine_graph")
    executor._graph_for(run)  # (a later round's rerun: the factory again)
    assert len(made) == 3
