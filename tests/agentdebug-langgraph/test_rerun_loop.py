"""The loop around a checkpoint rerun: what judges a branch, the graph factory,
the branch's own thread and later rounds (interrupts: test_rerun_interrupts.py; async runs and
savers: test_rerun_async.py)."""

from __future__ import annotations

import operator
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

import lg_graphs
import pytest
from agentdebug import AgentDebug, OutcomeStatus
from agentdebug.errors import AgentDebugError
from agentdebug.rerun import closed_loop
from agentdebug.schema import RerunRequest
from agentdebug_langgraph import (
    AgentDebugCallback,
    LangGraphRerunExecutor,
    branch_threads,
    prune_branch_threads,
)
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from lg_graphs import (
    Heeding,
    call,
    linear_graph,
    order_found,
    planned_answer,
    refund_given,
    scripted,
    sqlite_saver,
    tool_agent,
    wrong_then_right,
)
from rerun_support import (
    REQUEST,
    failed_run,
    new_nodes,
    request_from,
)


def test_free_tier_loop_retries_a_failure_no_detector_names_with_the_runs_reason(
    dbg: AgentDebug,
) -> None:
    """No detector fires on a wrong plan, so the free tier's report has no fix;
    the native recoverer then tells the blamed step how the run failed, and the
    planner, reading that in its forked state, plans again and the run passes."""
    planner = Heeding(
        cue="does not give the refund amount",
        default="Plan: tell them when it ships.",
        heeded="Plan: give the refund amount.",
    )
    graph = planned_answer(planner, InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=refund_given)
    graph.invoke(
        {"messages": [HumanMessage("How much is my refund for order A123?")]},
        {"configurable": {"thread_id": "t-generic"}, "callbacks": [cb]},
    )
    report = cb.reports[0]
    assert report.findings == [] and report.fix is None
    assert report.root_cause is not None and report.root_cause.agent_name == "planner"
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=refund_given)
    result = closed_loop(
        cb.trajectory(), debugger=dbg, executor=executor, report=report, policy="auto"
    )
    assert result.status == "succeeded" and result.verified_by_rerun is True
    plan = result.attempts[0].plan
    assert plan is not None and plan.resume_step == report.root_cause.step_index
    assert "the run failed: the answer does not give the refund amount" in plan.directive
    assert "generic directive" in plan.rationale and plan.notes
    store = dbg.store
    assert store is not None
    branch = store.load_trajectory(result.attempts[0].branch_id or "")
    assert branch.outcome.final_answer == "Your refund is $42."
    assert new_nodes(branch) == ["planner", "writer"]


def test_a_branch_is_judged_by_the_runs_own_check_even_one_without_an_importable_name(
    dbg: AgentDebug,
) -> None:
    """A check that is a lambda (or defined in the script, or nested) cannot be
    imported by name: in the same process the rerun still uses it, and where it
    is gone the branch is ``unknown``, saying why, instead of passing for want
    of a check (which the loop would report as verified by rerun)."""
    from agentdebug_langgraph import _live

    judged: list[Any] = []
    saver = InMemorySaver()
    graph = tool_agent(scripted(wrong_then_right()), saver)
    cb = AgentDebugCallback(dbg, success_check=lambda s: judged.append(s) or order_found(s))
    graph.invoke(REQUEST, {"configurable": {"thread_id": "t-lambda"}, "callbacks": [cb]})
    original = cb.trajectory()
    assert "success_check" not in original.metadata["langgraph"]
    assert original.metadata["langgraph"]["success_check_unimportable"].endswith("<lambda>")
    result = closed_loop(
        original,
        debugger=dbg,
        executor=LangGraphRerunExecutor(graph, debugger=dbg),
        report=cb.reports[0],
        policy="auto",
    )
    assert result.status == "succeeded" and result.verified_by_rerun is True
    assert len(judged) == 2  # the run, then its branch

    _live._LIVE_CHECKS.clear()  # as in another process: the lambda is gone
    right = scripted(wrong_then_right()[2:])
    executor = LangGraphRerunExecutor(tool_agent(right, saver), debugger=dbg)
    result = closed_loop(
        original, debugger=dbg, executor=executor, report=cb.reports[0], policy="auto"
    )
    # the loop's default scorer would read the branch's outcome: refused before the
    # gate, with no branch run (its tools would run, to no verdict)
    assert result.status == "error" and result.verified_by_rerun is not True
    assert not result.attempts[0].branch_id and result.attempts[0].decision is None
    assert "could not be judged" in result.detail
    assert "has no importable name" in result.detail
    # rerun directly: the branch runs and is left unknown, saying why
    branch = executor.rerun(request_from(original, cb))
    assert len(judged) == 2  # not called again, and not replaced by "no check: success"
    assert branch.outcome.status is OutcomeStatus.UNKNOWN
    reason = branch.outcome.reason or ""
    assert "has no importable name" in reason and "success_check=" in reason


