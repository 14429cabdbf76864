"""Time travel: ``invoke(None)`` from a past checkpoint (a replay), or after
``update_state`` (an edited fork), is a fork of the thread's history, not a retry of
the run that stopped last: it continues the run whose node started from that
checkpoint, from before that node's step, and its diagnosis reads what led there,
not the branch it left."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TypedDict

import pytest
from agentdebug import AgentDebug, AgentTrajectory, EventType
from agentdebug.report import render_run
from agentdebug_langgraph import AgentDebugCallback
from events_support import run_as
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph


class Sum(TypedDict, total=False):
    x: int
    log: str


LIMIT = {"x": 15}  # c refuses an x over this


def abc_graph(**compile_kw: Any) -> Any:
    def c(state: Sum) -> dict[str, Any]:
        if state["x"] > LIMIT["x"]:
            raise ValueError(f"c: x too big ({state['x']})")
        return {"log": "c"}

    g = StateGraph(Sum)
    g.add_node("a", lambda s: {"x": s["x"] + 1, "log": "a"})
    g.add_node("b", lambda s: {"x": s["x"] * 10, "log": "b"})
    g.add_node("c", c)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile(**{"checkpointer": InMemorySaver(), **compile_kw})


def before(graph: Any, thread: str, node: str) -> Any:
    """The snapshot of the thread taken before ``node`` ran."""
    config = {"configurable": {"thread_id": thread}}
    return next(s for s in graph.get_state_history(config) if s.next == (node,))


def nodes(run: AgentTrajectory) -> list[tuple[str, int]]:
    return [
        (e.agent_name or "", e.step_index) for e in run.events if e.type is EventType.AGENT_START
    ]


@pytest.fixture(autouse=True)
def _limit() -> None:
    LIMIT["x"] = 15


def test_a_replay_from_a_past_checkpoint_forks_the_run_that_made_it(dbg: AgentDebug) -> None:
    graph = abc_graph()
    first = AgentDebugCallback(dbg)
    with pytest.raises(ValueError):
        graph.invoke({"x": 1}, {"configurable": {"thread_id": "t"}, "callbacks": [first]})
    original = first.trajectory()
    b_start = next(e for e in original.events if e.agent_name == "b")
    snapshot = before(graph, "t", "b")
    assert b_start.checkpoint is not None
    assert b_start.checkpoint.checkpoint_id == snapshot.config["configurable"]["checkpoint_id"]

    replay = AgentDebugCallback(dbg)
    with pytest.raises(ValueError):  # the same code, the same failure
        graph.invoke(None, {**snapshot.config, "callbacks": [replay]})
    run = replay.trajectory()
    assert run.metadata["continues"] == original.id
    assert run.metadata["continues_before_step"] == b_start.step_index
    forked = run.metadata["langgraph"]["forked_from"]
    assert forked == {
        "checkpoint_id": snapshot.config["configurable"]["checkpoint_id"],
        "run": original.id,
        "step": b_start.step_index,
    }
    first_event = run.events[0]
    assert first_event.type is EventType.USER_INPUT
    assert first_event.metadata["langgraph_event"] == "time_travel"
    assert run.goal == original.goal

    # read with its history: the original up to b, then the replay; not the b and c
    # the replay left behind
    history = dbg.history(run)
    assert nodes(history) == [("a", 1), *nodes(run)]
    shown = render_run(run)
    assert f"continues: {original.id} (forked from before its step {b_start.step_index})" in shown
    (report,) = replay.reports
    assert report.root_cause is not None
    assert report.root_cause.event_id in {e.id for e in run.events}  # its own c
    assert "of run" not in report.summary


def test_an_edited_fork_records_the_edit_and_continues_the_run_before_it(dbg: AgentDebug) -> None:
    graph = abc_graph()
    first = AgentDebugCallback(dbg)
    with pytest.raises(ValueError):
        graph.invoke({"x": 1}, {"configurable": {"thread_id": "t"}, "callbacks": [first]})
    snapshot = before(graph, "t", "b")
    edited = graph.update_state(snapshot.config, {"x": 0})
    fork = AgentDebugCallback(dbg)
    out = graph.invoke(None, {**edited, "callbacks": [fork]})
    assert out == {"x": 0, "log": "c"}
    run = fork.trajectory()
    assert run.outcome.status.value == "success" and not fork.reports
    forked = run.metadata["langgraph"]["forked_from"]
    assert forked["checkpoint_id"] == edited["configurable"]["checkpoint_id"]
    assert forked["base_checkpoint_id"] == snapshot.config["configurable"]["checkpoint_id"]
    assert forked["run"] == first.last_run_id and forked["edits"] == 1
    assert run.events[0].input == [{"x": 0}]
    assert run.metadata["continues"] == first.last_run_id


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_fix_of_the_state_run_on_with_the_threads_own_config_is_an_edited_fork(
    dbg: AgentDebug, how: str
) -> None:
    """The failed node's input is fixed where the run stopped (``update_state`` on
    the thread), and the thread is run on with its own config, as LangGraph's docs
    do: the run records the edit and continues the failed run from before that
    node, as with the config ``update_state`` returns; its diagnosis does not blame
    the error the human fixed (before, it was a plain retry with no edit in it, and
    still was in async runs, whose saver the callback did not read on the loop)."""
    graph = abc_graph()
    thread = {"configurable": {"thread_id": "fix"}}
    first = AgentDebugCallback(dbg)
    with pytest.raises(ValueError):
        run_as(how, graph, {"x": 2}, {**thread, "callbacks": [first]})  # x=30 at c
    graph.update_state(thread, {"x": 3}, as_node="b")
    fixed = AgentDebugCallback(dbg, success_check=lambda s: s["x"] > 10 or "x too small")
    run_as(how, graph, None, {**thread, "callbacks": [fixed]})
    run = fixed.trajectory()
    (edit,) = [e for e in run.events if e.type is EventType.USER_INPUT]
    assert edit.metadata["langgraph_event"] == "time_travel" and edit.input == [{"x": 3}]
    assert run.metadata["continues"] == first.last_run_id
    assert run.metadata["langgraph"]["forked_from"]["edits"] == 1
    assert [name for name, _ in nodes(run)] == ["c"]
    cause = fixed.reports[0].root_cause
    assert cause is None or "too big" not in cause.rationale


@pytest.mark.parametrize("where", ["this process", "another worker"])
def test_a_retry_after_an_edited_run_failed_continues_that_run(dbg: AgentDebug, where: str) -> None:
    """The edit was not enough: the run from it failed at its first node, so the
    thread's latest checkpoint is still the edit. The code is fixed and the thread
    retried (here, or by another worker, which finds the run in the store): that
    is a retry of the run from the edit (its node's retry), not the edit forked
    again."""
    from agentdebug_langgraph import _state

    graph = abc_graph()
    thread = {"configurable": {"thread_id": "again"}}
    with pytest.raises(ValueError):
        graph.invoke({"x": 2}, {**thread, "callbacks": [AgentDebugCallback(dbg)]})
    graph.update_state(thread, {"x": 20}, as_node="b")  # still too big for c
    edited = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(ValueError):
        graph.invoke(None, {**thread, "callbacks": [edited]})
    LIMIT["x"] = 100  # the fix
    if where == "another worker":  # (what this process knows of the thread, gone)
        _state.STOPPED.drain()
        _state.LATEST.drain()
    retry = AgentDebugCallback(dbg, diagnose=False)
    assert graph.invoke(None, {**thread, "callbacks": [retry]}) == {"x": 20, "log": "c"}
    run = retry.trajectory()
    assert run.metadata["continues"] == edited.last_run_id
    assert "forked_from" not in run.metadata["langgraph"]
    (c,) = [e for e in run.events if e.type is EventType.AGENT_START]
    assert c.agent_name == "c" and c.metadata.get("retry_of")


def test_an_edit_after_a_run_that_completed_is_recorded(dbg: AgentDebug) -> None:
    """A run that passed, then ``update_state(..., as_node=...)`` and ``invoke(None)``
    on the thread: a run of its own that starts with the edit."""
    graph = abc_graph()
    thread = {"configurable": {"thread_id": "after"}}
    graph.invoke({"x": 0}, {**thread, "callbacks": [AgentDebugCallback(dbg)]})
    graph.update_state(thread, {"x": 1}, as_node="a")
    again = AgentDebugCallback(dbg)
    assert graph.invoke(None, {**thread, "callbacks": [again]}) == {"x": 10, "log": "c"}
    run = again.trajectory()
    (edit,) = [e for e in run.events if e.type is EventType.USER_INPUT]
    assert edit.metadata["langgraph_event"] == "time_travel" and edit.input == [{"x": 1}]
    assert [name for name, _ in nodes(run)] == ["b", "c"]
    assert all(e.parent_id for e in run.events if e.type is EventType.AGENT_START)


def test_a_fork_of_a_checkpoint_no_recorded_run_made_is_a_run_of_its_own(dbg: AgentDebug) -> None:
    graph = abc_graph()
    LIMIT["x"] = 1000
    graph.invoke({"x": 1}, {"configurable": {"thread_id": "t"}})  # not recorded
    snapshot = before(graph, "t", "c")
    cb = AgentDebugCallback(dbg)
    graph.invoke(None, {**snapshot.config, "callbacks": [cb]})
    run = cb.trajectory()
    assert "continues" not in run.metadata
    assert run.metadata["langgraph"]["forked_from"] == {
        "checkpoint_id": snapshot.config["configurable"]["checkpoint_id"]
    }
    assert nodes(run) == [("c", 2)]


def test_a_resume_that_names_the_checkpoint_it_waits_at_is_still_a_resume(
    dbg: AgentDebug,
) -> None:
    graph = abc_graph(interrupt_before=["b"])  # a human looks before b runs
    cb = AgentDebugCallback(dbg)
    graph.invoke({"x": 1}, {"configurable": {"thread_id": "w"}, "callbacks": [cb]})
    waiting = graph.get_state({"configurable": {"thread_id": "w"}})
    with pytest.raises(ValueError):  # go on past the interrupt, from where it waits
        graph.invoke(None, {**waiting.config, "callbacks": [cb]})
    (run_id,) = set(cb.run_ids)  # one run: the resume went on with it
    run = cb.trajectory(run_id)
    assert "forked_from" not in run.metadata["langgraph"]
    assert [name for name, _ in nodes(run)] == ["a", "b", "c"]


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
@pytest.mark.parametrize("config", ["the one update_state returns", "the thread's"])
def test_an_edit_at_an_interrupt_and_going_on_is_a_resume_with_the_edit(
    dbg: AgentDebug, config: str, how: str
) -> None:
    """A human fixes the state where the run waits (LangGraph's "edit the tool
    call"), then goes on: with the config ``update_state`` returned, or with the
    thread's own, as the docs do. Either way the resume records the edit (before,
    only the first did, and what the human wrote read as what the node had done;
    in async runs, not even that)."""
    graph = abc_graph(interrupt_before=["b"])
    cb = AgentDebugCallback(dbg)
    thread = {"configurable": {"thread_id": "h"}}
    run_as(how, graph, {"x": 1}, {**thread, "callbacks": [cb]})
    edited = graph.update_state(thread, {"x": 1})  # a human's fix
    going_on = edited if config.startswith("the one") else thread
    assert run_as(how, graph, None, {**going_on, "callbacks": [cb]}) == {"x": 10, "log": "c"}
    (run_id,) = set(cb.run_ids)  # the run went on: not closed, not forked
    run = cb.trajectory(run_id)
    assert run.outcome.status.value == "success" and "forked_from" not in run.metadata["langgraph"]
    (resume,) = [e for e in run.events if e.metadata.get("langgraph_event") == "resume"]
    assert resume.metadata["edits"] == [{"x": 1}]


@pytest.mark.parametrize("edit", ["a fix after a failure", "a fix at an interrupt"])
def test_edits_on_the_async_sqlite_saver_are_read_in_async_runs(
    dbg: AgentDebug, tmp_path: Path, edit: str
) -> None:
    """AsyncSqliteSaver refuses sync reads on its event loop, where the callback
    runs: its file is read through a read-only connection of the callback's own.
    So a human's fix with ``aupdate_state`` on the thread, run on with the
    thread's config, is an edited fork of the failed run; and one made where the
    run waits at an interrupt is a resume that records the edit (before, neither
    was known on an async saver: a plain retry, a resume without the edit)."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    thread = {"configurable": {"thread_id": "async-fix"}}

    async def flow() -> tuple[AgentDebugCallback, AgentDebugCallback]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "cp.db")) as saver:
            if edit == "a fix after a failure":
                graph = abc_graph(checkpointer=saver)
                first = AgentDebugCallback(dbg)
                with pytest.raises(ValueError):
                    await graph.ainvoke({"x": 2}, {**thread, "callbacks": [first]})
                await graph.aupdate_state(thread, {"x": 3}, as_node="b")
                fixed = AgentDebugCallback(dbg, success_check=lambda s: s["log"] == "c" or "no c")
                await graph.ainvoke(None, {**thread, "callbacks": [fixed]})
                return first, fixed
            graph = abc_graph(checkpointer=saver, interrupt_before=["b"])
            cb = AgentDebugCallback(dbg)
            await graph.ainvoke({"x": 1}, {**thread, "callbacks": [cb]})
            await graph.aupdate_state(thread, {"x": 1})  # a human's fix where it waits
            assert await graph.ainvoke(None, {**thread, "callbacks": [cb]}) == {
                "x": 10,
                "log": "c",
            }
            return cb, cb

    first, last = asyncio.run(flow())
    if edit == "a fix after a failure":
        run = last.trajectory()
        (fix,) = [e for e in run.events if e.type is EventType.USER_INPUT]
        assert fix.metadata["langgraph_event"] == "time_travel" and fix.input == [{"x": 3}]
        assert run.metadata["continues"] == first.last_run_id
        assert [name for name, _ in nodes(run)] == ["c"]
    else:
        (run_id,) = set(last.run_ids)  # the run went on: not closed, not forked
        run = last.trajectory(run_id)
        assert "forked_from" not in run.metadata["langgraph"]
        (resume,) = [e for e in run.events if e.metadata.get("langgraph_event") == "resume"]
        assert resume.metadata["edits"] == [{"x": 1}]
    assert run.outcome.status.value == "success"


