"""A rerun branch that meets an interrupt the original's human answered: the
answer is replayed (by node, by question, never), static interrupts are passed
as the original passed them, and a branch the answers do not fit ends saying why."""

from __future__ import annotations

import operator
import threading
import time
from typing import Annotated, Any, TypedDict

import pytest
from agentdebug import AgentDebug, OutcomeStatus
from agentdebug.errors import AgentDebugError
from agentdebug.report import event_line
from agentdebug.rerun import closed_loop
from agentdebug.rerun.score import DefaultScorer
from agentdebug.schema import AgentTrajectory, DiagnosticReport, Fix, Hypothesis, RerunRequest
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt


class Refund(TypedDict):
    amount: int
    fixed: bool
    out: Annotated[list[str], operator.add]


def ask_once(state: Refund) -> dict[str, Any]:
    answer = interrupt({"question": f"refund ${state['amount']}?"})
    return {"out": [f"refund {state['amount']}: {answer}"]}


def refund_graph(
    checkpointer: Any, ask: Any = ask_once, name: str = "ask", **compile_kw: Any
) -> Any:
    """``prepare`` works out the amount (wrongly, unless ``fixed``); ``ask`` (the
    node ``name``) has a human approve it; the run succeeds when 24 is refunded."""

    def prepare(state: Refund) -> dict[str, Any]:
        return {"amount": 24 if state["fixed"] else 42, "out": ["prepared"]}

    g = StateGraph(Refund)
    g.add_node("prepare", prepare)
    g.add_node(name, ask)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", name)
    g.add_edge(name, END)
    return g.compile(checkpointer=checkpointer, **compile_kw)


def refunded_24(state: Refund) -> bool | str:
    return "refund 24: yes" in state["out"] or f"wrong refund: {state['out'][-1]}"


class Items(TypedDict):
    items: list[str]
    fixed: bool
    out: Annotated[list[str], operator.add]


START_STATE: Refund = {"amount": 0, "fixed": False, "out": []}


def answered_run(dbg: AgentDebug, graph: Any, *answers: Any, thread: str = "t") -> AgentTrajectory:
    cb = AgentDebugCallback(dbg, success_check=refunded_24, diagnose=False)
    config: Any = {"configurable": {"thread_id": thread}, "callbacks": [cb]}
    graph.invoke(START_STATE, config)
    for answer in answers:
        graph.invoke(answer, config)
    return cb.trajectory()


def fixed(run: AgentTrajectory) -> RerunRequest:
    """Rerun from ``prepare`` (step 1) with the fix in the state."""
    return RerunRequest(trajectory=run, resume_step=1, directive="x", state_patch={"fixed": True})


def waited(branch: AgentTrajectory) -> str:
    """The reason of a branch that stopped at an interrupt without an answer."""
    assert branch.outcome.status is OutcomeStatus.UNKNOWN and not resumes(branch)
    return branch.outcome.reason or ""


def prepare_blamed(run: AgentTrajectory) -> DiagnosticReport:
    """A diagnosis of the refund run that blames ``prepare`` (step 1)."""
    return DiagnosticReport(
        id=f"r-{run.id}",
        trajectory_id=run.id,
        hypotheses=[Hypothesis(agent_name="prepare", step_index=1, strategy="t", confidence=0.9)],
        fix=Fix(directive="use the refund policy's amount", target_agent="prepare", target_step=1),
    )


def fixing(graph: Any, dbg: AgentDebug, policy: str) -> LangGraphRerunExecutor:
    """An executor whose fork sets ``fixed`` (the correction), replaying by ``policy``."""
    return LangGraphRerunExecutor(
        graph,
        debugger=dbg,
        directive_update=lambda request, snapshot: {"fixed": True},
        replay_answers=policy,
    )


def resumes(run: AgentTrajectory) -> list[Any]:
    """The run's own resumes (a branch's, not those it inherits from before its fork)."""
    return [
        e
        for e in run.events
        if e.metadata.get("langgraph_event") == "resume" and "inherited_from" not in e.metadata
    ]


