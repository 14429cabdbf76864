"""LangGraph's ways of running a graph beside ``invoke``: ``batch``/``abatch`` with a
failing input, deferred nodes, several stream modes with subgraphs, and the
``durability`` a run is made with. Each pins what a user sees in the runs."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor, instrument
from events_support import of_type
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from lg_graphs import order_found, scripted, tool_agent, wrong_then_right
from rerun_support import REQUEST, request_from


class Count(TypedDict):
    n: int
    trail: Annotated[list[str], operator.add]


def picky_graph() -> Any:
    """plan, then act, which refuses the input that started at 10."""

    def act(state: Count) -> dict[str, Any]:
        if state["n"] == 11:
            raise ValueError(f"act cannot take {state['n']}")
        return {"n": state["n"] + 1, "trail": ["act"]}

    g = StateGraph(Count)
    g.add_node("plan", lambda s: {"n": s["n"] + 1, "trail": ["plan"]})
    g.add_node("act", act)
    g.add_edge(START, "plan")
    g.add_edge("plan", "act")
    return g.compile()


@pytest.mark.parametrize("how", ["batch", "abatch", "instrumented batch"])
def test_a_failing_input_of_a_batch_is_a_run_of_its_own_diagnosed_alone(
    dbg: AgentDebug, how: str
) -> None:
    inputs = [{"n": start, "trail": []} for start in (0, 10, 20)]
    if how == "instrumented batch":
        cb, config = instrument(dbg), None
    else:
        cb = AgentDebugCallback(dbg)
        config = {"callbacks": [cb]}
    graph = picky_graph()
    if how == "abatch":
        out = asyncio.run(graph.abatch(inputs, config, return_exceptions=True))
    else:
        out = graph.batch(inputs, config, return_exceptions=True)
    error = out[1]
    assert isinstance(error, ValueError) and out[0]["n"] == 2 and out[2]["n"] == 22
    runs = {cb.trajectory(r).events[0].input["n"]: cb.trajectory(r) for r in cb.run_ids}
    assert sorted(runs) == [0, 10, 20]
    failed = runs[10]
    assert [r.outcome.status for r in (runs[0], runs[20])] == [OutcomeStatus.SUCCESS] * 2
    assert failed.outcome.status is OutcomeStatus.FAILURE
    assert [(e.type, e.agent_name) for e in failed.events[1:]] == [
        (EventType.AGENT_START, "plan"),
        (EventType.AGENT_END, "plan"),
        (EventType.AGENT_START, "act"),
        (EventType.ERROR, "act"),
    ]
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == "act"
    assert report.root_cause.event_id in {e.id for e in failed.events}
    (note,) = [n for n in error.__notes__ if "agentdebug diagnosis" in n]
    assert f"of run {failed.id}" in note


class Parts(TypedDict):
    parts: Annotated[list[str], operator.add]


def deferred_graph(checkpointer: Any) -> Any:
    """a fans out to b (then b2) and c; ``merge`` is deferred, so it waits for the
    longer branch, and it fails until the state holds a fix."""

    def merge(state: Parts) -> dict[str, Any]:
        if "fixed" not in state["parts"]:
            raise ValueError(f"merge got {state['parts']}")
        return {"parts": ["merged"]}

    g = StateGraph(Parts)
    for name in ("a", "b", "b2", "c"):
        g.add_node(name, lambda s, name=name: {"parts": [name]})
    g.add_node("merge", merge, defer=True)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("a", "c")
    g.add_edge("b", "b2")
    g.add_edge(["b2", "c"], "merge")
    g.add_edge("merge", END)
    return g.compile(checkpointer=checkpointer)


def test_a_deferred_node_is_one_step_after_the_branches_and_reruns_from_its_checkpoint(
    dbg: AgentDebug,
) -> None:
    graph = deferred_graph(InMemorySaver())
    cb = AgentDebugCallback(dbg)
    with pytest.raises(ValueError, match="merge got"):
        graph.invoke({"parts": []}, {"configurable": {"thread_id": "d"}, "callbacks": [cb]})
    run = cb.trajectory()
    started = [(e.agent_name, e.step_index) for e in of_type(run, EventType.AGENT_START)]
    # (b and c run in one super-step, on threads that start in either order: on
    # Python 3.13 c is at times recorded first)
    assert started[0] == ("a", 1) and started[3:] == [("b2", 4), ("merge", 5)]
    assert sorted(started[1:3]) in ([("b", 2), ("c", 3)], [("b", 3), ("c", 2)])
    merge = of_type(run, EventType.AGENT_START)[-1]
    assert merge.parent_id == run.events[0].id and merge.checkpoint is not None
    snapshot = graph.get_state({"configurable": {"thread_id": "d", **_at(merge)}})
    assert snapshot.next == ("merge",)
    assert cb.reports[0].root_cause.step_index == 5

    executor = LangGraphRerunExecutor(
        graph, debugger=dbg, directive_update=lambda request, snap: {"parts": ["fixed"]}
    )
    branch = executor.rerun(request_from(run, cb))
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert branch.metadata["langgraph"]["fork"]["from_checkpoint_id"] == _at(merge)["checkpoint_id"]
    rerun = [e.agent_name for e in of_type(branch, EventType.AGENT_START) if e.step_index >= 5]
    assert rerun == ["merge"]


def _at(event: Any) -> dict[str, str]:
    return {"checkpoint_ns": "", "checkpoint_id": event.checkpoint.checkpoint_id}


def researched(checkpointer: Any = None) -> Any:
    """A subgraph node ``research`` whose model call streams, then a ``reply`` node."""
    model = scripted([AIMessage("inner notes"), AIMessage("the reply")])

    def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    inner = StateGraph(MessagesState)
    inner.add_node("think", think)
    inner.add_edge(START, "think")
    g = StateGraph(MessagesState)
    g.add_node("research", inner.compile())
    g.add_node("reply", think)
    g.add_edge(START, "research")
    g.add_edge("research", "reply")
    return g.compile(checkpointer=checkpointer)


@pytest.mark.parametrize(
    "modes",
    [
        {"stream_mode": ["updates", "messages", "custom"], "subgraphs": True},
        {"stream_mode": "messages"},
    ],
)
def test_streaming_with_several_modes_and_subgraphs_records_each_thing_once(
    dbg: AgentDebug, modes: dict[str, Any]
) -> None:
    cb = AgentDebugCallback(dbg)
    chunks = list(
        researched().stream({"messages": [HumanMessage("hi")]}, {"callbacks": [cb]}, **modes)
    )
    assert chunks  # (the app got its stream)
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.SUCCESS
    assert [
        (e.agent_name, e.metadata.get("namespace")) for e in of_type(run, EventType.AGENT_START)
    ] == [
        ("research", None),
        ("research/think", "research"),
        ("reply", None),
    ]
    answers = [(e.agent_name, e.output["content"]) for e in of_type(run, EventType.LLM_RESPONSE)]
    assert answers == [("research/think", "inner notes"), ("reply", "the reply")]
    (final,) = of_type(run, EventType.FINAL_ANSWER)
    assert final.output == "the reply"


@pytest.mark.parametrize("durability", ["async", "sync"])
def test_a_run_made_with_each_saving_durability_records_checkpoints_the_rerun_forks(
    dbg: AgentDebug, durability: str
) -> None:
    graph = tool_agent(scripted(wrong_then_right()), InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=order_found)
    config = {"configurable": {"thread_id": "t-dur"}, "callbacks": [cb]}
    graph.invoke(REQUEST, config, durability=durability)
    run = cb.trajectory()
    saved = {
        s.config["configurable"]["checkpoint_id"]
        for s in graph.get_state_history({"configurable": {"thread_id": "t-dur"}})
    }
    recorded = [e.checkpoint.checkpoint_id for e in run.events if e.checkpoint is not None]
    assert recorded and set(recorded) <= saved
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(request_from(run, cb))
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert branch.metadata["langgraph"]["fork"]["from_checkpoint_id"] == recorded[0]


def test_the_check_is_given_what_invoke_returns_also_when_streamed(tmp_path: Any) -> None:
    """A review: with an ``output_schema`` the check was given every key when the app
    streamed the graph and only the output's under ``invoke`` (and in the rerun's
    branch, which is invoked), so a check that passed on the streamed run raised
    on the branch and the loop ended in an error, not a verdict."""

    class State(TypedDict):
        sources: list[str]
        answer: str

    class Out(TypedDict):
        answer: str

    def write(state: State) -> dict[str, Any]:
        return {"sources": ["Rome"], "answer": "Rome"}

    builder = StateGraph(State, output_schema=Out).add_node("write", write)
    graph = builder.add_edge(START, "write").add_edge("write", END).compile()
    seen: list[list[str]] = []
    dbg = AgentDebug(tmp_path)
    cb = AgentDebugCallback(dbg, success_check=lambda s: seen.append(sorted(s)) or True)
    list(graph.stream({"sources": []}, {"callbacks": [cb]}, stream_mode="updates"))
    graph.invoke({"sources": []}, {"callbacks": [cb]})
    list(graph.stream({"sources": []}, {"callbacks": [cb]}, stream_mode="values"))
    assert seen == [["answer"], ["answer"], ["answer"]]
    # keys the caller chose are given as they were returned (a second review)
    graph.invoke({"sources": []}, {"callbacks": [cb]}, output_keys=["answer", "sources"])
    list(graph.stream({"sources": []}, {"callbacks": [cb]}, output_keys=["sources"]))
    assert seen[-2:] == [["answer", "sources"], ["sources"]]
    plain = StateGraph(State).add_node("write", write).add_edge(START, "write").compile()
    list(plain.stream({"sources": []}, {"callbacks": [cb]}))
    assert seen[-1] == ["answer", "sources"]