def test_a_forks_history_leaves_out_what_came_after_its_checkpoint(dbg: AgentDebug) -> None:
    """An error the origin placed at an earlier node (its recursion limit) came after
    the checkpoint a later node started from: not in the fork's past."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langgraph.errors import GraphRecursionError

    model = GenericFakeChatModel(messages=iter([AIMessage(f"go on {i}") for i in range(50)]))

    def think(state: Sum) -> dict[str, Any]:  # the model keeps deciding to go on
        return {"log": str(model.invoke("again?").content)}

    g = StateGraph(Sum)
    g.add_node("a", think)
    g.add_node("b", lambda s: {"x": s["x"] + 1})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "a")
    graph = g.compile(checkpointer=InMemorySaver())
    first = AgentDebugCallback(dbg)
    with pytest.raises(GraphRecursionError):
        graph.invoke(
            {"x": 0},
            {"configurable": {"thread_id": "r"}, "callbacks": [first], "recursion_limit": 4},
        )
    original = first.trajectory()
    (placed,) = [e for e in original.events if e.type is EventType.ERROR]
    last_start = [e for e in original.events if e.type is EventType.AGENT_START][-1]
    assert placed.step_index < last_start.step_index  # placed at the model's node, a
    ref = last_start.checkpoint
    assert ref is not None
    config = {"configurable": {"thread_id": "r", "checkpoint_id": ref.checkpoint_id}}
    fork = AgentDebugCallback(dbg)
    with pytest.raises(GraphRecursionError):
        graph.invoke(None, {**config, "callbacks": [fork], "recursion_limit": 3})
    history = dbg.history(fork.trajectory())
    errors = [e for e in history.events if e.type is EventType.ERROR]
    assert [e.id for e in errors] == [
        e.id for e in fork.trajectory().events if e.type is EventType.ERROR
    ]


def test_a_fork_of_a_checkpoint_many_runs_back_on_the_thread_forks_the_run_that_made_it(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chat thread is one run per turn: a replay of an early turn is found however
    many turns came after it, reading the thread's runs back to that turn only."""
    graph = abc_graph()
    turns = []
    for _ in range(20):
        cb = AgentDebugCallback(dbg)
        graph.invoke({"x": 0}, {"configurable": {"thread_id": "chat"}, "callbacks": [cb]})
        turns.append(cb.trajectory())
    third = turns[2]
    b_start = next(e for e in third.events if e.agent_name == "b")
    assert b_start.checkpoint is not None
    config = {
        "configurable": {"thread_id": "chat", "checkpoint_id": b_start.checkpoint.checkpoint_id}
    }

    store = dbg.store
    assert store is not None
    read: list[str] = []
    load = store.load_trajectory

    def counted(run_id: str) -> AgentTrajectory:
        read.append(run_id)
        return load(run_id)

    monkeypatch.setattr(store, "load_trajectory", counted)
    replay = AgentDebugCallback(dbg)
    graph.invoke(None, {**config, "callbacks": [replay]})
    # the turns after the third, then the third: not the two before it
    assert [r for r in read if r in {t.id for t in turns}] == [t.id for t in reversed(turns[2:])]
    run = replay.trajectory()
    assert run.metadata["continues"] == third.id
    assert run.metadata["langgraph"]["forked_from"]["run"] == third.id
    assert run.metadata["continues_before_step"] == b_start.step_index
    assert [name for name, _ in nodes(dbg.history(run))] == ["a", "b", "c"]  # a: the third's