def test_the_original_answer_is_replayed_and_the_branch_is_judged(
    dbg: AgentDebug, caplog: pytest.LogCaptureFixture
) -> None:
    """The fix changes the question (it quotes the amount); the human's "yes" is
    given to the same node's interrupt, the branch runs to the end and passes, and
    its resume says whose answer it replayed and what was asked then."""
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes"))
    assert original.outcome.status is OutcomeStatus.FAILURE
    (given,) = resumes(original)
    assert given.metadata["resumed_with"] == "command" and given.metadata["replayable"] is True
    asked = next(e for e in original.events if e.metadata.get("langgraph_event") == "interrupt")
    assert len(asked.metadata["interrupt_ids"]) == 1

    with caplog.at_level("WARNING", logger="agentdebug.langgraph"):
        branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="same-node").rerun(
            fixed(original)
        )
    assert "answer to" in caplog.text and "for another question" in caplog.text
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    assert branch.outcome.final_answer["out"][-1] == "refund 24: yes"
    (replayed,) = resumes(branch)
    assert replayed.input == "yes"
    assert replayed.metadata["replayed_from"] == given.id
    assert replayed.metadata["question_matches"] is False
    assert replayed.metadata["original_question"] == [{"question": "refund $42?"}]
    interrupts = [e for e in branch.events if e.metadata.get("langgraph_event") == "interrupt"]
    assert interrupts[-1].output == [{"question": "refund $24?"}]
    assert DefaultScorer().score(branch, original).success
    # what a user reads says so: show's line for it, and a warning when it is given
    line = event_line(replayed, 200)
    assert line.startswith("[replayed: the original run's answer, given to another question")
    assert "it answered: refund $42?" in line and line.endswith("] yes")


def test_by_default_an_approval_is_not_given_for_another_question(dbg: AgentDebug) -> None:
    """The default, ``"same-question"``: the human approved "refund $42?"; the
    corrected branch asks "refund $24?", and waits there for a human, saying so."""
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes"))
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(fixed(original))
    assert branch.outcome.status is OutcomeStatus.UNKNOWN
    reason = branch.outcome.reason or ""
    assert "asking [{'question': 'refund $24?'}]" in reason
    assert "where the original asked [{'question': 'refund $42?'}]" in reason
    assert "Command(resume=...)" in reason and not resumes(branch)
    with pytest.raises(AgentDebugError, match="the branch stopped at an interrupt"):
        DefaultScorer().score(branch, original)


def test_same_question_replays_the_answer_to_the_same_question(dbg: AgentDebug) -> None:
    """Rerun from ``ask`` itself: the question is the same, the answer is given."""
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="no"))
    ask_step = next(e.step_index for e in original.events if e.agent_name == "ask")
    branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="same-question").rerun(
        RerunRequest(
            trajectory=original, resume_step=ask_step, directive="x", state_patch={"fixed": False}
        )
    )
    (replayed,) = resumes(branch)
    assert replayed.metadata["question_matches"] is True and replayed.input == "no"
    assert branch.outcome.status is OutcomeStatus.FAILURE  # the same answer, the same end
    assert branch.outcome.reason == "wrong refund: refund 42: no"


def test_never_ends_the_branch_at_the_interrupt(dbg: AgentDebug) -> None:
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes"))
    branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="never").rerun(
        fixed(original)
    )
    reason = waited(branch)
    assert "which the original run's human answered when it was resumed" in reason
    assert "rerun from a step after the interrupt" in reason
    with pytest.raises(AgentDebugError) as raised:  # scoring says so too
        DefaultScorer().score(branch, original)
    assert "the branch stopped at an interrupt" in str(raised.value)
    assert "give a success check" not in str(raised.value)


