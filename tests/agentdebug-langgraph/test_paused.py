"""Runs waiting at an interrupt: the resume continues the same trajectory, found
by its thread and its graph (not another graph's on the same thread id), also
when the graph is built again for each request or the run was pushed out."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TypedDict

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug_langgraph import AgentDebugCallback
from events_support import run_as, starts
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from lg_graphs import approval_graph


def test_interrupt_and_resume_continue_one_trajectory(dbg: AgentDebug) -> None:
    graph = approval_graph(InMemorySaver())
    thread = {"configurable": {"thread_id": "approve-1"}}
    first = AgentDebugCallback(dbg)
    paused = graph.invoke({"items": [], "out": []}, {**thread, "callbacks": [first]})
    assert paused["__interrupt__"][0].value == {"question": "refund $42?"}
    # The paused run can be read while it waits for the resume: running, asking.
    waiting = first.trajectory()
    assert first.last_run_id == waiting.id and waiting.outcome.status is OutcomeStatus.RUNNING
    assert [e.output for e in waiting.events if e.type is EventType.CHECKPOINT] == [
        [{"question": "refund $42?"}]
    ]
    # The user resumes with a new callback, as one does in a new request.
    second = AgentDebugCallback(dbg)
    done = graph.invoke(Command(resume="yes"), {**thread, "callbacks": [second]})
    assert done["out"] == ["prepared", "approved: yes"]
    run = second.trajectory()
    assert run.id == waiting.id and first.run_ids == second.run_ids == [run.id]
    (interrupt,) = [e for e in run.events if e.metadata.get("langgraph_event") == "interrupt"]
    assert interrupt.type is EventType.CHECKPOINT and interrupt.agent_name == "ask"
    assert interrupt.output == [{"question": "refund $42?"}]
    (resume,) = [e for e in run.events if e.metadata.get("langgraph_event") == "resume"]
    assert resume.type is EventType.USER_INPUT and resume.input == "yes"
    assert resume.step_index > interrupt.step_index
    asks = starts(run)["ask"]
    assert len(asks) == 2 and asks[1].step_index > resume.step_index
    assert run.outcome.status is OutcomeStatus.SUCCESS
    assert [e.type for e in run.events].count(EventType.USER_INPUT) == 2


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_two_graphs_alike_with_savers_of_their_own_keep_their_paused_runs(
    dbg: AgentDebug, how: str
) -> None:
    """The same (unnamed) graph built twice, each with its own saver (two tenants),
    on one thread id: each waits, each resume continues its own run, and a new
    input to one does not end the other's; in async runs too (before, there the
    first resume took whichever run waited first)."""
    first, second = approval_graph(InMemorySaver()), approval_graph(InMemorySaver())
    thread = {"configurable": {"thread_id": "conv-1"}}
    cb = AgentDebugCallback(dbg, diagnose=False)
    run_as(how, first, {"items": [], "out": []}, {**thread, "callbacks": [cb]})
    a = cb.last_run_id
    run_as(how, second, {"items": [], "out": []}, {**thread, "callbacks": [cb]})
    b = cb.last_run_id
    assert cb.trajectory(a).outcome.status is OutcomeStatus.RUNNING  # still waiting
    run_as(how, second, Command(resume="yes-B"), {**thread, "callbacks": [cb]})
    assert cb.last_run_id == b and cb.trajectory(a).outcome.status is OutcomeStatus.RUNNING
    run_as(how, first, Command(resume="yes-A"), {**thread, "callbacks": [cb]})
    assert cb.last_run_id == a
    for run_id, said in ((a, "yes-A"), (b, "yes-B")):
        run = cb.trajectory(run_id)
        assert run.outcome.status is OutcomeStatus.SUCCESS
        assert [e.input for e in run.events if e.type is EventType.USER_INPUT][-1] == said


def test_two_tenants_on_async_sqlite_savers_of_their_own_keep_their_paused_runs(
    dbg: AgentDebug, tmp_path: Path
) -> None:
    """Each request builds its graph and opens its tenant's AsyncSqliteSaver
    file; two tenants name a thread alike. Which saver a waiting run waits on is
    read (on the event loop, through a read-only connection to the file), so one
    tenant's new input does not end the other's waiting run, and each resume
    continues its own (before, on an async saver any waiting run was taken)."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    thread = {"configurable": {"thread_id": "conv-1"}}
    cb = AgentDebugCallback(dbg, diagnose=False)

    async def request(tenant: str, given: Any) -> str | None:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / f"{tenant}.db")) as saver:
            await approval_graph(saver).ainvoke(given, {**thread, "callbacks": [cb]})
        return cb.last_run_id

    a = asyncio.run(request("A", {"items": [], "out": []}))
    b = asyncio.run(request("B", {"items": [], "out": []}))
    assert a != b and cb.trajectory(a).outcome.status is OutcomeStatus.RUNNING  # still waiting
    assert asyncio.run(request("B", Command(resume="yes-B"))) == b
    assert asyncio.run(request("A", Command(resume="yes-A"))) == a
    for run_id, said in ((a, "yes-A"), (b, "yes-B")):
        run = cb.trajectory(run_id)
        assert run.outcome.status is OutcomeStatus.SUCCESS
        assert [e.input for e in run.events if e.type is EventType.USER_INPUT][-1] == said


