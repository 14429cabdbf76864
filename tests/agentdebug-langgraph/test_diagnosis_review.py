"""Human-in-the-loop: a reviewer's plain "no" at an interrupt, and the run doing the
declined action anyway, is blamed on who overruled the reviewer: the node that
read the answer and routed on it, or the model that called the tool after being
told not to. Before, the free tier named nothing in the first run and a default
guess in the second."""

from __future__ import annotations

from typing import Any

from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from lg_graphs import call, scripted


class Refund(MessagesState):
    amount: int
    done: list[str]


def _review_graph() -> Any:
    def review(state: Refund) -> Command[Any]:
        answer = interrupt({"question": f"Issue a refund of ${state['amount']}?"})
        return Command(goto="refund" if answer else "cancel")  # ("no" is true)

    g = StateGraph(Refund)
    g.add_node("review", review, destinations=("refund", "cancel"))
    g.add_node("refund", lambda s: {"done": ["refunded"]})
    g.add_node("cancel", lambda s: {"done": ["cancelled"]})
    g.add_edge(START, "review")
    g.add_edge("refund", END)
    g.add_edge("cancel", END)
    return g.compile(checkpointer=InMemorySaver())


def _cancelled(state: dict[str, Any]) -> bool | str:
    return state["done"] == ["cancelled"] or f"the run ended {state['done']}"


def _reviewed(dbg: AgentDebug, answer: Any) -> AgentDebugCallback:
    graph = _review_graph()
    config: Any = {"configurable": {"thread_id": "t1"}}
    cb = AgentDebugCallback(dbg, success_check=_cancelled)
    graph.invoke({"messages": [], "amount": 42, "done": []}, {**config, "callbacks": [cb]})
    graph.invoke(Command(resume=answer), {**config, "callbacks": [cb]})
    return cb


def test_a_node_that_routes_past_the_reviewer_s_no_is_blamed(dbg: AgentDebug) -> None:
    cb = _reviewed(dbg, "no")
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.step_index, root.mode_id) == (
        "review",
        3,
        "planning.instruction_noncompliance",
    )
    assert root.rationale == (
        "the reviewer answered 'no' to 'Issue a refund of $42?' at step 2, and the run ran "
        "refund at step 4"
    )
    assert [e.quote for e in root.evidence] == ["no", "Issue a refund of $42?"]
    assert report.fix is not None
    assert report.fix.directive == (
        "At step 3, review: the reviewer answered 'no' to 'Issue a refund of $42?', and the "
        "run ran refund at step 4 all the same. Treat that answer as a rejection: do not go on to "
        "what was declined (in code, a non-empty string such as 'no' is true: compare the "
        "answer, do not test its truth)."
    )


def test_a_structured_rejection_is_one_too_and_an_edit_is_not(dbg: AgentDebug) -> None:
    cb = _reviewed(dbg, {"approved": False})
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == "review"
    # an answer with something to act on is not a plain rejection: nothing is found
    cb = _reviewed(dbg, {"approved": False, "note": "refund $40 instead"})
    (report,) = cb.reports
    assert not [f for f in report.findings if f.rule_id == "rejection_overruled"]


def test_a_model_that_calls_the_declined_tool_after_the_no_is_blamed(dbg: AgentDebug) -> None:
    @tool
    def refund_order(order_id: str) -> str:
        """Refund an order."""
        return f"refunded {order_id}"

    model = scripted(
        [
            call("refund_order", {"order_id": "A123"}, "c1"),
            call("refund_order", {"order_id": "A123"}, "c2"),  # (told not to)
            AIMessage("Refunded order A123."),
        ]
    )

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def gate(state: MessagesState) -> Command[Any]:
        last = state["messages"][-1]
        if not getattr(last, "tool_calls", None):
            return Command(goto=END)
        if any(isinstance(m, HumanMessage) and m.id == "verdict" for m in state["messages"]):
            return Command(goto="tools")  # (asked once per thread)
        answer = interrupt({"question": "Run refund_order for order A123?"})
        verdict = HumanMessage(f"The reviewer answered: {answer}", id="verdict")
        if answer == "yes":
            return Command(goto="tools", update={"messages": [verdict]})
        rejected = ToolMessage("rejected by the reviewer", tool_call_id=last.tool_calls[0]["id"])
        return Command(goto="agent", update={"messages": [rejected, verdict]})

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("gate", gate, destinations=("tools", "agent", END))
    g.add_node("tools", ToolNode([refund_order]))
    g.add_edge(START, "agent")
    g.add_edge("agent", "gate")
    g.add_edge("tools", "agent")
    graph = g.compile(checkpointer=InMemorySaver())

    def not_refunded(state: MessagesState) -> bool | str:
        ran = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name]
        return not ran or "refunded although the reviewer said no"

    config: Any = {"configurable": {"thread_id": "t2"}}
    cb = AgentDebugCallback(dbg, success_check=not_refunded)
    graph.invoke({"messages": [HumanMessage("Refund A123")]}, {**config, "callbacks": [cb]})
    graph.invoke(Command(resume="no"), {**config, "callbacks": [cb]})
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None
    assert root.agent_name == "agent" and root.mode_id == "planning.instruction_noncompliance"
    assert root.rationale is not None and root.rationale.startswith(
        "the reviewer answered 'no' to 'Run refund_order for order A123?' at step"
    )
    assert "and the run called refund_order at step" in root.rationale
    run = cb.trajectory()
    resume = next(e for e in run.events if e.metadata.get("langgraph_event") == "resume")
    assert root.step_index == resume.step_index + 2  # (the model call after the gate)


