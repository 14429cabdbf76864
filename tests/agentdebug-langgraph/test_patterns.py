"""Capture of the ways LangGraph users build agents beyond a plain tool loop:
handoffs to a parent graph, a node that writes the reply itself, a pydantic state,
graphs invoked inside nodes (tool calls: ``test_tools.py``)."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, AgentTrajectory, EventType
from agentdebug_langgraph import AgentDebugCallback
from events_support import of_type
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command
from lg_graphs import Counter, linear_graph, scripted
from pydantic import BaseModel


class Log(TypedDict):
    out: Annotated[list[str], operator.add]


def handoff_graph() -> Any:
    """A team subgraph whose node hands off to a node of the parent graph."""
    inner = StateGraph(Log)
    inner.add_node(
        "decide",
        lambda s: Command(graph=Command.PARENT, goto="other", update={"out": ["handoff"]}),
    )
    inner.add_edge(START, "decide")
    g = StateGraph(Log)
    g.add_node("team", inner.compile(), destinations=("other",))
    g.add_node("other", lambda s: {"out": ["other"]})
    g.add_edge(START, "team")
    return g.compile()


def test_a_handoff_to_the_parent_graph_closes_the_node_that_ran_the_subgraph(
    dbg: AgentDebug,
) -> None:
    cb = AgentDebugCallback(dbg)
    assert handoff_graph().invoke({"out": []}, {"callbacks": [cb]}) == {"out": ["handoff", "other"]}
    run = cb.trajectory()
    started = {e.id: e.agent_name for e in of_type(run, EventType.AGENT_START)}
    ended = {e.parent_id: e for e in of_type(run, EventType.AGENT_END)}
    assert set(started.values()) == {"team", "team/decide", "other"}
    assert set(ended) == set(started)  # every node execution is closed
    team_end = next(e for pid, e in ended.items() if started[pid] == "team")
    assert team_end.output["command"] is True and team_end.output["goto"] == "other"
    assert not of_type(run, EventType.ERROR)


def test_a_reply_a_node_writes_itself_is_its_answer_not_the_last_model_calls(
    dbg: AgentDebug,
) -> None:
    model = scripted([AIMessage("draft: 42")])
    g = StateGraph(MessagesState)
    g.add_node("think", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("format", lambda s: {"messages": [AIMessage("The answer is 42.")]})
    g.add_edge(START, "think")
    g.add_edge("think", "format")
    cb = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [HumanMessage("q")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    (answer,) = of_type(run, EventType.FINAL_ANSWER)
    format_start = next(e for e in of_type(run, EventType.AGENT_START) if e.agent_name == "format")
    assert answer.output == "The answer is 42."
    assert (answer.agent_name, answer.step_index) == ("format", format_start.step_index)
    assert answer.parent_id == format_start.id  # not the model call that said "draft: 42"


class DictChat(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]


@pytest.mark.parametrize("state", [DictChat, MessagesState], ids=["dicts", "add_messages"])
def test_a_reply_a_node_writes_as_an_openai_dict_is_its_answer_and_rerun(
    dbg: AgentDebug, state: Any
) -> None:
    """A node that calls a model client itself writes ``{"role": "assistant"}``: a
    soft failure is blamed on it (before, on no one: nothing to rerun), and the
    rerun from it, given the directive, is verified."""
    from agentdebug.rerun import closed_loop
    from agentdebug_langgraph import LangGraphRerunExecutor

    def answer(s: Any) -> dict[str, Any]:
        told = any("went wrong" in str(m) for m in s["messages"][1:])
        return {"messages": [{"role": "assistant", "content": "42" if told else "24"}]}

    def content(m: Any) -> Any:
        return m["content"] if isinstance(m, dict) else m.content

    def check(s: Any) -> bool | str:
        return content(s["messages"][-1]) == "42" or "answered 24, expected 42"

    g = StateGraph(state)
    g.add_node("prep", lambda s: {})
    g.add_node("agent", answer)
    g.add_edge(START, "prep")
    g.add_edge("prep", "agent")
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=check)
    graph.invoke(
        {"messages": [{"role": "user", "content": "how much?"}]},
        {"callbacks": [cb], "configurable": {"thread_id": f"t-dict-{state.__name__}"}},
    )
    run = cb.trajectory()
    (final,) = of_type(run, EventType.FINAL_ANSWER)
    agent = next(e for e in of_type(run, EventType.AGENT_START) if e.agent_name == "agent")
    assert (final.output, final.agent_name, final.parent_id) == ("24", "agent", agent.id)
    root = cb.reports[-1].root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", agent.step_index)
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=check)
    result = closed_loop(run, debugger=dbg, executor=executor, report=cb.reports[-1])
    assert result.status == "succeeded" and result.verified_by_rerun is True, result.detail


def test_a_reply_a_node_writes_in_a_command_is_its_answer(dbg: AgentDebug) -> None:
    """Supervisors and error handlers return a ``Command`` whose update holds the reply."""
    g = StateGraph(MessagesState)
    g.add_node("prep", lambda s: {})
    g.add_node(
        "decline",
        lambda s: Command(update={"messages": [AIMessage("Sorry, no refunds.")]}, goto=END),
        destinations=(END,),
    )
    g.add_edge(START, "prep")
    g.add_edge("prep", "decline")
    cb = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [HumanMessage("refund order 42")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    (answer,) = of_type(run, EventType.FINAL_ANSWER)
    decline = next(e for e in of_type(run, EventType.AGENT_START) if e.agent_name == "decline")
    assert answer.output == "Sorry, no refunds."
    assert (answer.agent_name, answer.parent_id) == ("decline", decline.id)
    from agentdebug.report import render_run

    assert "command → __end__: Sorry, no refunds." in render_run(run)


class Chat(BaseModel):
    messages: Annotated[list[AnyMessage], add_messages] = []
    turns: int = 0


@dataclass
class DataChat:
    messages: Annotated[list[AnyMessage], add_messages] = field(default_factory=list)
    turns: int = 0


@pytest.mark.parametrize("state", [Chat, DataChat])
def test_a_pydantic_state_gives_the_users_request_as_goal_and_a_compact_input(
    dbg: AgentDebug, state: Any
) -> None:
    """The same for a pydantic state and a dataclass one: its fields, with the
    messages made small (a dataclass's were stored as full message dumps)."""
    model = scripted([AIMessage("hello")])
    g = StateGraph(state)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s.messages)], "turns": s.turns + 1})
    g.add_edge(START, "agent")
    cb = AgentDebugCallback(dbg)
    g.compile().invoke(state(messages=[HumanMessage("hi there")]), {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.goal == "hi there"
    (given,) = of_type(run, EventType.USER_INPUT)
    assert given.input == {"messages": [{"role": "user", "content": "hi there"}], "turns": 0}
    assert run.outcome.final_answer == "hello"


def test_invoking_a_finished_thread_without_input_is_not_judged_or_diagnosed_again(
    dbg: AgentDebug,
) -> None:
    """``invoke(None)`` on a thread with nothing pending runs no node and returns
    the previous run's state: recorded as a run where nothing ran, not as a second
    failure of the first run with a second diagnosis."""
    checked: list[Any] = []

    def no_refund(state: dict[str, Any]) -> str:
        checked.append(state)
        return "the answer does not give the refund amount"

    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [AIMessage("It ships on Monday.")]})
    g.add_edge(START, "agent")
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=no_refund)
    config: Any = {"configurable": {"thread_id": "done"}, "callbacks": [cb]}
    graph.invoke({"messages": [HumanMessage("How much is my refund?")]}, config)
    assert len(cb.reports) == 1 and len(checked) == 1

    state = graph.invoke(None, config)
    assert state["messages"][-1].content == "It ships on Monday."  # LangGraph's answer
    assert len(cb.reports) == 1 and len(checked) == 1  # not judged, not diagnosed again
    first, again = (cb.trajectory(rid) for rid in cb.run_ids)
    assert first.outcome.status.value == "failure"
    assert again.outcome.status.value == "unknown" and again.events == []
    assert (again.outcome.reason or "").startswith("nothing ran: the graph was invoked")


