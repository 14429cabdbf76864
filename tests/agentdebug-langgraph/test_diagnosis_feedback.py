"""A reflection loop (writer and critic) that runs into the recursion limit because
the writer's model re-emits its draft after each critique: the writer's first
unchanged revision is blamed, not the critic, which hit the limit (before: the
critic at the last step, "step or budget limit exhausted"); and a supervisor that
sends the work back to its researcher after the findings came in, until the limit:
its first repeat is blamed, not the last."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from lg_graphs import scripted

DRAFT = "Remote work raises productivity by 13%, according to a large study."
CRITIQUE = "REVISE: cite the source (a URL) for the 13% claim."


def test_the_writer_that_ignores_the_critique_is_blamed_not_the_critic(dbg: AgentDebug) -> None:
    writer_model = scripted([AIMessage(DRAFT) for _ in range(10)])
    critic_model = scripted([AIMessage(CRITIQUE) for _ in range(10)])

    def writer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [writer_model.invoke(state["messages"])]}

    def critic(state: MessagesState) -> dict[str, Any]:
        draft = state["messages"][-1].content
        said = critic_model.invoke([SystemMessage("APPROVE or REVISE: <fix>"), HumanMessage(draft)])
        return {"messages": [HumanMessage(str(said.content), name="critic")]}

    def again(state: MessagesState) -> str:
        return END if str(state["messages"][-1].content).startswith("APPROVE") else "writer"

    g = StateGraph(MessagesState)
    g.add_node("writer", writer)
    g.add_node("critic", critic)
    g.add_edge(START, "writer")
    g.add_edge("writer", "critic")
    g.add_conditional_edges("critic", again, ["writer", END])
    cb = AgentDebugCallback(dbg)
    with pytest.raises(GraphRecursionError):
        g.compile().invoke(
            {"messages": [HumanMessage("One sentence on remote work productivity.")]},
            {"callbacks": [cb], "recursion_limit": 8},
        )
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("writer", 3)
    assert "writer's model gave the same reply at step 3 as at step 1" in (root.rationale or "")
    assert report.fix is not None and report.fix.directive.startswith(
        "At step 3, writer: the reply repeated the one at step 1 word for word, though the "
        f"input had changed ('{CRITIQUE}')."
    )


def test_a_supervisor_looping_its_researcher_is_blamed_at_its_first_repeat(
    dbg: AgentDebug,
) -> None:
    findings = "Findings: the EU AI Act entered into force on 1 Aug 2024."
    boss = scripted([AIMessage("next: researcher") for _ in range(10)])
    research = scripted([AIMessage(findings) for _ in range(10)])

    def supervisor(state: MessagesState) -> Command[Literal["researcher", "__end__"]]:
        said = str(boss.invoke(state["messages"]).content)
        return Command(goto=said.split(": ")[1], update={"messages": [AIMessage(said)]})

    def researcher(state: MessagesState) -> Command[Literal["supervisor"]]:
        said = research.invoke(state["messages"])
        return Command(goto="supervisor", update={"messages": [said]})

    g = StateGraph(MessagesState)
    g.add_node("supervisor", supervisor)
    g.add_node("researcher", researcher)
    g.add_edge(START, "supervisor")
    cb = AgentDebugCallback(dbg)
    with pytest.raises(GraphRecursionError):
        g.compile().invoke(
            {"messages": [HumanMessage("A 3-line brief on the EU AI Act.")]},
            {"callbacks": [cb], "recursion_limit": 7},
        )
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("supervisor", 3)
    assert report.fix is not None and report.fix.directive == (
        f"At step 3, supervisor: the reply repeated 'next: researcher' (as at step 1), though "
        f"{findings!r} had come in, and the run looped on it until its step limit. Route on "
        "what came back: to the next step, or to the end, not to the same one again."
    )
