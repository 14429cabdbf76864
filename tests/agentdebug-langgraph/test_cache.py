"""Nodes LangGraph serves from its node cache (``CachePolicy``): no callback fires
for them, and they are still in the trajectory, marked as served from the cache."""

from __future__ import annotations

import asyncio
import logging
import operator
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, AgentTrajectory, EventType
from agentdebug.report import render_run
from agentdebug_langgraph import AgentDebugCallback, instrument
from langgraph.cache.memory import InMemoryCache
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import CachePolicy, Send

RAN: list[str] = []  # what actually ran, node by node


class Fan(TypedDict):
    topic: str
    items: Annotated[list[str], operator.add]
    out: Annotated[list[str], operator.add]


def plan(state: Fan) -> dict[str, Any]:
    RAN.append("plan")
    return {"items": [f"{state['topic']}-a", f"{state['topic']}-b"]}


def fan(state: Fan) -> list[Send]:
    return [Send("work", {"item": item}) for item in state["items"]]


def work(arg: dict[str, str]) -> dict[str, Any]:
    RAN.append("work")
    return {"out": [arg["item"].upper()]}


def finish(state: Fan) -> dict[str, Any]:
    RAN.append("finish")
    return {"out": ["done"]}


def cached_fan_out(checkpointer: Any = None) -> Any:
    """plan (cached) fans out to two work branches (cached); finish is not cached."""
    g = StateGraph(Fan)
    g.add_node("plan", plan, cache_policy=CachePolicy())
    g.add_node("work", work, cache_policy=CachePolicy())
    g.add_node("finish", finish)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan, ["work"])
    g.add_edge("work", "finish")
    g.add_edge("finish", END)
    return g.compile(cache=InMemoryCache(), checkpointer=checkpointer)


def nodes(run: AgentTrajectory) -> list[tuple[str, str, bool]]:
    return [
        (e.type.value, e.agent_name or "", bool(e.metadata.get("cached")))
        for e in run.events
        if e.type in (EventType.AGENT_START, EventType.AGENT_END)
    ]


def test_nodes_served_from_the_cache_are_recorded_as_such(dbg: AgentDebug) -> None:
    app = cached_fan_out()
    first, second = AgentDebugCallback(dbg), AgentDebugCallback(dbg)
    start = {"topic": "x", "items": [], "out": []}
    RAN.clear()
    assert app.invoke(start, {"callbacks": [first]})["out"] == ["X-A", "X-B", "done"]
    assert RAN == ["plan", "work", "work", "finish"]
    RAN.clear()
    assert app.invoke(start, {"callbacks": [second]})["out"] == ["X-A", "X-B", "done"]
    assert RAN == ["finish"]  # the cache served plan and both branches

    ran, served = first.trajectory(), second.trajectory()
    # the same steps in the same order, the served ones marked
    assert [(kind, agent) for kind, agent, _ in nodes(served)] == [
        (kind, agent) for kind, agent, _ in nodes(ran)
    ]
    assert not any(cached for *_, cached in nodes(ran))
    assert {agent for _, agent, cached in nodes(served) if cached} == {"plan", "work"}
    assert [agent for _, agent, cached in nodes(served) if not cached] == ["finish", "finish"]

    # the update it returned, and its Send branches under it, not under the input
    by_id = {e.id: e for e in served.events}
    (plan_start,) = [
        e for e in served.events if e.agent_name == "plan" and e.type.value == "agent.start"
    ]
    plan_end = next(
        e for e in served.events if e.type is EventType.AGENT_END and e.parent_id == plan_start.id
    )
    assert plan_end.output == {"items": ["x-a", "x-b"]}
    branches = [
        e for e in served.events if e.agent_name == "work" and e.type is EventType.AGENT_START
    ]
    assert [by_id[e.parent_id].agent_name for e in branches] == ["plan", "plan"]
    assert sorted(e.input["item"] for e in branches) == ["x-a", "x-b"]
    assert all(e.metadata["send"] for e in branches)

    shown = render_run(served)
    assert shown.count("(served from cache)") == 6  # plan and two branches, start and end
    assert "(served from cache)" not in render_run(ran)


def test_a_served_node_names_the_checkpoint_of_its_step(dbg: AgentDebug) -> None:
    app = cached_fan_out(InMemorySaver())
    start = {"topic": "y", "items": [], "out": []}
    app.invoke(start, {"configurable": {"thread_id": "one"}})
    cb = AgentDebugCallback(dbg)
    app.invoke(start, {"callbacks": [cb], "configurable": {"thread_id": "two"}})
    run = cb.trajectory()
    served = [e for e in run.events if e.type is EventType.AGENT_START and e.metadata.get("cached")]
    assert served and all(e.checkpoint is not None for e in served)
    assert {e.checkpoint.thread_id for e in served} == {"two"}  # type: ignore[union-attr]


