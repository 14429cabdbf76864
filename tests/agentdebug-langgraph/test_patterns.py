"""Capture of the ways LangGraph users build agents beyond a plain tool loop:
handoffs to a parent graph, a node that writes the reply itself, an interrupt
inside a tool, a pydantic state."""

from __future__ import annotations

import contextlib
import operator
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, AgentTrajectory, EventType
from agentdebug_langgraph import AgentDebugCallback
from events_support import of_type
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from lg_graphs import Counter, call, linear_graph, scripted
from pydantic import BaseModel


def agent_loop(model: Any, tools: Any, checkpointer: Any = None) -> Any:
    """A model node and a tools node (``tools``: a ToolNode or a node function) in
    the usual loop."""
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


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


@tool
def refund(amount: int) -> str:
    """Refund an amount, once a person approves it."""
    approved = interrupt({"approve": amount})
    return f"refunded {amount}" if approved == "yes" else "refund declined"


def refund_agent(model: Any) -> Any:
    return agent_loop(model, ToolNode([refund]), InMemorySaver())


def test_an_interrupt_inside_a_tool_pauses_the_call_and_the_resume_names_it(
    dbg: AgentDebug,
) -> None:
    model = scripted([call("refund", {"amount": 42}, "r1"), AIMessage("Refund done")])
    graph = refund_agent(model)
    config: dict[str, Any] = {"configurable": {"thread_id": "refund-1"}}
    paused = graph.invoke(
        {"messages": [HumanMessage("refund 42")]},
        {**config, "callbacks": [AgentDebugCallback(dbg)]},
    )
    assert "__interrupt__" in paused
    cb = AgentDebugCallback(dbg)  # a resume is often invoked with a fresh callback
    done = graph.invoke(Command(resume="yes"), {**config, "callbacks": [cb]})
    assert done["messages"][-1].content == "Refund done"
    run = cb.trajectory()
    first, again = of_type(run, EventType.TOOL_CALL)
    pause = next(
        e
        for e in of_type(run, EventType.CHECKPOINT)
        if e.metadata.get("langgraph_event") == "tool_interrupted"
    )
    assert pause.parent_id == first.id and pause.metadata["tool_call_id"] == "r1"
    assert pause.error is None
    assert again.metadata["resumes"] == first.id
    (result,) = of_type(run, EventType.TOOL_RESULT)
    assert result.parent_id == again.id and result.output == "refunded 42"
    assert result.metadata["tool_call_id"] == "r1"


@tool
def flaky(order: str) -> str:
    """Look an order up (it fails)."""
    raise ValueError(f"no order {order}")


def test_a_tool_error_names_its_tool_call(dbg: AgentDebug) -> None:
    model = scripted([call("flaky", {"order": "A1"}, "f1"), AIMessage("Sorry.")])
    graph = agent_loop(model, ToolNode([flaky], handle_tool_errors=False))
    cb = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(ValueError, match="no order A1"):  # the graph's error, unchanged
        graph.invoke({"messages": [HumanMessage("order A1")]}, {"callbacks": [cb]})
    (result,) = of_type(cb.trajectory(), EventType.TOOL_RESULT)
    assert result.error is not None and "no order A1" in result.error.message
    assert result.metadata["tool_call_id"] == "f1"