def test_a_new_input_after_the_thread_was_deleted_ends_the_run_that_waited(
    dbg: AgentDebug,
) -> None:
    """The app wipes the conversation (``delete_thread``) and starts again on its
    id: the run that waited there is ended ("a new input was given"), not kept
    waiting for good beside the new one."""
    saver = InMemorySaver()
    graph = approval_graph(saver)
    thread = {"configurable": {"thread_id": "wiped"}}
    cb = AgentDebugCallback(dbg, diagnose=False)
    graph.invoke({"items": [], "out": []}, {**thread, "callbacks": [cb]})
    waited = cb.last_run_id
    saver.delete_thread("wiped")
    graph.invoke({"items": [], "out": []}, {**thread, "callbacks": [cb]})
    ended = cb.trajectory(waited).outcome
    assert ended.status is OutcomeStatus.UNKNOWN and "a new input was given" in str(ended.reason)
    graph.invoke(Command(resume="no"), {**thread, "callbacks": [cb]})  # (none left waiting)


def test_a_run_pushed_out_of_the_waiting_runs_is_continued_by_its_resume(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More runs wait at an interrupt than the process keeps (here 2): the oldest
    is closed ("too many runs were waiting"), and its resume, when the approval
    comes, continues it (a resume event, numbered on), as one from another worker."""
    from agentdebug_langgraph import _state

    monkeypatch.setattr(_state.PAUSED, "limit", 2)
    graph = approval_graph(InMemorySaver())
    cb = AgentDebugCallback(dbg, diagnose=False)
    for n in range(3):
        graph.invoke(
            {"items": [], "out": []}, {"configurable": {"thread_id": f"w{n}"}, "callbacks": [cb]}
        )
    oldest = cb.trajectory(cb.run_ids[0])
    assert oldest.outcome.status is OutcomeStatus.UNKNOWN
    assert "too many runs were waiting" in str(oldest.outcome.reason)
    resumer = AgentDebugCallback(dbg, diagnose=False)
    done = graph.invoke(
        Command(resume="yes"), {"configurable": {"thread_id": "w0"}, "callbacks": [resumer]}
    )
    assert done["out"] == ["prepared", "approved: yes"]
    run = resumer.trajectory()
    assert run.metadata["continues"] == oldest.id
    (resume,) = [e for e in run.events if e.type is EventType.USER_INPUT]
    assert resume.metadata["langgraph_event"] == "resume" and resume.input == "yes"
    assert resume.step_index > max(e.step_index for e in oldest.events)
    assert run.outcome.status is OutcomeStatus.SUCCESS
    for n in (1, 2):  # (the others' approvals: none is left waiting)
        graph.invoke(
            Command(resume="no"), {"configurable": {"thread_id": f"w{n}"}, "callbacks": [cb]}
        )


def test_a_run_waiting_at_an_interrupt_holds_none_of_its_model_prompts(dbg: AgentDebug) -> None:
    """A run waiting for a human (up to 1,024 of them) held its last prompt to each
    model, its whole conversation, though a resume, restoring the state from the
    checkpoint as new objects, records its prompts whole anyway."""
    import gc
    import weakref

    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, MessagesState
    from lg_graphs import scripted

    model = scripted([AIMessage("first"), AIMessage("second")])
    sent: list[Any] = []

    def agent(state: Any) -> dict[str, Any]:
        prompt = [HumanMessage("a long conversation " * 1000), *state["messages"]]
        sent.append(weakref.ref(prompt[0]))
        return {"messages": [model.invoke(prompt)]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("ask", lambda s: {"messages": [HumanMessage(interrupt("go on?"))]})
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", lambda s: "ask" if len(s["messages"]) < 3 else END)
    g.add_edge("ask", "agent")
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg, diagnose=False)
    config: Any = {"configurable": {"thread_id": "long"}, "callbacks": [cb]}
    graph.invoke({"messages": [HumanMessage("hi")]}, config)
    gc.collect()
    assert sent[0]() is None  # (the run waits: nothing of ours keeps the prompt alive)
    graph.invoke(Command(resume="yes"), config)
    calls = [e for e in cb.trajectory().events if e.type is EventType.LLM_RESPONSE]
    assert [len(e.input) for e in calls] == [2, 4]  # (the resumed call's prompt, whole)


def test_a_run_waiting_when_its_debugger_closes_is_closed_then_and_continued_by_its_resume(
    tmp_path: Any,
) -> None:
    """The app closes its debugger (a service shutting down) while a run waits at an
    interrupt: the run is closed then, outcome unknown saying why (before, it was
    written at exit to the closed store, with an error, and left "running" for
    good); the resume, with a debugger opened again, continues it. Runs of another
    debugger keep waiting."""
    from agentdebug_langgraph import _state

    graph = approval_graph(InMemorySaver())
    first, other = AgentDebug(str(tmp_path / "a")), AgentDebug(str(tmp_path / "b"))
    cb = AgentDebugCallback(first, diagnose=False)
    graph.invoke({"items": [], "out": []}, {"configurable": {"thread_id": "d1"}, "callbacks": [cb]})
    kept = AgentDebugCallback(other, diagnose=False)
    graph.invoke(
        {"items": [], "out": []}, {"configurable": {"thread_id": "d2"}, "callbacks": [kept]}
    )
    first.close()
    assert len(_state.PAUSED) == 1  # (the other debugger's run)
    again = AgentDebug(str(tmp_path / "a"))
    stored = again.store.load_trajectory(cb.last_run_id)
    assert stored.outcome.status is OutcomeStatus.UNKNOWN
    assert "its debugger was closed before a resume" in str(stored.outcome.reason)
    resumer = AgentDebugCallback(again, diagnose=False)
    graph.invoke(
        Command(resume="yes"), {"configurable": {"thread_id": "d1"}, "callbacks": [resumer]}
    )
    run = resumer.trajectory()
    assert run.metadata["continues"] == stored.id and run.outcome.status is OutcomeStatus.SUCCESS
    graph.invoke(Command(resume="no"), {"configurable": {"thread_id": "d2"}, "callbacks": [kept]})
    assert kept.trajectory().outcome.status is OutcomeStatus.SUCCESS
    assert kept.run_ids == [kept.last_run_id]  # (it went on waiting, then was resumed)
    again.close()
    other.close()


def test_another_graph_on_the_same_thread_id_neither_resumes_nor_ends_a_paused_run(
    dbg: AgentDebug,
) -> None:
    """Two graphs of an app, each with its checkpointer, use a conversation id as
    their thread id. While the refund waits for approval, the notes graph runs on
    that id (a new input) and is resumed too; the refund's resume then continues
    its own run, which holds only its own nodes."""
    from lg_graphs import Work

    refunds = approval_graph(InMemorySaver())
    g = StateGraph(Work)
    g.add_node("ask_note", lambda s: {"out": [f"note: {interrupt('note?')}"]})
    g.add_edge(START, "ask_note")
    notes = g.compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "conversation-7"}}
    cb = AgentDebugCallback(dbg, diagnose=False)
    refunds.invoke({"items": [], "out": []}, {**thread, "callbacks": [cb]})
    paused = cb.last_run_id
    notes.invoke({"items": [], "out": []}, {**thread, "callbacks": [cb]})
    noted = cb.last_run_id
    notes.invoke(Command(resume="hi"), {**thread, "callbacks": [cb]})
    done = refunds.invoke(Command(resume="yes"), {**thread, "callbacks": [cb]})
    assert done["out"] == ["prepared", "approved: yes"]
    assert paused != noted and cb.run_ids == [noted, paused]
    refund, note = cb.trajectory(paused), cb.trajectory(noted)
    assert refund.outcome.status is OutcomeStatus.SUCCESS
    assert note.outcome.status is OutcomeStatus.SUCCESS
    assert set(starts(refund)) == {"prepare", "ask"} and set(starts(note)) == {"ask_note"}


@pytest.mark.parametrize("saver", ["SqliteSaver on a file", "a saver over shared storage"])
def test_a_graph_built_again_for_each_request_resumes_the_paused_run(
    dbg: AgentDebug, tmp_path: Any, saver: str
) -> None:
    """A service that compiles its graph for each request, with a saver of its own
    (a connection to the checkpoint file; or one over a database, as PostgresSaver
    is, here an InMemorySaver over shared storage): the approval's request resumes
    the run the first request left waiting (one trajectory), as with one graph."""
    from agentdebug_langgraph import _state
    from lg_graphs import sqlite_saver

    shared = InMemorySaver()

    def new_saver() -> Any:
        if saver.startswith("SqliteSaver"):
            return sqlite_saver(str(tmp_path / "cp.db"))
        own = InMemorySaver()
        own.storage, own.writes, own.blobs = shared.storage, shared.writes, shared.blobs
        return own

    thread = {"configurable": {"thread_id": "per-request"}}
    first = AgentDebugCallback(dbg, diagnose=False)
    kept = approval_graph(new_saver())  # (alive: its saver's id is not reused)
    kept.invoke({"items": [], "out": []}, {**thread, "callbacks": [first]})
    second = AgentDebugCallback(dbg, diagnose=False)
    done = approval_graph(new_saver()).invoke(
        Command(resume="yes"), {**thread, "callbacks": [second]}
    )
    assert done["out"] == ["prepared", "approved: yes"]
    assert second.run_ids == first.run_ids and not len(_state.PAUSED)
    run = second.trajectory()
    assert run.outcome.status is OutcomeStatus.SUCCESS and "continues" not in run.metadata
    assert [
        e.metadata.get("langgraph_event") for e in run.events if e.type is EventType.USER_INPUT
    ] == ["input", "resume"]


class Turns(TypedDict):
    turns: list[str]


def test_a_breakpoint_after_the_node_that_ends_the_graph_still_gets_the_run_judged(
    dbg: AgentDebug,
) -> None:
    """``interrupt_after=["agent"]``: LangGraph pauses after the agent's last turn too,
    though it routed to END and nothing is next. The app stops there (``next`` is
    empty); the run was left waiting and never judged nor diagnosed (a review's
    find). It is the run's end: checked, and diagnosed when it fails."""

    def agent(state: Turns) -> dict[str, Any]:
        n = len(state["turns"])
        return {"turns": [*state["turns"], "looked it up" if n == 0 else "refunded $24.00"]}

    g = StateGraph(Turns)
    g.add_node("agent", agent)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", lambda s: "agent" if len(s["turns"]) < 2 else "__end__")
    graph = g.compile(checkpointer=InMemorySaver(), interrupt_after=["agent"])

    def refunded(state: dict[str, Any]) -> bool | str:
        return "$42.00" in state["turns"][-1] or "the refund was not $42.00"

    cb = AgentDebugCallback(dbg, success_check=refunded)
    config: Any = {"configurable": {"thread_id": "after-end"}, "callbacks": [cb]}
    graph.invoke({"turns": []}, config)
    assert graph.get_state(config).next == ("agent",)
    waiting = cb.trajectory()
    assert waiting.outcome.status is OutcomeStatus.RUNNING  # (a real pause)
    (paused,) = [e for e in waiting.events if e.type is EventType.CHECKPOINT]
    # what the breakpoint is and what is next (before: a blank line in `show`)
    assert paused.output == "paused at a breakpoint (after a node); next: agent"
    assert (paused.metadata["breakpoint"], paused.metadata["next"]) == ("after", ["agent"])
    graph.invoke(None, config)
    assert graph.get_state(config).next == ()  # the thread is done
    run = cb.trajectory()
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert run.outcome.reason == "the refund was not $42.00"
    assert len(cb.reports) == 1


def _turns_graph(checkpointer: Any, **breakpoints: Any) -> Any:
    g = StateGraph(Turns)
    g.add_node("agent", lambda s: {"turns": [*s["turns"], "refunded $24.00"]})
    g.add_edge(START, "agent")
    return g.compile(checkpointer=checkpointer, **breakpoints)


def test_a_breakpoint_after_the_end_is_the_runs_end_on_an_async_sqlite_saver(
    dbg: AgentDebug, tmp_path: Path
) -> None:
    """``ainvoke`` on AsyncSqliteSaver: its sync reads refuse on the event loop, so
    what is next is read through a reader of its file (before, the run waited)."""
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async def run() -> None:
        async with aiosqlite.connect(tmp_path / "ck.db") as conn:
            graph = _turns_graph(AsyncSqliteSaver(conn), interrupt_after=["agent"])
            cb = AgentDebugCallback(dbg, success_check=lambda s: "the refund was not $42.00")
            config: Any = {"configurable": {"thread_id": "async-end"}, "callbacks": [cb]}
            await graph.ainvoke({"turns": []}, config)
            assert (await graph.aget_state(config)).next == ()
            assert cb.trajectory().outcome.status is OutcomeStatus.FAILURE

    asyncio.run(run())


def test_a_subgraphs_breakpoint_says_what_it_is(dbg: AgentDebug) -> None:
    sub = _turns_graph(None, interrupt_before=["agent"])
    g = StateGraph(Turns)
    g.add_node("sub", sub)
    g.add_edge(START, "sub")
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg, diagnose=False)
    graph.invoke({"turns": []}, {"configurable": {"thread_id": "sub-bp"}, "callbacks": [cb]})
    (paused,) = [e for e in cb.trajectory().events if e.type is EventType.CHECKPOINT]
    assert paused.output == "paused at a breakpoint in the subgraph"  # (before: [])
