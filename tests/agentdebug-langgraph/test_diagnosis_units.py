"""A LangGraph pipeline whose extracting model copied a tool's "450 lb" as
``{"max_load_kg": 450}``: the free tier blames that model's node, not the tool's
node before it, nor the report that relayed the figure."""

from __future__ import annotations

import json
from typing import Any, TypedDict

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from lg_graphs import scripted


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

    g = StateGraph(Hoist)
    for name, node in (("fetch", fetch), ("extract", extract), ("report", report)):
        g.add_node(name, node)
    g.add_edge(START, "fetch")
    g.add_edge("fetch", "extract")
    g.add_edge("extract", "report")
    g.add_edge("report", END)
    callback = AgentDebugCallback(
        dbg,
        success_check=lambda s: 200 <= s["max_load_kg"] <= 210 or "the max load is ~204 kg",
    )
    g.compile().invoke({"question": "Can it lift my 300 kg block?"}, {"callbacks": [callback]})
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
