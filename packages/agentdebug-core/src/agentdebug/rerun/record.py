"""What the closed loop keeps in the store: runs and branches, and on each report
the rounds that acted on it (``metadata['recovery']``) and what a rerun said about
its root cause (``verification``)."""

from __future__ import annotations

import logging
from typing import Any

from agentdebug.detect.signals import DECISION_TYPES
from agentdebug.errors import AgentDebugError, NotFoundError
from agentdebug.rerun.diff import payload_bytes
from agentdebug.schema import (
    AgentTrajectory,
    Attempt,
    DiagnosticReport,
    EventType,
    RecoveryPlan,
    RerunRequest,
    Score,
    Verification,
)
from agentdebug.store import TraceStore

log = logging.getLogger("agentdebug.rerun")

_DECIDED = DECISION_TYPES | {EventType.AGENT_END}  # what a step decided, and its output
_PROMPTED = frozenset({EventType.LLM_CALL, EventType.LLM_RESPONSE, EventType.AGENT_END})


def ensure_stored(store: TraceStore, run: AgentTrajectory, *, replace: bool = False) -> None:
    """Put ``run`` in the store unless it is there; with ``replace``, also when the
    stored copy differs in its links or events (an executor that recorded elsewhere)."""
    try:
        stored = store.load_trajectory(run.id)
    except NotFoundError:
        store.save_trajectory(run)
        return
    if replace and (
        stored.parent_id != run.parent_id
        or stored.metadata != run.metadata
        or len(stored.events) != len(run.events)
    ):
        store.save_trajectory(run)


def latest_report(store: TraceStore, report: DiagnosticReport) -> DiagnosticReport:
    """The newest stored version of ``report`` (it is saved again as the loop goes)."""
    for stored in reversed(store.load_reports(report.trajectory_id)):
        if stored.id == report.id:
            return stored
    return report


def carried_verification(store: TraceStore, report: DiagnosticReport) -> DiagnosticReport:
    """``report`` with what a rerun already said about its root cause: the newest
    verification an earlier report of the same run, read the same way, holds for
    the same agent and step (a run is diagnosed again after the loop verified it, with another
    attributor or model). Noted on the report; as it is when there is none, or
    when the store cannot be read."""
    root = report.root_cause
    if root is None or report.verification is not None:
        return report
    try:
        earlier = store.load_reports(report.trajectory_id)
    except AgentDebugError:
        return report
    view = runs_read(report)
    for old in reversed(earlier):
        blamed = old.root_cause
        if (
            old.id != report.id
            and old.verification is not None
            and runs_read(old) == view  # (the same steps: a run read with its history or not)
            and blamed is not None
            and (blamed.agent_name, blamed.step_index) == (root.agent_name, root.step_index)
        ):
            return report.model_copy(
                update={
                    "verified_by_rerun": old.verified_by_rerun,
                    "verification": old.verification,
                    "notes": [
                        *report.notes,
                        f"the rerun verification of report {old.id}, which blamed the "
                        "same agent and step, carried over",
                    ],
                }
            )
    return report


def runs_read(report: DiagnosticReport) -> list[Any]:
    """The runs a report read (a run that continues others, read with them), as
    :func:`agentdebug.store.history.made_on` compares them; empty for a run alone."""
    read = report.metadata.get("history")
    return list(read) if isinstance(read, list) else []


def update_report(store: TraceStore, report: DiagnosticReport, update: dict[str, Any]) -> None:
    latest = latest_report(store, report)
    try:
        store.save_report(latest.model_copy(update=update))
    except AgentDebugError as exc:
        log.error("agentdebug: report %s not updated: %s", report.id, exc)


def save_attempt(store: TraceStore, report: DiagnosticReport, attempt: Attempt) -> None:
    """Keep a round (plan, gate decision, branch, score, error) on the report it acted on."""
    latest = latest_report(store, report)
    done = list(latest.metadata.get("recovery", []))
    done.append(attempt.model_dump(mode="json"))
    update_report(store, latest, {"metadata": {**latest.metadata, "recovery": done}})


