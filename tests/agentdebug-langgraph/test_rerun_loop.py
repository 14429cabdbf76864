"""The loop around a checkpoint rerun: what judges a branch, the graph factory,
the branch's own thread, later rounds and savers (interrupts: test_rerun_interrupts.py)."""

from __future__ import annotations

import operator
import sqlite3
from pathlib import Path
from typing import Annotated, Any, TypedDict

import lg_graphs
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
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from lg_graphs import (
    Heeding,
    call,
    linear_graph,
    order_found,
    planned_answer,
    refund_given,
    scripted,
    sqlite_saver,
    tool_agent,
    wrong_then_right,
)
from rerun_support import (
    REQUEST,
    failed_run,
    new_nodes,
    one_round,
    request_from,
)


def test_free_tier_loop_retries_a_failure_no_detector_names_with_the_runs_reason(
    dbg: AgentDebug,
) -> None:
    """No detector fires on a wrong plan, so the free tier's report has no fix;
    the native recoverer then tells the blamed step how the run failed, and the
    planner, reading that in its forked state, plans again and the run passes."""
    planner = Heeding(
        cue="does not give the refund amount",
        default="Plan: tell them when it ships.",
        heeded="Plan: give the refund amount.",
    )
    graph = planned_answer(planner, InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=refund_given)
    graph.invoke(
        {"messages": [HumanMessage("How much is my refund for order A123?")]},
        {"configurable": {"thread_id": "t-generic"}, "callbacks": [cb]},
    )
    report = cb.reports[0]
    assert report.findings == [] and report.fix is None
    assert report.root_cause is not None and report.root_cause.agent_name == "planner"
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=refund_given)
    result = closed_loop(
        cb.trajectory(), debugger=dbg, executor=executor, report=report, policy="auto"
    )
    assert result.status == "succeeded" and result.verified_by_rerun is True
    plan = result.attempts[0].plan
    assert plan is not None and plan.resume_step == report.root_cause.step_index
    assert "the run failed: the answer does not give the refund amount" in plan.directive
    assert "generic directive" in plan.rationale and plan.notes
    store = dbg.store
    assert store is not None
    branch = store.load_trajectory(result.attempts[0].branch_id or "")
    assert branch.outcome.final_answer == "Your refund is $42."
    assert new_nodes(branch) == ["planner", "writer"]


@pytest.mark.parametrize("asynchronous", [None, False])
def test_a_run_made_with_ainvoke_is_rerun_with_ainvoke_by_the_registered_executor(
    dbg: AgentDebug, asynchronous: bool | None
) -> None:
    """A graph of coroutine nodes cannot run under ``invoke`` (LangGraph: "No
    synchronous function provided"). The run records that it was made with
    ``ainvoke``; the executor the loop finds by itself (none given), and one given
    without ``asynchronous``, rerun it so, and the right diagnosis is verified.
    Told ``asynchronous=False``, the executor does as told, and the branch fails
    in LangGraph, not in the agent."""
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
        result, branch = one_round(dbg, original, executor, cb)
        if asynchronous is None:
            assert result.status == "succeeded" and result.verified_by_rerun is True
            assert branch.outcome.final_answer == "Your refund is $42."
            assert branch.metadata["langgraph"]["asynchronous"] is True  # (its branches too)
        else:
            assert result.verified_by_rerun is not True
            assert "No synchronous function provided" in str(branch.outcome.reason) + str(
                [e.error.message for e in branch.events if e.error]
            )
            assert "asynchronous" not in branch.metadata["langgraph"]


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


def test_a_branch_is_judged_by_the_runs_own_check_even_one_without_an_importable_name(
    dbg: AgentDebug,
) -> None:
    """A check that is a lambda (or defined in the script, or nested) cannot be
    imported by name: in the same process the rerun still uses it, and where it
    is gone the branch is ``unknown``, saying why, instead of passing for want
    of a check (which the loop would report as verified by rerun)."""
    from agentdebug_langgraph import _live

    judged: list[Any] = []
    saver = InMemorySaver()
    graph = tool_agent(scripted(wrong_then_right()), saver)
    cb = AgentDebugCallback(dbg, success_check=lambda s: judged.append(s) or order_found(s))
    graph.invoke(REQUEST, {"configurable": {"thread_id": "t-lambda"}, "callbacks": [cb]})
    original = cb.trajectory()
    assert "success_check" not in original.metadata["langgraph"]
    assert original.metadata["langgraph"]["success_check_unimportable"].endswith("<lambda>")
    result = closed_loop(
        original,
        debugger=dbg,
        executor=LangGraphRerunExecutor(graph, debugger=dbg),
        report=cb.reports[0],
        policy="auto",
    )
    assert result.status == "succeeded" and result.verified_by_rerun is True
    assert len(judged) == 2  # the run, then its branch

    _live._LIVE_CHECKS.clear()  # as in another process: the lambda is gone
    right = scripted(wrong_then_right()[2:])
    result = closed_loop(
        original,
        debugger=dbg,
        executor=LangGraphRerunExecutor(tool_agent(right, saver), debugger=dbg),
        report=cb.reports[0],
        policy="auto",
    )
    assert result.status != "succeeded" and result.verified_by_rerun is not True
    assert len(judged) == 2  # not called again, and not replaced by "no check: success"
    store = dbg.store
    assert store is not None
    branch = store.load_trajectory(result.attempts[0].branch_id or "")
    assert branch.outcome.status is OutcomeStatus.UNKNOWN
    reason = branch.outcome.reason or ""
    assert "has no importable name" in reason and "success_check=" in reason
    assert "has no importable name" in result.detail


