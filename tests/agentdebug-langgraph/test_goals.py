"""A run's goal, which `agentdebug list`, `show` and a diagnosis's title show, when
the graph's state holds no conversation: its input as the timeline writes a payload."""

from __future__ import annotations

from typing import Any, TypedDict

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langgraph.graph import START, StateGraph


def test_a_pipeline_without_a_conversation_reads_its_input_as_its_goal(
    dbg: AgentDebug,
) -> None:
    """A graph whose state holds no messages: its goal, which ``agentdebug list``,
    ``show`` and a diagnosis's title show, is its input as the timeline writes a
    payload (it was Python's repr of the dict: ``{'building': {'name': ...``)."""

    class Billing(TypedDict):
        building: dict[str, Any]
        total: float

    g = StateGraph(Billing)
    g.add_node("bill", lambda s: {"total": 6.5 * s["building"]["sqft"]})
    g.add_edge(START, "bill")
    cb = AgentDebugCallback(dbg)
    g.compile().invoke(
        {"building": {"name": "Cedar Point Plaza", "sqft": 48000}, "total": 0.0},
        {"callbacks": [cb]},
    )
    assert cb.trajectory().goal == 'building={name="Cedar Point Plaza", sqft=48000}, total=0.0'
    long = {"building": {"name": "Cedar Point Plaza " * 30, "sqft": 1}, "total": 0.0}
    g.compile().invoke(long, {"callbacks": [cb]})
    goal = cb.trajectory().goal
    assert goal.startswith('building={name="Cedar Point Plaza Cedar') and len(goal) <= 200

    class Docs(TypedDict):  # (records with a "content" key: not chat messages)
        content: str
        name: str
        docs: list[dict[str, str]]

    d = StateGraph(Docs)
    d.add_node("index", lambda s: {"docs": []})
    d.add_edge(START, "index")
    d.compile().invoke(
        {"content": "Q3 draft", "name": "report.docx", "docs": [{"name": "a.txt", "content": "x"}]},
        {"callbacks": [cb]},
    )
    assert cb.trajectory().goal == (
        'content="Q3 draft", name=report.docx, docs=[{name=a.txt, content=x}]'
    )
