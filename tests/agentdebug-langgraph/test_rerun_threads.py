"""A rerun branch runs on a thread of its own, yet its nodes see the run's thread id:
an app keys its own data by it (a session table, a store namespace, a sub-agent's
thread named after it), and a branch that read the made-up id found none of it and
failed for the debugger's own reason, discrediting a right diagnosis."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.schema import RerunRequest
from agentdebug_langgraph import (
    AgentDebugCallback,
    LangGraphRerunExecutor,
    branch_threads,
    prune_branch_threads,
)
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from lg_graphs import (
    agent_loop,
    lookup_order,
    lookup_order_by_email,
    order_found,
    scripted,
    sqlite_saver,
    wrong_then_right,
)
from rerun_support import REQUEST, verified_branch


def order_tools() -> ToolNode:
    return ToolNode([lookup_order_by_email, lookup_order], handle_tool_errors=True)


def session_agent(model: Any, checkpointer: Any, seen: list[str], sessions: dict[str, Any]) -> Any:
    """The tool agent whose model node first reads the app's session of the
    conversation, keyed by its thread id (a ``KeyError`` for any other id)."""

    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        thread = config["configurable"]["thread_id"]
        seen.append(thread)
        assert sessions[thread]["customer"] == "dana@example.com"
        return {"messages": [model.invoke(state["messages"])]}

    return agent_loop(None, order_tools(), checkpointer, agent=agent)


def test_a_branchs_nodes_see_the_runs_thread_id_and_its_checkpoints_stay_apart(
    dbg: AgentDebug,
) -> None:
    seen: list[str] = []
    graph = session_agent(
        scripted(wrong_then_right()),
        InMemorySaver(),
        seen,
        {"conv-1": {"customer": "dana@example.com"}},
    )
    cb = AgentDebugCallback(dbg, success_check=order_found)
    mine = {"configurable": {"thread_id": "conv-1"}}
    graph.invoke(REQUEST, {**mine, "callbacks": [cb]})
    before = [s.config for s in graph.get_state_history(mine)]
    seen.clear()

    branch = verified_branch(dbg, graph, cb)  # (before: KeyError 'conv-1~agentdebug-...')
    assert seen and set(seen) == {"conv-1"}
    # the user's thread is as the run left it; the branch's steps are on its own
    assert [s.config for s in graph.get_state_history(mine)] == before
    fork = branch.metadata["langgraph"]["fork"]
    assert fork["thread_id"].startswith("conv-1~agentdebug-")
    refs = [e.checkpoint for e in branch.events if e.type is EventType.AGENT_START]
    assert refs and all(r is not None and r.thread_id == fork["thread_id"] for r in refs)
    theirs = graph.get_state({"configurable": {"thread_id": fork["thread_id"]}})
    assert theirs.values["messages"][-1].content == "Order A123 costs $42.00."

    # a branch of the branch forks the branch's thread, named in its records
    request = RerunRequest(trajectory=branch, resume_step=fork["resume_step"], directive="again")
    again = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found).rerun(request)
    second = again.metadata["langgraph"]["fork"]
    assert second["forked_thread_id"] == fork["thread_id"]
    assert second["original_thread_id"] == "conv-1" and set(seen) == {"conv-1"}
    assert [s.config for s in graph.get_state_history(mine)] == before


def test_an_async_branch_on_sqlite_sees_the_runs_thread_id(dbg: AgentDebug, tmp_path: Path) -> None:
    """Made with ``ainvoke`` on AsyncSqliteSaver; rerun on the graph built on
    SqliteSaver for the file, through AsyncSqliteSaver on the branch's own loop,
    seen through the same alias."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    seen: list[str] = []
    sessions = {"conv-2": {"customer": "dana@example.com"}}
    db = str(tmp_path / "c.db")
    cb = AgentDebugCallback(dbg, success_check=order_found)

    async def capture() -> None:
        async with AsyncSqliteSaver.from_conn_string(db) as writer:
            graph = session_agent(scripted(wrong_then_right()), writer, seen, sessions)
            config: Any = {"configurable": {"thread_id": "conv-2"}, "callbacks": [cb]}
            await graph.ainvoke(REQUEST, config)

    asyncio.run(capture())
    assert cb.trajectory().metadata["langgraph"].get("asynchronous") is True
    seen.clear()
    graph = session_agent(scripted(wrong_then_right()[2:]), sqlite_saver(db), seen, sessions)
    verified_branch(dbg, graph, cb)
    assert seen and set(seen) == {"conv-2"}