def test_a_call_of_a_tool_that_does_not_exist_is_a_tool_error_blamed_on_the_model_step(
    dbg: AgentDebug,
) -> None:
    """ToolNode answers a call of a tool it does not have with an error message and
    runs no tool, so no tool callback fires; the answer is recorded from the node's
    update as the call (under the model step that made it) and its error, and the
    diagnosis blames that step for a malformed tool call."""
    model = scripted([call("refund_order", {"order_id": "A1"}, "u1"), AIMessage("Refunded.")])
    graph = agent_loop(model, ToolNode([flaky], handle_tool_errors=True))
    cb = AgentDebugCallback(dbg, success_check=lambda s: "no tool call succeeded")
    graph.invoke({"messages": [HumanMessage("refund A1")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    (asked,) = [e for e in of_type(run, EventType.LLM_RESPONSE) if e.output.get("tool_calls")]
    (made,) = of_type(run, EventType.TOOL_CALL)
    assert made.parent_id == asked.id and made.step_index == asked.step_index
    assert made.input == {"order_id": "A1"} and made.module == "refund_order"
    assert made.metadata["recorded_from"] == "node_update"
    (result,) = of_type(run, EventType.TOOL_RESULT)
    assert result.parent_id == made.id and result.agent_name == "tools"
    assert result.error is not None and "refund_order is not a valid tool" in result.error.message
    cause = cb.reports[0].root_cause
    assert cause is not None and (cause.agent_name, cause.step_index) == ("agent", asked.step_index)
    assert cause.mode_id == "action.malformed_tool_call"


def test_tool_answers_a_node_writes_itself_are_recorded_once(dbg: AgentDebug) -> None:
    """A node that runs the model's tool calls itself (no LangChain tool) writes
    ToolMessages: each is a tool call and its result, once, also when a later node
    returns the whole history again."""
    from langchain_core.messages import ToolMessage

    model = scripted([call("lookup", {"order": "A1"}, "k1"), AIMessage("It is $42.")])

    def run_tools(state: MessagesState) -> dict[str, Any]:
        asked = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage("$42", tool_call_id=asked["id"], name=asked["name"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", run_tools)
    g.add_node("echo", lambda s: {"messages": list(s["messages"])})
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: "echo"})
    g.add_edge("tools", "agent")
    g.add_edge("echo", END)
    cb = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [HumanMessage("price of A1?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    (made,) = of_type(run, EventType.TOOL_CALL)
    (result,) = of_type(run, EventType.TOOL_RESULT)
    assert made.agent_name == "agent" and made.metadata["executed_by"] == "tools"
    assert result.parent_id == made.id and result.output == "$42" and result.error is None


@tool
def price(order: str) -> str:
    """The price of an order."""
    return "$42"


def test_a_node_that_calls_its_tools_itself_records_each_call_once(dbg: AgentDebug) -> None:
    """The LangGraph tutorial's own tool node: it invokes each tool with the call's
    arguments (a tool callback without the call's id) and writes the ToolMessage
    itself. One call and one result each, also when the model uses an id again in a
    later turn (a later call of a tool that does not exist is still recorded)."""
    from langchain_core.messages import ToolMessage

    model = scripted(
        [
            call("price", {"order": "A1"}, "call_0"),
            call("refund", {"order": "A1"}, "call_0"),
            AIMessage("It is $42."),
        ]
    )
    tools = {"price": price}

    def run_tools(state: MessagesState) -> dict[str, Any]:
        out = []
        for asked in state["messages"][-1].tool_calls:
            if asked["name"] in tools:
                said = tools[asked["name"]].invoke(asked["args"])
                out.append(ToolMessage(said, tool_call_id=asked["id"], name=asked["name"]))
            else:
                out.append(ToolMessage("no such tool", tool_call_id=asked["id"], status="error"))
        return {"messages": out}

    graph = agent_loop(model, run_tools)
    cb = AgentDebugCallback(dbg)
    graph.invoke({"messages": [HumanMessage("price of A1?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    calls = of_type(run, EventType.TOOL_CALL)
    results = of_type(run, EventType.TOOL_RESULT)
    assert [c.module for c in calls] == ["price", "refund"]
    assert "recorded_from" not in calls[0].metadata  # the tool's own callback
    assert calls[1].metadata["recorded_from"] == "node_update"
    assert [r.output for r in results] == ["$42", "no such tool"]
    assert results[0].error is None and results[1].error is not None


@pytest.mark.parametrize("where", ["this process", "another worker"])
def test_a_retried_run_files_a_tool_answer_under_the_decision_before_the_stop_once(
    dbg: AgentDebug, tmp_path: Any, where: str
) -> None:
    """The model asks for a lookup; the node that runs it (writing the ToolMessage
    itself) fails, and ``invoke(None)`` retries. The retry's answer is filed under
    the first run's decision; when the retry fails later and is retried again, the
    answer the last node writes back with the whole history is not a new call. In
    another worker (a fresh saver on the file: the runs are found in the store) as
    in this process."""
    from langchain_core.messages import ToolMessage
    from lg_graphs import sqlite_saver

    model = scripted([call("lookup", {"order": "A1"}, "k1"), AIMessage("It is $42.")])
    tries = {"tools": 0, "echo": 0}

    def flaky(name: str) -> None:
        tries[name] += 1
        if tries[name] == 1:
            raise ConnectionError(f"{name}: service down")

    def run_tools(state: MessagesState) -> dict[str, Any]:
        flaky("tools")
        asked = state["messages"][-1].tool_calls[0]
        return {"messages": [ToolMessage("$42", tool_call_id=asked["id"], name=asked["name"])]}

    def echo(state: MessagesState) -> dict[str, Any]:
        flaky("echo")
        return {"messages": list(state["messages"])}

    shared = InMemorySaver()

    def graph() -> Any:
        g = StateGraph(MessagesState)
        g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
        g.add_node("tools", run_tools)
        g.add_node("echo", echo)
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: "echo"})
        g.add_edge("tools", "agent")
        g.add_edge("echo", END)
        saver = shared if where == "this process" else sqlite_saver(str(tmp_path / "cp.db"))
        return g.compile(checkpointer=saver)

    config = {"configurable": {"thread_id": "retried"}}
    runs = []
    for given in ({"messages": [HumanMessage("price of A1?")]}, None, None):
        cb = AgentDebugCallback(dbg, diagnose=False)
        with contextlib.suppress(ConnectionError):
            graph().invoke(given, {**config, "callbacks": [cb]})
        runs.append(cb.trajectory())
    first, second, third = runs
    assert second.metadata["continues"] == first.id and third.metadata["continues"] == second.id
    (decision,) = [e for e in of_type(first, EventType.LLM_RESPONSE) if e.output.get("tool_calls")]
    assert not of_type(first, EventType.TOOL_CALL)  # (the node failed before answering)
    (made,) = of_type(second, EventType.TOOL_CALL)
    (result,) = of_type(second, EventType.TOOL_RESULT)
    assert made.parent_id == decision.id and made.step_index == decision.step_index
    assert made.input == {"order": "A1"} and made.metadata["recorded_from"] == "node_update"
    assert result.parent_id == made.id and result.output == "$42"
    assert not of_type(third, EventType.TOOL_CALL) and not of_type(third, EventType.TOOL_RESULT)
    assert third.outcome.final_answer is not None


def test_a_tool_call_whose_arguments_do_not_parse_is_recorded_and_blamed(dbg: AgentDebug) -> None:
    """A provider cuts the call's JSON off: LangChain puts it in the message's
    ``invalid_tool_calls``, ``tool_calls`` is empty and ``tools_condition`` ends the
    graph, no tool run. The call is still in the record (the answer's
    ``invalid_tool_calls``; a ``tool.call`` with the raw arguments and why they do
    not parse), and the diagnosis blames the model's step for a malformed call
    (before, the answer read as empty, and that was the finding)."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult

    raw = '{"order_id": A1, "amount": 4.5'

    class CutOff(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "cut-off"

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            bad = {
                "name": "refund",
                "args": raw,
                "id": "c1",
                "error": None,
                "type": "invalid_tool_call",
            }
            msg = AIMessage("", invalid_tool_calls=[bad])
            return ChatResult(generations=[ChatGeneration(message=msg)])

    @tool
    def refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        return "refunded"

    graph = agent_loop(CutOff(), ToolNode([refund]))
    cb = AgentDebugCallback(
        dbg, success_check=lambda s: any(m.type == "tool" for m in s["messages"]) or "no refund"
    )
    graph.invoke({"messages": [HumanMessage("refund A1, $4.50")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    (answer,) = of_type(run, EventType.LLM_RESPONSE)
    assert answer.output["invalid_tool_calls"][0]["args"] == raw
    (made,) = of_type(run, EventType.TOOL_CALL)
    assert made.parent_id == answer.id and made.module == "refund" and made.input == raw
    assert made.metadata["arguments_error"].startswith("not JSON")
    assert not of_type(run, EventType.TOOL_RESULT)
    cause = cb.reports[0].root_cause
    assert cause is not None and cause.mode_id == "action.malformed_tool_call"
    assert (cause.agent_name, cause.step_index) == ("agent", answer.step_index)


class Plain(TypedDict):
    messages: list[Any]  # no reducer: every node returns the whole history


def test_a_tool_answer_written_again_with_the_whole_history_is_not_a_new_call(
    dbg: AgentDebug,
) -> None:
    """Every node returns the whole history, and the model uses one call id in
    every turn: the first turn's ToolMessage, written again by the next model
    step, is not taken for an answer to the second turn's call."""
    model = scripted(
        [
            call("price", {"order": "A1"}, "call_0"),
            call("price", {"order": "B2"}, "call_0"),
            AIMessage("A1 and B2 are $42."),
        ]
    )

    def agent(s: Plain) -> dict[str, Any]:
        return {"messages": s["messages"] + [model.invoke(s["messages"])]}

    def run_tools(s: Plain) -> dict[str, Any]:
        calls = s["messages"][-1].tool_calls
        return {
            "messages": s["messages"] + [price.invoke({**c, "type": "tool_call"}) for c in calls]
        }

    g = StateGraph(Plain)
    g.add_node("agent", agent)
    g.add_node("tools", run_tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges(
        "agent", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END]
    )
    g.add_edge("tools", "agent")
    cb = AgentDebugCallback(dbg, diagnose=False)
    g.compile().invoke({"messages": [HumanMessage("prices?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert [e.input for e in of_type(run, EventType.TOOL_CALL)] == [
        {"order": "A1"},
        {"order": "B2"},
    ]
    assert len(of_type(run, EventType.TOOL_RESULT)) == 2
    assert not [e for e in run.events if e.metadata.get("recorded_from")]


class Chat(BaseModel):
    messages: Annotated[list[AnyMessage], add_messages] = []
    turns: int = 0


def test_a_pydantic_state_gives_the_users_request_as_goal_and_a_compact_input(
    dbg: AgentDebug,
) -> None:
    model = scripted([AIMessage("hello")])
    g = StateGraph(Chat)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s.messages)], "turns": s.turns + 1})
    g.add_edge(START, "agent")
    cb = AgentDebugCallback(dbg)
    g.compile().invoke(Chat(messages=[HumanMessage("hi there")]), {"callbacks": [cb]})
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
    assert same == other
    starts = [(a, s) for t, a, s in same if t == "agent.start"]
    assert starts == [("team", 1), ("team/researcher", 2), ("team/researcher/plan", 3)]

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
