"""Whoever approves a rerun is told which answers a person gave the original run
the branch will be given again on their behalf (the executor's ``plan_notes``,
which the gate shows)."""

from __future__ import annotations

from typing import Any

from agentdebug import AgentDebug, EventType
from agentdebug.rerun import closed_loop
from agentdebug_langgraph import LangGraphRerunExecutor
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command
from test_rerun_interrupts import (
    Refund,
    answered_run,
    ask_once,
    fixing,
    prepare_blamed,
    refund_graph,
)


def test_whoever_approves_the_rerun_is_told_which_answers_it_will_give(
    dbg: AgentDebug,
) -> None:
    """The gate's plan carries what the branch will do on the human's behalf: it
    will be given the original's approval again (and how to stop that). With
    ``never`` there is nothing to say."""
    from agentdebug.recover.gate import decide

    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes"), thread="t-gate")
    seen: list[list[str]] = []

    def person(plan: Any) -> tuple[bool, str]:
        seen.append(list(plan.notes))
        return False, "not now"

    executor = fixing(graph, dbg, "same-node")
    result = closed_loop(
        original, debugger=dbg, executor=executor, report=prepare_blamed(original), policy=person
    )
    assert result.status == "refused"
    (notes,) = seen
    (note,) = [n for n in notes if "a person gave then" in n]
    assert '"yes"' in note and "replay_answers='same-node'" in note
    assert "replay_answers=never stops it there instead" in note
    assert result.attempts[-1].plan is not None and note in result.attempts[-1].plan.notes

    # a person at a terminal reads it before answering
    class Terminal:
        def __init__(self, text: str) -> None:
            self.text = text

        def isatty(self) -> bool:
            return True

        def readline(self) -> str:
            return self.text

    import io

    shown = io.StringIO()
    plan = result.attempts[-1].plan
    assert not decide(plan, "ask", stdin=Terminal("n\n"), stdout=shown).approved  # type: ignore[arg-type]
    assert "Note: where the branch stops at an interrupt" in shown.getvalue()

    quiet = fixing(graph, dbg, "never")
    assert quiet.plan_notes(original, plan) == []


def test_the_executor_the_cli_finds_tells_the_gate_too(dbg: AgentDebug) -> None:
    """``agentdebug act RUN --rerun --policy ask --executor-option
    replay_answers=same-node`` goes through the registered executor: the note of
    the answers it will give reaches the gate through it as well (it was dropped)."""
    from agentdebug.plugins import get_registry
    from agentdebug.rerun.executors import configure_executor, find_executor
    from agentdebug.schema import RecoveryPlan

    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes"), thread="t-cli-gate")
    plan = RecoveryPlan(strategy="t", directive="x", resume_step=1)
    found: Any = configure_executor(
        find_executor("langgraph", get_registry()), {"replay_answers": "same-node"}
    )
    (note,) = found.plan_notes(original, plan)
    assert '"yes"' in note and "replay_answers='same-node'" in note
    seen: list[list[str]] = []

    def person(plan: Any) -> tuple[bool, str]:
        seen.append(list(plan.notes))
        return False, "not now"

    closed_loop(
        original, debugger=dbg, executor=found, report=prepare_blamed(original), policy=person
    )
    assert [n for n in seen[0] if "a person gave then" in n]


def test_the_gate_hears_of_an_answer_replayed_from_a_fork_before_the_blamed_step(
    dbg: AgentDebug,
) -> None:
    """A step blamed inside a subgraph is rerun from its outer node, before the
    interrupt the original's human answered: the gate is told the branch will be
    given that answer again."""
    from agentdebug.schema import RecoveryPlan

    inner = StateGraph(Refund)
    inner.add_node("ask", ask_once)
    inner.add_edge(START, "ask")
    graph = refund_graph(InMemorySaver(), inner.compile(), "approval")
    original = answered_run(dbg, graph, Command(resume="yes"), thread="t-sub-gate")
    # the inner node as it ran again when resumed, past the interrupt: the branch
    # forks before its outer node, and meets the question again
    *_, asked = [
        e
        for e in original.events
        if e.type is EventType.AGENT_START and e.agent_name == "approval/ask"
    ]
    plan = RecoveryPlan(strategy="t", directive="x", resume_step=asked.step_index)
    (note,) = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="same-node").plan_notes(
        original, plan
    )
    assert '"yes"' in note