def test_resuming_a_branch_that_waits_as_its_reason_says_continues_the_branch(
    dbg: AgentDebug,
) -> None:
    """The branch ends at the interrupt, saying to resume its thread with
    ``Command(resume=...)``: done so, the resume continues
    the branch, as a resume continues any run that waited (before, it was a new
    run of its own, with no goal and no link to the branch)."""
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes"))
    branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="never").rerun(
        fixed(original)
    )
    thread = branch.metadata["langgraph"]["thread_id"]
    assert f"resume thread '{thread}' with Command(resume=...)" in waited(branch)
    cb = AgentDebugCallback(dbg, success_check=refunded_24, diagnose=False)
    graph.invoke(Command(resume="yes"), {"configurable": {"thread_id": thread}, "callbacks": [cb]})
    resumed = cb.trajectory()
    assert resumed.metadata["continues"] == branch.id
    assert resumed.outcome.status is OutcomeStatus.SUCCESS, resumed.outcome.reason
    assert resumed.goal == branch.goal


def test_a_loop_whose_branch_waits_for_a_human_says_so_not_that_scoring_failed(
    dbg: AgentDebug,
) -> None:
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes"))
    executor = fixing(graph, dbg, "never")
    result = closed_loop(original, debugger=dbg, executor=executor, report=prepare_blamed(original))
    assert result.status == "error"
    assert "ended without a verdict, so the default scorer could not judge it: " in result.detail
    assert "the branch stopped at an interrupt" in result.detail
    assert "scoring branch" not in result.detail


def test_an_unknown_policy_is_refused_when_the_executor_is_made() -> None:
    with pytest.raises(AgentDebugError, match=r"replay_answers='always'.*'same-node'"):
        LangGraphRerunExecutor(replay_answers="always")


def test_an_answer_that_is_more_than_a_value_is_not_replayed(dbg: AgentDebug) -> None:
    """``Command(resume=..., update=...)``: the stored answer is not what was given."""
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes", update={"out": ["noted"]}))
    assert resumes(original)[0].metadata["replayable"] is False
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(fixed(original))
    assert branch.outcome.status is OutcomeStatus.UNKNOWN
    assert "more than a plain JSON value" in (branch.outcome.reason or "")


def test_a_branch_that_asks_more_than_the_original_ends_at_the_new_question(
    dbg: AgentDebug,
) -> None:
    """The original's human answered once; the corrected branch asks twice."""

    def ask_twice(state: Refund) -> dict[str, Any]:
        answer = interrupt(f"refund ${state['amount']}?")
        if state["fixed"]:
            answer = interrupt("are you sure?")
        return {"out": [f"refund {state['amount']}: {answer}"]}

    graph = refund_graph(InMemorySaver(), ask_twice)
    original = answered_run(dbg, graph, Command(resume="yes"))
    branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="same-node").rerun(
        fixed(original)
    )
    assert len(resumes(branch)) == 1  # the first question got the original's answer
    assert branch.outcome.status is OutcomeStatus.UNKNOWN
    assert (branch.outcome.reason or "").startswith(
        "the branch stopped at an interrupt, one more than the original run's human "
        "answered after the fork (once, each answer replayed), so none was left to give: "
        "to go on, resume thread"
    ), branch.outcome.reason  # (before: "which the original run never reached")
    # the branch's thread waits at the new question: the user can answer it
    thread = branch.metadata["langgraph"]["fork"]["thread_id"]
    state = graph.get_state({"configurable": {"thread_id": thread}})
    assert [i.value for i in state.interrupts] == ["are you sure?"]


