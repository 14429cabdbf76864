"""What a run's events are linked to when LangGraph's shapes blur it: one model
object shared by two nodes (which node gave the final answer), and LangGraph's own
``__start__`` task (no agent's step)."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from agentdebug import AgentDebug, EventType
from agentdebug_langgraph import AgentDebugCallback
from events_support import of_type
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    classification: str


def test_the_final_answer_is_the_later_nodes_when_one_model_object_answered_both(
    dbg: AgentDebug,
) -> None:
    """One chat model shared by two nodes (``llm = ChatX()``), a fake that hands out
    the same message object each time: the final answer, in ``messages``, is the
    ``reply`` node's; it was filed under ``classify``, whose answer went to another
    key (a review's find)."""
    model = FakeMessagesListChatModel(responses=[AIMessage("Done.")] * 4)
    g = StateGraph(Chat)
    g.add_node("classify", lambda s: {"classification": model.invoke(s["messages"]).content})
    g.add_node("reply", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_edge(START, "classify")
    g.add_edge("classify", "reply")
    cb = AgentDebugCallback(dbg, diagnose=False)
    g.compile().invoke(
        {"messages": [HumanMessage("When does my parcel arrive?")]}, {"callbacks": [cb]}
    )
    (answer,) = of_type(cb.trajectory(), EventType.FINAL_ANSWER)
    assert (answer.agent_name, answer.output) == ("reply", "Done.")
    # the mirror case: the later node's answer goes to another key; the one that put it
    # in the messages is still the answer's (a review's find of the first fix)
    g = StateGraph(Chat)
    g.add_node("reply", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("audit", lambda s: {"classification": model.invoke(s["messages"]).content})
    g.add_edge(START, "reply")
    g.add_edge("reply", "audit")
    cb = AgentDebugCallback(dbg, diagnose=False)
    g.compile().invoke(
        {"messages": [HumanMessage("When does my parcel arrive?")]}, {"callbacks": [cb]}
    )
    (answer,) = of_type(cb.trajectory(), EventType.FINAL_ANSWER)
    assert answer.agent_name == "reply"


class Fan(TypedDict):
    items: list[int]
    out: Annotated[list[int], operator.add]


def test_a_send_fan_out_from_start_records_no_start_agent(dbg: AgentDebug) -> None:
    """LangGraph runs its own ``__start__`` task for a conditional edge from START; it
    is no agent's step (before, ``show`` listed ``__start__`` among the agents, and a
    default guess could name it; a review's find)."""
    from langgraph.types import Send

    g = StateGraph(Fan)
    g.add_node("work", lambda s: {"out": [s["items"][0]]})
    g.add_conditional_edges(
        START, lambda s: [Send("work", {"items": [i], "out": []}) for i in s["items"]], ["work"]
    )
    g.add_edge("work", END)
    cb = AgentDebugCallback(dbg, diagnose=False)
    g.compile().invoke({"items": [1, 2], "out": []}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.agent_names() == ["work"]
    assert [e.step_index for e in of_type(run, EventType.AGENT_START)] == [1, 2]
