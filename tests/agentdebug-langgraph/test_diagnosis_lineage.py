"""Diagnosis across nodes: a node that fails on what an earlier node handed it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, MessagesState, StateGraph
from lg_graphs import scripted


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