def test_a_gate_that_lets_the_declined_call_through_to_a_tool_node_is_blamed(
    dbg: AgentDebug,
) -> None:
    """The gate routes on the answer's truth to LangGraph's ToolNode: the declined call
    (asked by the model before the question) runs after the "no". Before, nothing was
    found: the call is filed under the model's earlier step, and "tools" is named in
    no question."""

    @tool
    def refund_order(order_id: str) -> str:
        """Refund an order."""
        return f"refunded {order_id}"

    model = scripted([call("refund_order", {"order_id": "A123"}, "c1"), AIMessage("Refunded.")])

    def gate(state: MessagesState) -> Command[Any]:
        last = state["messages"][-1]
        if not getattr(last, "tool_calls", None):
            return Command(goto=END)
        answer = interrupt({"question": "Run refund_order for order A123?"})
        return Command(goto="tools" if answer else END)  # ("no" is true)

    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node("gate", gate, destinations=("tools", END))
    g.add_node("tools", ToolNode([refund_order]))
    g.add_edge(START, "agent")
    g.add_edge("agent", "gate")
    g.add_edge("tools", "agent")
    graph = g.compile(checkpointer=InMemorySaver())

    def not_refunded(state: MessagesState) -> bool | str:
        ran = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        return not ran or "refunded although the reviewer said no"

    config: Any = {"configurable": {"thread_id": "t3"}}
    cb = AgentDebugCallback(dbg, success_check=not_refunded)
    graph.invoke({"messages": [HumanMessage("Refund A123")]}, {**config, "callbacks": [cb]})
    graph.invoke(Command(resume="no"), {**config, "callbacks": [cb]})
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.mode_id) == (
        "gate",
        "planning.instruction_noncompliance",
    )
    assert (root.rationale or "").endswith(
        "and the run ran the declined refund_order call (asked at step 1)"
    )
    assert report.fix is not None and "a non-empty string such as 'no' is true" in (
        report.fix.directive
    )


def test_a_node_that_sends_the_draft_from_before_the_reviewer_s_edit_is_blamed(
    dbg: AgentDebug,
) -> None:
    """The review stores the edit under `final_text`; `send` reads `draft`. Before,
    the free tier named the drafting model call, by default."""
    draft_text = "Hi Sam, the renewal is at $48,000/yr, effective 1 June. Best, Alex"
    edited = "Hi Sam, the renewal is at $42,000/yr (as agreed), effective 1 June. Best, Alex"
    model = scripted([AIMessage(draft_text)])

    class Mail(MessagesState):
        draft: str
        final_text: str
        sent: str

    def review(state: Mail) -> dict[str, Any]:
        decision = interrupt({"question": "Approve or edit the e-mail", "draft": state["draft"]})
        return {"final_text": decision["text"] if decision["action"] == "edit" else state["draft"]}

    g = StateGraph(Mail)
    g.add_node("draft", lambda s: {"draft": str(model.invoke(s["messages"]).content)})
    g.add_node("review", review)
    g.add_node("send", lambda s: {"sent": s["draft"]})  # (not final_text)
    g.add_edge(START, "draft")
    g.add_edge("draft", "review")
    g.add_edge("review", "send")
    graph = g.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t4"}}
    cb = AgentDebugCallback(dbg, success_check=lambda s: s["sent"] == edited or "not the edit")
    graph.invoke({"messages": [HumanMessage("Write Sam")]}, {**config, "callbacks": [cb]})
    graph.invoke(Command(resume={"action": "edit", "text": edited}), {**config, "callbacks": [cb]})
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None
    assert (root.agent_name, root.mode_id) == ("send", "coordination.ignored_input")
    assert report.fix is not None and report.fix.directive.endswith(
        "read it from where the review puts it."
    )


def test_a_no_written_down_and_honoured_by_the_next_node_is_no_overruling(
    dbg: AgentDebug,
) -> None:
    """review stores ``approved = answer == "yes"`` and a plain edge runs publish,
    which reads it and publishes nothing: the graph did what the reviewer said, so
    the rule that blames an overruled "no" stays quiet; a publish that ignores the
    flag is blamed itself."""

    def graph(publish: Any) -> Any:
        def review(state: dict[str, Any]) -> dict[str, Any]:
            return {"approved": interrupt({"question": "publish?"}) == "yes"}

        g = StateGraph(Post)
        g.add_node("review", review)
        g.add_node("publish", publish)
        g.add_edge(START, "review")
        g.add_edge("review", "publish")
        g.add_edge("publish", END)
        return g.compile(checkpointer=InMemorySaver())

    def run(publish: Any) -> Any:
        cb = AgentDebugCallback(
            dbg, success_check=lambda s: s.get("status") == "published" or "not published"
        )
        app, cfg = graph(publish), {"callbacks": [cb], "configurable": {"thread_id": "t"}}
        app.invoke({"draft": "Q3 results"}, cfg)
        app.invoke(Command(resume="no"), cfg)
        return cb.reports[-1]

    honoured = run(lambda s: {"status": "published" if s["approved"] else "not published"})
    assert not [f for f in honoured.findings if f.rule_id == "rejection_overruled"]
    ignored = run(lambda s: {"status": "published to the blog", "log": "no errors"})
    (finding,) = [f for f in ignored.findings if f.rule_id == "rejection_overruled"]
    assert finding.agent_name == "publish"
    assert ignored.root_cause.agent_name == "publish"


class Post(MessagesState, total=False):
    draft: str
    approved: bool
    status: str
