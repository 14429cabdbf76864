"""A customer-support agent graph that refunds orders, with a scripted chat model.

The graph is the usual LangGraph tool loop: an ``agent`` node asks the model what
to do, a ``tools`` node (LangGraph's ``ToolNode``) runs the tools it calls, and a
conditional edge loops until the model answers without a tool call.

The scripted model makes one early mistake: for "refund order A123" it first
looks the order up *by e-mail* (``lookup_order_by_email(email="A123")``), which
fails, and then tells the customer the refund went through although no refund
was issued. That is the failure agentdebug has to explain: the symptom is the
false claim at the end, the decisive error is the first tool choice.

When the conversation holds a correction (a human message after the request,
such as the directive agentdebug injects at a rerun), the model chooses the
right tool (``lookup_order``) and completes the refund.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

REQUEST = "Please refund my order A123, it arrived broken."
REFERENCE_ANSWER = "Refund of $42.00 issued for order A123"
ORDERS = {"A123": {"email": "dana@example.com", "amount": 42.00, "status": "delivered"}}


@tool
def lookup_order_by_email(email: str) -> str:
    """Find a customer's most recent order from their e-mail address."""
    if "@" not in email:
        raise ValueError(f"'{email}' is not an e-mail address")
    for order_id, order in ORDERS.items():
        if order["email"] == email:
            return f"order {order_id}: ${order['amount']:.2f}, {order['status']}"
    return "no order for this e-mail address"


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up by its id (such as A123)."""
    order = ORDERS.get(order_id)
    if order is None:
        raise KeyError(f"order {order_id} does not exist")
    return f"order {order_id}: ${order['amount']:.2f}, {order['status']}"


@tool
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order (the amount must be the order's amount)."""
    order = ORDERS.get(order_id)
    if order is None or abs(order["amount"] - amount) > 0.005:
        raise ValueError(f"cannot refund ${amount:.2f} for order {order_id}")
    return f"refunded ${amount:.2f} for order {order_id}"


TOOLS = [lookup_order_by_email, lookup_order, issue_refund]


class ScriptedSupportModel(BaseChatModel):
    """Answers from the conversation, deterministically (no network, no model)."""

    @property
    def _llm_type(self) -> str:
        return "scripted-support-model"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedSupportModel:
        return self  # it knows its tools already

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._decide(messages))])

    def _decide(self, messages: list[BaseMessage]) -> AIMessage:
        request = next((str(m.content) for m in messages if isinstance(m, HumanMessage)), "")
        found = re.search(r"\b[A-Z]\d{3}\b", request)
        order_id = found.group(0) if found else "?"
        last = messages[-1]
        if isinstance(last, ToolMessage):
            if last.status == "error":
                # The mistake that shows: the failed lookup is glossed over.
                return AIMessage(
                    content=f"Your refund for order {order_id} has been processed successfully."
                )
            if last.name == "lookup_order":
                amount = float(re.search(r"\$([\d.]+)", str(last.content)).group(1))  # type: ignore[union-attr]
                return _call("issue_refund", {"order_id": order_id, "amount": amount}, "c3")
            if last.name == "issue_refund":
                amount = re.search(r"\$[\d.]+", str(last.content))
                return AIMessage(
                    content=f"Refund of {amount.group(0) if amount else '?'} issued "
                    f"for order {order_id}."
                )
        corrected = any(isinstance(m, HumanMessage) for m in messages[1:])
        if corrected:
            return _call("lookup_order", {"order_id": order_id}, "c2")
        # The decisive error: the order id is passed as an e-mail address.
        return _call("lookup_order_by_email", {"email": order_id}, "c1")


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


MODEL = ScriptedSupportModel()


def agent(state: MessagesState) -> dict[str, Any]:
    return {"messages": [MODEL.invoke(state["messages"])]}


def refund_issued(state: dict[str, Any]) -> bool | str:
    """The success check: a refund tool call succeeded in this run."""
    for message in state.get("messages", []):
        if (
            isinstance(message, ToolMessage)
            and message.name == "issue_refund"
            and message.status != "error"
        ):
            return True
    return "no refund was issued (issue_refund never succeeded)"


def checkpoint_path() -> Path:
    home = Path(os.environ.get("AGENTDEBUG_HOME", ".agentdebug"))
    home.mkdir(parents=True, exist_ok=True)
    return home / "langgraph-checkpoints.db"


def build_graph(checkpointer: Any = None) -> Any:
    """The compiled graph. Without a checkpointer given, a SQLite one in the
    agentdebug home, so that a stored run can be rerun from another process
    (this is the ``graph_factory`` the example records with each run)."""
    if checkpointer is None:
        try:
            from langgraph.checkpoint.sqlite import SqliteSaver
        except ImportError:
            raise SystemExit(
                "this example keeps its graph's checkpoints in SQLite: pip install "
                '"./packages/agentdebug-langgraph[sqlite]" (langgraph-checkpoint-sqlite), '
                "or run it with python3 dev.py run agentdebug-langgraph examples/langgraph/run.py"
            ) from None

        checkpointer = SqliteSaver(sqlite3.connect(checkpoint_path(), check_same_thread=False))
    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(TOOLS, handle_tool_errors=True))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)