def test_a_static_interrupt_is_passed_as_the_original_passed_it(dbg: AgentDebug) -> None:
    """``interrupt_before``: the original went on with ``invoke(None)``; the
    branch stops before the same node and is continued the same way."""

    def pay(state: Refund) -> dict[str, Any]:
        return {"out": [f"refund {state['amount']}: yes"]}

    graph = refund_graph(InMemorySaver(), pay, "pay", interrupt_before=["pay"])
    original = answered_run(dbg, graph, None)
    assert original.outcome.status is OutcomeStatus.FAILURE
    assert resumes(original)[0].metadata["resumed_with"] == "none"
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(fixed(original))
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    (replayed,) = resumes(branch)
    assert replayed.metadata["resumed_with"] == "none"
    assert replayed.metadata["replayed_from"] == resumes(original)[0].id


def fan_out_graph(checkpointer: Any, b_quotes_amount: bool) -> Any:
    """``plan`` (wrong unless ``fixed``) sends "a" and "b" to ``ask`` in parallel;
    each task asks its own question, "a" after "b" has asked (so the run records
    b's interrupt first, not in task order). With ``b_quotes_amount``, the fix
    changes b's question."""
    b_asked = threading.Event()

    def plan(state: Items) -> dict[str, Any]:
        return {"out": ["planned" if state["fixed"] else "misplanned"]}

    def fan(state: Items) -> list[Send]:
        return [Send("ask", {**state, "items": [i], "out": []}) for i in state["items"]]

    def ask(state: Items) -> dict[str, Any]:
        item = state["items"][0]
        if item == "a":
            b_asked.wait(5)
            time.sleep(0.2)  # b's interrupt is recorded meanwhile
            question = "ship a?"
        else:
            amount = 24 if state["fixed"] and b_quotes_amount else 42
            question = f"ship b for ${amount}?"
            b_asked.set()
        return {"out": [f"{item}: {interrupt(question)}"]}

    g = StateGraph(Items)
    g.add_node("plan", plan)
    g.add_node("ask", ask)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan, ["ask"])
    g.add_edge("ask", END)
    return g.compile(checkpointer=checkpointer)


def shipped(state: Items) -> bool:
    return "planned" in state["out"] and {"a: yes", "b: no"} <= set(state["out"])


@pytest.mark.parametrize(
    ("b_quotes_amount", "policy"), [(True, "same-node"), (False, "same-question")]
)
def test_a_resume_map_goes_to_the_branch_interrupts_of_the_same_questions(
    dbg: AgentDebug, b_quotes_amount: bool, policy: str
) -> None:
    """Two parallel tasks wait at once; the human answered both with a map keyed
    by interrupt id. The branch's interrupts have other ids, and are listed in
    task order, not in the order the run recorded them: each gets the answer to
    its own question ("a", unchanged, first; "b", whose question the fix changed,
    the one left), and unchanged questions match whatever their order."""
    graph = fan_out_graph(InMemorySaver(), b_quotes_amount)
    cb = AgentDebugCallback(dbg, success_check=shipped, diagnose=False)
    config: Any = {"configurable": {"thread_id": "t-map"}, "callbacks": [cb]}
    paused = graph.invoke({"items": ["a", "b"], "fixed": False, "out": []}, config)
    by_question = {i.value: i.id for i in paused["__interrupt__"]}
    graph.invoke(
        Command(resume={by_question["ship a?"]: "yes", by_question["ship b for $42?"]: "no"}),
        config,
    )
    original = cb.trajectory()
    assert original.outcome.status is OutcomeStatus.FAILURE
    asked = [
        e.output[0] for e in original.events if e.metadata.get("langgraph_event") == "interrupt"
    ]
    assert asked == ["ship b for $42?", "ship a?"]  # not in task order
    from agentdebug.report import timeline

    # which question each answer of the map went to (before: only the ids were shown)
    answering = [line.strip() for line in timeline(original) if "answering:" in line]
    assert answering == ["answering: ship a? = yes", "answering: ship b for $42? = no"]
    branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers=policy).rerun(
        RerunRequest(trajectory=original, resume_step=1, directive="x", state_patch={"fixed": True})
    )
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    (replayed,) = resumes(branch)
    assert replayed.metadata["question_matches"] is (not b_quotes_amount)
    assert sorted(replayed.input.values()) == ["no", "yes"]
    assert set(replayed.input) != set(by_question.values())  # the branch's own ids