def test_a_graph_factory_that_fails_or_returns_no_graph_is_named_in_one_line(
    dbg: AgentDebug,
) -> None:
    cb = failed_run(dbg, tool_agent(scripted(wrong_then_right()), InMemorySaver()), "t-fact")
    original = cb.trajectory()
    executor = LangGraphRerunExecutor(debugger=dbg)
    for factory, said in [
        (
            "lg_graphs:broken_factory",
            "its graph factory 'lg_graphs:broken_factory' raised "
            "RuntimeError: unable to open database file",
        ),
        ("lg_graphs:not_a_graph", "is an int, not a compiled LangGraph graph"),
    ]:
        lg = {**original.metadata["langgraph"], "graph_factory": factory}
        elsewhere = original.model_copy(update={"id": "elsewhere", "metadata": {"langgraph": lg}})
        with pytest.raises(AgentDebugError) as raised:
            executor.rerun(request_from(elsewhere, cb))
        assert said in str(raised.value)
        assert "functional-API" not in str(raised.value)


def test_a_graph_factory_that_no_rerun_could_import_is_refused_at_capture() -> None:
    assert AgentDebugCallback(graph_factory=lg_graphs.agent_from_env).graph_factory == (
        "lg_graphs:agent_from_env"
    )
    assert AgentDebugCallback(graph_factory="a.b:c").graph_factory == "a.b:c"
    with pytest.raises(ValueError, match="expected 'module:function'"):
        AgentDebugCallback(graph_factory="lg_graphs.agent_from_env")
    with pytest.raises(ValueError, match="must be a top-level function"):
        AgentDebugCallback(graph_factory=lambda: None)
    with pytest.raises(TypeError, match="not int"):
        AgentDebugCallback(graph_factory=42)  # type: ignore[arg-type]


def test_each_round_of_the_loop_records_every_correction_its_state_holds(
    dbg: AgentDebug,
) -> None:
    """Round 2 reruns round 1's branch from the same step: the state it forks holds
    round 1's correction as well as its own, and its recorded run says so."""
    stubborn = [call("lookup_order_by_email", {"email": "A123"}, "c"), AIMessage("Done.")]
    graph = tool_agent(scripted(stubborn * 4), InMemorySaver())
    cb = failed_run(dbg, graph, "t-rounds")
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found)
    result = closed_loop(
        cb.trajectory(),
        debugger=dbg,
        executor=executor,
        report=cb.reports[0],
        policy="auto",
        max_rounds=3,
    )
    assert result.status == "failed" and len(result.attempts) == 3
    store = dbg.store
    assert store is not None
    last = store.load_trajectory(result.attempts[-1].branch_id or "")
    forks = [e for e in last.events if e.metadata.get("langgraph_event") == "fork"]
    assert len(forks) == 3 and all(e.step_index == 1 for e in forks)
    assert [("inherited_from" in e.metadata) for e in forks] == [True, True, False]
    fork = last.metadata["langgraph"]["fork"]
    assert fork["original_thread_id"] == "t-rounds"  # the user's, three rounds down
    assert fork["thread_id"].count("~agentdebug-") == 1
    assert fork["forked_thread_id"].startswith("t-rounds~agentdebug-")  # round 2's
    state = graph.get_state(
        {"configurable": {"thread_id": fork["thread_id"], "checkpoint_id": fork["checkpoint_id"]}}
    )
    said = [m.content for m in state.values["messages"] if "previous attempt" in str(m.content)]
    assert len(said) == 3  # what the model saw, as the recorded run says


def test_isolate_false_forks_on_the_runs_own_thread_as_time_travel(dbg: AgentDebug) -> None:
    graph = tool_agent(scripted(wrong_then_right()), InMemorySaver())
    cb = failed_run(dbg, graph, "t-travel")
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found, isolate=False)
    branch = executor.rerun(request_from(cb.trajectory(), cb))
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert branch.metadata["langgraph"]["fork"]["thread_id"] == "t-travel"
    latest = graph.get_state({"configurable": {"thread_id": "t-travel"}})
    assert latest.values["messages"][-1].content == "Order A123 costs $42.00."  # the branch's


