"""The graph's state keys and reducers are recorded with the run, and an update the
state never took (a key the graph does not have, a reducer that kept the old value)
is blamed on the node that wrote it, with real graphs."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from lg_graphs import chain, functional_workflow, scripted


def merge_prefs(current: dict[str, Any] | None, update: dict[str, Any] | None) -> dict[str, Any]:
    """Meant to keep the profile's fields the update leaves out; written backwards."""
    return {**(update or {}), **(current or {})}


class Box(TypedDict, total=False):
    change: dict[str, Any]
    prefs: Annotated[dict[str, Any], merge_prefs]
    plan: str


class Chat(MessagesState, total=False):
    results: Annotated[list[str], operator.add]


def test_the_state_s_keys_and_reducers_are_recorded(dbg: AgentDebug) -> None:
    callback = AgentDebugCallback(dbg, diagnose=False)
    chain(Chat, lambda s: {"results": ["a"]}).invoke({"messages": []}, {"callbacks": [callback]})
    schema = callback.trajectory().metadata["state_schema"]
    assert schema == {
        "keys": ["messages", "results"],
        "reducers": {"messages": "add_messages", "results": "add"},
    }
    # the functional API's entrypoint has no state keys a node writes: none recorded
    model = scripted([AIMessage(content="A line.")])
    workflow = functional_workflow(model, None)
    flow = AgentDebugCallback(dbg, diagnose=False)
    workflow.invoke("tea", {"callbacks": [flow]})
    assert "state_schema" not in flow.trajectory().metadata


def test_an_update_a_backwards_reducer_merged_away_is_blamed_on_its_node(
    dbg: AgentDebug,
) -> None:
    planner = scripted([AIMessage(content="Chicken tikka, garlic shrimp, bean tacos.")])

    def load_profile(state: Box) -> dict[str, Any]:
        return {"prefs": {"diet": "omnivore", "exclude": [], "servings": 2}}

    def apply_change(state: Box) -> dict[str, Any]:
        return {"prefs": dict(state["change"])}

    def plan_menu(state: Box) -> dict[str, Any]:
        said = planner.invoke([HumanMessage(f"Three dinners for {state['prefs']}")]).content
        return {"plan": said}

    def followed(state: Box) -> bool | str:
        return "chicken" not in state["plan"].lower() or (
            "the customer changed to vegan, no shellfish, and got chicken and shrimp"
        )

    callback = AgentDebugCallback(dbg, success_check=followed)
    graph = chain(Box, load_profile, apply_change, plan_menu)
    change = {"diet": "vegan", "exclude": ["shellfish"]}
    graph.invoke({"change": change}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index) == ("apply_change", 2)
    assert root.mode_id == "memory.context_loss"
    assert report.fix is not None and report.fix.directive == (
        "At step 2, apply_change: its update of 'prefs' "
        '({"diet":"vegan","exclude":["shellfish"]}) did not reach the state; check the '
        "reducer of 'prefs', merge_prefs: it kept the state's old value over the update."
    )


class Search(TypedDict, total=False):
    query: str
    results: list[str]
    answer: str


def test_an_update_under_a_key_the_state_lacks_is_blamed_on_its_node(dbg: AgentDebug) -> None:
    writer = scripted([AIMessage(content="I found nothing about tea.")])

    def search(state: Search) -> dict[str, Any]:
        return {"result": ["Darjeeling is a black tea", "Sencha is a green tea"]}

    def answer(state: Search) -> dict[str, Any]:
        said = writer.invoke([HumanMessage(f"Answer from {state.get('results', [])}")])
        return {"answer": said.content}

    def answered(state: Search) -> bool | str:
        return "nothing" not in state["answer"] or "the answer says nothing was found"

    callback = AgentDebugCallback(dbg, success_check=answered)
    chain(Search, search, answer).invoke({"query": "tea"}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("search", 1)
    assert "'result', which is not a key of the run's state (the state's key is 'results')" in (
        root.rationale or ""
    )
    assert report.fix is not None and report.fix.directive == (
        "At step 1, search: return the update under 'results', the state's key, not 'result'."
    )


def test_a_node_that_returned_the_whole_list_to_an_add_key_is_blamed(dbg: AgentDebug) -> None:
    class Order(TypedDict, total=False):
        lines: Annotated[list[dict[str, Any]], operator.add]
        cases: int

    def load_order(state: Order) -> dict[str, Any]:
        return {"lines": [{"sku": "OAT-1L-CS", "qty": 12}, {"sku": "CBR-CAN-CS", "qty": 8}]}

    def apply_promos(state: Order) -> dict[str, Any]:  # (the whole list and the promo)
        return {"lines": [*state["lines"], {"sku": "TMB-LOGO", "qty": 1}]}

    def pick(state: Order) -> dict[str, Any]:
        return {"cases": sum(line["qty"] for line in state["lines"] if line["sku"] != "TMB-LOGO")}

    def as_ordered(state: Order) -> bool | str:
        return state["cases"] == 20 or f"the truck dropped {state['cases']} cases; we ordered 20"

    callback = AgentDebugCallback(dbg, success_check=as_ordered)
    g = StateGraph(Order)
    for name, fn in (("load_order", load_order), ("apply_promos", apply_promos), ("pick", pick)):
        g.add_node(name, fn)
    g.add_edge(START, "load_order")
    g.add_edge("load_order", "apply_promos")
    g.add_edge("apply_promos", "pick")
    g.add_edge("pick", END)
    g.compile().invoke({}, {"callbacks": [callback]})
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("apply_promos", 2)
    assert report.fix is not None and "return only the new items under 'lines'" in (
        report.fix.directive
    )