def test_a_runs_check_whose_name_now_names_an_async_function_leaves_the_branch_unknown(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check a run recorded by name is imported again for its branch; a name that
    now holds an ``async def`` cannot judge it (nothing is awaited there): the branch
    is ``unknown``, saying so, and the rerun does not stop with a TypeError."""
    from agentdebug_langgraph import _live

    saver = InMemorySaver()
    graph = tool_agent(scripted(wrong_then_right()), saver)
    cb = AgentDebugCallback(dbg, success_check=order_found)
    graph.invoke(REQUEST, {"configurable": {"thread_id": "t-async-now"}, "callbacks": [cb]})
    original = cb.trajectory()
    assert original.metadata["langgraph"]["success_check"] == "lg_graphs:order_found"

    async def order_found_now(state: Any) -> bool:
        return True

    _live._LIVE_CHECKS.clear()  # as in another process
    monkeypatch.setattr(lg_graphs, "order_found", order_found_now)
    right = scripted(wrong_then_right()[2:])
    branch = LangGraphRerunExecutor(tool_agent(right, saver), debugger=dbg).rerun(
        RerunRequest(trajectory=original, resume_step=1, directive="Look the order up.")
    )
    assert branch.outcome.status is OutcomeStatus.UNKNOWN
    reason = branch.outcome.reason or ""
    assert "lg_graphs:order_found" in reason and "not an async one" in reason


def test_a_graph_factory_that_fails_or_returns_no_graph_is_named_in_one_line(
    dbg: AgentDebug,
) -> None:
    cb = failed_run(dbg, tool_agent(scripted(wrong_then_right()), InMemorySaver()), "t-fact")
    original = cb.trajectory()
    executor = LangGraphRerunExecutor(debugger=dbg)
    for factory, said in [
        (
            "lg_graphs:broken_factory",
            "its graph factory 'lg_graphs:broken_factory' raised "
            "RuntimeError: unable to open database file",
        ),
        (
            "lg_graphs:exiting_factory",  # (before: the process exited with that line)
            "its graph factory 'lg_graphs:exiting_factory' raised "
            "SystemExit: orders.db is missing: run setup.py first",
        ),
        (
            "lg_graphs:not_a_graph",
            "the graph its factory 'lg_graphs:not_a_graph' returned is an int, "
            "not a compiled LangGraph graph",
        ),
        (
            "lg_graphs:unsaved_agent",
            "its graph factory 'lg_graphs:unsaved_agent' returns a graph without a "
            "checkpointer, so it cannot read the checkpoints the run saved",
        ),
    ]:
        lg = {**original.metadata["langgraph"], "graph_factory": factory}
        elsewhere = original.model_copy(update={"id": "elsewhere", "metadata": {"langgraph": lg}})
        with pytest.raises(AgentDebugError) as raised:
            executor.rerun(request_from(elsewhere, cb))
        assert said in str(raised.value)
        assert "functional-API" not in str(raised.value)


def test_a_graph_factory_is_looked_for_without_running_the_users_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package in the folder the app runs in (where ``agentdebug act`` looks, not
    on the script's ``sys.path``) is accepted, and its ``__init__`` is not run."""
    package = tmp_path / "myapp_probe"
    package.mkdir()
    (package / "__init__.py").write_text("raise KeyError('MY_API_KEY')\n")
    (package / "graphs.py").write_text("def build():\n    return None\n")
    monkeypatch.chdir(tmp_path)
    spec = "myapp_probe.graphs:build"
    assert AgentDebugCallback(graph_factory=spec).graph_factory == spec
    assert "myapp_probe" not in sys.modules


def test_a_graph_factory_that_no_rerun_could_import_is_refused_at_capture() -> None:
    assert AgentDebugCallback(graph_factory=lg_graphs.agent_from_env).graph_factory == (
        "lg_graphs:agent_from_env"
    )
    # a module not imported yet is looked for, not imported (its import may do work)
    later = "email.mime.audio:MIMEAudio"
    assert AgentDebugCallback(graph_factory=later).graph_factory == later
    with pytest.raises(ValueError, match=r"no module a is found on sys.path.*could not rebuild"):
        AgentDebugCallback(graph_factory="a.b:c")
    with pytest.raises(ValueError, match="lg_graphs has no 'agent_from_evn'"):
        AgentDebugCallback(graph_factory="lg_graphs:agent_from_evn")  # (a typo)
    with pytest.raises(ValueError, match="expected 'module:function'"):
        AgentDebugCallback(graph_factory="lg_graphs.agent_from_env")
    with pytest.raises(ValueError, match="must be a top-level function"):
        AgentDebugCallback(graph_factory=lambda: None)
    with pytest.raises(TypeError, match="not int"):
        AgentDebugCallback(graph_factory=42)  # type: ignore[arg-type]


def test_each_round_of_the_loop_records_every_correction_its_state_holds(
    dbg: AgentDebug,
) -> None:
    """Round 2 reruns round 1's branch from the same step: the state it forks holds
    round 1's correction as well as its own, and its recorded run says so."""
    stubborn = [call("lookup_order_by_email", {"email": "A123"}, "c"), AIMessage("Done.")]
    graph = tool_agent(scripted(stubborn * 4), InMemorySaver())
    cb = failed_run(dbg, graph, "t-rounds")
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found)
    result = closed_loop(
        cb.trajectory(),
        debugger=dbg,
        executor=executor,
        report=cb.reports[0],
        policy="auto",
        max_rounds=3,
    )
    assert result.status == "failed" and len(result.attempts) == 3
    store = dbg.store
    assert store is not None
    last = store.load_trajectory(result.attempts[-1].branch_id or "")
    forks = [e for e in last.events if e.metadata.get("langgraph_event") == "fork"]
    assert len(forks) == 3 and all(e.step_index == 1 for e in forks)
    assert [("inherited_from" in e.metadata) for e in forks] == [True, True, False]
    fork = last.metadata["langgraph"]["fork"]
    assert fork["original_thread_id"] == "t-rounds"  # the user's, three rounds down
    assert fork["thread_id"].count("~agentdebug-") == 1
    assert fork["forked_thread_id"].startswith("t-rounds~agentdebug-")  # round 2's
    state = graph.get_state(
        {"configurable": {"thread_id": fork["thread_id"], "checkpoint_id": fork["checkpoint_id"]}}
    )
    said = [m.content for m in state.values["messages"] if "previous attempt" in str(m.content)]
    assert len(said) == 3  # what the model saw, as the recorded run says


