"""`agentdebug.record` inside a node: the graph's run is current there (found from
LangChain's own context), so a note a node records is the node's event, a
`dbg.trace()` it begins is the graph run's sub-run at that node, and a graph
invoked inside a traced request keeps its nodes' notes to itself."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import agentdebug
from agentdebug import AgentDebug, EventType
from agentdebug.schema import AgentTrajectory
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Send
from lg_graphs import call, scripted


class Count(TypedDict):
    n: int


def _two_nodes(dbg: AgentDebug, sub_run: bool = False) -> Any:
    def plan(state: Count) -> dict[str, Any]:
        agentdebug.record(EventType.OBSERVATION, output="3 sources found")
        if sub_run:
            with dbg.trace(goal="summarise", agents=["summariser"]) as sub:
                sub.set_outcome("failure", reason="the sources were paywalled")
        return {"n": state["n"] + 1}

    def write(state: Count) -> dict[str, Any]:
        session = agentdebug.current_session()
        agentdebug.record(
            EventType.MESSAGE, agent_name="editor", output=f"run {session.id if session else None}"
        )
        return {"n": state["n"] + 1}

    g = StateGraph(Count)
    g.add_node("plan", plan)
    g.add_node("write", write)
    g.add_edge(START, "plan")
    g.add_edge("plan", "write")
    g.add_edge("write", END)
    return g.compile()


def _graph_run(dbg: AgentDebug, callback: AgentDebugCallback) -> AgentTrajectory:
    assert callback.last_run_id is not None
    return callback.trajectory()  # (an async run's end is written after it returns)


def _start_of(run: AgentTrajectory, node: str) -> Any:
    return next(e for e in run.events if e.type is EventType.AGENT_START and e.agent_name == node)


def test_a_note_a_node_records_is_that_node_s_event(dbg: AgentDebug) -> None:
    callback = AgentDebugCallback(dbg)
    _two_nodes(dbg).invoke({"n": 0}, config={"callbacks": [callback]})
    run = _graph_run(dbg, callback)
    note = next(e for e in run.events if e.type is EventType.OBSERVATION)
    plan = _start_of(run, "plan")
    assert (note.agent_name, note.step_index, note.parent_id, note.output) == (
        "plan",
        plan.step_index,
        plan.id,
        "3 sources found",
    )
    # the fields given win; current_session() in a node is the graph's run
    said = next(e for e in run.events if e.type is EventType.MESSAGE)
    write = _start_of(run, "write")
    assert (said.agent_name, said.step_index, said.parent_id) == (
        "editor",
        write.step_index,
        write.id,
    )
    assert said.output == f"run {run.id}"


def test_a_graph_inside_a_traced_request_keeps_its_nodes_notes(dbg: AgentDebug) -> None:
    callback = AgentDebugCallback(dbg)
    with dbg.trace(goal="request") as request:
        agentdebug.record(EventType.OBSERVATION, agent_name="app", output="before")
        _two_nodes(dbg).invoke({"n": 0}, config={"callbacks": [callback]})
        agentdebug.record(EventType.OBSERVATION, agent_name="app", output="after")
    run = _graph_run(dbg, callback)
    assert run.metadata["within_run"] == request.id
    assert [e.output for e in run.events if e.type is EventType.OBSERVATION] == ["3 sources found"]
    outer = dbg.store.load_trajectory(request.id)
    own = [e.output for e in outer.events if "sub_run" not in e.metadata]
    assert own == ["before", "after"]
    # the graph run, reported into the request's run as its sub-run, by the graph's name
    (reported,) = [e for e in outer.events if e.metadata.get("sub_run") == run.id]
    assert reported.agent_name == "LangGraph" and reported.output == {"n": 2}


def test_a_run_begun_in_a_node_is_the_graph_run_s_sub_run_at_that_node(
    dbg: AgentDebug,
) -> None:
    callback = AgentDebugCallback(dbg)
    _two_nodes(dbg, sub_run=True).invoke({"n": 0}, config={"callbacks": [callback]})
    run = _graph_run(dbg, callback)
    plan = _start_of(run, "plan")
    reported = next(e for e in run.events if e.metadata.get("sub_run"))
    sub = dbg.store.load_trajectory(reported.metadata["sub_run"])
    assert sub.metadata["within_run"] == run.id
    assert reported.type is EventType.ERROR and reported.agent_name == "summariser"
    assert (reported.step_index, reported.parent_id) == (plan.step_index, plan.id)
    assert reported.error is not None and "paywalled" in reported.error.message


def test_a_tool_s_note_is_the_tools_node_s(dbg: AgentDebug) -> None:
    @tool
    def search(query: str) -> str:
        """Search the catalogue."""
        agentdebug.record(EventType.OBSERVATION, output=f"searched for {query}")
        return "2 results"

    model = scripted([call("search", {"query": "lamps"}, "c1"), AIMessage(content="2 lamps")])
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([search]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    callback = AgentDebugCallback(dbg)
    g.compile().invoke(
        {"messages": [HumanMessage(content="lamps?")]}, config={"callbacks": [callback]}
    )
    run = _graph_run(dbg, callback)
    note = next(e for e in run.events if e.type is EventType.OBSERVATION)
    tools = _start_of(run, "tools")
    assert (note.agent_name, note.step_index, note.parent_id, note.output) == (
        "tools",
        tools.step_index,
        tools.id,
        "searched for lamps",
    )


class Fan(TypedDict):
    done: Annotated[list[str], operator.add]


def test_parallel_branches_record_into_their_own_nodes(dbg: AgentDebug) -> None:
    def fan(state: Fan) -> list[Send]:
        return [Send("work", {"item": item}) for item in ("a", "b", "c")]

    def work(packet: dict[str, Any]) -> dict[str, Any]:
        agentdebug.record(EventType.OBSERVATION, output=f"did {packet['item']}")
        return {"done": [packet["item"]]}

    g = StateGraph(Fan)
    g.add_node("work", work)
    g.add_conditional_edges(START, fan, ["work"])
    g.add_edge("work", END)
    callback = AgentDebugCallback(dbg)
    g.compile().invoke({"done": []}, config={"callbacks": [callback]})
    run = _graph_run(dbg, callback)
    starts = {e.id: e for e in run.events if e.type is EventType.AGENT_START}
    notes = [e for e in run.events if e.type is EventType.OBSERVATION]
    assert sorted(str(e.output) for e in notes) == ["did a", "did b", "did c"]
    for note in notes:  # each under its own branch's start, with its step
        start = starts[note.parent_id or ""]
        assert start.input == {"item": str(note.output)[-1]}
        assert note.step_index == start.step_index


def test_without_the_callback_a_node_s_note_goes_where_it_went(dbg: AgentDebug) -> None:
    graph = _two_nodes(dbg)
    assert graph.invoke({"n": 0})["n"] == 2  # no run anywhere: nothing recorded
    assert dbg.store.list_runs() == []
    with dbg.trace(goal="request") as request:
        graph.invoke({"n": 0})
    outer = dbg.store.load_trajectory(request.id)  # the request's run, as before
    first = outer.events[0]
    assert (first.agent_name, first.output) == (None, "3 sources found")


def test_a_coroutine_node_s_note_is_its_own(dbg: AgentDebug) -> None:
    import asyncio

    async def plan(state: Count) -> dict[str, Any]:
        await asyncio.sleep(0)
        agentdebug.record(EventType.OBSERVATION, output="awaited")
        return {"n": state["n"] + 1}

    g = StateGraph(Count)
    g.add_node("plan", plan)
    g.add_edge(START, "plan")
    g.add_edge("plan", END)
    callback = AgentDebugCallback(dbg)
    asyncio.run(g.compile().ainvoke({"n": 0}, config={"callbacks": [callback]}))
    run = _graph_run(dbg, callback)
    note = next(e for e in run.events if e.type is EventType.OBSERVATION)
    assert (note.agent_name, note.parent_id) == ("plan", _start_of(run, "plan").id)


def test_a_graph_given_its_own_callback_in_a_recorded_node_is_not_reported_twice(
    dbg: AgentDebug,
) -> None:
    inner_cb = AgentDebugCallback(dbg)

    def inner_body(state: Count) -> dict[str, Any]:
        agentdebug.record(EventType.OBSERVATION, output="inner note")
        return {"n": state["n"] + 1}

    g = StateGraph(Count)
    g.add_node("inner", inner_body)
    g.add_edge(START, "inner")
    g.add_edge("inner", END)
    inner = g.compile(name="inner_graph")

    def outer_body(state: Count) -> Any:
        return inner.invoke(state, config={"callbacks": [inner_cb]})

    o = StateGraph(Count)
    o.add_node("outer", outer_body)
    o.add_edge(START, "outer")
    o.add_edge("outer", END)
    outer_cb = AgentDebugCallback(dbg)
    o.compile().invoke({"n": 0}, config={"callbacks": [outer_cb]})
    outer_run = _graph_run(dbg, outer_cb)
    inner_run = _graph_run(dbg, inner_cb)
    # the outer run records the inner graph as a subgraph (its handler is inherited),
    # so the inner graph's own run is not also its sub-run, reported into it again
    assert "within_run" not in inner_run.metadata
    assert not [e for e in outer_run.events if e.metadata.get("sub_run")]
    assert [e.agent_name for e in outer_run.events if e.type is EventType.AGENT_START] == [
        "outer",
        "outer/inner_graph/inner",  # (the graph the node's code invoked, by its name)
    ]
    # the note of the inner graph's node goes to the innermost run, the inner graph's
    # own (before, to the outer run's copy of the node, and the run the user asked
    # for did not hold it)
    notes = [e for e in inner_run.events if e.type is EventType.OBSERVATION]
    assert [(n.output, n.agent_name, n.parent_id) for n in notes] == [
        ("inner note", "inner", _start_of(inner_run, "inner").id)
    ]
    assert not [e for e in outer_run.events if e.type is EventType.OBSERVATION]