def keeps_its_thread(heard: list[int]) -> None:
    """The sub-agent's conversation grew by two a turn in the run (each turn goes on
    from the last): LangGraph 1.2.4 runs a graph a node invokes as a subgraph of the
    node's, on no thread of its own, so there is no conversation to copy there."""
    if heard == [2, 2]:
        pytest.skip("this LangGraph runs a graph a node invokes as a subgraph of the node's")
    assert heard == [2, 4]


def sub_agent_caller(saver: Any, heard: list[int], thread_of: Any) -> Any:
    """The tool agent's model node, which first runs a sub-agent (it notes each turn,
    on ``saver``) on thread ``thread_of(the run's thread id)``, noting in ``heard``
    how long the sub-agent's conversation is then; the sub-agent is its ``support``."""
    helper = StateGraph(MessagesState)
    helper.add_node("note", lambda s: {"messages": [("ai", f"noted {len(s['messages'])}")]})
    helper.add_edge(START, "note")
    support = helper.compile(checkpointer=saver)
    model = scripted(wrong_then_right())

    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        sub = {"configurable": {"thread_id": thread_of(config["configurable"]["thread_id"])}}
        heard.append(len(support.invoke({"messages": [HumanMessage("turn")]}, sub)["messages"]))
        return {"messages": [model.invoke(state["messages"])]}

    agent.support = support  # type: ignore[attr-defined]
    return agent


def test_a_sub_agent_on_a_thread_named_after_the_runs_goes_on_from_a_copy_of_it(
    dbg: AgentDebug,
) -> None:
    """A node runs a sub-agent on ``f"{thread_id}-support"``, a conversation of its
    own: the branch's sub-agent goes on from that conversation as it was at the
    fork (a copy: the real one is left as the run left it), not from an empty
    thread named after the branch's (``t~agentdebug-...-support``)."""
    saver = InMemorySaver()
    heard: list[int] = []
    agent = sub_agent_caller(saver, heard, lambda tid: f"{tid}-support")
    support = agent.support

    graph = agent_loop(None, order_tools(), saver, agent=agent)
    cb = AgentDebugCallback(dbg, success_check=order_found)
    graph.invoke(REQUEST, {"configurable": {"thread_id": "t"}, "callbacks": [cb]})
    keeps_its_thread(heard)
    real = support.get_state({"configurable": {"thread_id": "t-support"}}).values
    heard.clear()
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found)
    # from the second model step: the sub-agent had had one turn then
    request = RerunRequest(trajectory=cb.trajectory(), resume_step=3, directive="By id.")
    branch = executor.rerun(request)
    assert branch.outcome.status.value == "success"
    assert heard[0] == 4  # its one turn before the fork, and the branch's
    assert support.get_state({"configurable": {"thread_id": "t-support"}}).values == real
    threads = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
    (copy,) = [t for t in threads if t.startswith("t-support~agentdebug-")]
    assert not [t for t in threads if t.startswith("t~") and t.endswith("-support")]
    # the copy is the branch's: listed under no thread of the user's, pruned with it
    (mine,) = branch_threads(graph, "t")
    assert copy.endswith(mine.rpartition("~agentdebug-")[2])
    assert sorted(prune_branch_threads(graph, "t")) == sorted([copy, mine])
    left = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
    assert left == {"t", "t-support"}


def test_a_sub_agent_with_a_saver_of_its_own_on_the_runs_thread_id_goes_on_from_a_copy(
    dbg: AgentDebug,
) -> None:
    """A node runs a sub-agent compiled with a checkpointer of its own, keyed by the
    same thread id as the run's conversation: in the branch (whose nodes see that
    id), the sub-agent goes on from a copy of its conversation there, not from an
    empty thread, and its real one is left alone."""
    own = InMemorySaver()
    heard: list[int] = []
    agent = sub_agent_caller(own, heard, lambda tid: tid)
    support = agent.support

    graph = agent_loop(None, order_tools(), InMemorySaver(), agent=agent)
    cb = AgentDebugCallback(dbg, success_check=order_found)
    graph.invoke(REQUEST, {"configurable": {"thread_id": "t"}, "callbacks": [cb]})
    keeps_its_thread(heard)
    real = support.get_state({"configurable": {"thread_id": "t"}}).values
    heard.clear()
    request = RerunRequest(trajectory=cb.trajectory(), resume_step=3, directive="By id.")
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found)
    assert executor.rerun(request).outcome.status.value == "success"
    assert heard[0] == 4  # its one turn before the fork, and the branch's
    assert support.get_state({"configurable": {"thread_id": "t"}}).values == real
    copies = {c.config["configurable"]["thread_id"] for c in own.list(None)} - {"t"}
    assert len(copies) == 1 and copies.pop().startswith("t~agentdebug-")


