"""Capture of tool calls beyond the plain loop: an interrupt inside a tool, a tool
that fails or does not exist, a ``Command`` a tool answers with, tool answers a node
writes itself, arguments that do not parse."""

from __future__ import annotations

import contextlib
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug_langgraph import AgentDebugCallback
from events_support import of_type
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedState, ToolNode, tools_condition
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
    assert pause.output == [{"approve": 42}]  # what it asked (before: nothing, shown blank)
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


@tool
def stock(sku: str) -> str:
    """Units in stock of a SKU."""
    if not sku.startswith("SKU-"):
        raise ValueError("bad sku format")
    return "12 units"


@tool
def transfer_to_boss(
    state: Annotated[dict[str, Any], InjectedState],
    tool_call_id: Annotated[str, InjectedToolCallId],
) -> Command[Any]:
    """Hand back to the boss (as langgraph-supervisor does: the whole history on)."""
    said = ToolMessage("Transferred to boss", name="transfer_to_boss", tool_call_id=tool_call_id)
    return Command(
        goto="boss", graph=Command.PARENT, update={"messages": [*state["messages"], said]}
    )


def test_a_handoff_is_its_own_answer_not_the_history_it_hands_on(dbg: AgentDebug) -> None:
    """A worker's tool fails, the worker calls it again right, then hands back with
    the whole history in the update: the handoff's result is its own answer
    ("Transferred to boss"), not that history, whose old error made it read as a
    failed call (before: "transfer_to_boss failed", an error never resolved); the
    argument error the worker corrected is no candidate for the run's failure."""
    model = scripted(
        [
            call("stock", {"sku": "42"}, "s1"),
            call("stock", {"sku": "SKU-42"}, "s2"),
            call("transfer_to_boss", {}, "t1"),
        ]
    )
    worker = agent_loop(model, ToolNode([stock, transfer_to_boss], handle_tool_errors=True))
    g = StateGraph(MessagesState)
    g.add_node("worker", worker, destinations=("boss",))
    g.add_node("boss", lambda s: {"messages": [AIMessage("We have 12 units of SKU-42.")]})
    g.add_edge(START, "worker")
    g.add_edge("boss", END)
    cb = AgentDebugCallback(dbg, success_check=lambda s: "the units were not reserved")
    g.compile().invoke(
        {"messages": [HumanMessage("Reserve 2 units of SKU-42")]}, {"callbacks": [cb]}
    )
    run = cb.trajectory()
    results = {e.module: e for e in of_type(run, EventType.TOOL_RESULT)}
    handoff = results["transfer_to_boss"]
    assert handoff.error is None and handoff.output == "Transferred to boss"
    assert handoff.metadata["command"] == {
        "goto": "boss",
        "graph": Command.PARENT,
        "updates": ["messages"],
    }
    report = cb.reports[0]
    assert "transfer_to_boss failed" not in report.summary
    assert not [f for f in report.findings if f.event_id == handoff.id]
    # the format error the worker corrected is information, not the run's cause
    (fixed,) = [f for f in report.findings if "bad sku format" in f.message]
    assert fixed.severity.value == "info" and "resolved: the agent's call of stock" in fixed.message
    root = report.root_cause
    assert root is None or "bad sku" not in (root.rationale or "")


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    if not to.endswith("@example.com"):
        raise ValueError(f"unknown recipient domain in {to!r}")
    return f"sent to {to}"


def test_a_call_a_person_edited_at_an_interrupt_is_not_blamed_on_the_model(
    dbg: AgentDebug,
) -> None:
    """LangGraph's "edit the tool call": stop before the tools, ``update_state`` the
    model's message with other arguments, go on. The call runs with the person's
    arguments: it is recorded as edited, with what the model asked, under the node
    that ran it, and a failure of it is not the model's (before, the model's
    correct call was blamed, "call the tool again with arguments that match")."""
    from agentdebug.report import event_line

    model = scripted(
        [call("send_email", {"to": "bob@example.com", "body": "hi"}, "c1"), AIMessage("Done.")]
    )
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([send_email], handle_tool_errors=True))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    graph = g.compile(checkpointer=InMemorySaver(), interrupt_before=["tools"])
    cb = AgentDebugCallback(dbg, success_check=lambda s: "the email was not sent")
    config: Any = {"callbacks": [cb], "configurable": {"thread_id": "edit"}}
    graph.invoke({"messages": [HumanMessage("Email bob hi")]}, config)
    asked = graph.get_state(config).values["messages"][-1]
    edited = AIMessage(
        "",
        id=asked.id,
        tool_calls=[
            {"name": "send_email", "args": {"to": "bob@exmaple.com", "body": "hi"}, "id": "c1"}
        ],
    )
    graph.update_state(config, {"messages": [edited]})
    graph.invoke(None, config)
    run = cb.trajectory()
    (ran,) = of_type(run, EventType.TOOL_CALL)
    assert ran.agent_name == "tools" and ran.input == {"to": "bob@exmaple.com", "body": "hi"}
    assert ran.metadata["edited"] is True
    assert ran.metadata["asked_args"] == {"to": "bob@example.com", "body": "hi"}
    assert "[edited: the model asked" in event_line(ran, 200)
    root = cb.reports[-1].root_cause
    assert root is not None and root.agent_name == "tools"
    assert "arguments were edited after the model asked" in (root.rationale or "")
