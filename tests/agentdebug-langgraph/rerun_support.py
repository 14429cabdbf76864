"""What the rerun tests share: the failing refund run, a rerun request from its
report, checks on a branch, and a worker process recording into a store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentdebug import AgentDebug, AgentTrajectory, EventType, OutcomeStatus
from agentdebug.rerun import closed_loop
from agentdebug.schema import RecoveryPlan, RerunRequest
from agentdebug_langgraph import AgentDebugCallback, LangGraphRerunExecutor
from langchain_core.messages import HumanMessage
from lg_graphs import order_found

REQUEST = {"messages": [HumanMessage("Refund order A123")]}
HERE = Path(__file__).resolve().parent


def worker(script: str, home: Path, *args: str, timeout: int = 120, killed: int = 0) -> None:
    """Run ``script`` in a process of its own (another worker of a service, say),
    with ``home`` (its store), this folder (to import the graphs) and ``args`` as
    its arguments, to its end; it prints "exiting" when it gets there (or, when it
    is to be ``killed``, ends with that exit status)."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(home), str(HERE), *args],
        env={**os.environ, "OTEL_SDK_DISABLED": "true"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if killed:
        assert done.returncode == killed, done.stderr
        return
    assert done.returncode == 0 and "exiting" in done.stdout, done.stderr


def failed_run(dbg: AgentDebug, graph: Any, thread: str, **options: Any) -> AgentDebugCallback:
    cb = AgentDebugCallback(dbg, success_check=order_found, **options)
    graph.invoke(REQUEST, {"configurable": {"thread_id": thread}, "callbacks": [cb]})
    assert cb.reports, "the scenario must fail and be diagnosed"
    return cb


def request_from(run: AgentTrajectory, cb: AgentDebugCallback) -> RerunRequest:
    report = cb.reports[0]
    root = report.root_cause
    assert root is not None and root.step_index is not None and report.fix is not None
    plan = RecoveryPlan(
        strategy="native",
        directive=report.fix.directive,
        resume_step=root.step_index,
        rationale=root.rationale,
    )
    return RerunRequest(
        trajectory=run, resume_step=root.step_index, directive=plan.directive, plan=plan
    )


def assert_branch_of(branch: AgentTrajectory, original: AgentTrajectory, step: int) -> None:
    assert branch.parent_id == original.id
    assert branch.metadata["branch"]["parent_id"] == original.id
    assert branch.metadata["branch"]["resume_step"] == step
    resumed = next(e for e in original.events if e.step_index >= step)
    assert branch.branch_from_event_id == resumed.id
    inherited = [e for e in branch.events if e.metadata.get("inherited_from") == original.id]
    assert inherited and all(e.step_index < step for e in inherited)


def new_nodes(branch: AgentTrajectory) -> list[str | None]:
    """The nodes the branch ran itself (not inherited from its parent)."""
    return [
        e.agent_name
        for e in branch.events
        if e.type is EventType.AGENT_START and "inherited_from" not in e.metadata
    ]


def verified_branch(
    dbg: AgentDebug, graph: Any, cb: AgentDebugCallback, check: Any = order_found
) -> AgentTrajectory:
    """The closed loop on the callback's failed run (judged by ``check``): it must
    succeed, verified by rerun; returns the branch that did."""
    executor = LangGraphRerunExecutor(graph, debugger=dbg, success_check=check)
    result = closed_loop(
        cb.trajectory(), debugger=dbg, executor=executor, report=cb.reports[0], policy="auto"
    )
    assert result.status == "succeeded" and result.verified_by_rerun is True
    store = dbg.store
    assert store is not None
    branch = store.load_trajectory(result.attempts[0].branch_id or "")
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    return branch


def one_round(
    dbg: AgentDebug, run: AgentTrajectory, executor: Any, cb: AgentDebugCallback
) -> tuple[Any, AgentTrajectory]:
    """One round of the closed loop on a run its callback diagnosed (``executor``
    None: the one the loop finds): its result, and the branch it ran."""
    result = closed_loop(
        run, debugger=dbg, executor=executor, report=cb.reports[0], policy="auto", max_rounds=1
    )
    store = dbg.store
    assert store is not None
    return result, store.load_trajectory(result.attempts[0].branch_id or "")
