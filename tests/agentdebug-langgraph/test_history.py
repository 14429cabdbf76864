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
from agentdebug.errors import AgentDebugError
from agentdebug.rerun import closed_loop
from agentdebug.schema import RerunRequest
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_graphs import (
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
