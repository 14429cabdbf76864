"""The objects of the recovery half of the loop: plans, gate decisions, rerun
requests, scores and the closed loop's record.

A recoverer turns a report into a :class:`RecoveryPlan`; the policy gate turns a
plan into a :class:`GateDecision`; an approved plan becomes a :class:`RerunRequest`
for the framework's :class:`~agentdebug.stages.RerunExecutor`, which returns the
branch trajectory; a scorer gives the branch a :class:`Score`; the loop keeps one
:class:`Attempt` per round in a :class:`LoopResult`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentdebug.schema.diagnosis import AuditEntry, Cost
from agentdebug.schema.trace import AgentEvent, AgentTrajectory, utcnow


class RecoveryPlan(BaseModel):
    """A suggested correction: what to tell the agent, and from which step to rerun.

    Suggest-only: nothing runs until the policy gate approves it. ``state_patch``
    is an optional change to the framework's state at the resume point (a
    LangGraph state update, say) that a recoverer may propose beside the directive.
    ``rules`` are the manual rules the directive carries; ``new_rules`` those this
    plan would add to the manual once approved (AutoManual).
    """

    model_config = ConfigDict(frozen=True)

    strategy: str
    directive: str
    resume_step: int | None
    resume_event_id: str | None = None
    target_agent: str | None = None
    mode_id: str | None = None
    rationale: str = ""
    state_patch: dict[str, Any] | None = None
    rules: list[str] = Field(default_factory=list)
    new_rules: list[str] = Field(default_factory=list)
    report_id: str | None = None
    trajectory_id: str | None = None
    audit: list[AuditEntry] = Field(default_factory=list)
    cost: Cost = Field(default_factory=Cost)
    notes: list[str] = Field(default_factory=list)


class GateDecision(BaseModel):
    """What the policy gate decided about one plan, and who decided."""

    model_config = ConfigDict(frozen=True)

    policy: str
    approved: bool
    reason: str
    decided_by: Literal["policy", "human", "callable"] = "policy"
    decided_at: datetime = Field(default_factory=utcnow)


class RerunRequest(BaseModel):
    """Everything an executor needs to fork a run: the trajectory to fork, the step
    to resume from (the events before it are kept, the step itself is redone with
    the directive in view), the directive, and the gate's decision. ``store`` is
    where the loop keeps branches: an executor that has no debugger of its own
    records the branch there (see :func:`agentdebug.rerun.branch_debugger`)."""

    model_config = ConfigDict(frozen=True)

    trajectory: AgentTrajectory
    resume_step: int = Field(ge=0)
    directive: str
    policy: str = "auto"
    decision: GateDecision | None = None
    plan: RecoveryPlan | None = None
    report_id: str | None = None
    state_patch: dict[str, Any] | None = None
    attempt: int = 1
    store: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def resume_event(self) -> AgentEvent | None:
        """The first event of the resume step (None if the run never reached it)."""
        return next((e for e in self.trajectory.events if e.step_index >= self.resume_step), None)

    def branch_metadata(self) -> dict[str, Any]:
        """What every branch records about where it came from (``metadata['branch']``)."""
        return {
            "parent_id": self.trajectory.id,
            "lineage": [*ancestors(self.trajectory), self.trajectory.id],
            "resume_step": self.resume_step,
            "directive": self.directive,
            "strategy": self.plan.strategy if self.plan else None,
            "report_id": self.report_id,
            "attempt": self.attempt,
            "state_patch": self.state_patch,
        }


class Score(BaseModel):
    """How a branch did against the run's goal."""

    model_config = ConfigDict(frozen=True)

    success: bool
    score: float = Field(ge=0.0, le=1.0)
    scorer: str
    reason: str = ""
    audit: list[AuditEntry] = Field(default_factory=list)


class Attempt(BaseModel):
    """One round of the loop: the run diagnosed, the plan, the gate, the branch."""

    model_config = ConfigDict(frozen=True)

    round: int
    run_id: str
    report_id: str
    plan: RecoveryPlan | None = None
    decision: GateDecision | None = None
    branch_id: str | None = None
    score: Score | None = None
    error: str | None = None


class LoopResult(BaseModel):
    """The closed loop's record: every round, and how it ended.

    ``status``: ``succeeded`` (a branch passed the scorer), ``failed`` (every
    branch failed and the round limit was reached), ``refused`` (the gate said
    no), ``error`` (an executor or recoverer failed; the original is kept),
    ``no_plan`` (the diagnosis named no step to rerun from), ``already_ok`` (the
    run did not fail)."""

    original_id: str
    status: Literal["succeeded", "failed", "refused", "error", "no_plan", "already_ok"]
    attempts: list[Attempt] = Field(default_factory=list)
    final_run_id: str | None = None
    verified_by_rerun: bool | None = None
    detail: str = ""


def ancestors(run: AgentTrajectory) -> list[str]:
    """The runs ``run`` was rerun from, the first original first, its parent last
    (``metadata['branch']['lineage']``; a branch recorded before lineage was kept
    knows its parent only)."""
    branch = run.metadata.get("branch")
    lineage = branch.get("lineage") if isinstance(branch, dict) else None
    if isinstance(lineage, list) and all(isinstance(x, str) for x in lineage):
        return list(lineage)
    return [run.parent_id] if run.parent_id else []
