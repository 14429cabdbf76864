"""Rerun of LangGraph's prebuilt agent: from its wrong tool choice, and from the
``pre_model_hook`` that makes the model's input (also in a later round)."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.errors import AgentDebugError
from agentdebug.rerun import closed_loop
from agentdebug.schema import DiagnosticReport, Fix, Hypothesis
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_graphs import (
    ToolBindingFake,
    agent_loop,
    call,
    lookup_order,
    lookup_order_by_email,
    order_found,
    prebuilt_agent,
    scripted,
    wrong_then_right,
)
from rerun_support import assert_branch_of, failed_run, new_nodes, verified_branch


def test_closed_loop_reruns_the_prebuilt_agent_from_its_wrong_tool_choice(
    dbg: AgentDebug,
) -> None:
    model = ToolBindingFake(messages=iter(wrong_then_right()))
    graph = prebuilt_agent(model, [lookup_order_by_email, lookup_order], InMemorySaver())
    cb = failed_run(dbg, graph, "t-prebuilt")
    original = cb.trajectory()
    assert cb.reports[0].root_cause is not None
    assert cb.reports[0].root_cause.agent_name == "agent"
    branch = verified_branch(dbg, graph, cb)
    assert branch.outcome.final_answer == "Order A123 costs $42.00."
    assert_branch_of(branch, original, 1)
    assert [e.input for e in branch.events if e.type is EventType.TOOL_CALL] == [
        {"order_id": "A123"}
    ]
    assert new_nodes(branch) == ["agent", "tools", "agent"]


PROMPTS: list[Any] = []  # what HeedsDirective was sent, call by call


class HeedsDirective(ToolBindingFake):
    """Looks the order up by e-mail (wrong) until ``needed`` more user messages (the
    directives) are in its prompt, then by id; then answers from the tool's result."""

    needed: int = 1

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        from langchain_core.messages import ToolMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        PROMPTS.append(messages)
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage("Order A123 costs $42.00." if last.status != "error" else "Done.")
        elif sum(isinstance(m, HumanMessage) for m in messages) > self.needed:
            reply = call("lookup_order", {"order_id": "A123"}, "ok")
        else:
            reply = call("lookup_order_by_email", {"email": "A123"}, "bad")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def test_a_prebuilt_agent_with_a_pre_model_hook_is_rerun_from_the_hook(dbg: AgentDebug) -> None:
    """A ``pre_model_hook`` that returns ``llm_input_messages`` makes the model's
    input from the messages. Forked after it, the blamed agent step would read the
    input the hook made before, without the directive; the fork is made before the
    hook, which runs again, and the model sees the directive."""
    model = HeedsDirective(messages=iter([]))
    graph = prebuilt_agent(
        model,
        [lookup_order_by_email, lookup_order],
        InMemorySaver(),
        pre_model_hook=lambda s: {"llm_input_messages": s["messages"][-6:]},
    )
    cb = failed_run(dbg, graph, "t-hook")
    cause = cb.reports[0].root_cause
    assert cause is not None and cause.agent_name == "agent"
    PROMPTS.clear()
    branch = verified_branch(dbg, graph, cb)
    assert new_nodes(branch)[:2] == ["pre_model_hook", "agent"]
    first_prompt = PROMPTS[0]
    assert sum(isinstance(m, HumanMessage) for m in first_prompt) == 2  # the directive


def test_a_later_round_reruns_a_branch_from_its_first_node_the_pre_model_hook(
    dbg: AgentDebug,
) -> None:
    """A model that needs telling twice: the first branch starts at the hook and
    still fails; the second round blames
    that branch's agent step, whose hook is the branch's first node (its checkpoint
    is the first fork). It is forked again before the hook, so the hook makes the
    model's input with the second directive, and the run passes."""
    model = HeedsDirective(messages=iter([]), needed=2)
    graph = prebuilt_agent(
        model,
        [lookup_order_by_email, lookup_order],
        InMemorySaver(),
        pre_model_hook=lambda s: {"llm_input_messages": s["messages"][-8:]},
    )
    cb = failed_run(dbg, graph, "t-hook-rounds")
    original = cb.trajectory()
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found)
    PROMPTS.clear()
    result = closed_loop(
        original, debugger=dbg, executor=executor, report=cb.reports[0], policy="auto"
    )
    assert result.status == "succeeded" and len(result.attempts) == 2
    store = dbg.store
    assert store is not None
    first, second = (store.load_trajectory(a.branch_id or "") for a in result.attempts)
    assert first.outcome.status is OutcomeStatus.FAILURE and first.parent_id == original.id
    assert second.outcome.status is OutcomeStatus.SUCCESS and second.parent_id == first.id
    assert new_nodes(second)[:2] == ["pre_model_hook", "agent"]
    assert second.outcome.final_answer == "Order A123 costs $42.00."