def test_isolate_false_forks_on_the_runs_own_thread_as_time_travel(dbg: AgentDebug) -> None:
    graph = tool_agent(scripted(wrong_then_right()), InMemorySaver())
    cb = failed_run(dbg, graph, "t-travel")
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=order_found, isolate=False)
    branch = executor.rerun(request_from(cb.trajectory(), cb))
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert branch.metadata["langgraph"]["fork"]["thread_id"] == "t-travel"
    latest = graph.get_state({"configurable": {"thread_id": "t-travel"}})
    assert latest.values["messages"][-1].content == "Order A123 costs $42.00."  # the branch's
    # no copy of the thread is left (a routing function's start made one; a review's find)
    assert branch_threads(graph) == []


@pytest.mark.parametrize("saver", ["memory", "sqlite"])
def test_branch_threads_are_listed_and_pruned_leaving_the_users_threads(
    dbg: AgentDebug, tmp_path: Path, saver: str
) -> None:
    """Each rerun leaves a thread in the user's checkpointer; pruning deletes
    those (of one user thread, all but the newest ``keep``), never the user's."""
    db = str(tmp_path / "cp.sqlite")
    checkpointer: Any = InMemorySaver() if saver == "memory" else sqlite_saver(db)
    graph = linear_graph(checkpointer)
    runs = {}
    for thread in ("t-a", "t-b"):
        cb = AgentDebugCallback(dbg)
        graph.invoke(
            {"n": 0, "trail": []}, {"configurable": {"thread_id": thread}, "callbacks": [cb]}
        )
        runs[thread] = cb.trajectory()
    executor = LangGraphRerunExecutor(graph, debugger=dbg)
    branches = []
    for thread in ("t-a", "t-a", "t-b"):
        request = RerunRequest(
            trajectory=runs[thread], resume_step=2, directive="x", state_patch={"n": 9}
        )
        branches.append(executor.rerun(request))
    made = [b.metadata["langgraph"]["fork"]["thread_id"] for b in branches]
    assert branch_threads(graph) == made  # the least recently used first
    assert branch_threads(checkpointer, "t-a") == made[:2]
    if saver == "sqlite":  # another process, another connection: the same threads
        graph = linear_graph(sqlite_saver(db))
    assert prune_branch_threads(graph, keep=5) == []  # (more kept than there are)
    assert prune_branch_threads(graph, "t-a", keep=1) == made[:1]
    assert branch_threads(graph) == made[1:]
    assert prune_branch_threads(graph) == made[1:] and branch_threads(graph) == []
    pruned = dbg.store.load_trajectory(branches[0].id)  # a pruned branch says why it cannot rerun
    with pytest.raises(AgentDebugError, match=r"deleted \(prune_branch_threads\)"):
        executor.rerun(
            RerunRequest(trajectory=pruned, resume_step=2, directive="x", state_patch={"n": 1})
        )
    for thread in ("t-a", "t-b"):  # the users' threads are as their runs left them
        state = graph.get_state({"configurable": {"thread_id": thread}})
        assert state.values["trail"] == ["plan", "act", "report"]
    with pytest.raises(AgentDebugError, match="keep must be 0 or more"):
        prune_branch_threads(graph, keep=-1)
    with pytest.raises(AgentDebugError, match="with a checkpointer, or a checkpointer, not int"):
        branch_threads(3)


