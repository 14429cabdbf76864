"""Ctrl-C during a rerun: the stop goes on to the caller, and nothing is lost on
the way: the original run, the approved round on its report, and the branch as
far as it got, recorded as stopped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.rerun import branch_debugger, closed_loop, start_branch
from agentdebug.schema import AgentTrajectory, OutcomeStatus, RerunRequest
from conftest import run_cli
from toy_agent import failing_run

HERE = Path(__file__).resolve().parent


class InterruptedExecutor:
    """Starts the branch, redoes step 1, and is stopped there (Ctrl-C)."""

    framework = "toy"

    def rerun(self, request: RerunRequest) -> AgentTrajectory:
        with start_branch(branch_debugger(request), request, framework="toy") as t:
            t.record(EventType.REASONING, agent_name="researcher", step_index=1, output="hmm")
            raise KeyboardInterrupt


def make_interrupted_executor() -> InterruptedExecutor:
    return InterruptedExecutor()


@pytest.fixture
def dbg(tmp_path: Path) -> AgentDebug:
    return AgentDebug(tmp_path / "store")


def test_ctrl_c_during_a_rerun_keeps_the_round_and_the_stopped_branch(dbg: AgentDebug) -> None:
    run = failing_run(dbg)
    said: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        closed_loop(run, debugger=dbg, executor=InterruptedExecutor(), progress=said.append)
    store = dbg.store
    assert store is not None
    branch_id = next(r.id for r in store.list_runs() if r.id != run.id)
    assert store.load_trajectory(run.id).outcome.status is OutcomeStatus.FAILURE  # kept as it was
    branch = store.load_trajectory(branch_id)
    assert branch.parent_id == run.id and branch.outcome.stopped_by == "KeyboardInterrupt"
    (report,) = store.load_reports(run.id)
    (round_,) = report.metadata["recovery"]
    assert round_["decision"]["approved"] is True and round_["branch_id"] == branch_id
    assert "stopped (KeyboardInterrupt)" in round_["error"]
    assert report.verification is None  # a stopped rerun tested nothing
    assert any(branch_id in line and "original run is kept" in line for line in said)


def test_ctrl_c_during_act_rerun_says_what_is_kept(home: Path) -> None:
    dbg = AgentDebug(home)
    run = failing_run(dbg)
    dbg.close()
    env = {"PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    stopped = run_cli(
        "act",
        run.id,
        "--rerun",
        "--policy",
        "auto",
        "--executor",
        "test_loop_interrupt:make_interrupted_executor",
        env=env,
    )
    assert stopped.returncode == 130, stopped.stderr
    assert "the rerun was stopped (KeyboardInterrupt)" in stopped.stdout
    assert f"The original run {run.id} is kept" in stopped.stderr
    assert "aborted" not in stopped.stderr.lower()  # (before: "aborted", exit 1)
    shown = run_cli("show", run.id)
    assert "rerun:     branch " in shown.stdout and "(unknown)" in shown.stdout