def test_a_tool_node_blamed_for_an_outage_is_rerun_as_it_was_and_verified(
    dbg: AgentDebug,
) -> None:
    """The refund service is down once; the diagnosis blames the tool node (an
    outage: "retry later"). A directive message after the model's tool call would
    leave the call unanswered (tools_condition would route to END), and a ToolNode
    reads none anyway: the branch reruns the tool step as it was, a retry, and the
    outage is verified (before, the rerun was refused: no fork could keep the tool
    node pending)."""
    from agentdebug_langgraph import AgentDebugCallback
    from langchain_core.tools import tool
    from langgraph.prebuilt import ToolNode

    down = [True]

    @tool
    def issue_refund(order_id: str) -> str:
        """Refund an order."""
        if down.pop() if down else False:
            raise ConnectionError("503 Service Unavailable: payment service")
        return f"refunded {order_id}"

    model = scripted([call("issue_refund", {"order_id": "A1"}, "c1"), AIMessage("Done.")] * 2)
    graph = agent_loop(model, ToolNode([issue_refund], handle_tool_errors=True), InMemorySaver())

    def refunded(state: Any) -> bool | str:
        said = [m.content for m in state["messages"] if m.type == "tool"]
        return any("refunded" in str(s) for s in said) or "no refund was issued"

    cb = AgentDebugCallback(dbg, success_check=refunded)
    graph.invoke(
        {"messages": [HumanMessage("Refund A1")]},
        {"configurable": {"thread_id": "outage"}, "callbacks": [cb]},
    )
    report = cb.reports[0]
    root = report.root_cause
    assert root is not None and root.agent_name == "tools"
    assert root.mode_id == "system.service_unavailable"
    seen: list[list[str]] = []

    def person(plan: Any) -> tuple[bool, str]:
        seen.append(list(plan.notes))
        return True, "ok"

    result = closed_loop(cb.trajectory(), debugger=dbg, report=report, policy=person)
    assert result.status == "succeeded", result.detail
    assert result.verified_by_rerun is True
    # whoever approves it is told that the directive will not be given
    assert any("its step is rerun as it was (a retry), without the directive" in n for n in seen[0])
    store = dbg.store
    assert store is not None
    branch = store.load_trajectory(result.final_run_id or "")
    fork = branch.metadata["langgraph"]["fork"]
    assert fork["directive"].startswith("not given: tools runs the model's tool calls")
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    # it says so where it shows: no empty input, and no directive it was not given
    (forked,) = [e for e in branch.events if e.metadata.get("langgraph_event") == "fork"]
    assert forked.input is None and forked.metadata["retry"] is True
    assert branch.metadata["branch"]["directive"] == ""
    from agentdebug.report import render_run

    assert "(rerun from step 2: no directive given, a retry)" in render_run(branch)
    # the call run again is filed under the model's decision from before the fork
    (decision,) = [
        e
        for e in branch.events
        if e.type is EventType.LLM_RESPONSE and "inherited_from" in e.metadata
    ]
    (again,) = [
        e
        for e in branch.events
        if e.type is EventType.TOOL_CALL and "inherited_from" not in e.metadata
    ]
    assert (again.parent_id, again.agent_name) == (decision.id, "agent")


def custom_tools(tools: list[Any]) -> Any:
    """A tools node of the app's own: it runs the last model message's calls."""
    from langchain_core.messages import ToolMessage

    by = {t.name: t for t in tools}

    def run_tools(state: Any) -> dict[str, Any]:
        asked = state["messages"][-1].tool_calls
        said = [
            ToolMessage(str(by[c["name"]].invoke(c["args"])), tool_call_id=c["id"]) for c in asked
        ]
        return {"messages": said}

    return run_tools