@pytest.mark.parametrize("through", ["the graph", "a with_config copy of it"])
def test_node_code_reaching_its_thread_through_the_graph_reads_and_writes_the_branchs(
    dbg: AgentDebug, through: str
) -> None:
    """A node that reads its conversation with ``graph.get_state`` by its thread id,
    and an audit hook that files a note with ``graph.update_state``: in the branch
    both reach the branch's thread, through the graph given to the executor or a
    copy of it on the same saver; the user's is never written."""
    seen: list[int] = []
    holder: dict[str, Any] = {}
    model = scripted(wrong_then_right())

    def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        mine = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
        seen.append(len(holder["graph"].get_state(mine).values["messages"]))
        holder["graph"].update_state(mine, {"messages": []})  # (an audit's no-op write)
        return {"messages": [model.invoke(state["messages"])]}

    graph = agent_loop(None, order_tools(), InMemorySaver(), agent=agent)
    holder["graph"] = graph if through == "the graph" else graph.with_config(tags=["app"])
    cb = AgentDebugCallback(dbg, success_check=order_found)
    mine = {"configurable": {"thread_id": "conv-3"}}
    graph.invoke(REQUEST, {**mine, "callbacks": [cb]})
    before = [s.config for s in graph.get_state_history(mine)]
    seen.clear()
    request = RerunRequest(trajectory=cb.trajectory(), resume_step=3, directive="By id.")
    branch = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found).rerun(request)
    assert branch.outcome.status.value == "success"
    # the branch's state before its step: the request, the call, its error, the directive
    assert seen[0] == 4
    assert [s.config for s in graph.get_state_history(mine)] == before
    assert graph.checkpointer.__class__ is InMemorySaver  # (its own saver, put back)


def test_a_branchs_subgraph_steps_are_recorded_at_its_checkpoints(dbg: AgentDebug) -> None:
    """A subgraph node's steps in a branch carry their checkpoints on the branch's
    thread, as in the run (before: none, the subgraph taken for a graph on a thread
    of its own because its first checkpoint names the user's thread)."""
    team = agent_loop(scripted(wrong_then_right()), order_tools())
    g = StateGraph(MessagesState)
    g.add_node("intake", lambda s: {"messages": []})
    g.add_node("team", team)
    g.add_edge(START, "intake")
    g.add_edge("intake", "team")
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=order_found)
    graph.invoke(REQUEST, {"configurable": {"thread_id": "t-team"}, "callbacks": [cb]})
    run = cb.trajectory()
    step = next(e.step_index for e in run.events if e.agent_name == "team/agent")
    request = RerunRequest(trajectory=run, resume_step=step, directive="By id.")
    branch = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found).rerun(request)
    thread = branch.metadata["langgraph"]["fork"]["thread_id"]
    inside = [
        e
        for e in branch.events
        if e.type is EventType.AGENT_START
        and (e.agent_name or "").startswith("team/")
        and "inherited_from" not in e.metadata
    ]
    assert inside and all(e.checkpoint is not None for e in inside)
    assert {e.checkpoint.thread_id for e in inside if e.checkpoint} == {thread}
    assert {e.checkpoint.namespace.split(":")[0] for e in inside if e.checkpoint} == {"team"}


def test_a_branch_of_a_branch_run_on_its_thread_sees_the_runs_thread_id(dbg: AgentDebug) -> None:
    """``isolate=False`` on a branch (the loop's next round, on the branch's own
    thread): its nodes still see the user's thread id."""
    seen: list[str] = []
    sessions = {"conv-4": {"customer": "dana@example.com"}}
    graph = session_agent(scripted(wrong_then_right()), InMemorySaver(), seen, sessions)
    cb = AgentDebugCallback(dbg, success_check=order_found)
    graph.invoke(REQUEST, {"configurable": {"thread_id": "conv-4"}, "callbacks": [cb]})
    first = RerunRequest(trajectory=cb.trajectory(), resume_step=3, directive="Say so.")
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(first)
    seen.clear()
    again = RerunRequest(trajectory=branch, resume_step=3, directive="By id.")
    LangGraphRerunExecutor(graph, debugger=dbg, isolate=False).rerun(again)
    assert seen and set(seen) == {"conv-4"}