def test_a_refusal_says_nothing_of_a_factory_it_did_not_call(dbg: AgentDebug) -> None:
    """A run recorded with no checkpointer: the check before the gate does not call
    the factory (the run kept nothing to restore), so it does not say what the
    factory builds (a review: a factory that compiles one with SqliteSaver was said
    to build a graph without one)."""
    import pytest
    from agentdebug.errors import AgentDebugError
    from agentdebug_langgraph import AgentDebugCallback
    from lg_graphs import order_found, scripted, tool_agent, wrong_then_right
    from rerun_support import REQUEST, request_from

    cb = AgentDebugCallback(dbg, success_check=order_found)
    tool_agent(scripted(wrong_then_right())).invoke(REQUEST, {"callbacks": [cb]})
    original = cb.trajectory()
    lg = {**original.metadata["langgraph"], "graph_factory": "lg_graphs:coroutine_graph"}
    saving = original.model_copy(update={"id": "saving", "metadata": {"langgraph": lg}})
    with pytest.raises(AgentDebugError) as raised:
        LangGraphRerunExecutor(debugger=dbg).preflight(saving)
    message = str(raised.value)
    assert "the run was recorded with no checkpointer" in message
    assert "compiled without one" not in message
    assert "a checkpointer its graph factory 'lg_graphs:coroutine_graph' gives" in message
    with pytest.raises(AgentDebugError) as raised:  # (called: it has one; the run has none)
        LangGraphRerunExecutor(debugger=dbg).rerun(request_from(saving, cb))
    assert "compiled without one" not in str(raised.value)


def test_what_the_graph_cannot_rerun_is_refused_before_the_gate(dbg: AgentDebug) -> None:
    """Refused before anyone approves (a review's find: asked, approved, then
    refused): a graph whose checkpointer holds nothing of the run's thread (a
    factory's InMemorySaver in another process starts empty), and a directive key
    the graph's state does not have."""
    import pytest
    from agentdebug.errors import AgentDebugError
    from agentdebug_langgraph import AgentDebugCallback
    from lg_graphs import linear_graph, order_found, scripted, tool_agent, wrong_then_right
    from rerun_support import REQUEST

    cb = AgentDebugCallback(dbg, success_check=order_found)
    config: Any = {"callbacks": [cb], "configurable": {"thread_id": "t-kept"}}
    graph = tool_agent(scripted(wrong_then_right()), InMemorySaver())
    graph.invoke(REQUEST, config)
    original = cb.trajectory()
    LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found).preflight(original)
    empty = tool_agent(scripted(wrong_then_right()), InMemorySaver())  # (a new process's)
    with pytest.raises(AgentDebugError, match="holds nothing of its thread 't-kept'"):
        LangGraphRerunExecutor(empty, debugger=dbg, success_check=order_found).preflight(original)
    other = LangGraphRerunExecutor(  # (another graph of the app given by mistake)
        linear_graph(InMemorySaver()), debugger=dbg, success_check=order_found
    )
    with pytest.raises(AgentDebugError, match="the graph given is not the one that made it"):
        other.preflight(original)
    from rerun_support import request_from

    with pytest.raises(AgentDebugError, match="the graph given is not the one that made it"):
        other.rerun(request_from(original, cb))  # (rerun called directly: the same)
    keyed = LangGraphRerunExecutor(
        graph, debugger=dbg, success_check=order_found, directive_key="nope"
    )
    with pytest.raises(AgentDebugError, match="the graph's state has no 'nope' key"):
        keyed.preflight(original)


def test_a_directive_alone_the_state_cannot_carry_is_refused_before_the_gate(
    dbg: AgentDebug,
) -> None:
    """A question/answer state with no messages: the loop's plan (a directive, no
    state patch) is refused before the gate asks anyone (before: asked, approved,
    then refused); a plan with a state patch is put to the gate."""
    from typing import TypedDict

    from agentdebug.rerun import closed_loop
    from agentdebug_langgraph import AgentDebugCallback
    from langgraph.graph import START, StateGraph

    class QA(TypedDict):
        question: str
        answer: str

    g = StateGraph(QA)
    g.add_node("answer", lambda s: {"answer": "I cannot tell."})
    g.add_edge(START, "answer")
    graph = g.compile(checkpointer=InMemorySaver())

    def told(s: dict[str, Any]) -> bool | str:
        return "$42" in s["answer"] or "no price"

    cb = AgentDebugCallback(dbg, success_check=told)
    graph.invoke({"question": "price?"}, {"configurable": {"thread_id": "t-qa"}, "callbacks": [cb]})
    asked: list[Any] = []

    def gate(plan: Any) -> tuple[bool, str]:
        asked.append(plan)
        return True, "approved"

    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=told)
    result = closed_loop(
        cb.trajectory(), debugger=dbg, executor=executor, report=cb.reports[0], policy=gate
    )
    assert asked == [] and result.status == "error"
    assert "the graph's state has no 'messages' key to carry the directive" in result.detail
    executor.preflight(cb.trajectory(), resume_step=1, state_patch={"answer": "$42"})
    executor.preflight(cb.trajectory(), resume_step=1)  # (no plan known: not refused)
