"""Capture of tool calls beyond the plain loop: an interrupt inside a tool, a tool
that fails or does not exist, a ``Command`` a tool answers with, tool answers a node
writes itself, arguments that do not parse."""

from __future__ import annotations

import contextlib
import operator
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug_langgraph import AgentDebugCallback
from events_support import of_type
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from lg_graphs import agent_loop, call, scripted


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


FORMS = {  # the ways ToolNode takes a tool's answer by Command, each failed
    "a Command": lambda m: Command(update={"messages": [m]}),
    "a list of Commands": lambda m: [Command(update={"messages": [m]})],
    "a message dict": lambda m: Command(
        update={"messages": [{"role": "tool", "status": "error", **m.model_dump()}]}
    ),
    "one message under two keys": lambda m: Command(update={"messages": [m], "last": m}),
}


class WithLast(MessagesState):
    last: Any


@pytest.mark.parametrize("form", list(FORMS))
def test_a_tool_answering_with_a_command_that_reports_an_error_is_a_tool_error(
    dbg: AgentDebug, form: str
) -> None:
    """A tool that answers its call with ``Command(update=...)`` (its ToolMessage for
    the call, by ``InjectedToolCallId``) and says there that it failed: the result is
    recorded as the tool's error, as a ToolMessage returned directly is, and the
    diagnosis names it (before, the failure read as a success and the report found
    no error)."""

    @tool
    def refund_by_command(order: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Refund an order, answering the call with the state update it makes."""
        said = f"refund of {order} failed: gateway down"
        return FORMS[form](ToolMessage(said, tool_call_id=tool_call_id, status="error"))

    model = scripted([call("refund_by_command", {"order": "A1"}, "r1"), AIMessage("Refunded.")])
    g = StateGraph(WithLast)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([refund_by_command]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    cb = AgentDebugCallback(dbg, success_check=lambda s: "the refund never went through")
    g.compile().invoke({"messages": [HumanMessage("refund A1")]}, {"callbacks": [cb]})
    (result,) = of_type(cb.trajectory(), EventType.TOOL_RESULT)
    assert result.error is not None and "gateway down" in result.error.message
    assert result.metadata["tool_call_id"] == "r1"
    report = cb.reports[0]
    assert "gateway down" in report.summary
    assert any(f.mode_id == "system.tool_error" for f in report.findings)


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
    # run without the call's id, it is still the model's call (by tool and arguments)
    (decision, _) = of_type(run, EventType.LLM_RESPONSE)[:2]
    assert calls[0].parent_id == decision.id and calls[0].agent_name == "agent"
    assert calls[0].metadata["tool_call_id"] == "call_0"
    assert calls[0].metadata["matched_by"] == "name and arguments"
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


@tool(response_format="content_and_artifact")
def search(q: str) -> tuple[str, dict[str, Any]]:
    """Search the policy documents."""
    return "found 2 docs", {"docs": [{"id": "DOC-17"}, {"id": "DOC-99"}]}


def test_a_tools_artifact_is_kept_beside_what_the_model_was_shown(dbg: AgentDebug) -> None:
    """A ``content_and_artifact`` tool: the model sees the text, the app keeps the
    documents; the record keeps both (the documents are often the evidence)."""
    model = scripted([call("search", {"q": "refunds"}, "s1"), AIMessage("No refunds.")])
    cb = AgentDebugCallback(dbg)
    agent_loop(model, ToolNode([search])).invoke(
        {"messages": [HumanMessage("refund policy?")]}, {"callbacks": [cb]}
    )
    (result,) = of_type(cb.trajectory(), EventType.TOOL_RESULT)
    assert result.output == "found 2 docs"
    assert result.metadata["artifact"] == {"docs": [{"id": "DOC-17"}, {"id": "DOC-99"}]}


@pytest.mark.parametrize("again", ["RetryPolicy", "invoke(None)", "resume"])
def test_a_call_a_node_runs_by_its_arguments_again_is_still_the_models(
    dbg: AgentDebug, again: str
) -> None:
    """The node that runs the calls by their arguments runs one again: a
    ``RetryPolicy`` attempt, an ``invoke(None)`` after the failure, the resume of an
    interrupt inside the tool. The call answered once is matched again (not filed
    under the tool node), and the resume names the paused call."""
    from langgraph.types import RetryPolicy

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
    import threading
    import time

    from langgraph.types import Send

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
    the first one's that failed, so that failure is not taken as resolved."""

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
    assert "not an order id" in (report.summary or "")