def test_a_fork_of_an_unrecorded_checkpoint_before_many_runs_is_a_run_of_its_own(
    dbg: AgentDebug,
) -> None:
    graph = abc_graph()
    graph.invoke({"x": 0}, {"configurable": {"thread_id": "chat"}})  # not recorded
    snapshot = before(graph, "chat", "c")
    for _ in range(12):
        graph.invoke(
            {"x": 0},
            {"configurable": {"thread_id": "chat"}, "callbacks": [AgentDebugCallback(dbg)]},
        )
    cb = AgentDebugCallback(dbg)
    graph.invoke(None, {**snapshot.config, "callbacks": [cb]})
    run = cb.trajectory()
    assert "continues" not in run.metadata
    assert run.metadata["langgraph"]["forked_from"] == {
        "checkpoint_id": snapshot.config["configurable"]["checkpoint_id"]
    }


def _exit_run(how: str, graph: Any, inputs: Any, config: Any) -> Any:
    """A run with ``durability="exit"``: LangGraph saves no checkpoint per step, only
    the one the run ends at (for a run that raised, the one its failing step
    started from), so its steps record none."""
    if how == "ainvoke":
        return asyncio.run(graph.ainvoke(inputs, config, durability="exit"))
    return graph.invoke(inputs, config, durability="exit")


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_fix_of_the_state_after_a_run_made_with_durability_exit_forks_that_run(
    dbg: AgentDebug, how: str
) -> None:
    """The run that failed recorded no checkpoint on its steps, yet LangGraph kept
    the one its failing node started from: the run from the human's fix continues
    it from before that node, as with the default durability (before, it was a run
    of its own, numbered from 1, whose history held nothing of what led there)."""
    graph = abc_graph()
    thread = {"configurable": {"thread_id": "exit-fix"}}
    first = AgentDebugCallback(dbg)
    with pytest.raises(ValueError):
        _exit_run(how, graph, {"x": 2}, {**thread, "callbacks": [first]})  # x=30 at c
    original = first.trajectory()
    assert not [e for e in original.events if e.checkpoint is not None]
    c_start = next(e for e in original.events if e.agent_name == "c")
    graph.update_state(thread, {"x": 3}, as_node="b")
    fixed = AgentDebugCallback(dbg)
    assert _exit_run(how, graph, None, {**thread, "callbacks": [fixed]}) == {"x": 3, "log": "c"}
    run = fixed.trajectory()
    assert run.metadata["continues"] == original.id
    assert run.metadata["continues_before_step"] == c_start.step_index
    forked = run.metadata["langgraph"]["forked_from"]
    assert forked["run"] == original.id and forked["step"] == c_start.step_index
    assert run.events[0].input == [{"x": 3}]
    assert nodes(dbg.history(run)) == [("a", 1), ("b", 2), *nodes(run)]