@pytest.mark.parametrize(
    "stop", [{"interrupt_after": ["prepare"]}, {"interrupt_before": ["compute"]}]
)
def test_a_stop_before_the_blamed_step_is_not_counted_as_an_answer_to_give(
    dbg: AgentDebug, stop: dict[str, list[str]]
) -> None:
    """An approval gate just before the blamed step: the fork starts past it (the
    branch does not stop there again), so the human's later answer is the first
    one the branch is given."""

    def graph_of(checkpointer: Any) -> Any:
        def compute(state: Refund) -> dict[str, Any]:
            return {"amount": 24 if state["fixed"] else 42, "out": ["computed"]}

        def ask(state: Refund) -> dict[str, Any]:
            answer = interrupt({"question": f"refund ${state['amount']}?"})
            return {"out": [f"refund {state['amount']}: {answer}"]}

        g = StateGraph(Refund)
        g.add_node("prepare", lambda s: {"out": ["prepared"]})
        g.add_node("compute", compute)
        g.add_node("ask", ask)
        g.add_edge(START, "prepare")
        g.add_edge("prepare", "compute")
        g.add_edge("compute", "ask")
        g.add_edge("ask", END)
        return g.compile(checkpointer=checkpointer, **stop)

    graph = graph_of(InMemorySaver())
    original = answered_run(dbg, graph, None, Command(resume="yes"))
    step = next(e.step_index for e in original.events if e.agent_name == "compute")
    branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="same-node").rerun(
        RerunRequest(
            trajectory=original, resume_step=step, directive="x", state_patch={"fixed": True}
        )
    )
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    assert [r.input for r in resumes(branch)] == ["yes"]


def test_an_answer_after_the_human_edited_the_state_is_not_replayed(dbg: AgentDebug) -> None:
    """The human changed the state (``update_state``) at the stop, then went on:
    the branch cannot be given the edit, so it ends there saying so."""
    graph = refund_graph(InMemorySaver(), interrupt_before=["ask"])
    cb = AgentDebugCallback(dbg, success_check=refunded_24, diagnose=False)
    config: Any = {"configurable": {"thread_id": "t-edit"}, "callbacks": [cb]}
    graph.invoke(START_STATE, config)
    graph.update_state(config, {"out": ["approved by hand"]})
    graph.invoke(None, config)
    graph.invoke(Command(resume="yes"), config)
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(fixed(cb.trajectory()))
    assert "also changed the state (update_state)" in waited(branch)