def _steps(run: AgentTrajectory) -> list[tuple[str, str | None, int]]:
    return [(e.type.value, e.agent_name, e.step_index) for e in run.events]


def test_a_graph_given_the_callback_inside_a_node_of_an_unrecorded_graph_is_its_own_run(
    dbg: AgentDebug,
) -> None:
    """The outer graph runs without a callback; a node invokes another graph with
    one: that graph's run is recorded, whole, as a run of its own."""
    cb = AgentDebugCallback(dbg)
    inner = linear_graph()

    def outer_node(state: Counter) -> dict[str, Any]:
        done = inner.invoke({"n": state["n"], "trail": []}, {"callbacks": [cb]})
        return {"n": done["n"], "trail": ["outer"]}

    g = StateGraph(Counter)
    g.add_node("outer", outer_node)
    g.add_edge(START, "outer")
    g.compile().invoke({"n": 0, "trail": []})
    assert len(cb.run_ids) == 1
    run = cb.trajectory()
    assert run.outcome.status.value == "success"
    starts = [(a, s) for t, a, s in _steps(run) if t == "agent.start"]
    assert starts == [("plan", 1), ("act", 2), ("report", 3)]


def test_a_graph_named_like_the_node_that_invokes_it_is_not_a_second_run_of_the_node(
    dbg: AgentDebug,
) -> None:
    """A node ``researcher`` of a subgraph that invokes a graph compiled as
    ``researcher`` (a named prebuilt agent, say): one execution of the node, the
    inner graph's nodes inside it, as with any other name; and given a callback
    of its own inside a graph that has none, the inner graph is its own run."""

    def inner(name: str) -> Any:
        g = StateGraph(Counter)
        g.add_node("plan", lambda s: {"n": s["n"] + 1, "trail": ["plan"]})
        g.add_edge(START, "plan")
        return g.compile(name=name)

    def recorded(name: str) -> list[tuple[str, str | None, int]]:
        graph = inner(name)
        team = StateGraph(Counter)
        team.add_node("researcher", lambda s: graph.invoke(s))
        team.add_edge(START, "researcher")
        g = StateGraph(Counter)
        g.add_node("team", team.compile())
        g.add_edge(START, "team")
        cb = AgentDebugCallback(dbg)
        g.compile().invoke({"n": 0, "trail": []}, {"callbacks": [cb]})
        return _steps(cb.trajectory())

    same, other = recorded("researcher"), recorded("other")
    starts = [(a, s) for t, a, s in same if t == "agent.start"]
    assert starts == [("team", 1), ("team/researcher", 2), ("team/researcher/plan", 3)]
    # a graph named otherwise is named in its nodes' names (one of several a node
    # may run); the steps are the same
    starts = [(a, s) for t, a, s in other if t == "agent.start"]
    assert starts == [("team", 1), ("team/researcher", 2), ("team/researcher/other/plan", 3)]

    cb = AgentDebugCallback(dbg)
    graph = inner("researcher")
    g = StateGraph(Counter)
    g.add_node("researcher", lambda s: graph.invoke(s, {"callbacks": [cb]}))
    g.add_edge(START, "researcher")
    g.compile().invoke({"n": 0, "trail": []})
    assert [(a, s) for t, a, s in _steps(cb.trajectory()) if t == "agent.start"] == [("plan", 1)]


