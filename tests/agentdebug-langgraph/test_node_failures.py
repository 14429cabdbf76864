"""LangGraph 1.2's own ways with a failing node: an ``error_handler`` that recovers,
and a node ``timeout`` (``TimeoutPolicy``) that cuts it off. A recovered error is
not the cause of a later failure, and a timeout is the node's error, not a stop."""

from __future__ import annotations

import asyncio
import operator
import warnings
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, AgentTrajectory, EventType, Severity
from agentdebug_langgraph import AgentDebugCallback
from langgraph.errors import NodeError, NodeTimeoutError
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, RetryPolicy


class Order(TypedDict, total=False):
    x: int
    status: str


def of(run: AgentTrajectory, kind: EventType, agent: str | None = None) -> list[Any]:
    return [e for e in run.events if e.type is kind and (agent is None or e.agent_name == agent)]


def recovering_graph(
    *, retries: int = 1, answer_fails: bool = True, checkpointer: Any = None
) -> Any:
    """fetch always fails; its error handler falls back and goes on to answer,
    which (with ``answer_fails``) fails for a reason of its own."""

    def fetch(state: Order) -> dict[str, Any]:
        raise ConnectionError("fetch: upstream 503")

    def handler(state: Order, error: NodeError) -> Command[Any]:
        return Command(update={"status": f"fallback after {error.node}"}, goto="answer")

    def answer(state: Order) -> dict[str, Any]:
        if answer_fails:
            raise KeyError("answer: missing template 'greeting'")
        return {"x": 1}

    g = StateGraph(Order)
    policy = RetryPolicy(max_attempts=retries, initial_interval=0.01, retry_on=ConnectionError)
    g.add_node("fetch", fetch, error_handler=handler, retry_policy=policy)
    g.add_node("answer", answer)
    g.add_edge(START, "fetch")
    g.add_edge("fetch", "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer)


@pytest.mark.parametrize("retries", [1, 2])
def test_an_error_its_handler_recovered_from_is_not_blamed_for_a_later_failure(
    dbg: AgentDebug, retries: int
) -> None:
    cb = AgentDebugCallback(dbg)
    with pytest.raises(KeyError):
        recovering_graph(retries=retries).invoke({"x": 0}, {"callbacks": [cb]})
    run = cb.trajectory()
    attempts = of(run, EventType.AGENT_START, "fetch")
    assert len(attempts) == retries
    (handler,) = of(run, EventType.AGENT_START, "__error_handler__fetch")
    assert "namespace" not in handler.metadata  # a node of the graph, not of a subgraph
    assert handler.metadata["handles"] == handler.parent_id == attempts[-1].id
    (report,) = cb.reports
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == (
        "answer",
        of(run, EventType.AGENT_START, "answer")[0].step_index,
    )
    (fetch_failure,) = [f for f in report.findings if f.agent_name == "fetch"][-1:]
    assert fetch_failure.severity is Severity.INFO
    assert "resolved: its error handler __error_handler__fetch" in fetch_failure.message
    from agentdebug.report import render_text

    text = render_text(report, run)
    assert "← system.service_unavailable, resolved" in text  # the fetch error (a 503), on record


def test_a_run_its_handler_saved_succeeds_with_the_error_on_record(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg)
    assert recovering_graph(answer_fails=False).invoke({"x": 0}, {"callbacks": [cb]})["x"] == 1
    run = cb.trajectory()
    assert run.outcome.status.value == "success" and not cb.reports
    (error,) = of(run, EventType.ERROR)
    assert error.agent_name == "fetch"


def timed_graph(
    *, retry: bool = False, handler: bool = False, idle: bool = False, backoff: float = 0.01
) -> Any:
    """slow sleeps past its timeout the first time it runs (always, without
    ``retry``); after it, a node that fails when the handler's fallback is there."""
    runs: list[int] = []

    async def slow(state: Order) -> dict[str, Any]:
        runs.append(1)
        if len(runs) == 1 or not retry:
            await asyncio.sleep(1.0)
        return {"x": 1}

    async def fallback(state: Order, error: NodeError) -> Command[Any]:
        return Command(update={"x": -1}, goto="after")

    async def after(state: Order) -> dict[str, Any]:
        if state["x"] < 0:
            raise ValueError("after: no data to work with")
        return {"x": state["x"] + 1}

    from langgraph.types import TimeoutPolicy

    g = StateGraph(Order)
    kw: dict[str, Any] = {"timeout": TimeoutPolicy(idle_timeout=0.2) if idle else 0.2}
    if retry:
        kw["retry_policy"] = RetryPolicy(max_attempts=2, initial_interval=backoff, jitter=False)
    if handler:
        kw["error_handler"] = fallback
    g.add_node("slow", slow, **kw)
    g.add_node("after", after)
    g.add_edge(START, "slow")
    g.add_edge("slow", "after")
    g.add_edge("after", END)
    return g.compile()


@pytest.mark.parametrize("idle", [False, True])
def test_a_node_its_timeout_cut_off_is_its_error_not_a_stop(dbg: AgentDebug, idle: bool) -> None:
    cb = AgentDebugCallback(dbg)
    with pytest.raises(NodeTimeoutError):
        asyncio.run(timed_graph(idle=idle).ainvoke({"x": 0}, {"callbacks": [cb]}))
    run = cb.trajectory()
    assert of(run, EventType.CHECKPOINT) == []  # no "stopped" at the node
    (error,) = of(run, EventType.ERROR)  # once: the graph's NodeTimeoutError is the same
    (slow,) = of(run, EventType.AGENT_START, "slow")
    assert (error.agent_name, error.parent_id) == ("slow", slow.id)
    assert error.error.type == "NodeTimeoutError"
    kind = "idle" if idle else "run"
    assert error.error.message.startswith(f"Node 'slow' exceeded its {kind} timeout of 0.200s")
    assert error.metadata[f"{kind}_timeout"] == 0.2 and error.metadata["timeout_kind"] == kind
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == "slow"
    assert report.root_cause.mode_id == "system.timeout"


@pytest.mark.parametrize("backoff", [0.0, 0.05])  # the retry before the cancel comes, or after
def test_a_timeout_a_retry_got_past_is_resolved(dbg: AgentDebug, backoff: float) -> None:
    cb = AgentDebugCallback(dbg)
    graph = timed_graph(retry=True, backoff=backoff)
    assert asyncio.run(graph.ainvoke({"x": 0}, {"callbacks": [cb]}))["x"] == 2
    run = cb.trajectory()
    first, second = of(run, EventType.AGENT_START, "slow")
    assert second.metadata["retry_of"] == first.id and second.metadata["attempt"] == 2
    (error,) = of(run, EventType.ERROR)
    assert error.parent_id == first.id and error.error.type == "NodeTimeoutError"
    assert of(run, EventType.AGENT_END, "slow")[0].parent_id == second.id
    assert run.outcome.status.value == "success"


def test_a_timeout_its_handler_took_over_is_recorded_before_the_handler(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg)
    with pytest.raises(ValueError):
        asyncio.run(timed_graph(handler=True).ainvoke({"x": 0}, {"callbacks": [cb]}))
    run = cb.trajectory()
    kinds = [(e.type, e.agent_name) for e in run.events if e.agent_name]
    timeout_at = kinds.index((EventType.ERROR, "slow"))
    assert timeout_at < kinds.index((EventType.AGENT_START, "__error_handler__slow"))
    (handler,) = of(run, EventType.AGENT_START, "__error_handler__slow")
    (slow,) = of(run, EventType.AGENT_START, "slow")
    assert "namespace" not in handler.metadata and handler.metadata["handles"] == slow.id
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == "after"


def test_a_callers_cancel_of_a_node_with_a_timeout_is_still_a_stop(dbg: AgentDebug) -> None:
    async def slow(state: Order) -> dict[str, Any]:
        await asyncio.sleep(5.0)
        return {"x": 1}

    g = StateGraph(Order)
    g.add_node("slow", slow, timeout=3.0)
    g.add_edge(START, "slow")
    app = g.compile()
    cb = AgentDebugCallback(dbg)

    async def main() -> None:
        task = asyncio.create_task(app.ainvoke({"x": 0}, {"callbacks": [cb]}))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    run = cb.trajectory()
    assert of(run, EventType.ERROR) == []
    (stop,) = of(run, EventType.CHECKPOINT)  # one stop (the graph's cancel is the same)
    assert stop.metadata["langgraph_event"] == "stopped" and stop.agent_name == "slow"


def test_a_callers_stop_after_a_heartbeating_nodes_idle_limit_is_a_stop(dbg: AgentDebug) -> None:
    from langgraph.runtime import Runtime
    from langgraph.types import TimeoutPolicy

    async def busy(state: Order, runtime: Runtime[Any]) -> dict[str, Any]:
        for _ in range(30):  # never idle: it beats more often than its limit
            await asyncio.sleep(0.05)
            runtime.heartbeat()
        return {"x": 1}

    g = StateGraph(Order)
    g.add_node("busy", busy, timeout=TimeoutPolicy(idle_timeout=0.2, refresh_on="heartbeat"))
    g.add_edge(START, "busy")
    app = g.compile()
    cb = AgentDebugCallback(dbg)

    async def main() -> None:
        with pytest.raises((asyncio.TimeoutError, asyncio.CancelledError)):
            await asyncio.wait_for(app.ainvoke({"x": 0}, {"callbacks": [cb]}), 0.6)

    asyncio.run(main())
    run = cb.trajectory()
    assert of(run, EventType.ERROR) == []
    (stop,) = of(run, EventType.CHECKPOINT)
    assert stop.agent_name == "busy" and stop.metadata["langgraph_event"] == "stopped"


def test_the_handler_of_a_node_inside_a_subgraph_is_a_node_of_that_subgraph(
    dbg: AgentDebug,
) -> None:
    def inner(state: Order) -> dict[str, Any]:
        raise ConnectionError("inner: upstream 503")

    def handler(state: Order, error: NodeError) -> dict[str, Any]:
        return {"status": "fallback"}

    sg = StateGraph(Order)
    sg.add_node("inner", inner, error_handler=handler)
    sg.add_edge(START, "inner")
    g = StateGraph(Order)
    g.add_node("sub", sg.compile())
    g.add_edge(START, "sub")
    cb = AgentDebugCallback(dbg)
    assert g.compile().invoke({"x": 0}, {"callbacks": [cb]})["status"] == "fallback"
    run = cb.trajectory()
    (handler_start,) = of(run, EventType.AGENT_START, "sub/__error_handler__inner")
    (inner_start,) = of(run, EventType.AGENT_START, "sub/inner")
    assert handler_start.metadata["namespace"] == "sub"
    assert handler_start.metadata["handles"] == handler_start.parent_id == inner_start.id


@pytest.mark.parametrize("blamed", ["fetch", "__error_handler__fetch"])
def test_a_node_with_an_error_handler_is_rerun_from_its_own_checkpoint(
    dbg: AgentDebug, blamed: str
) -> None:
    from agentdebug.schema import RerunRequest
    from agentdebug_langgraph import LangGraphRerunExecutor
    from langgraph.checkpoint.memory import InMemorySaver

    graph = recovering_graph(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(KeyError):
        graph.invoke({"x": 0}, {"callbacks": [cb], "configurable": {"thread_id": "h"}})
    run = cb.trajectory()
    step = of(run, EventType.AGENT_START, blamed)[0].step_index
    request = RerunRequest(trajectory=run, resume_step=step, directive="x", state_patch={"x": 1})
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(request)
    fork = branch.metadata["langgraph"]["fork"]
    assert fork["nodes"] == ["fetch"]  # the handler is not a task of that checkpoint
    assert fork["resume_step"] == of(run, EventType.AGENT_START, "fetch")[0].step_index
    own = [
        e.agent_name
        for e in of(branch, EventType.AGENT_START)
        if not e.metadata.get("inherited_from")
    ]
    assert own[:2] == ["fetch", "__error_handler__fetch"]


def test_of_send_branches_of_one_node_the_one_that_timed_out_is_blamed(dbg: AgentDebug) -> None:
    from langgraph.runtime import Runtime
    from langgraph.types import Send, TimeoutPolicy

    class Batch(TypedDict, total=False):
        out: Annotated[list[int], operator.add]
        i: int

    async def work(state: Batch, runtime: Runtime[Any]) -> dict[str, Any]:
        if state["i"] == 0:
            await asyncio.sleep(1.0)  # idle: cut off
        else:
            for _ in range(20):
                await asyncio.sleep(0.05)
                runtime.heartbeat()
        return {"out": [state["i"]]}

    g = StateGraph(Batch)
    g.add_node("work", work, timeout=TimeoutPolicy(idle_timeout=0.2, refresh_on="heartbeat"))
    g.add_conditional_edges(START, lambda s: [Send("work", {"i": i}) for i in range(3)], ["work"])
    cb = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(NodeTimeoutError):
        asyncio.run(g.compile().ainvoke({"out": []}, {"callbacks": [cb]}))
    run = cb.trajectory()
    starts = {e.id: e for e in of(run, EventType.AGENT_START)}
    (error,) = of(run, EventType.ERROR)
    assert starts[error.parent_id].input == {"i": 0}  # the idle one, not a sibling torn down


def timed_out_subgraph() -> Any:
    """A subgraph whose one node, inner, sleeps past its 0.1 s timeout."""

    async def inner(state: Order) -> dict[str, Any]:
        await asyncio.sleep(0.5)
        return {"x": 1}

    sg = StateGraph(Order)
    sg.add_node("inner", inner, timeout=0.1)
    sg.add_edge(START, "inner")
    return sg.compile()


def test_a_timeout_out_of_a_subgraph_links_the_retry_and_the_handler_of_its_node(
    dbg: AgentDebug,
) -> None:
    async def fallback(state: Order, error: NodeError) -> dict[str, Any]:
        return {"x": -1}

    g = StateGraph(Order)
    policy = RetryPolicy(max_attempts=2, initial_interval=0.01, jitter=False)
    g.add_node("sub", timed_out_subgraph(), error_handler=fallback, retry_policy=policy)
    g.add_edge(START, "sub")
    cb = AgentDebugCallback(dbg, diagnose=False)
    assert asyncio.run(g.compile().ainvoke({"x": 0}, {"callbacks": [cb]}))["x"] == -1
    run = cb.trajectory()
    first, second = of(run, EventType.AGENT_START, "sub")
    assert second.metadata["retry_of"] == first.id
    (handler,) = of(run, EventType.AGENT_START, "__error_handler__sub")
    assert handler.metadata["handles"] == second.id
    assert [e.agent_name for e in of(run, EventType.ERROR)] == ["sub/inner", "sub/inner"]


def test_a_cancel_held_when_the_run_pauses_is_recorded_in_that_segment(dbg: AgentDebug) -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import interrupt

    sub = timed_out_subgraph()

    async def outer(state: Order) -> dict[str, Any]:
        try:
            return dict(await sub.ainvoke(state))
        except NodeTimeoutError:
            return {"x": -1}

    async def ask(state: Order) -> dict[str, Any]:
        interrupt("go on?")
        return {"status": "asked"}

    g = StateGraph(Order)
    g.add_node("outer", outer)
    g.add_node("ask", ask)
    g.add_edge(START, "outer")
    g.add_edge("outer", "ask")
    app = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg, diagnose=False)
    config: Any = {"callbacks": [cb], "configurable": {"thread_id": "p"}}
    asyncio.run(app.ainvoke({"x": 0}, config))
    assert dbg.store is not None
    (summary,) = dbg.store.list_runs()
    run = dbg.store.load_trajectory(summary.id)  # paused at ask: its first segment
    assert [e.agent_name for e in run.events if e.type is EventType.CHECKPOINT] == [
        "ask",
        "outer/inner",
    ]
    from langgraph.types import Command

    asyncio.run(app.ainvoke(Command(resume="yes"), config))  # (the run ends here)
    assert cb.trajectory().outcome.status.value == "success"


@pytest.mark.parametrize(
    ("error", "mode"),
    [
        (ValueError("rates table is malformed"), "system.tool_error"),
        (ConnectionError("rates service unavailable"), "system.service_unavailable"),
    ],
)
def test_a_node_whose_retries_run_out_is_blamed_not_the_model_call_before_it(
    dbg: AgentDebug, error: Exception, mode: str
) -> None:
    """Each attempt's error is recorded, but they are one failure: the model call
    that planned the fetch is not charged once per attempt (three attempts once
    outweighed the node that failed). An outage is the service's, with a retry
    later for its fix, not the call's."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import MessagesState

    planner = FakeMessagesListChatModel(responses=[AIMessage("plan: fetch the rate")])

    def plan(state: MessagesState) -> dict[str, Any]:
        return {"messages": [planner.invoke(state["messages"])]}

    def fetch(state: MessagesState) -> dict[str, Any]:
        raise type(error)(*error.args)

    g = StateGraph(MessagesState)
    g.add_node("planner", plan)
    policy = RetryPolicy(max_attempts=3, initial_interval=0.001, retry_on=type(error))
    g.add_node("fetch", fetch, retry_policy=policy)
    g.add_edge(START, "planner")
    g.add_edge("planner", "fetch")
    cb = AgentDebugCallback(dbg)
    with pytest.raises(type(error)):
        g.compile().invoke({"messages": [HumanMessage("EUR/USD?")]}, {"callbacks": [cb]})
    assert len(of(cb.trajectory(), EventType.ERROR, "fetch")) == 3
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.mode_id) == ("fetch", mode)
    if mode == "system.service_unavailable":
        assert report.fix is not None and "Retry later" in report.fix.directive


def test_a_tool_call_cancelled_by_its_siblings_failure_is_a_stop_not_a_failure(
    dbg: AgentDebug,
) -> None:
    """Async tool calls of one model answer run together; when one raises, the tool
    node cancels the others. The cancelled call did nothing wrong: it is recorded as
    stopped, with no error, and no finding or fix names it (before, it read as a
    failed call, "slow_lookup failed: CancelledError", evidence against it)."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from lg_graphs import ToolBindingFake

    @tool
    async def slow_lookup(q: str) -> str:
        """A healthy lookup that takes a while."""
        await asyncio.sleep(0.5)
        return f"{q}: ok"

    @tool
    async def broken_lookup(q: str) -> str:
        """A lookup whose backend is down."""
        await asyncio.sleep(0.01)
        raise RuntimeError("broken_lookup: backend 503")

    asked = AIMessage(
        "",
        tool_calls=[
            {"name": "slow_lookup", "args": {"q": "a"}, "id": "c-slow"},
            {"name": "broken_lookup", "args": {"q": "b"}, "id": "c-broken"},
        ],
    )
    with warnings.catch_warnings():  # (moved to langchain.agents, not installed here)
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        # (its tool node runs each call as a Send: tasks of their own, which
        # LangGraph cancels when one of them raises)
        graph = create_react_agent(
            ToolBindingFake(messages=iter([asked, AIMessage("done")])),
            [slow_lookup, broken_lookup],
        )
    cb = AgentDebugCallback(dbg)
    with pytest.raises(RuntimeError, match="backend 503"):
        asyncio.run(
            graph.ainvoke({"messages": [HumanMessage("look up a and b")]}, {"callbacks": [cb]})
        )
    run = cb.trajectory()
    results = {e.metadata.get("tool_call_id"): e for e in of(run, EventType.TOOL_RESULT)}
    assert results["c-broken"].error is not None
    slow = results.get("c-slow")  # (the lowest versions tell no callback of the cancel)
    if slow is not None:
        assert slow.error is None and slow.output is None
        assert slow.metadata["stopped"] == "the call was stopped (CancelledError)"
    (report,) = cb.reports
    assert "CancelledError" not in report.model_dump_json()  # (no finding, evidence or fix)
    assert report.fix is not None and "slow_lookup" not in report.fix.directive
    assert "broken_lookup" in report.summary