def test_an_answer_too_large_to_store_whole_is_not_replayed(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored answer cut to fit the event size limit is not the answer given."""
    monkeypatch.setenv("AGENTDEBUG_MAX_EVENT_BYTES", "4096")
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes " + "x" * 10_000))
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(fixed(original))
    assert "too large to store whole" in waited(branch)


def test_a_node_asked_again_by_invoke_none_gets_the_same_then_the_answer(
    dbg: AgentDebug,
) -> None:
    """The app invoked ``None`` once at the question (the node asked again), then
    the human answered: the branch is given both, in order; and a node whose
    name holds a slash is matched by its name."""
    graph = refund_graph(InMemorySaver(), name="human/approve")
    original = answered_run(dbg, graph, None, Command(resume="yes"))
    assert [r.metadata["resumed_with"] for r in resumes(original)] == ["none", "command"]
    branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="same-node").rerun(
        fixed(original)
    )
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    assert [(r.metadata["resumed_with"], r.input) for r in resumes(branch)] == [
        ("none", None),
        ("command", "yes"),
    ]
    assert all(r.metadata["replayed_from_run"] == original.id for r in resumes(branch))


def test_a_branch_that_asks_at_once_is_resumed_with_invoke_none_on_its_fork(
    dbg: AgentDebug,
) -> None:
    """Rerun from the asking node itself: the branch stops at once, its thread's
    latest checkpoint still the executor's fork (an update). Its replayed
    ``invoke(None)`` is the branch's resume, not a user's edit to fork from (which
    ended the branch "run from an earlier checkpoint"); both answers are given,
    and the branch is judged."""
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, None, Command(resume="yes"))
    asked = next(e.step_index for e in original.events if e.agent_name == "ask")
    request = RerunRequest(
        trajectory=original, resume_step=asked, directive="x", state_patch={"fixed": True}
    )
    branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="same-node").rerun(request)
    assert [(r.metadata["resumed_with"], r.input) for r in resumes(branch)] == [
        ("none", None),
        ("command", "yes"),
    ]
    assert branch.outcome.status is OutcomeStatus.FAILURE  # judged: 42 was prepared before
    assert branch.outcome.reason == "wrong refund: refund 42: yes"


def test_the_closed_loop_verifies_a_fix_made_before_a_human_approval(dbg: AgentDebug) -> None:
    """The whole loop on a graph with a human in it: the diagnosis blames
    ``prepare``, the rerun from it replays the approval, and the loop judges the
    corrected branch a success: the root cause is verified by rerun."""
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes"), thread="t-loop")
    report = prepare_blamed(original)
    executor = fixing(graph, dbg, "same-node")  # (the approval may pass for the new amount)
    result = closed_loop(original, debugger=dbg, executor=executor, report=report)
    assert result.status == "succeeded" and result.verified_by_rerun is True
    branch_id = result.attempts[-1].branch_id
    assert branch_id is not None and dbg.store is not None
    branch = dbg.store.load_trajectory(branch_id)
    assert resumes(branch)[0].metadata["question_matches"] is False


@pytest.mark.parametrize("persistent", [False, True])
def test_an_interrupt_in_a_subgraph_is_recorded_once_and_replayed(
    dbg: AgentDebug, persistent: bool
) -> None:
    """``approval`` runs a subgraph whose ``ask`` interrupts; compiled with
    ``checkpointer=True`` (a subgraph keeping its history on the thread) the
    interrupt comes up through ``approval`` as well, and is still one question,
    answered once."""
    inner = StateGraph(Refund)
    inner.add_node("ask", ask_once)
    inner.add_edge(START, "ask")
    sub = inner.compile(checkpointer=True) if persistent else inner.compile()
    graph = refund_graph(InMemorySaver(), sub, "approval")
    original = answered_run(dbg, graph, Command(resume="yes"))
    asked = [e for e in original.events if e.metadata.get("langgraph_event") == "interrupt"]
    assert [e.agent_name for e in asked] == ["approval/ask"]
    branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="same-node").rerun(
        fixed(original)
    )
    assert branch.outcome.status is OutcomeStatus.SUCCESS, branch.outcome.reason
    assert [r.input for r in resumes(branch)] == ["yes"]


def test_a_run_recorded_before_resumes_said_how_is_not_replayed(dbg: AgentDebug) -> None:
    """Runs stored by an earlier version kept a resume's value made small (a
    message as a dict, a tuple as a list), without a command's update or goto or
    the interrupts' ids: the answer is not given, and the reason says why and
    how to go on."""
    graph = refund_graph(InMemorySaver())
    original = answered_run(dbg, graph, Command(resume="yes"))
    old_keys = ("resumed_with", "replayable", "root_node", "interrupt_ids")
    older = original.model_copy(
        update={
            "events": [
                e.model_copy(
                    update={"metadata": {k: v for k, v in e.metadata.items() if k not in old_keys}}
                )
                for e in original.events
            ]
        }
    )
    branch = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="same-node").rerun(
        fixed(older)
    )
    reason = waited(branch)
    assert "recorded before agentdebug kept how answers were given" in reason
    assert "rerun from a step after the interrupt" in reason
