"""Diagnosis across nodes: a node that fails on what an earlier node handed it, and
an answer that covers a failed tool with a figure no tool gave, or confirms what a
tool failed to do; a node that drops its subgraph's result."""

from __future__ import annotations

import json
from typing import Any, TypedDict

import pytest
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from lg_graphs import call, scripted


class Refund(MessagesState):
    order_id: str
    amount: Any


def test_a_node_that_chokes_on_a_value_an_earlier_node_wrote_blames_the_writer(
    dbg: AgentDebug,
) -> None:
    """The model of `extract` gives the amount in words; `charge` raises converting it.
    Before: `charge` was blamed, and told to "retry once", which fails the same way
    from the same state."""
    model = scripted([AIMessage(content='{"order_id": "A123", "amount": "forty-two dollars"}')])

    def extract(state: Refund) -> dict[str, Any]:
        reply = model.invoke([("system", "Give order_id and amount (a number) as JSON.")])
        return json.loads(str(reply.content))

    def charge(state: Refund) -> dict[str, Any]:
        cents = int(float(state["amount"]) * 100)
        return {"messages": [AIMessage(f"Refunded {cents / 100:.2f}")]}

    g = StateGraph(Refund)
    g.add_node("extract", extract)
    g.add_node("charge", charge)
    g.add_edge(START, "extract")
    g.add_edge("extract", "charge")
    cb = AgentDebugCallback(dbg)
    with pytest.raises(ValueError):
        g.compile().invoke(
            {"messages": [HumanMessage("Refund $42 on order A123")]}, {"callbacks": [cb]}
        )

    (report,) = cb.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("extract", 1)
    assert "wrote 'forty-two dollars', which charge could not use at step 2" in (
        root.rationale or ""
    )
    assert report.fix is not None
    assert report.fix.directive == (
        "At step 1, extract: the output gave 'forty-two dollars', which charge could not "
        "use at step 2 (\"ValueError: could not convert string to float: 'forty-two "
        "dollars'\"). Give that value in the form charge expects."
    )
    # a value the user gave is not the writer's: the same error over the user's words
    # stays with the step that raised
    model = scripted([AIMessage(content='{"order_id": "A123", "amount": "forty-two dollars"}')])
    cb = AgentDebugCallback(dbg)
    with pytest.raises(ValueError):
        g.compile().invoke(
            {"messages": [HumanMessage("Refund forty-two dollars on order A123")]},
            {"callbacks": [cb]},
        )
    root = cb.reports[0].root_cause
    assert root is not None and root.agent_name == "charge"


def test_an_answer_that_invents_the_figure_a_failed_tool_was_to_give_is_blamed(
    dbg: AgentDebug,
) -> None:
    """The model looks the order up with the id the user gave; the order service
    fails; the model answers with a price all the same. Before: the call was blamed
    and told to retry, though it was right; the fault is the invented price."""

    @tool
    def order_total(order_id: str) -> str:
        """The total of an order."""
        raise ConnectionError(f"the orders service is unreachable (asked for {order_id})")

    model = scripted(
        [call("order_total", {"order_id": "A123"}, "c1"), AIMessage("Order A123 cost $24.00.")]
    )
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([order_total], handle_tool_errors=True))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")

    def total_right(state: MessagesState) -> bool | str:
        return "$42.00" in str(state["messages"][-1].content) or "the total is not $42.00"

    cb = AgentDebugCallback(dbg, success_check=total_right)
    g.compile().invoke(
        {"messages": [HumanMessage("How much did order A123 cost?")]}, {"callbacks": [cb]}
    )
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "agent",
        3,
        "reflection.hallucinated_fact",
    )
    assert report.fix is not None
    assert report.fix.directive.startswith(
        "At step 3, agent: the answer gave $24.00, which no tool returned (order_total "
        'failed at step 2: "'
    )


