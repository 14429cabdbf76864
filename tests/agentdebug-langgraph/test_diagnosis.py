"""Automatic diagnosis: a failed graph run is explained without the user asking."""

from __future__ import annotations

import contextlib
import logging
import operator
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, DiagnosticReport, EventType, OutcomeStatus
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.errors import GraphRecursionError
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import RetryPolicy
from lg_graphs import (
    PaymentDeclined,
    call,
    failing_graph,
    linear_graph,
    looping_graph,
    order_found,
    quoted_42,
    retried_graph,
    retried_subgraph,
    scripted,
    tool_agent,
    wrong_then_right,
)


def test_a_node_that_raises_is_diagnosed_and_the_same_exception_propagates(
    dbg: AgentDebug, caplog: pytest.LogCaptureFixture
) -> None:
    error = PaymentDeclined("card declined: insufficient funds")
    seen: list[DiagnosticReport] = []
    cb = AgentDebugCallback(dbg, on_report=seen.append)
    with caplog.at_level(logging.WARNING), pytest.raises(PaymentDeclined) as raised:
        failing_graph(error).invoke({"items": [], "out": []}, {"callbacks": [cb]})
    assert raised.value is error
    notes = getattr(error, "__notes__", [])
    assert any(n.startswith("agentdebug diagnosis") for n in notes)
    assert any("During task with name 'charge'" in n for n in notes)  # LangGraph's note kept

    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert run.outcome.error is not None and run.outcome.error.type == "PaymentDeclined"
    errors = [e for e in run.events if e.type is EventType.ERROR]
    assert len(errors) == 1  # recorded at the node, not again for the graph
    assert errors[0].agent_name == "charge" and "card declined" in errors[0].error.message

    assert len(seen) == 1 and cb.reports == seen
    report = seen[0]
    assert report.trajectory_id == run.id and report.tier == "free"
    store = dbg.store
    assert store is not None
    assert [r.id for r in store.load_reports(run.id)] == [report.id]
    assert report.id in caplog.text  # the one-paragraph summary is logged


def test_soft_failure_from_the_success_check_is_diagnosed_without_raising(
    dbg: AgentDebug,
) -> None:
    seen: list[DiagnosticReport] = []
    cb = AgentDebugCallback(dbg, success_check=order_found, on_report=seen.append)
    graph = tool_agent(scripted(wrong_then_right()[:2]))
    out = graph.invoke({"messages": [HumanMessage("Refund order A123")]}, {"callbacks": [cb]})
    assert out["messages"][-1].content.endswith("processed successfully.")
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert run.outcome.reason == "the order was never looked up"
    assert run.outcome.final_answer == out["messages"][-1].content
    (report,) = seen
    root = report.root_cause
    assert root is not None
    # The decisive error is the first tool choice, not the false claim at the end.
    assert (root.agent_name, root.step_index) == ("agent", 1)
    assert report.fix is not None and report.fix.target_step == 1
    assert "verification.premature_success" in report.failure_modes


@pytest.mark.parametrize(
    ("check", "status"),
    [
        (lambda state: True, OutcomeStatus.SUCCESS),
        (lambda state: None, OutcomeStatus.SUCCESS),
        (lambda state: False, OutcomeStatus.FAILURE),
        (lambda state: "n is wrong", OutcomeStatus.FAILURE),
    ],
)
def test_success_check_verdicts(dbg: AgentDebug, check: Any, status: OutcomeStatus) -> None:
    cb = AgentDebugCallback(dbg, success_check=check, diagnose=False)
    linear_graph().invoke({"n": 0, "trail": []}, {"callbacks": [cb]})
    assert cb.trajectory().outcome.status is status
    assert cb.reports == []


def test_an_assertion_in_the_success_check_is_a_failure_with_its_message(dbg: AgentDebug) -> None:
    def check(state: dict[str, Any]) -> None:
        assert state["n"] == 4, "expected four steps"

    cb = AgentDebugCallback(dbg, success_check=check)
    linear_graph().invoke({"n": 0, "trail": []}, {"callbacks": [cb]})
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert (run.outcome.reason or "").startswith("expected four steps")
    assert len(cb.reports) == 1


def test_a_successful_run_is_not_diagnosed(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg, success_check=lambda s: s["n"] == 3)
    linear_graph().invoke({"n": 0, "trail": []}, {"callbacks": [cb]})
    assert cb.reports == []
    store = dbg.store
    assert store is not None and store.load_reports(cb.last_run_id or "") == []