def test_cached_functional_api_tasks_and_async_runs_are_recorded(dbg: AgentDebug) -> None:
    @task(cache_policy=CachePolicy())
    def double(x: int) -> int:
        return 2 * x

    @entrypoint(cache=InMemoryCache())
    def workflow(n: int) -> int:
        return sum(double(i).result() for i in range(n))

    workflow.invoke(3, {"callbacks": [AgentDebugCallback(dbg)]})
    cb = AgentDebugCallback(dbg)
    assert asyncio.run(workflow.ainvoke(3, {"callbacks": [cb]})) == 6
    run = cb.trajectory()
    served = [e for e in run.events if e.type is EventType.AGENT_END and e.metadata.get("cached")]
    assert [e.agent_name for e in served] == ["workflow/double"] * 3
    assert [e.output for e in served] == [0, 2, 4]


def test_instrumented_runs_record_cache_hits_too(dbg: AgentDebug) -> None:
    app = cached_fan_out()
    start = {"topic": "z", "items": [], "out": []}
    app.invoke(start)
    instrument(dbg)
    app.invoke(start)
    (summary,) = dbg.store.list_runs()  # type: ignore[union-attr]
    run = dbg.store.load_trajectory(summary.id)  # type: ignore[union-attr]
    assert {agent for _, agent, cached in nodes(run) if cached} == {"plan", "work"}


def test_a_failure_recording_a_cache_hit_never_breaks_the_graph(
    dbg: AgentDebug, caplog: pytest.LogCaptureFixture
) -> None:
    app = cached_fan_out()
    start = {"topic": "w", "items": [], "out": []}
    app.invoke(start)

    class Broken(AgentDebugCallback):
        def _end_node(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("capture bug")

    with caplog.at_level(logging.ERROR, logger="agentdebug.langgraph"):
        out = app.invoke(start, {"callbacks": [Broken(dbg)]})
    assert out["out"] == ["W-A", "W-B", "done"]
    assert "capture failed in on_cached_task" in caplog.text


def test_cache_hits_in_a_subgraph_with_a_cache_of_its_own_are_recorded(dbg: AgentDebug) -> None:
    class Value(TypedDict, total=False):
        x: int

    def inner(state: Value) -> dict[str, Any]:
        RAN.append("inner")
        return {"x": state["x"] + 1}

    sg = StateGraph(Value)
    sg.add_node("inner", inner, cache_policy=CachePolicy())
    sg.add_edge(START, "inner")
    g = StateGraph(Value)
    g.add_node("sub", sg.compile(cache=InMemoryCache()))  # the top graph has none
    g.add_edge(START, "sub")
    app = g.compile()
    RAN.clear()
    for _ in range(2):
        cb = AgentDebugCallback(dbg)
        app.invoke({"x": 1}, {"callbacks": [cb]})
    assert RAN == ["inner"]
    assert ("agent.start", "sub/inner", True) in nodes(cb.trajectory())


def test_a_rerun_branch_runs_its_nodes_instead_of_serving_them_from_the_cache(
    dbg: AgentDebug,
) -> None:
    from agentdebug.schema import RerunRequest
    from agentdebug_langgraph import LangGraphRerunExecutor
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import MessagesState

    model = GenericFakeChatModel(
        messages=iter([AIMessage("Refund denied."), AIMessage("Refund issued.")])
    )
    g = StateGraph(MessagesState)
    g.add_node("prep", lambda s: {})
    # a key that ignores the conversation: a correction added to it changes nothing
    g.add_node(
        "agent",
        lambda s: {"messages": [model.invoke(s["messages"])]},
        cache_policy=CachePolicy(key_func=lambda s: "one key"),
    )
    g.add_edge(START, "prep")
    g.add_edge("prep", "agent")
    graph = g.compile(cache=InMemoryCache(), checkpointer=InMemorySaver())
    ask = {"messages": [HumanMessage("refund order 42")]}
    graph.invoke(ask, {"configurable": {"thread_id": "first"}})

    def issued(state: Any) -> bool | str:
        return "issued" in state["messages"][-1].content or "no refund"

    cb = AgentDebugCallback(dbg, success_check=issued, diagnose=False)
    graph.invoke(ask, {"callbacks": [cb], "configurable": {"thread_id": "second"}})
    run = cb.trajectory()
    (served,) = [
        e for e in run.events if e.agent_name == "agent" and e.type is EventType.AGENT_START
    ]
    assert served.metadata.get("cached") is True
    request = RerunRequest(trajectory=run, resume_step=served.step_index, directive="Issue it.")
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(request)
    assert branch.metadata["langgraph"]["fork"]["cache"] == "off"
    again = [
        e for e in branch.events if e.agent_name == "agent" and e.type is EventType.AGENT_START
    ]
    assert [e.metadata.get("cached") for e in again] == [None]  # run, not replayed
    assert branch.outcome.status.value == "success"
