"""A run that continues another (a human's approval given in another worker, a
retry with ``invoke(None)``) numbers its steps on from it, and is diagnosed and
rerun with it: the wrong decision was taken before the approval, or before the
crash that was retried."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.capture.process import ABANDONED, settle_abandoned
from agentdebug.errors import AgentDebugError
from agentdebug.rerun import closed_loop
from agentdebug.schema import RerunRequest
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from lg_graphs import (
    Work,
    order_found,
    scripted,
    sqlite_saver,
    tool_agent,
    wrong_then_right,
)
from rerun_support import worker

ASK = {"messages": [HumanMessage(content="Refund order A123")]}

# A worker of the service: the agent picks the wrong tool, and the graph stops
# for a human to approve the tool call (interrupt_before the tool node); the
# worker then ends. The approval comes to another worker.
APPROVAL_ASKED = """
import sys
sys.path.insert(0, sys.argv[2])
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import HumanMessage
from lg_graphs import order_found, scripted, sqlite_saver, tool_agent, wrong_then_right
cb = AgentDebugCallback(AgentDebug(sys.argv[1]), success_check=order_found)
graph = tool_agent(
    scripted(wrong_then_right()[:1]), sqlite_saver(sys.argv[3]), interrupt_before=["tools"]
)
config = {"callbacks": [cb], "configurable": {"thread_id": "h1"}}
graph.invoke({"messages": [HumanMessage(content="Refund order A123")]}, config)
print("exiting", flush=True)
"""


def test_an_approval_given_in_another_worker_is_diagnosed_and_rerun_with_the_run_before(
    tmp_path: Path,
) -> None:
    """The approved run fails its success check. Its own steps hold only the tool
    call that failed and the false claim; the decision that picked the wrong tool
    is in the first worker's run. The automatic diagnosis reads both and blames
    that decision; the closed loop reruns from it on the thread's own checkpoint,
    gives the branch the human's approval again, and verifies the fix."""
    home, db = tmp_path / "home", str(tmp_path / "cp.db")
    worker(APPROVAL_ASKED, home, db)
    dbg = AgentDebug(home)
    try:
        assert dbg.store is not None
        (asked,) = [dbg.store.load_trajectory(r.id) for r in dbg.store.list_runs()]
        # the rest of the script: the false claim, then (for a branch) the right tool
        graph = tool_agent(
            scripted(wrong_then_right()[1:]), sqlite_saver(db), interrupt_before=["tools"]
        )
        cb = AgentDebugCallback(dbg, success_check=order_found)
        graph.invoke(None, {"callbacks": [cb], "configurable": {"thread_id": "h1"}})
        approved = cb.trajectory()
        assert approved.outcome.status is OutcomeStatus.FAILURE
        assert approved.metadata["continues"] == asked.id
        assert approved.goal == asked.goal == "Refund order A123"

        # numbered on from the first run, starting with the approval as a resume
        last = max(e.step_index for e in asked.events)
        resume = approved.events[0]
        assert resume.type is EventType.USER_INPUT and resume.step_index == last + 1
        assert resume.metadata["langgraph_event"] == "resume"
        assert resume.metadata["resumed_with"] == "none" and resume.metadata["replayable"]
        starts = [e for e in approved.events if e.type is EventType.AGENT_START]
        assert [(e.agent_name, e.step_index) for e in starts] == [
            ("tools", last + 2),
            ("agent", last + 3),
        ]
        assert not {e.id for e in approved.events} & {e.id for e in asked.events}
        # the approved tool call is filed under the answer that asked for it, before
        (decision,) = [e for e in asked.events if e.type is EventType.LLM_RESPONSE]
        (call,) = [e for e in approved.events if e.type is EventType.TOOL_CALL]
        assert (call.parent_id, call.step_index) == (decision.id, decision.step_index)
        assert call.metadata["executed_by"] == "tools"

        (report,) = cb.reports
        root = report.root_cause
        assert root is not None and (root.agent_name, root.step_index) == ("agent", 1)
        assert f"of run {asked.id}, which this run continues" in report.summary
        assert report.metadata["history"] == [asked.id, approved.id]
        # alone, the approved run has no node start at the blamed step to fork before
        executor = LangGraphRerunExecutor(graph, debugger=dbg)
        alone = RerunRequest(trajectory=approved, resume_step=1, directive="use lookup_order")
        with pytest.raises(AgentDebugError, match="cannot fork before node tools"):
            executor.rerun(alone)

        # the corrected branch asks for another tool than the human approved: by
        # default it waits for a person there, unverified
        result = closed_loop(approved, debugger=dbg, executor=executor, report=report)
        assert result.status == "error" and result.verified_by_rerun is not True
        assert "the branch stopped at an interrupt with the tool calls lookup_order(" in (
            result.detail
        )
        # the tools are safe to run again: the approval passes the branch's own calls
        graph = tool_agent(  # (the model's script again: the branch above took its call)
            scripted(wrong_then_right()[2:]), sqlite_saver(db), interrupt_before=["tools"]
        )
        executor = LangGraphRerunExecutor(graph, debugger=dbg, replay_answers="same-node")
        result = closed_loop(approved, debugger=dbg, executor=executor, report=report)
        assert result.status == "succeeded" and result.verified_by_rerun is True
        branch = dbg.store.load_trajectory(result.attempts[-1].branch_id or "")
        assert branch.parent_id == approved.id and "continues" not in branch.metadata
        # the branch starts with the first worker's events before the fork (the input)
        inherited = [e for e in branch.events if "inherited_from" in e.metadata]
        assert [e.id for e in inherited] == [asked.events[0].id]
        own = [e for e in branch.events if "inherited_from" not in e.metadata]
        replayed = [e for e in own if e.metadata.get("langgraph_event") == "resume"]
        assert replayed and replayed[0].metadata["replayed_from"] == resume.id
        assert [e.module for e in own if e.type is EventType.TOOL_CALL] == ["lookup_order"]
    finally:
        dbg.close()