def record_verification(
    store: TraceStore,
    report: DiagnosticReport,
    branch: AgentTrajectory,
    request: RerunRequest,
    score: Score,
) -> Verification:
    """What a scored branch says about the report's root cause. Only a branch that
    ran and was scored says anything: a rerun that could not run leaves the
    verification as it was (the attempt, with its error, is kept apart)."""
    recorded = branch.metadata.get("branch")
    resumed = recorded.get("resume_step") if isinstance(recorded, dict) else None
    step = resumed if isinstance(resumed, int) else request.resume_step
    detail = f"{score.scorer} scorer: {score.reason or 'no reason given'}"
    confirmed = score.success
    # the blamed step, which the branch must have decided otherwise: the one asked for,
    # not an earlier one the fork had to start from (a LangGraph fork reruns the whole
    # super-step: of three Send branches the second blamed, the first runs again as it
    # did, and is no sign that the directive missed the blamed one)
    blamed = request.resume_step if request.resume_step is not None else step
    if confirmed and blamed is not None:
        agent = request.plan.target_agent if request.plan is not None else None
        same = decided_as_before(request.trajectory, branch, blamed, agent)
        if same is not None:
            confirmed = False
            detail = (
                f"{same} at step {blamed} decided as before: the directive changed a later "
                f"step, so the pass ({detail}) does not confirm this blame"
            )
    verification = Verification(
        status="verified_by_rerun" if confirmed else "not_confirmed",
        branch_id=branch.id,
        resume_step=step,
        directive=request.directive,
        score=score.score,
        detail=detail,
        branch_passed=score.success,
    )
    update_report(store, report, {"verified_by_rerun": confirmed, "verification": verification})
    return verification


def decided_as_before(
    original: AgentTrajectory, branch: AgentTrajectory, step: int, agent: str | None
) -> str | None:
    """The blamed agent (``agent``, else whoever acted at ``step``) when the
    branch's decisions at ``step`` (model answers, calls, messages, the node's
    output) are the very ones the run made there: a directive that reached the
    later agents too (a shared message list) then made the branch pass, not a
    corrected blamed step. None when they differ, or when the run made none there."""

    def decisions(run: AgentTrajectory, own: bool) -> list[tuple[Any, ...]]:
        return [
            (
                e.type,
                e.agent_name,
                e.module,
                # a model call's input is its prompt and a node end's the state: both
                # hold the directive, so only what was decided is compared
                None if e.type in _PROMPTED else payload_bytes(e.input),
                payload_bytes(e.output),
                e.error.message if e.error else None,
            )
            for e in run.events
            if e.step_index == step
            and (agent is None or e.agent_name == agent)
            and e.type in _DECIDED
            and not (own and "inherited_from" in e.metadata)
        ]

    before = decisions(original, own=False)
    if not before or decisions(branch, own=True) != before:
        return None
    return agent or before[0][1] or "the agent"


def note_later_success(
    store: TraceStore,
    report: DiagnosticReport,
    round_: int,
    branch_id: str,
    plan: RecoveryPlan,
    rerun_of: str,
) -> None:
    """On the original's report, whose root cause round 1 did not confirm: the later
    round whose branch passed, and the blame it corrected (the original's own blame
    stays not confirmed; ``show`` says what did work)."""
    latest = latest_report(store, report)
    v = latest.verification
    if v is None or v.status == "verified_by_rerun":
        return
    who = f"step {plan.resume_step}"
    if plan.target_agent:
        who = f"{plan.target_agent} at {who}"
    later = (
        f"round {round_}'s branch {branch_id}, which corrected {who} of run {rerun_of}, succeeded"
    )
    found = {
        "round": round_,
        "branch_id": branch_id,
        "run_id": rerun_of,
        "agent": plan.target_agent,
        "step": plan.resume_step,
    }
    update = {"detail": f"{v.detail}; {later}", "later": found}
    update_report(store, latest, {"verification": v.model_copy(update=update)})
