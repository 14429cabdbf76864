"""Failure shapes of LangGraph graphs the free tier names: a model that copied a
tool's "450 lb" as ``{"max_load_kg": 450}`` (not the tool's node before it, nor the
report that relayed the figure), a critic that rejected every revised draft until
the recursion limit (its first rejection, not its last call), a planner that dropped
the user's budget, and an agent that acted on the first page of a paginated result."""

from __future__ import annotations

import json
from typing import Any, TypedDict

import pytest
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from lg_graphs import call, chain, scripted


@tool
def spec_sheet(model: str) -> str:
    """The manufacturer's spec sheet of a hoist."""
    return f"Model {model} hoist. Lift height 6 m. Max rated load: 450 lb. Voltage 230 V."


class Hoist(TypedDict, total=False):
    question: str
    spec: str
    max_load_kg: float
    answer: str


def test_a_figure_copied_with_the_wrong_unit_is_blamed_on_the_model_that_copied_it(
    dbg: AgentDebug,
) -> None:
    extractor = scripted([AIMessage(content='{"max_load_kg": 450}')])
    reporter = scripted([AIMessage(content="It lifts up to 450 kg: your 300 kg block is fine.")])

    def fetch(state: Hoist) -> dict[str, Any]:
        return {"spec": spec_sheet.invoke({"model": "HX-20"})}

    def extract(state: Hoist) -> dict[str, Any]:
        reply = extractor.invoke([HumanMessage(f"The max load in kg as JSON:\n{state['spec']}")])
        return {"max_load_kg": json.loads(str(reply.content))["max_load_kg"]}

    def report(state: Hoist) -> dict[str, Any]:
        reply = reporter.invoke([HumanMessage(f"Max load (kg): {state['max_load_kg']}")])
        return {"answer": reply.content}

    callback = AgentDebugCallback(
        dbg,
        success_check=lambda s: 200 <= s["max_load_kg"] <= 210 or "the max load is ~204 kg",
    )
    graph = chain(Hoist, fetch, extract, report)
    graph.invoke({"question": "Can it lift my 300 kg block?"}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "extract",
        2,
        "observation.output_misread",
    )
    assert found.fix is not None and found.fix.directive == (
        "At step 2, extract: fetch gave '450 lb', in lb; convert it (450 lb = 204.1 kg) "
        "instead of writing 'max_load_kg: 450'."
    )


class Draft(TypedDict, total=False):
    brief: str
    draft: str
    critique: str


def test_a_critic_that_rejected_every_revision_is_blamed_at_its_first_rejection(
    dbg: AgentDebug,
) -> None:
    writer = scripted(
        [AIMessage(content=f"Cold rain, draft {n}, on the tin roofs") for n in range(9)]
    )
    critic = scripted(
        [AIMessage(content=f"REVISE: line {n} has the wrong word count.") for n in range(9)]
    )

    def write(state: Draft) -> dict[str, Any]:
        return {
            "draft": writer.invoke(
                [HumanMessage(f"{state['brief']} {state.get('critique')}")]
            ).content
        }

    def critique(state: Draft) -> dict[str, Any]:
        return {"critique": critic.invoke([HumanMessage(state["draft"])]).content}

    g = StateGraph(Draft)
    g.add_node("write", write)
    g.add_node("critique", critique)
    g.add_edge(START, "write")
    g.add_edge("write", "critique")
    g.add_conditional_edges(
        "critique", lambda s: END if s["critique"].startswith("APPROVED") else "write"
    )
    callback = AgentDebugCallback(dbg)
    with pytest.raises(GraphRecursionError):
        g.compile().invoke({"brief": "a haiku"}, {"callbacks": [callback], "recursion_limit": 8})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "critique",
        2,
        "verification.incorrect_verification",
    )
    assert root.rationale.startswith("critique rejected all 4 drafts write wrote")


class Trip(TypedDict, total=False):
    request: str
    tasks: list[dict[str, Any]]
    picks: list[dict[str, Any]]
    itinerary: str


def test_a_planner_that_dropped_the_users_budget_is_blamed(dbg: AgentDebug) -> None:
    """The user's "max 120 EUR per night" went into the planner's prompt and out of
    nothing it wrote; the search and the reply that came after only followed it."""
    planner = scripted(
        [AIMessage(content='[{"city": "Lisbon", "nights": 2, "max_price_eur": null}]')]
    )
    writer = scripted([AIMessage(content="Two nights at Memmo Alfama in Lisbon, 245 EUR a night.")])

    def plan(state: Trip) -> dict[str, Any]:
        reply = planner.invoke([HumanMessage(f"Plan hotel searches as JSON: {state['request']}")])
        return {"tasks": json.loads(str(reply.content))}

    def search(state: Trip) -> dict[str, Any]:
        return {"picks": [{"name": "Memmo Alfama", "price_eur": 245}]}

    def compose(state: Trip) -> dict[str, Any]:
        reply = writer.invoke([HumanMessage(f"Hotels: {state['picks']}. Write the itinerary.")])
        return {"itinerary": reply.content}

    def within_budget(state: Trip) -> bool | str:
        over = [p["name"] for p in state["picks"] if p["price_eur"] > 120]
        return not over or f"hotels over the 120 EUR/night budget were chosen: {over}"

    callback = AgentDebugCallback(dbg, success_check=within_budget)
    request = "Hotels in Lisbon for 2 nights, max 120 EUR per night, free cancellation."
    chain(Trip, plan, search, compose).invoke({"request": request}, {"callbacks": [callback]})
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == ("plan", 1, "memory.context_loss")
    assert found.fix is not None and found.fix.directive.startswith("At step 1, plan: carry '120'")


STALE = ["T-4410", "T-4417", "T-4431", "T-4436", "T-4502", "T-4519", "T-4523"]


def test_an_agent_that_acted_on_the_first_page_of_a_result_is_blamed(dbg: AgentDebug) -> None:
    closed: set[str] = set()

    @tool
    def list_stale(page: int = 1) -> str:
        """Stale tickets, four a page."""
        more = page * 4 < len(STALE)
        return json.dumps(
            {"tickets": STALE[(page - 1) * 4 : page * 4], "next_page": page + 1 if more else None}
        )

    @tool
    def close(ids: list[str]) -> str:
        """Close tickets."""
        closed.update(ids)
        return f"closed {len(ids)}"

    model = scripted(
        [
            call("list_stale", {"page": 1}, "c1"),
            call("close", {"ids": STALE[:4]}, "c2"),
            AIMessage(content="Done: I closed all the stale tickets."),
        ]
    )
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("tools", ToolNode([list_stale, close]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")

    def all_closed(state: Any) -> bool | str:
        left = [t for t in STALE if t not in closed]
        return not left or f"still open: {', '.join(left)}"

    callback = AgentDebugCallback(dbg, success_check=all_closed)
    g.compile().invoke(
        {"messages": [("user", "Close every stale ticket.")]}, {"callbacks": [callback]}
    )
    (found,) = callback.reports
    root = found.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "agent",
        3,
        "observation.poor_retrieval",
    )
