"""A graph a node (or a tool) invokes with a thread of its own
(``inner.invoke(x, {"configurable": {"thread_id": ...}})``, the usual way to keep a
sub-agent's memory apart): LangGraph starts its namespaces afresh, so nothing in
its nodes' metadata names the node that invoked it. Its nodes are recorded inside
that node all the same, as a subgraph's are, without checkpoints of the other
thread; nothing is lost."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Send, interrupt
from lg_graphs import call, scripted


def researcher(reply: str, *, coroutines: bool = False) -> Any:
    """A one-node agent graph with its own checkpointer, answering ``reply``."""
    model = scripted([AIMessage(content=reply)])

    def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def aanswer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("researcher", aanswer if coroutines else answer)
    g.add_edge(START, "researcher")
    g.add_edge("researcher", END)
    return g.compile(checkpointer=InMemorySaver())


def _events(run: Any) -> list[tuple[str, str | None]]:
    return [(e.type.value, e.agent_name) for e in run.events]


def _outer(node: Any) -> Any:
    g = StateGraph(MessagesState)
    g.add_node("lead", node)
    g.add_edge(START, "lead")
    g.add_edge("lead", END)
    return g.compile(checkpointer=InMemorySaver())


def test_a_graph_a_node_runs_on_its_own_thread_is_recorded_inside_the_node(
    dbg: AgentDebug,
) -> None:
    inner = researcher("the answer is 42")

    def lead(state: MessagesState) -> dict[str, Any]:
        found = inner.invoke(
            {"messages": [HumanMessage("find the answer")]},
            {"configurable": {"thread_id": "research-1"}},
        )
        return {"messages": [AIMessage(content="lead: " + found["messages"][-1].content)]}

    cb = AgentDebugCallback(dbg)
    _outer(lead).invoke(
        {"messages": [HumanMessage("question")]},
        {"callbacks": [cb], "configurable": {"thread_id": "main"}},
    )
    assert len(cb.run_ids) == 1 and len(dbg.store.list_runs()) == 1
    run = cb.trajectory()
    inside = [e for e in run.events if e.agent_name == "lead/researcher"]
    assert [e.type for e in inside] == [
        EventType.AGENT_START,
        EventType.LLM_RESPONSE,
        EventType.AGENT_END,
    ]
    lead_start = next(
        e for e in run.events if e.type is EventType.AGENT_START and e.agent_name == "lead"
    )
    assert inside[0].parent_id == lead_start.id
    assert inside[0].metadata.get("namespace") == "lead"
    # the outer node keeps its checkpoint on the user's thread; the inner one has
    # none (its checkpoints are on research-1, which a rerun of this graph does not restore)
    assert lead_start.checkpoint is not None and lead_start.checkpoint.thread_id == "main"
    assert inside[0].checkpoint is None


def test_a_graph_a_tool_runs_on_its_own_thread_is_recorded_inside_the_tool_node(
    dbg: AgentDebug,
) -> None:
    """A ToolNode runs its calls on a worker thread: no frame of the node on the
    stack there; the inner graph's start, inside the tool, names it."""
    inner = researcher("flights: LH 400")

    @tool
    def ask_researcher(question: str) -> str:
        """Ask the research sub-agent."""
        done = inner.invoke(
            {"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": "sub"}}
        )
        return str(done["messages"][-1].content)

    model = scripted([call("ask_researcher", {"question": "flights?"}, "c1"), AIMessage("LH 400")])
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([ask_researcher]))
    g.add_edge(START, "agent")
    g.add_conditional_edges(
        "agent", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END]
    )
    g.add_edge("tools", "agent")
    cb = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [HumanMessage("find me a flight")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert [t for t, a in _events(run) if a == "tools/researcher"] == [
        "agent.start",
        "llm.response",
        "agent.end",
    ]
    assert len(dbg.store.list_runs()) == 1


def test_parallel_branches_each_keep_the_graph_they_ran_on_their_own_thread(
    dbg: AgentDebug,
) -> None:
    """Three Send branches run at once on worker threads, each invoking a sub-agent
    on a thread of its own: each sub-agent's answer is filed under its branch."""
    cities = ["Paris", "Lyon", "Nice"]

    def worker(packet: dict[str, Any]) -> dict[str, Any]:
        city = packet["city"]
        done = researcher(f"{city}: 20C").invoke(
            {"messages": [HumanMessage(city)]}, {"configurable": {"thread_id": city}}
        )
        return {"messages": [AIMessage(content=done["messages"][-1].content)]}

    g = StateGraph(MessagesState)
    g.add_node("fan", lambda s: {})
    g.add_node("worker", worker)
    g.add_edge(START, "fan")
    g.add_conditional_edges("fan", lambda s: [Send("worker", {"city": c}) for c in cities])
    g.add_edge("worker", END)
    cb = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [HumanMessage("weather")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    by_id = {e.id: e for e in run.events}
    answers = [e for e in run.events if e.type is EventType.LLM_RESPONSE]
    assert len(answers) == 3
    for answer in answers:
        assert answer.agent_name == "worker/researcher"
        inner_start = by_id[answer.parent_id]
        branch = by_id[inner_start.parent_id]
        assert branch.agent_name == "worker"
        assert answer.output["content"].split(":")[0] == branch.input["city"]


def test_an_async_node_awaiting_a_graph_on_its_own_thread(dbg: AgentDebug) -> None:
    inner = researcher("the answer is 42", coroutines=True)

    async def lead(state: MessagesState) -> dict[str, Any]:
        found = await inner.ainvoke(
            {"messages": [HumanMessage("find")]}, {"configurable": {"thread_id": "r"}}
        )
        return {"messages": [AIMessage(content="lead: " + found["messages"][-1].content)]}

    cb = AgentDebugCallback(dbg)
    asyncio.run(
        _outer(lead).ainvoke(
            {"messages": [HumanMessage("q")]},
            {"callbacks": [cb], "configurable": {"thread_id": "main"}},
        )
    )
    run = cb.trajectory()
    assert [t for t, a in _events(run) if a == "lead/researcher"] == [
        "agent.start",
        "llm.response",
        "agent.end",
    ]
    assert len(dbg.store.list_runs()) == 1


def test_an_interrupt_kept_on_the_inner_thread_does_not_pause_the_outer_run(
    dbg: AgentDebug,
) -> None:
    """The inner graph asks for an approval (``interrupt()``), which its own thread
    keeps; the node goes on and the outer graph completes: its run ends, is judged
    and diagnosed (a review found it left 'running', never diagnosed); the question
    is on record under the inner node."""

    def ask(state: MessagesState) -> dict[str, Any]:
        ok = interrupt({"question": "approve the refund?"})
        return {"messages": [AIMessage(content=f"approved={ok}")]}

    inner = StateGraph(MessagesState)
    inner.add_node("approver", ask)
    inner.add_edge(START, "approver")
    approver = inner.compile(checkpointer=InMemorySaver())

    def lead(state: MessagesState) -> dict[str, Any]:
        out = approver.invoke(
            {"messages": [HumanMessage("refund?")]}, {"configurable": {"thread_id": "approvals"}}
        )
        return {"messages": [AIMessage(content="queued" if "__interrupt__" in out else "done")]}

    cb = AgentDebugCallback(dbg, success_check=lambda s: "the refund was never issued")
    cfg: Any = {"callbacks": [cb], "configurable": {"thread_id": "main"}}
    app = _outer(lead)
    out = app.invoke({"messages": [HumanMessage("refund order 7")]}, cfg)
    if "__interrupt__" in out:  # (an older LangGraph, 1.2.4, hands the interrupt up:
        assert not cb.reports  # the outer run waits for the answer, as LangGraph does)
        assert dbg.store.load_trajectory(cb.run_ids[0]).outcome.status.value == "running"
        return
    app.invoke({"messages": [HumanMessage("and order 8")]}, cfg)
    assert len(cb.reports) == 2 and len(set(cb.run_ids)) == 2
    for run_id in cb.run_ids:
        run = dbg.store.load_trajectory(run_id)
        assert run.outcome.status.value == "failure"
        asked = [e for e in run.events if e.type is EventType.CHECKPOINT]
        assert [e.agent_name for e in asked] == ["lead/approver"]


def test_a_subgraph_after_a_graph_on_its_own_thread_keeps_its_checkpoints(
    dbg: AgentDebug,
) -> None:
    """One node runs a sub-agent on its own thread, then a subgraph of its own
    thread (no config): the subgraph's nodes still get their checkpoints."""
    own = researcher("notes")
    drafting = StateGraph(MessagesState)
    drafting.add_node("drafter", lambda s: {"messages": [AIMessage(content="draft")]})
    drafting.add_edge(START, "drafter")
    drafter = drafting.compile(checkpointer=True)

    def lead(state: MessagesState) -> dict[str, Any]:
        own.invoke({"messages": [HumanMessage("find")]}, {"configurable": {"thread_id": "r"}})
        done = drafter.invoke({"messages": [HumanMessage("draft it")]})
        return {"messages": [done["messages"][-1]]}

    cb = AgentDebugCallback(dbg)
    _outer(lead).invoke(
        {"messages": [HumanMessage("q")]},
        {"callbacks": [cb], "configurable": {"thread_id": "main"}},
    )
    starts = {
        e.agent_name: e.checkpoint
        for e in cb.trajectory().events
        if e.type is EventType.AGENT_START
    }
    assert starts["lead/researcher"] is None
    assert starts["lead/drafter"] is not None and starts["lead/drafter"].thread_id == "main"


def _named(name: str, reply: str, *, own_memory: bool) -> Any:
    """A one-node graph compiled as ``name`` (as ``create_agent(name=...)`` names
    a sub-agent), its node called ``model`` whatever the agent."""
    model = scripted([AIMessage(content=reply)])
    g = StateGraph(MessagesState)
    g.add_node("model", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_edge(START, "model")
    return g.compile(name=name, checkpointer=InMemorySaver() if own_memory else None)


@pytest.mark.parametrize("own_thread", [False, True])
@pytest.mark.parametrize("caller", ["node", "tool", "async node"])
def test_two_named_sub_agents_one_node_runs_are_told_apart_by_their_names(
    dbg: AgentDebug, caller: str, own_thread: bool
) -> None:
    """A node (or a tool) that runs a researcher and then a writer, both graphs
    whose node is ``model``: they were both filed as ``lead/model``, so a blamed
    ``lead/model`` named neither. Each is now recorded under its graph's name; a
    subgraph added as a node, and a graph with LangGraph's default name, are as
    they were."""
    researcher_, writer = (
        _named("researcher", "facts: 42", own_memory=own_thread),
        _named("writer", "draft: the answer", own_memory=own_thread),
    )

    def config(thread: str) -> Any:
        return {"configurable": {"thread_id": thread}} if own_thread else None

    def both(question: str) -> str:
        a = researcher_.invoke({"messages": [HumanMessage(question)]}, config("r"))
        b = writer.invoke({"messages": [HumanMessage("write it")]}, config("w"))
        return f"{a['messages'][-1].content} / {b['messages'][-1].content}"

    async def aboth(state: MessagesState) -> dict[str, Any]:
        a = await researcher_.ainvoke({"messages": [HumanMessage("q")]}, config("r"))
        b = await writer.ainvoke({"messages": [HumanMessage("write it")]}, config("w"))
        text = f"{a['messages'][-1].content} / {b['messages'][-1].content}"
        return {"messages": [AIMessage(content=text)]}

    g = StateGraph(MessagesState)
    if caller == "tool":

        @tool
        def research_and_write(question: str) -> str:
            """Research a question and write up the answer."""
            return both(question)

        model = scripted([call("research_and_write", {"question": "q"}, "c1"), AIMessage("ok")])
        g.add_node("lead", lambda s: {"messages": [model.invoke(s["messages"])]})
        g.add_node("tools", ToolNode([research_and_write]))
        g.add_edge(START, "lead")
        g.add_conditional_edges(
            "lead",
            lambda s: "tools" if s["messages"][-1].tool_calls else "editor",
            ["tools", "editor"],
        )
        g.add_edge("tools", "lead")
        host = "tools"
    else:
        g.add_node(
            "lead",
            aboth
            if caller == "async node"
            else lambda s: {"messages": [AIMessage(content=both("q"))]},
        )
        g.add_edge(START, "lead")
        g.add_edge("lead", "editor")
        host = "lead"
    # a subgraph that is a node itself, compiled with a name of its own: named by the
    # node alone (a review: "editor/copy_editor/model", as if its node's code ran it)
    g.add_node("editor", _named("copy_editor", "edited", own_memory=False))
    g.add_edge("editor", END)
    app = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg)
    cfg: Any = {"callbacks": [cb], "configurable": {"thread_id": "main"}}
    if caller == "async node":
        asyncio.run(app.ainvoke({"messages": [HumanMessage("go")]}, cfg))
    else:
        app.invoke({"messages": [HumanMessage("go")]}, cfg)
    run = cb.trajectory()
    answers = {
        e.agent_name: e.output["content"] for e in run.events if e.type is EventType.LLM_RESPONSE
    }
    assert answers[f"{host}/researcher/model"] == "facts: 42"
    assert answers[f"{host}/writer/model"] == "draft: the answer"
    assert answers["editor/model"] == "edited"  # (a subgraph as a node: named by the node)
    starts = [e for e in run.events if e.type is EventType.AGENT_START]
    inner = {e.agent_name: e for e in starts if e.metadata.get("graph")}
    assert sorted(inner) == [f"{host}/researcher/model", f"{host}/writer/model"]
    for name, start in inner.items():
        assert start.metadata["graph"] == name.split("/")[1]
        assert start.metadata["namespace"] == host  # (the node that ran it, as before)
    # a second run of the app on the same callback: nothing of the first run's left
    # over to name it by
    unnamed = researcher("plain")  # (compiled without a name: "LangGraph")
    g2 = StateGraph(MessagesState)
    g2.add_node(
        "lead",
        lambda s: {"messages": unnamed.invoke({"messages": [HumanMessage("x")]})["messages"][-1:]},
    )
    g2.add_edge(START, "lead")
    g2.compile().invoke({"messages": [HumanMessage("go")]}, {"callbacks": [cb]})
    names = {e.agent_name for e in cb.trajectory().events if e.type is EventType.AGENT_START}
    assert names == {"lead", "lead/researcher"}
