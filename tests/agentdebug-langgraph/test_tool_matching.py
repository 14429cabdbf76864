"""Tools a node runs with the model's call's arguments alone (``tool.invoke(call["args"])``,
as LangGraph's quickstart agent does, or calls the model gave no id): each run is
matched to the call it carries out, by tool and arguments, and filed under the
decision that asked for it; run again (a resume, a retry), it is still that call;
not an old decision's, nor a retry when a later decision uses its id again."""

from __future__ import annotations

import operator
import threading
import time
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, EventType, Severity
from agentdebug_langgraph import AgentDebugCallback
from events_support import of_type
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command, RetryPolicy, Send, interrupt
from lg_graphs import agent_loop, call, scripted


@tool
def price(order: str) -> str:
    """The price of an order."""
    return "$42"


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


@pytest.mark.parametrize("node_catches", [False, True], ids=["raises", "writes the error"])
def test_a_tool_run_by_its_arguments_is_blamed_on_the_model_call_that_asked_for_it(
    dbg: AgentDebug, node_catches: bool
) -> None:
    """LangGraph's quickstart agent: its tool node runs ``tool.invoke(call["args"])``,
    so the tool's callback carries no call id. The call is still the model's, matched
    by tool and arguments, and a failure it causes is blamed on the model's step, not
    on the node that carried it out (a rerun there would have no model to correct)."""
    model = scripted(
        [
            call("divide", {"a": 6, "b": 0}, "d1"),
            call("divide", {"a": 6, "b": 2}, "d2"),  # (a later decision, the same tool)
            AIMessage("6 / 0 is 3"),
        ]
    )

    def run_tools(state: MessagesState) -> dict[str, Any]:
        out = []
        for asked in state["messages"][-1].tool_calls:
            try:
                said = divide.invoke(asked["args"])
            except ZeroDivisionError as exc:
                if not node_catches:
                    raise
                out.append(ToolMessage(str(exc), tool_call_id=asked["id"], status="error"))
            else:
                out.append(ToolMessage(str(said), tool_call_id=asked["id"]))
        return {"messages": out}

    cb = AgentDebugCallback(dbg, success_check=lambda s: "3" not in s["messages"][-1].content)
    if node_catches:
        graph_out = agent_loop(model, run_tools).invoke(
            {"messages": [HumanMessage("6 / 0?")]}, {"callbacks": [cb]}
        )
        assert graph_out["messages"][-1].content == "6 / 0 is 3"
    else:
        with pytest.raises(ZeroDivisionError):
            agent_loop(model, run_tools).invoke(
                {"messages": [HumanMessage("6 / 0?")]}, {"callbacks": [cb]}
            )
    run = cb.trajectory()
    decisions = of_type(run, EventType.LLM_RESPONSE)
    calls = of_type(run, EventType.TOOL_CALL)
    assert calls[0].parent_id == decisions[0].id and calls[0].step_index == 1
    assert calls[0].metadata["tool_call_id"] == "d1"
    if node_catches:  # the second decision's call is its own, not the first's
        assert calls[1].parent_id == decisions[1].id and calls[1].metadata["tool_call_id"] == "d2"
        assert len(calls) == 2  # the ToolMessages answer the calls recorded: no copies
    (report,) = cb.reports
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("agent", 1)


def test_tool_calls_the_model_gave_no_id_are_filed_under_its_decision(dbg: AgentDebug) -> None:
    """A model that leaves its tool calls without ids (some local models do), run by
    a node that calls the tools itself: each call is the model's, told apart by its
    arguments, so the one that fails is blamed on the model's step."""
    asked = AIMessage(
        content="",
        tool_calls=[
            {"name": "flaky_or_not", "args": {"order": "A1"}, "id": None},
            {"name": "flaky_or_not", "args": {"order": "B2"}, "id": None},
        ],
    )

    def run_tools(state: MessagesState) -> dict[str, Any]:
        out = []
        for n, call_ in enumerate(state["messages"][-1].tool_calls):
            try:
                said, status = flaky_or_not.invoke(call_["args"]), "success"
            except ValueError as exc:
                said, status = str(exc), "error"
            out.append(ToolMessage(said, tool_call_id=f"local-{n}", status=status))
        return {"messages": out}

    cb = AgentDebugCallback(dbg, success_check=lambda s: "both orders cost $42" not in str(s))
    agent_loop(scripted([asked, AIMessage("both orders cost $42")]), run_tools).invoke(
        {"messages": [HumanMessage("orders?")]}, {"callbacks": [cb]}
    )
    run = cb.trajectory()
    decision = of_type(run, EventType.LLM_RESPONSE)[0]
    calls = of_type(run, EventType.TOOL_CALL)
    assert [c.input["order"] for c in calls] == ["A1", "B2"]
    assert all(c.parent_id == decision.id and c.agent_name == "agent" for c in calls)
    assert all("tool_call_id" not in c.metadata for c in calls)  # (it had none)
    failed = next(r for r in of_type(run, EventType.TOOL_RESULT) if r.error is not None)
    assert failed.parent_id == calls[1].id
    (report,) = cb.reports
    assert report.root_cause is not None
    assert (report.root_cause.agent_name, report.root_cause.step_index) == ("agent", 1)