def test_the_nodes_of_a_subgraph_that_keeps_its_own_history_are_recorded(
    dbg: AgentDebug,
) -> None:
    """A subgraph compiled with ``checkpointer=True`` names its nodes' namespace
    after the node without a task id (``sub|inner:<task>``): they are recorded
    inside the node as any subgraph's are (they were dropped)."""
    inner = StateGraph(Counter)
    inner.add_node("inner", lambda s: {"n": s["n"] + 1, "trail": ["inner"]})
    inner.add_edge(START, "inner")
    g = StateGraph(Counter)
    g.add_node("sub", inner.compile(checkpointer=True))
    g.add_edge(START, "sub")
    cb = AgentDebugCallback(dbg)
    g.compile(checkpointer=InMemorySaver()).invoke(
        {"n": 0, "trail": []}, {"callbacks": [cb], "configurable": {"thread_id": "keeps"}}
    )
    starts = [(a, s) for t, a, s in _steps(cb.trajectory()) if t == "agent.start"]
    assert starts == [("sub", 1), ("sub/inner", 2)]


@pytest.mark.parametrize(
    "said",
    [
        "refund order A1",
        {"role": "user", "content": "refund order A1"},
        {"type": "human", "content": "refund order A1"},
        ("user", "refund order A1"),
        [("system", "Be brief."), ("user", "refund order A1")],
        HumanMessage("refund order A1"),
    ],
    ids=["text", "role dict", "type dict", "pair", "list after a system message", "message"],
)
def test_the_goal_is_the_users_request_in_any_form_add_messages_takes(
    dbg: AgentDebug, said: Any
) -> None:
    """``add_messages`` takes one message as a string, a dict or a (role, text) pair,
    not only in a list; the run's goal is its text, not the input's repr."""
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [AIMessage("done")]})
    g.add_edge(START, "agent")
    cb = AgentDebugCallback(dbg)
    out = g.compile().invoke({"messages": said}, {"callbacks": [cb]})
    assert any(m.content == "refund order A1" for m in out["messages"])  # LangGraph took it
    assert cb.trajectory().goal == "refund order A1"
