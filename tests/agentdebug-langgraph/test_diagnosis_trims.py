"""A node that trimmed the conversation's instructions away, blamed at the trim, with a
real two-turn graph on a checkpointer: the instructions were given in the first turn,
and the run that failed, the second, holds them only in the state it started from."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from lg_graphs import scripted

RULES = (
    "You are Sunbird Airlines' disruption assistant. The delay of SB214 is due to an "
    "air-traffic-control strike. Never promise or estimate compensation amounts: EU261 "
    "claims are assessed by Claims within 14 days."
)


class Chat(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    window: list[Any]


def test_a_window_that_cut_the_system_prompt_in_turn_two_is_blamed(dbg: AgentDebug) -> None:
    model = scripted([
        AIMessage(content="SB214 now departs at 19:40, about five hours late; I'm sorry."),
        AIMessage(content="Yes: EUR 400 compensation, paid within 7 days, no claim needed."),
    ])  # fmt: skip

    def window(state: Chat) -> dict[str, Any]:
        kept: list[Any] = []
        for message in reversed(state["messages"]):  # (the newest that fit; no pinning)
            if sum(len(m.content) for m in kept) + len(message.content) > 240:
                break
            kept.insert(0, message)
        return {"window": kept}

    def assistant(state: Chat) -> dict[str, Any]:
        return {"messages": [model.invoke(state["window"])]}

    g = StateGraph(Chat)
    g.add_node("window", window)
    g.add_node("assistant", assistant)
    g.add_edge(START, "window")
    g.add_edge("window", "assistant")
    g.add_edge("assistant", END)
    graph = g.compile(checkpointer=InMemorySaver())

    def no_promise(state: Chat) -> bool | str:
        said = str(state["messages"][-1].content)
        return "EUR 400" not in said or (
            "she was told she'd get EUR 400 compensation within 7 days; it was an ATC "
            "strike and Claims will reject it"
        )

    callback = AgentDebugCallback(dbg, success_check=no_promise)
    config = {"configurable": {"thread_id": "KX7Q2M"}, "callbacks": [callback]}
    graph.invoke({"messages": [SystemMessage(RULES), HumanMessage("New departure time?")]}, config)
    assert callback.reports == []  # (turn 1 answered within the rules)
    graph.invoke({"messages": [HumanMessage("Ugh. Will I get EU261 compensation?")]}, config)
    (report,) = callback.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("window", 1)
    assert root.mode_id == "memory.context_loss"
    run = callback.trajectory()
    first = next(e for e in run.events if e.type.value == "agent.start")
    assert first.metadata["instructions"] == [RULES]  # (the state's, from turn 1)


def test_a_state_holding_an_odd_system_object_records_every_step(dbg: AgentDebug) -> None:
    from dataclasses import dataclass

    @dataclass
    class Note:  # (an app's own object, typed "system", with no content)
        text: str
        type: str = "system"

    class Plain(TypedDict):
        messages: list[Any]
        n: int

    g = StateGraph(Plain)
    g.add_node("first", lambda s: {"n": s["n"] + 1})
    g.add_node("second", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", END)
    callback = AgentDebugCallback(dbg)
    g.compile().invoke({"messages": [Note("hi")], "n": 0}, {"callbacks": [callback]})
    run = callback.trajectory()
    starts = [e.agent_name for e in run.events if e.type.value == "agent.start"]
    assert starts == ["first", "second"]