@tool
def flaky_or_not(order: str) -> str:
    """Look an order up (B2 fails)."""
    if order == "B2":
        raise ValueError("no order B2")
    return f"order {order}: $42"


@pytest.mark.parametrize("again", ["RetryPolicy", "invoke(None)", "resume"])
def test_a_call_a_node_runs_by_its_arguments_again_is_still_the_models(
    dbg: AgentDebug, again: str
) -> None:
    """The node that runs the calls by their arguments runs one again: a
    ``RetryPolicy`` attempt, an ``invoke(None)`` after the failure, the resume of an
    interrupt inside the tool. The call answered once is matched again (not filed
    under the tool node), and the resume names the paused call."""

    tries: list[str] = []

    @tool
    def lookup(order: str) -> str:
        """Look an order up (down the first time; asks a person, when resumed)."""
        tries.append(order)
        if again == "resume":
            return f"order {order}: $42" if interrupt("ok?") == "yes" else "declined"
        if len(tries) == 1:
            raise ValueError("backend down")
        return f"order {order}: $42"

    def run_tools(state: MessagesState) -> dict[str, Any]:
        asked = state["messages"][-1].tool_calls
        return {
            "messages": [ToolMessage(lookup.invoke(c["args"]), tool_call_id=c["id"]) for c in asked]
        }

    model = scripted([call("lookup", {"order": "A1"}, "c1"), AIMessage("It costs $42")])
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    retry = RetryPolicy(max_attempts=2, initial_interval=0.0, retry_on=ValueError)
    g.add_node("tools", run_tools, retry_policy=retry if again == "RetryPolicy" else None)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    graph = g.compile(checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": f"again-{again}"}}
    cb = AgentDebugCallback(dbg, diagnose=False)
    first = {"messages": [HumanMessage("A1?")]}
    if again == "invoke(None)":
        with pytest.raises(ValueError, match="backend down"):
            graph.invoke(first, {**config, "callbacks": [cb]})
        graph.invoke(None, {**config, "callbacks": [cb]})
    else:
        graph.invoke(first, {**config, "callbacks": [cb]})
        if again == "resume":
            graph.invoke(Command(resume="yes"), {**config, "callbacks": [cb]})
    runs = [cb.trajectory(r) for r in dict.fromkeys(cb.run_ids)]  # (invoke(None): two)
    said = [e for run in runs for e in of_type(run, EventType.LLM_RESPONSE)]
    decision = next(e for e in said if e.output.get("tool_calls"))
    calls = [e for run in runs for e in of_type(run, EventType.TOOL_CALL)]
    assert len(calls) == 2 and len(tries) == 2
    assert all(c.parent_id == decision.id and c.metadata["tool_call_id"] == "c1" for c in calls)
    if again == "resume":
        assert calls[1].metadata["resumes"] == calls[0].id


def test_parallel_branches_asking_alike_each_keep_their_own_call(dbg: AgentDebug) -> None:
    """Two ``Send`` branches each ask their model and run its call by its arguments;
    both ask the same tool the same thing. Each run is its own branch's call."""

    class Fanned(TypedDict):
        out: Annotated[list[str], operator.add]

    asked = {who: scripted([call("price", {"order": "A1"}, f"{who}1")]) for who in ("x", "y")}
    x_asked, y_asked = threading.Event(), threading.Event()

    def worker(arg: dict[str, str]) -> dict[str, Any]:
        # x's model asks, then y's (the latest decision); then x runs its tool first
        who = arg["who"]
        if who == "y":
            x_asked.wait(5)
        reply = asked[who].invoke(f"price for {who}")
        (x_asked if who == "x" else y_asked).set()
        if who == "x":
            y_asked.wait(5)
        else:
            time.sleep(0.1)
        return {"out": [price.invoke(c["args"]) for c in reply.tool_calls]}

    g = StateGraph(Fanned)
    g.add_node("worker", worker)
    g.add_conditional_edges(START, lambda s: [Send("worker", {"who": w}) for w in ("x", "y")])
    g.add_edge("worker", END)
    cb = AgentDebugCallback(dbg, diagnose=False)
    g.compile().invoke({"out": []}, {"callbacks": [cb]})
    run = cb.trajectory()
    decisions = {e.id: e for e in of_type(run, EventType.LLM_RESPONSE)}
    calls = of_type(run, EventType.TOOL_CALL)
    ran_at = {r.parent_id: r.step_index for r in of_type(run, EventType.TOOL_RESULT)}
    assert len(calls) == 2
    for c in calls:  # filed under the decision of the branch it ran in
        assert decisions[c.parent_id].step_index == ran_at[c.id]
        assert decisions[c.parent_id].output["tool_calls"][0]["id"] == c.metadata["tool_call_id"]


def test_a_node_running_a_tool_on_its_own_later_is_not_an_old_decisions_call(
    dbg: AgentDebug,
) -> None:
    """The agent asked for ``get_rates`` and answered; later an ``audit`` node of the
    app's runs ``get_rates`` itself, with the same (no) arguments, and it fails.
    That run is the audit's, not the old decision's (its model has answered since)."""
    n: list[int] = []

    @tool
    def get_rates() -> str:
        """Current exchange rates."""
        n.append(1)
        if len(n) == 2:
            raise ConnectionError("rates service down")
        return "EUR/USD 1.08"

    model = scripted([call("get_rates", {}, "r1"), AIMessage("1 EUR is 1.08 USD.")])

    def run_tools(state: MessagesState) -> dict[str, Any]:
        asked = state["messages"][-1].tool_calls
        return {
            "messages": [
                ToolMessage(get_rates.invoke(c["args"]), tool_call_id=c["id"]) for c in asked
            ]
        }

    def audit(state: MessagesState) -> dict[str, Any]:
        get_rates.invoke({})  # the app's own refresh, asked by no model
        return {}

    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", run_tools)
    g.add_node("audit", audit)
    g.add_edge(START, "agent")
    g.add_conditional_edges(
        "agent", lambda s: "tools" if s["messages"][-1].tool_calls else "audit", ["tools", "audit"]
    )
    g.add_edge("tools", "agent")
    g.add_edge("audit", END)
    cb = AgentDebugCallback(dbg)
    with pytest.raises(ConnectionError):
        g.compile().invoke({"messages": [HumanMessage("Rate?")]}, {"callbacks": [cb]})
    first, own = of_type(cb.trajectory(), EventType.TOOL_CALL)
    assert first.metadata["tool_call_id"] == "r1" and first.agent_name == "agent"
    assert own.agent_name == "audit" and "tool_call_id" not in own.metadata
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == "audit"


def test_a_call_id_used_again_by_a_later_decision_is_not_a_retry(dbg: AgentDebug) -> None:
    """A node with its own agent loop, a provider that numbers each reply's calls from
    ``call_0``: the second decision's call is new (other arguments), not a retry of
    the first one's that failed. The failure (an argument of the wrong kind) is
    resolved all the same, by the agent: it called the tool again, right."""

    @tool
    def find_order(order_id: str) -> str:
        """Look an order up by id."""
        if "@" in order_id:
            raise ValueError(f"not an order id: {order_id}")
        return f"order {order_id}: $42.00"

    model = scripted(
        [
            call("find_order", {"order_id": "bob@x.com"}, "call_0"),
            call("find_order", {"order_id": "A1"}, "call_0"),
            AIMessage("Order A1 costs $42.00."),
        ]
    )

    def agent(state: MessagesState) -> dict[str, Any]:
        said: list[Any] = []
        while True:
            reply = model.invoke([*state["messages"], *said])
            said.append(reply)
            if not reply.tool_calls:
                return {"messages": said}
            for asked in reply.tool_calls:
                try:
                    said.append(find_order.invoke(asked))  # (a ToolCall: its id is given)
                except ValueError as exc:
                    said.append(ToolMessage(str(exc), tool_call_id=asked["id"], status="error"))

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    cb = AgentDebugCallback(dbg, success_check=lambda s: "the refund was not issued")
    g.compile().invoke({"messages": [HumanMessage("Order?")]}, {"callbacks": [cb]})
    failed, answered = of_type(cb.trajectory(), EventType.TOOL_RESULT)
    assert failed.error is not None and "retry_of" not in answered.metadata
    (report,) = cb.reports
    (error,) = [f for f in report.findings if "not an order id" in f.message]
    assert error.mode_id == "action.malformed_tool_call"
    assert error.severity is Severity.INFO  # resolved by the corrected call, not a retry
    assert "(resolved: the agent's call of find_order at step" in error.message
    assert report.root_cause is not None and report.root_cause.agent_name == "agent"