class Asked(TypedDict):
    q: str
    out: Annotated[list[str], operator.add]


class Remembering(Asked):
    memory: Annotated[list[str], operator.add]  # the subgraph's own, kept across runs


def remembering_graph(saver: Any) -> Any:
    def recall(s: dict[str, Any]) -> dict[str, Any]:
        return {"memory": [s["q"]], "out": [f"remembers {s.get('memory', [])}"]}

    inner = StateGraph(Remembering)
    inner.add_node("recall", recall)
    inner.add_edge(START, "recall")
    g = StateGraph(Asked)
    g.add_node("prep", lambda s: {"out": ["prep"]})
    g.add_node("sub", inner.compile(checkpointer=True))
    g.add_edge(START, "prep")
    g.add_edge("prep", "sub")
    return g.compile(checkpointer=saver)


@pytest.mark.parametrize("saver", ["memory", "sqlite"])
def test_a_branch_starts_with_the_memory_a_subgraph_keeps_on_the_thread(
    dbg: AgentDebug, tmp_path: Path, saver: str
) -> None:
    """A subgraph compiled with ``checkpointer=True`` keeps its own history on the
    thread; the branch's thread gets its state from before the blamed step too, so
    the rerun remembers what the original remembered."""
    graph = remembering_graph(
        InMemorySaver() if saver == "memory" else sqlite_saver(str(tmp_path / "c.db"))
    )
    config: Any = {"configurable": {"thread_id": "mem"}}
    graph.invoke({"q": "first", "out": []}, config)
    cb = AgentDebugCallback(dbg)
    graph.invoke({"q": "second", "out": []}, {**config, "callbacks": [cb]})
    original = cb.trajectory()
    assert original.outcome.final_answer["out"][-1] == "remembers ['first']"
    sub = next(e for e in original.events if e.agent_name == "sub")
    branch = LangGraphRerunExecutor(graph, debugger=dbg).rerun(
        RerunRequest(
            trajectory=original,
            resume_step=sub.step_index,
            directive="again",
            state_patch={"out": ["patched"]},
        )
    )
    assert branch.metadata["langgraph"]["fork"]["thread_id"] != "mem"
    assert branch.outcome.final_answer["out"][-1] == "remembers ['first']"