def test_a_reply_confirming_a_booking_the_card_issuer_declined_is_blamed(
    dbg: AgentDebug,
) -> None:
    """`book_flight` returns that the card was declined; the model tells the user the
    flight is booked. Before: the call was blamed and told to "retry once", though
    it was right; the fault is the reply that confirmed what did not happen."""
    declined = "ERROR 402: card ending 4411 was declined by issuer; no seat was held."

    @tool
    def book_flight(flight: str, passenger: str) -> str:
        """Book a flight for a passenger."""
        return declined

    model = scripted(
        [
            call("book_flight", {"flight": "LH 401", "passenger": "M. Okafor"}, "c1"),
            AIMessage("You're all set! LH 401 on 14 March is booked for M. Okafor."),
        ]
    )
    g = StateGraph(MessagesState)
    g.add_node("travel_agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([book_flight]))
    g.add_edge(START, "travel_agent")
    g.add_conditional_edges("travel_agent", tools_condition)
    g.add_edge("tools", "travel_agent")
    cb = AgentDebugCallback(dbg, success_check=lambda state: "no booking exists")
    g.compile().invoke(
        {"messages": [HumanMessage("Book LH 401 for M. Okafor")]}, {"callbacks": [cb]}
    )
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "travel_agent",
        3,
        "observation.error_ignored",
    )
    assert report.fix is not None
    assert report.fix.directive == (
        'At step 3, travel_agent: the reply says it was done ("LH 401 on 14 March is booked '
        f'for M. Okafor."), but book_flight failed at step 2 ("{declined}"). Say that it '
        "failed and why, and what can be done next, instead of confirming it."
    )
    assert ("travel_agent", 1) not in [(h.agent_name, h.step_index) for h in report.hypotheses]


def test_a_node_that_drops_its_subgraph_s_result_is_blamed(dbg: AgentDebug) -> None:
    """`research` runs a compiled subgraph and reads a key it does not write
    (`summary`, where it wrote `findings`), so `answer` finds nothing. Before: no
    finding, and the subgraph's model call was guessed."""
    found = "Measles cases in the US reached 285 in 2024, the highest since 2019."
    model = scripted([AIMessage(found)])

    class Sub(TypedDict, total=False):
        topic: str
        findings: str

    class Parent(TypedDict, total=False):
        question: str
        notes: str
        answer: str

    sub = StateGraph(Sub)
    sub.add_node("summarize", lambda s: {"findings": str(model.invoke(s["topic"]).content)})
    sub.add_edge(START, "summarize")
    inner = sub.compile()

    def research(state: Parent) -> dict[str, Any]:
        out = inner.invoke({"topic": state["question"]})
        return {"notes": out.get("summary", "")}

    def answer(state: Parent) -> dict[str, Any]:
        return {"answer": state.get("notes") or "Sorry, I found nothing."}

    g = StateGraph(Parent)
    g.add_node("research", research)
    g.add_node("answer", answer)
    g.add_edge(START, "research")
    g.add_edge("research", "answer")
    cb = AgentDebugCallback(dbg, success_check=lambda s: s["answer"] != "Sorry, I found nothing.")
    g.compile().invoke({"question": "US measles cases in 2024?"}, {"callbacks": [cb]})
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "research",
        1,
        "coordination.information_withholding",
    )
    assert report.fix is not None
    assert report.fix.directive.startswith(
        f"At step 1, research: pass on what research/summarize returned (findings: {found!r}): "
        'the update wrote "notes":"" instead.'
    )


def test_a_charge_a_retry_policy_ran_again_after_a_timeout_is_blamed(dbg: AgentDebug) -> None:
    """The gateway's answer times out; the RetryPolicy runs the node again and charges
    a second time. Before: the timeout, retried past, was no fault, and the first
    step was guessed."""
    from langgraph.types import RetryPolicy

    charges: list[int] = []

    @tool
    def gateway_charge(order_id: str, amount_cents: int) -> str:
        """Charge the saved card."""
        charges.append(amount_cents)
        if len(charges) == 1:
            raise TimeoutError("read timeout after 10s waiting for gateway response")
        return f"charge ch_{len(charges)} ok"

    class Order(TypedDict, total=False):
        order_id: str
        charge: str

    def pay(state: Order) -> dict[str, Any]:
        said = gateway_charge.invoke({"order_id": state["order_id"], "amount_cents": 4999})
        return {"charge": str(said)}

    g = StateGraph(Order)
    g.add_node(
        "pay",
        pay,
        retry_policy=RetryPolicy(
            max_attempts=2, initial_interval=0.01, jitter=False, retry_on=TimeoutError
        ),
    )
    g.add_edge(START, "pay")
    cb = AgentDebugCallback(dbg, success_check=lambda s: len(charges) == 1 or "charged twice")
    g.compile().invoke({"order_id": "ord-5510"}, {"callbacks": [cb]})
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.mode_id) == ("pay", "action.repeated_action")
    assert report.fix is not None and "gateway_charge ran again with the same arguments" in (
        report.fix.directive
    )