@pytest.mark.parametrize("saver", ["memory", "sqlite"])
def test_branch_threads_are_listed_and_pruned_leaving_the_users_threads(
    dbg: AgentDebug, tmp_path: Path, saver: str
) -> None:
    """Each rerun leaves a thread in the user's checkpointer; pruning deletes
    those (of one user thread, all but the newest ``keep``), never the user's."""
    db = str(tmp_path / "cp.sqlite")
    checkpointer: Any = InMemorySaver() if saver == "memory" else sqlite_saver(db)
    graph = linear_graph(checkpointer)
    runs = {}
    for thread in ("t-a", "t-b"):
        cb = AgentDebugCallback(dbg)
        graph.invoke(
            {"n": 0, "trail": []}, {"configurable": {"thread_id": thread}, "callbacks": [cb]}
        )
        runs[thread] = cb.trajectory()
    executor = LangGraphRerunExecutor(graph, debugger=dbg)
    branches = []
    for thread in ("t-a", "t-a", "t-b"):
        request = RerunRequest(
            trajectory=runs[thread], resume_step=2, directive="x", state_patch={"n": 9}
        )
        branches.append(executor.rerun(request))
    made = [b.metadata["langgraph"]["fork"]["thread_id"] for b in branches]
    assert branch_threads(graph) == made  # the least recently used first
    assert branch_threads(checkpointer, "t-a") == made[:2]
    if saver == "sqlite":  # another process, another connection: the same threads
        graph = linear_graph(sqlite_saver(db))
    assert prune_branch_threads(graph, keep=5) == []  # (more kept than there are)
    assert prune_branch_threads(graph, "t-a", keep=1) == made[:1]
    assert branch_threads(graph) == made[1:]
    assert prune_branch_threads(graph) == made[1:] and branch_threads(graph) == []
    pruned = dbg.store.load_trajectory(branches[0].id)  # a pruned branch says why it cannot rerun
    with pytest.raises(AgentDebugError, match=r"deleted \(prune_branch_threads\)"):
        executor.rerun(
            RerunRequest(trajectory=pruned, resume_step=2, directive="x", state_patch={"n": 1})
        )
    for thread in ("t-a", "t-b"):  # the users' threads are as their runs left them
        state = graph.get_state({"configurable": {"thread_id": thread}})
        assert state.values["trail"] == ["plan", "act", "report"]
    with pytest.raises(AgentDebugError, match="keep must be 0 or more"):
        prune_branch_threads(graph, keep=-1)
    with pytest.raises(AgentDebugError, match="with a checkpointer, or a checkpointer, not int"):
        branch_threads(3)


class Asked(TypedDict):
    q: str
    out: Annotated[list[str], operator.add]


class Remembering(Asked):
    memory: Annotated[list[str], operator.add]  # the subgraph's own, kept across runs


def remembering_graph(saver: Any) -> Any:
    def recall(s: dict[str, Any]) -> dict[str, Any]:
        return {"memory": [s["q"]], "out": [f"remembers {s.get('memory', [])}"]}

    inner = StateGraph(Remembering)
    inner.add_node("recall", recall)
    inner.add_edge(START, "recall")
    g = StateGraph(Asked)
    g.add_node("prep", lambda s: {"out": ["prep"]})
    g.add_node("sub", inner.compile(checkpointer=True))
    g.add_edge(START, "prep")
    g.add_edge("prep", "sub")
    return g.compile(checkpointer=saver)


@pytest.mark.parametrize("saver", ["memory", "sqlite"])
def test_a_branch_starts_with_the_memory_a_subgraph_keeps_on_the_thread(
    dbg: AgentDebug, tmp_path: Path, saver: str
) -> None:
    """A subgraph compiled with ``checkpointer=True`` keeps its own history on the
    thread; the branch's thread gets its state from before the blamed step too, so
    the rerun remembers what the original remembered."""
    graph = remembering_graph(
        InMemorySaver() if saver == "memory" else sqlite_saver(str(tmp_path / "c.db"))
    )
    config: Any = {"configurable": {"thread_id": "mem"}}
    graph.invoke({"q": "first", "out": []}, config)
    cb = AgentDebugCallback(dbg)
    graph.invoke({"q": "second", "out": []}, {**config, "callbacks": [cb]})
    original = cb.trajectory()
    assert original.outcome.final_answer["out"][-1] == "remembers ['first']"
    sub = next(e for e in original.events if e.agent_name == "sub")
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(
        RerunRequest(
            trajectory=original,
            resume_step=sub.step_index,
            directive="again",
            state_patch={"out": ["patched"]},
        )
    )
    assert branch.metadata["langgraph"]["fork"]["thread_id"] != "mem"
    assert branch.outcome.final_answer["out"][-1] == "remembers ['first']"


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
    if saver == "InMemorySaver":
        assert branch_threads(graph) == []