def test_a_second_round_forks_a_node_a_command_routed_to(dbg: AgentDebug) -> None:
    """A review: a worker a router reached with ``Command(goto=...)`` was forked in
    round 1 (as the router, routing with a Command), but round 2, forking the
    round-1 branch, whose events start after the router, refused ("no state update
    leaves its super-step's tasks pending"), and the loop ended in an error."""
    from typing import Literal

    from langgraph.graph.message import MessagesState
    from langgraph.types import Command

    model = scripted([AIMessage("Lyon."), AIMessage("Lyon."), AIMessage("Paris.")])

    def router(state: MessagesState) -> Command[Literal["worker"]]:
        return Command(goto="worker")

    def worker(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    reviewed: list[str] = []

    def reviewer(state: MessagesState) -> dict[str, Any]:
        reviewed.append(str(state["messages"][-1].content))
        return {}

    builder = StateGraph(MessagesState).add_node("router", router, destinations=("worker",))
    builder.add_node("worker", worker).add_node("reviewer", reviewer)
    builder.add_edge(START, "router").add_edge("worker", "reviewer")
    graph = builder.compile(checkpointer=InMemorySaver())

    def paris(state: dict[str, Any]) -> bool | str:
        said = str(state["messages"][-1].content)
        return "Paris" in said or f"answered {said!r}; the capital of France is Paris"

    cb = AgentDebugCallback(dbg, success_check=paris)
    ask = {"messages": [HumanMessage("What is the capital of France?")]}
    graph.invoke(ask, {"callbacks": [cb], "configurable": {"thread_id": "t-command"}})
    result = closed_loop(
        cb.trajectory(),
        debugger=dbg,
        executor=LangGraphRerunExecutor(graph, debugger=dbg),
        report=cb.reports[0],
        policy="auto",
        max_rounds=3,
    )
    assert result.status == "succeeded", result.detail
    assert [a.round for a in result.attempts] == [1, 2]
    forks = [dbg.store.load_trajectory(a.branch_id).metadata["langgraph"]["fork"]
             for a in result.attempts]  # fmt: skip
    assert [f["as_node"] for f in forks] == ["router, routing with Command(goto)"] * 2
    # (a second review: round 2 forked as the worker, whose own edge then ran the
    # reviewer a second time, on a state holding only the directive)
    assert reviewed == ["Lyon.", "Lyon.", "Paris."]


def test_a_branch_runs_a_graph_its_node_invokes_on_a_thread_of_its_own_on_a_copy(
    dbg: AgentDebug,
) -> None:
    """A node runs a sub-agent with a checkpointer of its own on the user's thread
    ``orders-1``. The branch runs the node's code again, which names that thread: it
    runs on a copy of it (``orders-1~agentdebug-<id>``), and the sub-agent's real
    conversation is left as the run left it (a review's find: the branch's directive
    and turns were written into it)."""
    inner_saver = InMemorySaver()
    orders = tool_agent(scripted(wrong_then_right()), inner_saver)

    def ask_orders(state: MessagesState) -> dict[str, Any]:
        said = orders.invoke(
            {"messages": state["messages"][-1:]}, {"configurable": {"thread_id": "orders-1"}}
        )
        return {"messages": [said["messages"][-1]]}

    g = StateGraph(MessagesState)
    g.add_node("orders_node", ask_orders)
    g.add_edge(START, "orders_node")
    app = g.compile(checkpointer=InMemorySaver())
    cb = AgentDebugCallback(dbg, success_check=order_found)
    app.invoke(REQUEST, {"callbacks": [cb], "configurable": {"thread_id": "u1"}})
    mine = {"configurable": {"thread_id": "orders-1"}}
    held = list(inner_saver.list(mine))
    executor = LangGraphRerunExecutor(app, debugger=dbg, success_check=order_found)
    result = closed_loop(cb.trajectory(), debugger=dbg, executor=executor, policy="auto")
    assert list(inner_saver.list(mine)) == held  # the user's thread as it was
    if not held:  # (LangGraph 1.2.4 keeps such a graph's checkpoints with its caller's:
        return  # it has no thread of its own, nor a copy of one)
    copies = branch_threads(inner_saver, "orders-1")
    assert copies and all(t.startswith("orders-1~agentdebug-") for t in copies)
    # a branch of that branch, as from another process: its fork keeps the first fork's
    # time, of which its copies are made (a review's find: the third level's were not)
    from agentdebug_langgraph import _inner_threads

    _inner_threads._MADE.clear()
    first = dbg.store.load_trajectory(result.attempts[0].branch_id or "")  # type: ignore[union-attr]
    again = executor.rerun(request_from(first, cb))
    times = [run.metadata["langgraph"]["fork"]["as_of"] for run in (first, again)]
    assert times[1] == times[0]
    assert list(inner_saver.list(mine)) == held


def test_a_branch_of_a_branch_copies_the_first_branchs_threads_or_the_users_as_first_forked() -> (
    None
):
    """Round 2 forks round 1's branch: in this process its sub-agent threads are copied
    from round 1's copies; in another, from the user's threads as they were at round
    1's fork (before, as of round 2's fork: the original run's later turns were in
    it; a review's find)."""
    from agentdebug.schema import AgentTrajectory
    from agentdebug_langgraph._inner_threads import inner_threads

    original = AgentTrajectory(id="run-1")
    first = inner_threads("branch-1-abcdef", original, "2026-12-05T10:00:05+00:00")
    first.made["orders-1"] = "orders-1~agentdebug-branch-1-abc"
    branch = AgentTrajectory(
        id="branch-1-abcdef",
        metadata={"langgraph": {"fork": {"as_of": "2026-12-05T10:00:05+00:00"}}},
    )
    second = inner_threads("branch-2-abcdef", branch, "2026-12-05T10:00:09+00:00")
    assert second.sources == {"orders-1": "orders-1~agentdebug-branch-1-abc"}
    assert second.as_of == "2026-12-05T10:00:09+00:00"
    elsewhere = branch.model_copy(update={"id": "branch-made-elsewhere"})
    third = inner_threads("branch-3-abcdef", elsewhere, "2026-12-05T10:00:09+00:00")
    assert (third.sources, third.as_of) == ({}, "2026-12-05T10:00:05+00:00")
