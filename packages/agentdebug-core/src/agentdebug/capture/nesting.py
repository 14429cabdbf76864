"""Runs recorded inside another run: a sub-agent's loop, an inner ``dbg.trace()``.

A run begun while another is being recorded in the same context (a ReAct
sub-agent called from an orchestrator's step, a helper traced on its own inside a
traced request) is that run's sub-run: its header names the run it is within
(``metadata["within_run"]``), which a rerun's ``parent_id`` is not (a sub-run is
not a branch), and when it ends, the run it is within records how it went, as an
event of the sub-run's agent: ``agent.end`` with its answer when it did not fail,
``error`` with its failure when it did (``metadata["sub_run"]`` names it). So the
outer run's diagnosis sees the failure its sub-agent brought back, and the agent
that acted there, instead of an answer "All done" over two failed sub-runs, and a
handoff to an agent it never saw act.

A rerun's branch, and a run that continues another, are never sub-runs: they
belong to the run they rerun or continue.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from agentdebug.schema import EventType, OutcomeStatus

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession
    from agentdebug.schema import AgentTrajectory, Outcome

log = logging.getLogger("agentdebug.capture")

WITHIN = "within_run"  # the metadata key naming the run a sub-run was recorded within
SUB_RUN = "sub_run"  # the metadata key of the outer run's event naming the sub-run


def sub_agent(trajectory: AgentTrajectory) -> str:
    """The agent a sub-run stands for in the run it is within: the one that gave
    its final answer, else the last that acted, else its first declared agent."""
    for event in reversed(trajectory.events):
        if event.type is EventType.FINAL_ANSWER and event.agent_name:
            return event.agent_name
    for event in reversed(trajectory.events):
        if event.agent_name and event.type is not EventType.USER_INPUT:
            return event.agent_name
    if trajectory.agents:
        return trajectory.agents[0].name
    return "sub-run"


def report_to_outer(session: TraceSession, outcome: Outcome) -> None:
    """``session`` (a sub-run) has ended with ``outcome``: the run it is within
    records it, if that run is still being recorded. Never raises."""
    outer = session._within
    if outer is None or outer.ended_at is not None:
        return
    try:
        trajectory = session.trajectory()
        agent = sub_agent(trajectory)
        status = outcome.status
        meta: dict[str, Any] = {SUB_RUN: session.id, "sub_run_status": status.value}
        if session.goal:
            meta["sub_run_goal"] = session.goal
        if status is OutcomeStatus.FAILURE:
            error = outcome.error.model_dump() if outcome.error is not None else None
            reason = outcome.reason or "it failed"
            outer.record(
                EventType.ERROR,
                agent_name=agent,
                error=error
                or {"type": "SubRunFailed", "message": f"{agent}'s run {session.id}: {reason}"},
                output=outcome.final_answer,
                metadata={**meta, "sub_run_reason": reason},
            )
        else:
            outer.record(
                EventType.AGENT_END,
                agent_name=agent,
                output=outcome.final_answer,
                metadata=meta,
            )
    except Exception:
        log.exception(
            "agentdebug: run %s could not be reported to the run it is within", session.id
        )
