"""A reflection loop (writer and critic) that runs into the recursion limit because
the writer's model re-emits its draft after each critique: the writer's first
unchanged revision is blamed, not the critic, which hit the limit (before: the
critic at the last step, "step or budget limit exhausted")."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, MessagesState, StateGraph
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
