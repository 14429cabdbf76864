"""A step that took the wrong record of a list, blamed at the pick, with real graphs:
a node's sort in the wrong order, and a model that picked a namesake contact."""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any, TypedDict

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from lg_graphs import agent_loop, call, chain, scripted

BIDS = [
    {"supplier": "Nordmann Guss GmbH", "unit_price": 41.80, "on_time": 0.97},
    {"supplier": "Kessler Castings", "unit_price": 39.90, "on_time": 0.71},
    {"supplier": "Bayline Foundry", "unit_price": 43.10, "on_time": 0.93},
]


class Sourcing(TypedDict, total=False):
    rfq: str
    scored: list[dict[str, Any]]
    award: dict[str, Any]
    po: str


def test_a_node_that_sorted_the_wrong_way_is_blamed_not_the_po_it_fed(dbg: AgentDebug) -> None:
    writer = scripted([AIMessage(content="PO-66190: Kessler Castings, 4,000 x $39.90")])

    def score(state: Sourcing) -> dict[str, Any]:
        best = min(b["unit_price"] for b in BIDS)
        return {"scored": [
            {**b, "score": round(0.5 * best / b["unit_price"] + 0.5 * b["on_time"], 3)} for b in BIDS
        ]}  # fmt: skip

    def rank(state: Sourcing) -> dict[str, Any]:
        return {"award": sorted(state["scored"], key=lambda b: b["score"])[0]}  # (ascending)

    def draft(state: Sourcing) -> dict[str, Any]:
        said = writer.invoke([HumanMessage(json.dumps(state["award"]))])
        return {"po": said.content}

    def awarded_best(state: Sourcing) -> bool | str:
        best = max(state["scored"], key=lambda b: b["score"])
        return state["award"]["supplier"] == best["supplier"] or (
            f"the award went to {state['award']['supplier']}; the evaluation sheet has "
            f"{best['supplier']} on top at {best['score']}"
        )

    callback = AgentDebugCallback(dbg, success_check=awarded_best)
    chain(Sourcing, score, rank, draft).invoke({"rfq": "RFQ-0412"}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("rank", 2)
    assert root.mode_id == "reflection.flawed_reasoning"
    assert report.fix is not None and report.fix.directive == (
        "At step 2, rank: its code took 'Kessler Castings' from the list where 'Nordmann "
        "Guss GmbH' was wanted; check how it chooses (the sort's order, the key it "
        "compares, the match)."
    )


SENT: list[str] = []


@tool
def search_contacts(name: str) -> str:
    """Find CRM contacts by name."""
    return json.dumps([
        {"id": "C-1047", "name": name, "title": "VP Procurement", "account": "Acme Corp"},
        {"id": "C-2213", "name": name, "title": "Ops Manager", "account": "Acme Freight Ltd"},
    ])  # fmt: skip


@tool
def send_quote(quote_id: str, contact_id: str) -> str:
    """Send a quote to a contact."""
    SENT.append(contact_id)
    return f"Sent {quote_id} to contact {contact_id}."


def test_a_model_that_picked_a_namesake_contact_is_blamed_at_its_pick(dbg: AgentDebug) -> None:
    SENT.clear()
    model = scripted([
        call("search_contacts", {"name": "Jordan Lee"}, "t1"),
        call("send_quote", {"quote_id": "Q-7781", "contact_id": "C-2213"}, "t2"),
        AIMessage(content="Done: Q-7781 went to Jordan Lee."),
    ])  # fmt: skip

    def reached(state: dict[str, Any]) -> bool | str:
        return SENT == ["C-1047"] or "Jordan Lee at Acme Corp says he never received the quote"

    callback = AgentDebugCallback(dbg, success_check=reached)
    graph = agent_loop(model, ToolNode([search_contacts, send_quote]))
    ask = "Send quote Q-7781 to Jordan Lee at Acme Corp."
    graph.invoke({"messages": [HumanMessage(ask)]}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", 3)
    assert root.mode_id == "observation.output_misread"
    assert report.fix is not None and "'C-2213' where the run wanted 'C-1047'" in (
        report.fix.directive
    )


class Docs(TypedDict):
    messages: Annotated[list[Any], add_messages]
    summaries: Annotated[list[str], operator.add]


def test_of_a_send_fan_outs_workers_the_one_the_reason_singles_out_is_blamed(
    dbg: AgentDebug,
) -> None:
    """A map-reduce over three documents, the last worker's summary empty: every
    summary reaches the answer, and the reason ("missing the revenue") singles out
    the worker that did not say it (before, the first worker was blamed, whichever
    went wrong)."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langgraph.graph import START, StateGraph
    from langgraph.types import Send

    said = {"doc-0": "revenue 7M", "doc-1": "revenue 7M", "doc-2": "(nothing relevant)"}

    def worker(state: dict[str, str]) -> dict[str, list[str]]:
        doc = state["doc"]
        model = GenericFakeChatModel(messages=iter([AIMessage(f"summary of {doc}: {said[doc]}")]))
        return {"summaries": [str(model.invoke([HumanMessage(doc)]).content)]}

    g = StateGraph(Docs)
    g.add_node("worker", worker)
    g.add_node(
        "reduce",
        lambda s: {"messages": [AIMessage("Report: " + " | ".join(sorted(s["summaries"])))]},
    )
    g.add_conditional_edges(START, lambda s: [Send("worker", {"doc": d}) for d in said], ["worker"])
    g.add_edge("worker", "reduce")

    def check(state: dict[str, Any]) -> bool | str:
        said = str(state["messages"][-1].content)
        return said.count("revenue") == 3 or "a summary is missing the revenue"

    cb = AgentDebugCallback(dbg, success_check=check)
    g.compile().invoke(
        {"messages": [HumanMessage("summarize")], "summaries": []}, {"callbacks": [cb]}
    )
    root = cb.reports[0].root_cause
    assert root is not None and root.agent_name == "worker"
    blamed = next(e for e in cb.trajectory().events if e.step_index == root.step_index and e.output)
    assert "nothing relevant" in str(blamed.output)
