"""A tool whose own code crashes on what the user wrote (a real ToolNode loop): the
tools node is blamed with a fix to the tool's code, not the model that passed the
user's SKU on word for word."""

from __future__ import annotations

import pytest
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.prebuilt import ToolNode
from lg_graphs import agent_loop, call, scripted

STOCK = {123: 7}


@tool
def get_stock(sku: str) -> str:
    """Units in stock for a SKU like 'SKU-123'."""
    return f"{STOCK[int(sku)]} units"  # (the bug: 'SKU-' is not stripped)


@pytest.mark.parametrize("handled", [False, True])
def test_a_tool_that_crashes_on_the_user_s_sku_is_blamed_not_the_model(
    dbg: AgentDebug, handled: bool
) -> None:
    """Raised through the graph, or handled by the ToolNode (the error handed to the
    model as the tool's answer, and the model's reply then wrong)."""
    model = scripted(
        [call("get_stock", {"sku": "SKU-123"}, "c1"), AIMessage("SKU-123: stock unknown.")]
    )
    cb = AgentDebugCallback(
        dbg, success_check=lambda s: "7 units" in s["messages"][-1].content or "no count"
    )
    graph = agent_loop(model, ToolNode([get_stock], handle_tool_errors=handled))
    ask = {"messages": [HumanMessage("How many units of SKU-123 are in stock?")]}
    if handled:
        graph.invoke(ask, {"callbacks": [cb]})
    else:
        with pytest.raises(ValueError, match="invalid literal"):
            graph.invoke(ask, {"callbacks": [cb]})
    report = cb.reports[-1]
    assert report.root_cause is not None and report.root_cause.agent_name == "tools"
    assert report.fix is not None and "Fix the tool's code" in report.fix.directive
    assert "Most likely root cause: tools" in report.summary