def test_diagnosis_can_be_switched_off(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(PaymentDeclined) as raised:
        failing_graph(PaymentDeclined("no")).invoke({"items": [], "out": []}, {"callbacks": [cb]})
    assert not any(n.startswith("agentdebug") for n in getattr(raised.value, "__notes__", []))
    assert cb.reports == []
    assert cb.trajectory().outcome.status is OutcomeStatus.FAILURE


def test_a_recursion_limit_is_placed_at_the_looping_node_and_classified(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg)
    with pytest.raises(GraphRecursionError):
        looping_graph().invoke({"n": 0, "trail": []}, {"callbacks": [cb], "recursion_limit": 5})
    run = cb.trajectory()
    (error,) = [e for e in run.events if e.type is EventType.ERROR]
    last = [e for e in run.events if e.type is EventType.AGENT_START][-1]
    assert error.module == "langgraph.graph"  # raised by the graph, not by the node
    # with no model call to blame, at the last node the loop ran
    assert (error.agent_name, error.step_index, error.parent_id) == (
        last.agent_name,
        last.step_index,
        last.id,
    )
    (report,) = cb.reports
    assert "planning.step_limit_exhausted" in report.failure_modes
    assert report.root_cause is not None and report.root_cause.agent_name == last.agent_name


def test_a_failing_on_report_callback_is_logged_not_raised(
    dbg: AgentDebug, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(report: DiagnosticReport) -> None:
        raise RuntimeError("user callback bug")

    cb = AgentDebugCallback(dbg, on_report=broken)
    error = PaymentDeclined("declined")
    with caplog.at_level(logging.ERROR), pytest.raises(PaymentDeclined) as raised:
        failing_graph(error).invoke({"items": [], "out": []}, {"callbacks": [cb]})
    assert raised.value is error
    assert "on_report callback failed" in caplog.text
    assert len(cb.reports) == 1


def test_an_error_inside_a_subgraph_is_recorded_once_at_the_inner_node(dbg: AgentDebug) -> None:
    from langgraph.graph import START, StateGraph
    from lg_graphs import Work

    error = PaymentDeclined("inner failure")

    def charge(state: Work) -> dict[str, Any]:
        raise error

    inner = StateGraph(Work)
    inner.add_node("charge", charge)
    inner.add_edge(START, "charge")
    outer = StateGraph(Work)
    outer.add_node("billing", inner.compile())
    outer.add_edge(START, "billing")
    cb = AgentDebugCallback(dbg)
    with pytest.raises(PaymentDeclined) as raised:
        outer.compile().invoke({"items": [], "out": []}, {"callbacks": [cb]})
    assert raised.value is error
    run = cb.trajectory()
    (recorded,) = [e for e in run.events if e.type is EventType.ERROR]
    assert recorded.agent_name == "billing/charge"
    root = cb.reports[0].root_cause
    assert root is not None and root.agent_name == "billing/charge"


def test_retried_attempts_are_linked_and_an_error_a_retry_got_past_is_not_blamed(
    dbg: AgentDebug,
) -> None:
    """LangGraph's RetryPolicy runs a failed task again: each attempt is its own
    step, marked as a retry of the one before, and a timeout the retry got past is
    not the cause of the wrong quote that follows."""
    cb = AgentDebugCallback(dbg, success_check=quoted_42)
    out = retried_graph(failures=2).invoke({"price": 0.0, "out": []}, {"callbacks": [cb]})
    assert out["out"][-1] == "The price is $420.00."
    run = cb.trajectory()
    first, second, third = [
        e for e in run.events if e.agent_name == "fetch" and e.type is EventType.AGENT_START
    ]
    assert "attempt" not in first.metadata
    assert (second.metadata["attempt"], second.metadata["retry_of"]) == (2, first.id)
    assert (third.metadata["attempt"], third.metadata["retry_of"]) == (3, second.id)
    assert [e.parent_id for e in run.events if e.type is EventType.ERROR] == [first.id, second.id]
    assert run.outcome.status is OutcomeStatus.FAILURE
    (report,) = cb.reports
    assert "timed out" not in report.summary
    root = report.root_cause  # (the quote's code wrote the price tenfold, not the timeouts)
    assert root is not None and not root.metadata.get("default_guess")
    assert (root.agent_name, root.mode_id) == ("quote", "reflection.flawed_reasoning")
    assert root.step_index == third.step_index + 1
    resolved = [f for f in report.findings if f.mode_id == "system.timeout"]
    assert len(resolved) == 2 and all(f.severity.value == "info" for f in resolved)


def test_a_tool_error_a_retry_of_its_tool_node_got_past_is_not_blamed(dbg: AgentDebug) -> None:
    """A tool's result is filed under the model call that asked for it, not under
    the tool node's attempt; it names that attempt (``ran_in``), so a timeout the
    next attempt got past is resolved, not the cause of the wrong answer after it."""
    calls = [0]

    @tool
    def fetch_price(item: str) -> str:
        """Fetch an item's price."""
        calls[0] += 1
        if calls[0] == 1:
            raise TimeoutError("price service timed out")
        return f"{item}: $42.00"

    model = scripted([call("fetch_price", {"item": "pen"}, "c1"), AIMessage("pen costs $4.20")])
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    retry = RetryPolicy(max_attempts=3, initial_interval=0.001, retry_on=TimeoutError)
    g.add_node("tools", ToolNode([fetch_price], handle_tool_errors=False), retry_policy=retry)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    cb = AgentDebugCallback(
        dbg, success_check=lambda s: "$42.00" in s["messages"][-1].content or "wrong price"
    )
    g.compile().invoke({"messages": [HumanMessage("price of pen?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    failed = next(e for e in run.events if e.type is EventType.TOOL_RESULT and e.error)
    first_try = next(
        e for e in run.events if e.type is EventType.AGENT_START and e.agent_name == "tools"
    )
    assert failed.metadata["ran_in"] == first_try.id and failed.parent_id != first_try.id
    (report,) = cb.reports
    assert "timed out" not in report.summary
    assert report.root_cause is None or report.root_cause.agent_name != "tools"
    timeouts = [f for f in report.findings if f.mode_id == "system.timeout"]
    assert timeouts and all(f.severity.value == "info" for f in timeouts)


def test_retries_that_run_out_leave_the_error_to_blame(dbg: AgentDebug) -> None:
    cb = AgentDebugCallback(dbg)
    with pytest.raises(TimeoutError):
        retried_graph(failures=5, attempts=2).invoke({"price": 0.0, "out": []}, {"callbacks": [cb]})
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == "fetch"
    assert "timed out" in report.summary
    errors = [e for e in cb.trajectory().events if e.type is EventType.ERROR]
    assert len(errors) == 2  # both attempts, once each


def test_an_exception_raised_again_by_every_attempt_is_recorded_for_each(
    dbg: AgentDebug,
) -> None:
    """A node that raises the same exception object each time (a cached error):
    every attempt's error is recorded, so the retries are not taken as resolved."""
    error = TimeoutError("price service timed out")
    cb = AgentDebugCallback(dbg)
    with pytest.raises(TimeoutError) as raised:
        retried_graph(failures=9, raising=error).invoke(
            {"price": 0.0, "out": []}, {"callbacks": [cb]}
        )
    assert raised.value is error
    run = cb.trajectory()
    starts = [e for e in run.events if e.type is EventType.AGENT_START]
    errors = [e for e in run.events if e.type is EventType.ERROR]
    assert [e.parent_id for e in errors] == [s.id for s in starts]  # one per attempt
    (report,) = cb.reports
    assert report.root_cause is not None and report.root_cause.agent_name == "fetch"
    assert all(f.severity.value != "info" for f in report.findings)


def test_a_retried_subgraph_node_records_both_runs_of_its_inner_node(dbg: AgentDebug) -> None:
    """Retrying a node that runs a subgraph numbers the subgraph's second run in its
    namespace (``stock:<task>|1|lookup:<task>``): its inner nodes are still recorded
    under the retry, and the inner timeout the retry got past is not blamed."""
    cb = AgentDebugCallback(dbg, success_check=lambda s: s["out"][-1] == "in stock")
    retried_subgraph(failures=1).invoke({"items": [], "out": []}, {"callbacks": [cb]})
    run = cb.trajectory()
    starts = [e for e in run.events if e.type is EventType.AGENT_START]
    assert [e.agent_name for e in starts] == [
        "stock",
        "stock/lookup",
        "stock",
        "stock/lookup",
        "reply",
    ]
    first, first_inner, retry, retry_inner, _ = starts
    assert first_inner.parent_id == first.id and retry_inner.parent_id == retry.id
    assert (retry.metadata["attempt"], retry.metadata["retry_of"]) == (2, first.id)
    (error,) = [e for e in run.events if e.type is EventType.ERROR]
    assert error.agent_name == "stock/lookup" and error.parent_id == first_inner.id
    assert run.outcome.status is OutcomeStatus.FAILURE
    (report,) = cb.reports
    (timeout,) = [f for f in report.findings if f.mode_id == "system.timeout"]
    assert timeout.severity.value == "info" and "resolved: attempt 2" in timeout.message
    assert "timed out" not in report.summary


def test_invoking_none_after_a_failure_continues_that_run_linked_to_it(dbg: AgentDebug) -> None:
    """LangGraph's retry after an error: ``invoke(None)`` on the thread runs the
    failed node again from the last checkpoint. The new run says which run it
    continues (and ``show`` prints it), keeps its goal, and a fresh input on the
    thread starts an unlinked run."""
    from agentdebug.report import render_run
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph
    from lg_graphs import Work

    attempts = {"n": 0}

    def charge(state: Work) -> dict[str, Any]:
        attempts["n"] += 1
        if attempts["n"] < 3:
            raise PaymentDeclined(f"declined ({attempts['n']})")
        return {"out": ["charged"]}

    g = StateGraph(Work)
    g.add_node("prepare", lambda s: {"out": ["prepared"]})
    g.add_node("charge", charge)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "charge")
    graph = g.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t-retry"}}
    ids = []
    for inputs in ({"items": ["book"], "out": []}, None, None):
        cb = AgentDebugCallback(dbg, goal="charge the card" if inputs else None, diagnose=False)
        with contextlib.suppress(PaymentDeclined):
            graph.invoke(inputs, {**config, "callbacks": [cb]})
        ids.append(cb.last_run_id)
    first, second, third = (cb.trajectory(i) for i in ids)
    assert "continues" not in first.metadata
    assert second.metadata["continues"] == first.id and third.metadata["continues"] == second.id
    assert second.goal == third.goal == "charge the card"
    assert [e.agent_name for e in third.events if e.type is EventType.AGENT_START] == ["charge"]
    assert third.outcome.status is OutcomeStatus.SUCCESS
    assert f"continues: {second.id}" in render_run(third)
    attempts["n"] = 0
    for _ in range(2):  # a failure, then a new request on the thread: its own run
        cb = AgentDebugCallback(dbg, diagnose=False)
        with pytest.raises(PaymentDeclined):
            graph.invoke({"items": ["x"], "out": []}, {**config, "callbacks": [cb]})
        assert "continues" not in cb.trajectory().metadata


def test_only_the_same_graphs_retry_continues_a_run_and_never_a_late_stop(dbg: AgentDebug) -> None:
    """Two graphs of an app name their threads alike ("1"): one's ``invoke(None)``
    does not continue the other's failure, which its own retry still continues. A
    stop recorded after a newer run on the thread began (an async stream broken
    out of, closed later) is continued by no one. A rerun branch of a continuing
    run is not itself marked continuing."""
    import asyncio

    from agentdebug.schema import RerunRequest
    from agentdebug_langgraph import LangGraphRerunExecutor
    from langgraph.checkpoint.memory import InMemorySaver

    failing = failing_graph(PaymentDeclined("no"), InMemorySaver())
    other = linear_graph(InMemorySaver())
    cb = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(PaymentDeclined):
        failing.invoke(
            {"items": [], "out": []}, {"configurable": {"thread_id": "1"}, "callbacks": [cb]}
        )
    failed = cb.last_run_id
    other.invoke({"n": 0, "trail": []}, {"configurable": {"thread_id": "1"}})  # (unrecorded)
    other.invoke(None, {"configurable": {"thread_id": "1"}, "callbacks": [cb]})
    assert "continues" not in cb.trajectory().metadata
    with pytest.raises(PaymentDeclined):
        failing.invoke(None, {"configurable": {"thread_id": "1"}, "callbacks": [cb]})
    retry = cb.trajectory()
    assert retry.metadata["continues"] == failed
    branch = LangGraphRerunExecutor(failing, debugger=dbg).rerun(
        RerunRequest(trajectory=retry, resume_step=1, directive="x", state_patch={"out": ["x"]})
    )
    assert "continues" not in branch.metadata

    graph = linear_graph(InMemorySaver())
    config: Any = {"configurable": {"thread_id": "s"}, "callbacks": [cb]}

    async def broken_stream() -> None:
        async for _ in graph.astream({"n": 0, "trail": []}, config):
            break  # (the stream's run ends when the generator is closed, later)
        await graph.ainvoke(None, config)
        await graph.ainvoke(None, config)

    asyncio.run(broken_stream())
    runs = [cb.trajectory(i) for i in cb.run_ids[-3:]]
    assert {r.outcome.reason.split(" (")[0] for r in runs} >= {"the run was stopped"}
    assert all("continues" not in r.metadata for r in runs)


def test_a_refused_rerun_on_the_runs_own_thread_keeps_the_retry_linked(dbg: AgentDebug) -> None:
    """``isolate=False`` drops the link only when it forks: refused, the thread
    is as the failed run left it, and ``invoke(None)`` still continues that run."""
    from agentdebug.errors import AgentDebugError
    from agentdebug.schema import RerunRequest
    from agentdebug_langgraph import LangGraphRerunExecutor
    from langgraph.checkpoint.memory import InMemorySaver

    graph = failing_graph(PaymentDeclined("no"), InMemorySaver())
    cb = AgentDebugCallback(dbg, diagnose=False)
    config: Any = {"configurable": {"thread_id": "own"}, "callbacks": [cb]}
    with pytest.raises(PaymentDeclined):
        graph.invoke({"items": [], "out": []}, config)
    failed = cb.trajectory()
    with pytest.raises(AgentDebugError, match="no 'messages' key"):
        LangGraphRerunExecutor(graph, debugger=dbg, isolate=False).rerun(
            RerunRequest(trajectory=failed, resume_step=1, directive="x")
        )
    with pytest.raises(PaymentDeclined):
        graph.invoke(None, config)
    assert cb.trajectory().metadata["continues"] == failed.id


class RateLimited(Exception):
    pass


@pytest.mark.parametrize(
    "recovery", ["with_fallbacks", "with_retry", "two failed tries", "a chain's with_retry"]
)
def test_a_model_error_the_node_recovered_from_is_resolved_not_blamed(
    dbg: AgentDebug, recovery: str
) -> None:
    """The research model is rate limited once; ``with_retry`` tries again, or
    ``with_fallbacks`` asks another model, and the node goes on. The writer then
    gets the answer wrong. The answer that came after names the failed call
    (``retry_of``), so the diagnosis reads the error as resolved: it does not
    blame it, or say the run declared success over it."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Flaky(BaseChatModel):
        fails: int = 1

        @property
        def _llm_type(self) -> str:
            return "flaky"

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            if self.fails:
                self.fails -= 1
                raise RateLimited("429: rate limited")
            reply = AIMessage("Notes: the capital of France is Paris.")
            return ChatResult(generations=[ChatGeneration(message=reply)])

    if recovery == "with_fallbacks":
        research_model: Any = Flaky(fails=5).with_fallbacks([Flaky(fails=0)])
    elif recovery == "a chain's with_retry":  # each try a chain run of its own
        from langchain_core.runnables import RunnableLambda

        research_model = (RunnableLambda(lambda m: m) | Flaky(fails=1)).with_retry(
            stop_after_attempt=2, wait_exponential_jitter=False
        )
    else:
        research_model = Flaky(fails=1 if recovery == "with_retry" else 2).with_retry(
            stop_after_attempt=3, wait_exponential_jitter=False
        )
    writer = scripted([AIMessage("The capital of France is Berlin.")])
    g = StateGraph(MessagesState)
    g.add_node("research", lambda s: {"messages": [research_model.invoke(s["messages"])]})
    g.add_node("write", lambda s: {"messages": [writer.invoke(s["messages"])]})
    g.add_edge(START, "research")
    g.add_edge("research", "write")
    cb = AgentDebugCallback(
        dbg, success_check=lambda s: "Paris" in s["messages"][-1].content or "not Paris"
    )
    g.compile().invoke({"messages": [HumanMessage("Capital of France?")]}, {"callbacks": [cb]})
    run = cb.trajectory()
    *failed, answered = [
        e for e in run.events if e.agent_name == "research" and e.type is EventType.LLM_RESPONSE
    ]
    assert len(failed) == (2 if recovery == "two failed tries" else 1)
    assert all(e.error is not None for e in failed) and answered.error is None
    # each try names the one before it: the answer resolves the whole chain
    assert [e.metadata.get("retry_of") for e in [*failed, answered]] == [
        None,
        *[e.id for e in failed],
    ]
    report = cb.reports[0]
    tried = {e.id for e in failed}
    assert all(f.severity.value == "info" for f in report.findings if f.event_id in tried)
    assert not [f for f in report.findings if f.mode_id == "verification.premature_success"]
    assert report.root_cause is None or report.root_cause.mode_id is None


def test_another_model_call_after_one_that_failed_does_not_resolve_it(dbg: AgentDebug) -> None:
    """A supervisor swallows its planner's error and asks a router model (other
    messages): that answer is not a retry, and the planner's error stands."""
    from langchain_core.language_models import BaseChatModel

    class Down(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "down"

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            raise RateLimited("503: planner unavailable")

    router = scripted([AIMessage("All done: the refund is issued.")])

    def supervise(s: MessagesState) -> dict[str, Any]:
        with contextlib.suppress(RateLimited):
            Down().invoke(s["messages"])
        return {"messages": [router.invoke([HumanMessage("route: refund")])]}

    g = StateGraph(MessagesState)
    g.add_node("supervise", supervise)
    g.add_edge(START, "supervise")
    cb = AgentDebugCallback(dbg, success_check=lambda s: "no refund was issued")
    g.compile().invoke({"messages": [HumanMessage("Refund A1")]}, {"callbacks": [cb]})
    failed, answered = [e for e in cb.trajectory().events if e.type is EventType.LLM_RESPONSE]
    assert failed.error is not None and "retry_of" not in answered.metadata
    report = cb.reports[0]
    assert any(f.event_id == failed.id and f.severity.value == "error" for f in report.findings)


class Order(TypedDict, total=False):
    items: list[str]
    prices: Annotated[list[str], operator.add]
    total: str


def test_the_send_branch_that_answered_differently_is_blamed(dbg: AgentDebug) -> None:
    """Map-reduce: three ``Send`` branches price three items and one says UNKNOWN;
    no rule fires, and the success check's reason quotes the total. The branch
    whose answer the reason singles out is blamed, not the first branch."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langgraph.types import Send

    def price(packet: dict[str, str]) -> dict[str, Any]:
        said = "UNKNOWN" if packet["item"] == "B" else "$10"
        model = FakeMessagesListChatModel(responses=[AIMessage(f"{packet['item']}: {said}")])
        return {"prices": [model.invoke([HumanMessage(f"Price {packet['item']}")]).content]}

    g = StateGraph(Order)
    g.add_node("plan", lambda s: {"items": ["A", "B", "C"]})
    g.add_node("price", price)
    g.add_node("reduce", lambda s: {"total": "; ".join(sorted(s["prices"]))})
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", lambda s: [Send("price", {"item": i}) for i in s["items"]])
    g.add_edge("price", "reduce")

    def all_priced(state: dict[str, Any]) -> bool | str:
        return "UNKNOWN" not in state["total"] or f"bad total {state['total']!r}"

    cb = AgentDebugCallback(dbg, success_check=all_priced)
    g.compile().invoke({"items": []}, {"callbacks": [cb]})
    run = cb.trajectory()
    (report,) = cb.reports
    cause = report.root_cause
    assert cause is not None and cause.agent_name == "price"
    (said_unknown,) = [
        e for e in run.events if e.type is EventType.LLM_RESPONSE and "UNKNOWN" in str(e.output)
    ]
    assert cause.step_index == said_unknown.step_index


def test_an_answer_cut_at_the_models_token_limit_is_found(dbg: AgentDebug) -> None:
    """The model stopped at its output-token limit (``finish_reason: length``): the
    answer reads like one, and is not. Before: not recorded, so nothing said so."""
    cut = AIMessage(
        content="Your refund of $42.00 for order A123 has been",
        response_metadata={"finish_reason": "length", "model_name": "fake"},
    )
    callback = AgentDebugCallback(dbg, success_check=lambda state: "refund was never issued")
    tool_agent(scripted([cut])).invoke(
        {"messages": [HumanMessage(content="Refund order A123")]},
        config={"callbacks": [callback]},
    )
    run = callback.trajectory()
    answer = next(e for e in run.events if e.type is EventType.LLM_RESPONSE)
    assert answer.metadata["finish_reason"] == "length"
    report = callback.reports[-1]
    found = [f for f in report.findings if f.rule_id == "cut_answer"]
    assert [(f.step_index, f.mode_id) for f in found] == [
        (answer.step_index, "system.resource_exhaustion")
    ]
    assert 'ending "…Your refund of $42.00 for order A123 has been"' in found[0].message