@pytest.mark.parametrize("where", ["this process", "another worker"])
def test_a_retry_after_an_edited_run_made_with_durability_exit_failed_continues_that_run(
    dbg: AgentDebug, where: str
) -> None:
    """As with the default durability: the run from the edit failed at its first
    node, its step recorded no checkpoint, and the retry after the code's fix is
    that run's retry, told by its node's task (before, it was taken for the edit
    forked again, continuing the first run, and the failed attempt was not linked)."""
    from agentdebug_langgraph import _state

    graph = abc_graph()
    thread = {"configurable": {"thread_id": "exit-again"}}
    with pytest.raises(ValueError):
        _exit_run("invoke", graph, {"x": 2}, {**thread, "callbacks": [AgentDebugCallback(dbg)]})
    graph.update_state(thread, {"x": 20}, as_node="b")  # still too big for c
    edited = AgentDebugCallback(dbg, diagnose=False)
    with pytest.raises(ValueError):
        _exit_run("invoke", graph, None, {**thread, "callbacks": [edited]})
    failed_c = next(e for e in edited.trajectory().events if e.agent_name == "c")
    LIMIT["x"] = 100  # the fix
    if where == "another worker":
        _state.STOPPED.drain()
        _state.LATEST.drain()
    retry = AgentDebugCallback(dbg, diagnose=False)
    out = _exit_run("invoke", graph, None, {**thread, "callbacks": [retry]})
    assert out == {"x": 20, "log": "c"}
    run = retry.trajectory()
    assert run.metadata["continues"] == edited.last_run_id
    assert "forked_from" not in run.metadata["langgraph"]
    (c,) = [e for e in run.events if e.type is EventType.AGENT_START]
    assert c.agent_name == "c" and c.metadata.get("retry_of") == failed_c.id