def test_a_retry_is_diagnosed_with_the_run_it_retries(dbg: AgentDebug, _home: Path) -> None:
    """The tool call crashes the run; ``invoke(None)`` retries the tool node, which
    crashes again. The retry's diagnosis blames the agent's choice in the first run,
    and the CLI shows the two runs as one history."""
    graph = tool_agent(scripted(wrong_then_right()[:1]), InMemorySaver(), handle_tool_errors=False)
    config: Any = {"configurable": {"thread_id": "r1"}}
    first_cb = AgentDebugCallback(dbg)
    with pytest.raises(ValueError, match="is not an e-mail address"):
        graph.invoke(ASK, {**config, "callbacks": [first_cb]})
    cb = AgentDebugCallback(dbg)
    with pytest.raises(ValueError) as raised:
        graph.invoke(None, {**config, "callbacks": [cb]})
    first, retry = first_cb.trajectory(), cb.trajectory()
    assert retry.metadata["continues"] == first.id
    last = max(e.step_index for e in first.events)
    starts = [e for e in retry.events if e.type is EventType.AGENT_START]
    assert [(e.agent_name, e.step_index) for e in starts] == [("tools", last + 1)]
    assert not [e for e in retry.events if e.type is EventType.USER_INPUT]  # (a retry)
    (report,) = cb.reports
    root = report.root_cause
    assert root is not None and (root.agent_name, root.step_index) == ("agent", 1)
    assert f"of run {first.id}, which this run continues" in report.summary
    assert any(f"of run {first.id}" in note for note in raised.value.__notes__)
    dbg.close()

    env = {**os.environ, "AGENTDEBUG_HOME": str(_home)}
    cli = Path(sys.executable).parent / "agentdebug"
    shown = subprocess.run(
        [str(cli), "show", retry.id, "--history"], env=env, capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    assert f"continues: {first.id}" in shown.stdout
    assert "lookup_order_by_email" in shown.stdout and "root cause" in shown.stdout
    alone = subprocess.run(
        [str(cli), "diagnose", retry.id, "--alone", "--no-store"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert alone.returncode == 0, alone.stderr
    assert first.id not in alone.stdout


# One worker of a service per call: "ask" stops for the approval of the agent's
# tool call; "approve" gives it, and the tool's error crashes the run; "crash"
# dies in the middle of the tool node (the process killed), its run left open.
WORKER = """
import os, sys
sys.path.insert(0, sys.argv[2])
from agentdebug import AgentDebug
from agentdebug_langgraph import AgentDebugCallback
from langchain_core.messages import HumanMessage
from lg_graphs import scripted, sqlite_saver, tool_agent, wrong_then_right
mode = sys.argv[4]
model = scripted(wrong_then_right()[:1])
graph = tool_agent(
    model, sqlite_saver(sys.argv[3]), interrupt_before=["tools"], handle_tool_errors=False
)
cb = AgentDebugCallback(AgentDebug(sys.argv[1]))
config = {"callbacks": [cb], "configurable": {"thread_id": "w"}}
if mode == "ask":
    graph.invoke({"messages": [HumanMessage(content="Refund order A123")]}, config)
elif mode == "approve":
    try:
        graph.invoke(None, config)
    except ValueError:
        pass
else:
    import lg_graphs
    def die(*args, **kwargs):
        cb.debugger.flush()  # (what the writer wrote before the process was killed)
        os._exit(9)
    lg_graphs.lookup_order_by_email.func = die
    graph.invoke(None, config)
print("exiting", flush=True)
"""


def runs_by_start(dbg: AgentDebug) -> list[Any]:
    assert dbg.store is not None
    runs = [dbg.store.load_trajectory(r.id) for r in dbg.store.list_runs()]
    return sorted(runs, key=lambda t: t.started_at)


def test_a_retry_after_a_resume_in_other_workers_keeps_the_links(tmp_path: Path) -> None:
    """Three workers, three runs on one thread: the ask, the approval (the tool
    crashes), a retry here. The retry's tool call is still filed under the model
    answer of the first run, and its tool node's start names the attempt it
    retries, in the run before: so the diagnosis blames the decision, and counts
    the retry as another attempt of the crashed task."""
    home, db = tmp_path / "home", str(tmp_path / "cp.db")
    worker(WORKER, home, db, "ask")
    worker(WORKER, home, db, "approve")
    dbg = AgentDebug(home)
    try:
        asked, approved = runs_by_start(dbg)
        assert approved.metadata["continues"] == asked.id
        graph = tool_agent(
            scripted([]), sqlite_saver(db), interrupt_before=["tools"], handle_tool_errors=False
        )
        cb = AgentDebugCallback(dbg)
        with pytest.raises(ValueError):
            graph.invoke(None, {"callbacks": [cb], "configurable": {"thread_id": "w"}})
        retry = cb.trajectory()
        assert retry.metadata["continues"] == approved.id
        assert retry.events[0].type is EventType.AGENT_START  # a retry: no resume
        (decision,) = [e for e in asked.events if e.type is EventType.LLM_RESPONSE]
        (call,) = [e for e in retry.events if e.type is EventType.TOOL_CALL]
        assert (call.parent_id, call.agent_name) == (decision.id, "agent")
        (crashed,) = [e for e in approved.events if e.type is EventType.AGENT_START]
        (again,) = [e for e in retry.events if e.type is EventType.AGENT_START]
        assert again.metadata["retry_of"] == crashed.id and again.metadata["attempt"] == 2
        root = cb.reports[-1].root_cause
        assert root is not None and (root.agent_name, root.step_index) == ("agent", 1)
        # the lookup of the thread's last run went through an index of the threads
        indexes = dbg.store._query(  # type: ignore[union-attr]
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'runs_md_%'"
        )
        assert len(indexes) == 1
    finally:
        dbg.close()


@pytest.mark.parametrize("settled", [False, True], ids=["left-running", "settled-abandoned"])
def test_a_retry_after_a_worker_died_is_not_taken_for_an_answer(
    tmp_path: Path, settled: bool
) -> None:
    """A worker killed in the middle of a node leaves its run open ("running"),
    or, once a process of this machine has noticed, stored as abandoned; either
    way the next call on the thread continues it as a retry of that node, not as
    a human's answer to an interrupt (which a rerun would then replay)."""
    home, db = tmp_path / "home", str(tmp_path / "cp.db")
    worker(WORKER, home, db, "ask")
    worker(WORKER, home, db, "crash", killed=9)
    dbg = AgentDebug(home)
    try:
        _, died = runs_by_start(dbg)
        assert died.outcome.status is OutcomeStatus.RUNNING
        assert died.events[0].metadata["langgraph_event"] == "resume"  # (the approval)
        if settled:  # (as `agentdebug list`, or a debugger's first capture, does)
            assert dbg.store is not None and died.id in settle_abandoned(dbg.store)
            assert dbg.store.load_trajectory(died.id).outcome.stopped_by == ABANDONED
        graph = tool_agent(
            scripted([]), sqlite_saver(db), interrupt_before=["tools"], handle_tool_errors=False
        )
        cb = AgentDebugCallback(dbg, diagnose=False)
        with pytest.raises(ValueError):
            graph.invoke(None, {"callbacks": [cb], "configurable": {"thread_id": "w"}})
        retry = cb.trajectory()
        assert retry.metadata["continues"] == died.id
        assert not [e for e in retry.events if e.type is EventType.USER_INPUT]
    finally:
        dbg.close()


def test_an_error_a_retry_got_past_is_not_the_cause_of_a_later_failure(dbg: AgentDebug) -> None:
    """``fetch`` fails once (the connection dropped), the retry runs it again and
    it succeeds; then ``answer`` fails. The retry's diagnosis, reading the first
    run too, blames ``answer``: the earlier error was resolved by the retry."""
    drops = [1]

    def fetch(state: Work) -> dict[str, Any]:
        if drops and drops.pop():
            raise ConnectionError("connection reset by peer")
        return {"out": ["fetched"]}

    def answer(state: Work) -> dict[str, Any]:
        raise KeyError("the answer template has no field 'total'")

    g = StateGraph(Work)
    g.add_node("fetch", fetch)
    g.add_node("answer", answer)
    g.add_edge(START, "fetch")
    g.add_edge("fetch", "answer")
    g.add_edge("answer", END)
    graph = g.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "f"}}
    first = AgentDebugCallback(dbg)
    with pytest.raises(ConnectionError):
        graph.invoke({"items": [], "out": []}, {**config, "callbacks": [first]})
    cb = AgentDebugCallback(dbg)
    with pytest.raises(KeyError):
        graph.invoke(None, {**config, "callbacks": [cb]})
    retry = cb.trajectory()
    fetched = next(e for e in retry.events if e.agent_name == "fetch")
    failed_fetch = next(e for e in first.trajectory().events if e.agent_name == "fetch")
    assert fetched.metadata["retry_of"] == failed_fetch.id
    root = cb.reports[-1].root_cause
    assert root is not None and root.agent_name == "answer"
