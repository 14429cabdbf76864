#!/usr/bin/env python3
"""A LangGraph rerun's cost against the length of the thread it is on.

    python3 dev.py run agentdebug-langgraph benchmarks/langgraph_rerun_thread.py [--turns 0,100,200] [--savers memory,sqlite]

A chat thread holds ``N`` earlier turns (a model call and an answer each, five
checkpoints a turn) before a turn that fails: the agent looks an order up with the
wrong tool and claims success. The closed loop diagnoses it and reruns it from the
blamed step (one round, five steps). Printed: the seconds the loop takes at each
length, and its ratio to the loop on a fresh thread in the same run. A rerun should
not read the thread's whole history; it did (every checkpoint of the thread was
loaded to find the subgraphs that keep their own), so its cost grew with the square
of the thread's length: at 200 turns 1.33 s (92x the fresh thread's) on
``InMemorySaver`` and 1.37 s (70x) on ``SqliteSaver``, against 0.08 s (5.5x and
3.9x: the two checkpoints copied hold the whole conversation) once only the
subgraphs' namespaces are read.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from agentdebug import AgentDebug
from agentdebug.rerun import closed_loop
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def lookup_order_by_email(email: str) -> str:
    """Find a customer's latest order by e-mail address."""
    raise ValueError(f"'{email}' is not an e-mail address")


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up by its id."""
    return f"order {order_id}: $42.00"


def _call(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c-{name}"}])


class Clerk(BaseChatModel):
    """Chats on earlier turns; on the order's turn picks the wrong tool, unless a
    directive follows the request."""

    @property
    def _llm_type(self) -> str:
        return "clerk"

    def bind_tools(self, tools: Any, **kw: Any) -> Clerk:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage("Order A123 costs $42.00.")
        elif "A123" not in str(messages[-1].content) and "previous attempt" not in str(
            last.content
        ):
            reply = AIMessage(f"Noted ({len(messages)} messages so far).")
        elif "previous attempt" in str(last.content):
            reply = _call("lookup_order", {"order_id": "A123"})
        else:
            reply = _call("lookup_order_by_email", {"email": "A123"})
        return ChatResult(generations=[ChatGeneration(message=reply)])


def found(state: dict[str, Any]) -> bool | str:
    said = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    return any(m.name == "lookup_order" for m in said) or "the order was never looked up"


def agent(saver: Any) -> Any:
    model = Clerk()
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([lookup_order_by_email, lookup_order], handle_tool_errors=True))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver)


def loop_seconds(turns: int, saver_kind: str, home: Path) -> float:
    dbg = AgentDebug(home)
    saver = (
        InMemorySaver()
        if saver_kind == "memory"
        else SqliteSaver(sqlite3.connect(home / "c.db", check_same_thread=False))
    )
    graph = agent(saver)
    config: Any = {"configurable": {"thread_id": "chat"}}
    for i in range(turns):
        graph.invoke({"messages": [HumanMessage(f"hello {i}")]}, config)
    cb = AgentDebugCallback(dbg, success_check=found)
    graph.invoke({"messages": [HumanMessage("Refund order A123")]}, {**config, "callbacks": [cb]})
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=found)
    started = time.perf_counter()
    result = closed_loop(
        cb.trajectory(), debugger=dbg, executor=executor, report=cb.reports[0], max_rounds=1
    )
    took = time.perf_counter() - started
    if not result.verified_by_rerun:
        raise SystemExit(f"the rerun did not verify the diagnosis at {turns} turns")
    dbg.close()
    return took


if __name__ == "__main__":
    import logging

    logging.disable(logging.WARNING)  # (each failing turn's diagnosis is logged)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", default="0,100,200")
    parser.add_argument("--savers", default="memory,sqlite")
    args = parser.parse_args()
    for kind in args.savers.split(","):
        base = None
        for n in (int(t) for t in args.turns.split(",")):
            with tempfile.TemporaryDirectory() as home:
                took = loop_seconds(n, kind, Path(home))
            base = base if base is not None else took
            print(f"{kind:7s} {n:4d} earlier turns: closed loop {took:.2f} s ({took / base:.1f}x)")