def test_an_edited_request_is_the_forks_goal_and_an_added_correction_keeps_the_runs(
    dbg: AgentDebug,
) -> None:
    """Editing the user's message of a turn (the same id, new words) and running on:
    the fork's goal is the request as edited, not the forked run's. A correction
    added beside the request leaves the request the goal."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import MessagesState

    model = FakeMessagesListChatModel(responses=[AIMessage(content="done")])
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_edge(START, "agent")
    graph = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg)
    config: Any = {"configurable": {"thread_id": "t-edit"}, "callbacks": [cb]}
    graph.invoke({"messages": [HumanMessage("Refund order 7", id="h1")]}, config)
    graph.invoke({"messages": [HumanMessage("Refund order 8", id="h2")]}, config)
    assert cb.trajectory().goal == "Refund order 8"

    # the second turn's request rewritten, at the checkpoint before its model call
    turn = next(s for s in graph.get_state_history(config) if s.next == ("agent",))
    edited = graph.update_state(
        turn.config, {"messages": [HumanMessage("Refund order 9", id="h2")]}
    )
    graph.invoke(None, {**edited, "callbacks": [cb]})
    run = cb.trajectory()
    assert run.metadata["langgraph"]["forked_from"]["edits"] == 1
    assert run.goal == "Refund order 9"

    # a correction added after the request: the request is still what the run is for
    added = graph.update_state(turn.config, {"messages": [HumanMessage("Be quick", id="h3")]})
    graph.invoke(None, {**added, "callbacks": [cb]})
    assert cb.trajectory().goal == "Refund order 8"