@pytest.mark.parametrize("shape", ["sub-agent", "sub-agent, own tools node", "model in a tool"])
def test_a_step_inside_a_tool_is_refused_before_the_gate_not_retried_unchanged(
    dbg: AgentDebug, shape: str
) -> None:
    """A supervisor's tool asks a quant (a graph the tool invokes, or a model it
    calls), which gets a figure wrong. A fork can only rerun the tools node with the
    calls the model asked for, so a directive to the quant reaches no one: the rerun
    is refused before the gate, naming the step to rerun from instead (before, the
    branch redid the mistake unchanged as "a retry", and the right blame read as
    refuted; with a tools node of the app's own, it was refused after the gate for
    want of a state patch)."""
    from langchain_core.tools import tool
    from langgraph.prebuilt import ToolNode

    wrong = scripted([AIMessage("100 EUR = 180.50 USD")])
    quant = agent_loop(wrong, ToolNode([lookup_order]))

    @tool
    def ask_quant(question: str) -> str:
        """Ask the quant team."""
        if shape == "model in a tool":
            return str(wrong.invoke([HumanMessage(question)]).content)
        reply = quant.invoke({"messages": [HumanMessage(question)]})
        return str(reply["messages"][-1].content)

    supervisor = scripted(
        [call("ask_quant", {"question": "100 EUR in USD?"}, "s1"), AIMessage("It is 180.50 USD.")]
    )
    tools = custom_tools([ask_quant]) if "own" in shape else ToolNode([ask_quant])
    graph = agent_loop(supervisor, tools, InMemorySaver())
    cb = AgentDebugCallback(
        dbg,
        diagnose=False,
        success_check=lambda s: "108.50" in str(s["messages"][-1].content) or "wrong conversion",
    )
    graph.invoke(
        {"messages": [HumanMessage("100 EUR in USD?")]},
        {"callbacks": [cb], "configurable": {"thread_id": "t-quant"}},
    )
    run = cb.trajectory()
    inner = next(
        e
        for e in run.events
        if e.type is EventType.LLM_RESPONSE and (e.agent_name or "").startswith("tools")
    )
    executor = LangGraphRerunExecutor(graph, debugger=dbg)
    with pytest.raises(AgentDebugError) as refused:
        executor.preflight(run, resume_step=inner.step_index)
    said = str(refused.value)
    if shape == "model in a tool":
        assert (
            "node 'tools' at step 2 ran the tool calls the model asked for without failing" in said
        )
    else:
        assert f"tools/agent at step {inner.step_index} runs inside a tool of node 'tools'" in said
    assert "Rerun from the model call that asked for the tool (step 1)" in said
    # the closed loop asks before the gate: nothing is decided, no branch is made
    report = DiagnosticReport(
        id=f"r-{run.id}",
        trajectory_id=run.id,
        hypotheses=[
            Hypothesis(
                agent_name=inner.agent_name,
                step_index=inner.step_index,
                strategy="t",
                confidence=0.9,
            )
        ],
        fix=Fix(
            directive="use the rate", target_agent=inner.agent_name, target_step=inner.step_index
        ),
    )
    result = closed_loop(run, debugger=dbg, executor=executor, report=report, max_rounds=1)
    assert result.status == "error" and result.detail is not None
    assert "Rerun from the model call that asked for the tool (step 1)" in result.detail
    (attempt,) = result.attempts
    assert attempt.decision is None and attempt.branch_id is None


@pytest.mark.parametrize("failure", ["outage", "bad argument"])
def test_an_outage_a_sub_agent_behind_a_tool_met_is_retried_and_verified(
    dbg: AgentDebug, failure: str
) -> None:
    """The payments agent a tool asks finds its service down: a retry of the tools
    node runs it again, which is the outage's fix (before, a step inside a tool was
    refused whether or not it had failed). An error a retry would meet again (the
    sub-agent's bad argument) is refused as a step inside a tool."""
    from langchain_core.tools import tool
    from langgraph.prebuilt import ToolNode

    down = [True]

    @tool
    def issue_refund(order_id: str) -> str:
        """Refund an order."""
        if down.pop() if down else False:
            if failure == "bad argument":
                raise ValueError(f"unknown order id {order_id!r}")
            raise ConnectionError("503 Service Unavailable: payment service")
        return f"refunded {order_id}"

    asked = call("issue_refund", {"order_id": "A1"}, "c1")
    inner = agent_loop(
        scripted(
            [asked, AIMessage("refund failed: service down"), asked, AIMessage("refunded A1")]
        ),
        ToolNode([issue_refund], handle_tool_errors=True),
    )

    @tool
    def ask_payments(question: str) -> str:
        """Ask the payments agent."""
        return str(inner.invoke({"messages": [HumanMessage(question)]})["messages"][-1].content)

    outer = scripted(
        [call("ask_payments", {"question": "refund A1"}, "s1"), AIMessage("Done.")] * 2
    )
    graph = agent_loop(outer, ToolNode([ask_payments]), InMemorySaver())

    def refunded(state: Any) -> bool | str:
        said = [str(m.content) for m in state["messages"] if m.type == "tool"]
        return any("refunded" in s for s in said) or "no refund was issued"

    cb = AgentDebugCallback(dbg, success_check=refunded)
    graph.invoke(
        {"messages": [HumanMessage("Refund A1")]},
        {"callbacks": [cb], "configurable": {"thread_id": "t-pay"}},
    )
    run = cb.trajectory()
    if failure == "bad argument":
        inner = next(e for e in run.events if e.type is EventType.TOOL_RESULT and e.error)
        executor = LangGraphRerunExecutor(graph, debugger=dbg)
        with pytest.raises(AgentDebugError, match="runs inside a tool of node 'tools'"):
            executor.preflight(run, resume_step=inner.step_index)
        return
    root = cb.reports[0].root_cause
    assert root is not None and root.mode_id == "system.service_unavailable"
    result = closed_loop(run, debugger=dbg, report=cb.reports[0], policy="auto")
    assert result.status == "succeeded" and result.verified_by_rerun is True, result.detail
