"""A rerun branch that stops where the original's human approved tool calls
(``interrupt_before=["tools"]``, the usual approval gate): the approval is given to
the branch only for the calls the human was shown, unless ``replay_answers`` says
the same node suffices."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from agentdebug import AgentDebug, OutcomeStatus
from agentdebug.schema import AgentTrajectory, RecoveryPlan, RerunRequest
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from lg_graphs import call, lookup_order, order_found, scripted, tool_agent


def approved_run(dbg: AgentDebug, script: list[BaseMessage]) -> tuple[Any, AgentTrajectory]:
    """A refund agent whose tool calls a human approves: each stop before the tools
    node is passed with ``invoke(None)``."""
    graph = tool_agent(scripted(script), InMemorySaver(), interrupt_before=["tools"])
    cb = AgentDebugCallback(dbg, success_check=order_found, diagnose=False)
    config: Any = {"configurable": {"thread_id": "chat"}, "callbacks": [cb]}
    graph.invoke({"messages": [HumanMessage("refund order A123")]}, config)
    while graph.get_state(config).next:  # the human approves what it shows
        graph.invoke(None, config)
    return graph, cb.trajectory()


WRONG = call("lookup_order_by_email", {"email": "A123"}, "c1")
CLAIM = AIMessage(content="Your refund for order A123 has been processed.")
RIGHT = call("lookup_order", {"order_id": "A123"}, "c2")
DONE = AIMessage(content="Order A123 costs $42.00.")


def rerun(dbg: AgentDebug, graph: Any, run: AgentTrajectory, policy: str) -> AgentTrajectory:
    request = RerunRequest(trajectory=run, resume_step=1, directive="look the order up by its id")
    return LangGraphRerunExecutor(graph, debugger=dbg, replay_answers=policy).rerun(request)


def ran_tools(branch: AgentTrajectory) -> list[str]:
    return [
        str(e.metadata.get("tool_name"))
        for e in branch.events
        if e.type.value == "tool.call" and "inherited_from" not in e.metadata
    ]


def test_an_approval_is_not_given_for_other_tool_calls(dbg: AgentDebug) -> None:
    """The human approved ``lookup_order_by_email``; the corrected branch asks for
    ``lookup_order`` instead and stops before the tools node. Nobody approved that
    call, so the branch ends there, saying which calls wait and which were
    approved (before: it ran them on the human's behalf)."""
    graph, original = approved_run(dbg, [WRONG, CLAIM, RIGHT, DONE])
    assert original.outcome.status is OutcomeStatus.FAILURE
    branch = rerun(dbg, graph, original, "same-question")
    assert branch.outcome.status is OutcomeStatus.UNKNOWN
    reason = branch.outcome.reason or ""
    assert "the branch stopped at an interrupt" in reason
    assert 'lookup_order({"order_id":"A123"}) pending' in reason
    assert 'lookup_order_by_email({"email":"A123"}) run' in reason
    assert ran_tools(branch) == []
    # the gate says what would be given, and for which calls
    executor = LangGraphRerunExecutor(graph, debugger=dbg)
    (note,) = executor.plan_notes(
        original, RecoveryPlan(strategy="t", resume_step=1, directive="x")
    )
    assert "the same tool calls wait" in note
    assert "go on (invoke(None)) past the stop before 'tools', running " in note
    assert 'lookup_order_by_email({"email":"A123"})' in note
    # the branch's thread waits there: a person can approve it
    thread = branch.metadata["langgraph"]["fork"]["thread_id"]
    waiting = graph.get_state({"configurable": {"thread_id": thread}})
    assert waiting.next == ("tools",)
    assert waiting.values["messages"][-1].tool_calls[0]["name"] == "lookup_order"


def test_the_same_node_policy_passes_other_calls_and_says_so(dbg: AgentDebug) -> None:
    """``replay_answers="same-node"``: the approval passes the branch's own calls
    (a sandboxed tool), and the resume says what the human approved then."""
    graph, original = approved_run(dbg, [WRONG, CLAIM, RIGHT, DONE])
    branch = rerun(dbg, graph, original, "same-node")
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    assert ran_tools(branch) == ["lookup_order"]
    (resume,) = [e for e in branch.events if e.metadata.get("replayed_from")]
    assert resume.metadata["question_matches"] is False
    assert resume.metadata["original_question"] == [
        {"name": "lookup_order_by_email", "args": {"email": "A123"}}
    ]


@pytest.mark.parametrize("policy", ["same-question", "same-node"])
def test_an_approval_of_the_very_same_calls_is_given(dbg: AgentDebug, policy: str) -> None:
    """The branch asks for the calls the human approved (ids aside): it is passed
    as the original was, and runs to its end."""
    first = call("lookup_order", {"order_id": "A123"}, "c1")
    graph, original = approved_run(dbg, [first, CLAIM, RIGHT, DONE])
    assert original.outcome.status is OutcomeStatus.SUCCESS  # (it looked the order up)
    branch = rerun(dbg, graph, original, policy)
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    (resume,) = [e for e in branch.events if e.metadata.get("replayed_from")]
    assert resume.metadata.get("question_matches") is not False
    tool_results = [m for m in graph.get_state(
        {"configurable": {"thread_id": branch.metadata["langgraph"]["fork"]["thread_id"]}}
    ).values["messages"] if isinstance(m, ToolMessage)]  # fmt: skip
    assert [m.name for m in tool_results] == ["lookup_order"]


class Reviewed(MessagesState):
    summary: str
    notes: Annotated[list[AnyMessage], add_messages]


@pytest.mark.parametrize("shape", ["a summary for the approver", "a second list of messages"])
def test_the_approved_calls_are_read_alike_on_both_sides(dbg: AgentDebug, shape: str) -> None:
    """A node between the agent and the stop asks a model to sum the pending call
    up for the approver (its answer asks for no tool), or the state keeps a list
    of notes beside the conversation: the branch that asks for the very calls the
    human approved is given the approval (before: read as "none" on one side, and
    refused)."""
    summed = shape == "a summary for the approver"
    explainer = scripted([AIMessage("The agent wants to look order A123 up.")] * 4)

    def build(model: Any) -> Any:
        def agent(state: Reviewed) -> dict[str, Any]:
            noted = [] if summed else [AIMessage("agent turn noted")]
            return {"messages": [model.invoke(state["messages"])], "notes": noted}

        def explain(state: Reviewed) -> dict[str, Any]:
            return {"summary": str(explainer.invoke(state["messages"]).content) if summed else ""}

        g = StateGraph(Reviewed)
        g.add_node("agent", agent)
        g.add_node("explain", explain)
        g.add_node("tools", ToolNode([lookup_order]))
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", tools_condition, {"tools": "explain", END: END})
        g.add_edge("explain", "tools")
        g.add_edge("tools", "agent")
        return g.compile(checkpointer=InMemorySaver(), interrupt_before=["tools"])

    right = call("lookup_order", {"order_id": "A123"}, "c1")
    graph = build(scripted([right, AIMessage("I could not help."), right, DONE]))
    cb = AgentDebugCallback(dbg, success_check=order_found, diagnose=False)
    config: Any = {"configurable": {"thread_id": "chat"}, "callbacks": [cb]}
    graph.invoke({"messages": [HumanMessage("price of A123?")], "notes": []}, config)
    while graph.get_state(config).next:
        graph.invoke(None, config)
    original = cb.trajectory()
    branch = rerun(dbg, graph, original, "same-question")
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    assert ran_tools(branch) == ["lookup_order"]


def test_a_branch_that_ends_at_a_stop_after_its_last_node_is_judged(dbg: AgentDebug) -> None:
    """``interrupt_after=["agent"]``: LangGraph stops after the agent's final answer
    too, with nothing left to run, which the original read as its end. So does the
    branch (before: it waited there for an answer the original's human never gave,
    and ended unjudged)."""
    graph = tool_agent(scripted([WRONG, CLAIM, RIGHT, DONE]), InMemorySaver(),
                       interrupt_after=["agent"])  # fmt: skip
    cb = AgentDebugCallback(dbg, success_check=order_found, diagnose=False)
    config: Any = {"configurable": {"thread_id": "chat"}, "callbacks": [cb]}
    graph.invoke({"messages": [HumanMessage("refund order A123")]}, config)
    while graph.get_state(config).next:
        graph.invoke(None, config)
    original = cb.trajectory()
    assert original.outcome.status is OutcomeStatus.FAILURE
    branch = rerun(dbg, graph, original, "same-node")
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
