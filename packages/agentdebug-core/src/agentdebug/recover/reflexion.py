"""Reflexion: a verbal reflection on the failure, given to the agent when it redoes
the blamed step (after Shinn et al., 2023: agents improve when they read their own
analysis of what went wrong). One model call."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agentdebug.recover.base import ask, plan, resume_point
from agentdebug.schema import AgentTrajectory, DiagnosticReport, RecoveryPlan


class ReflexionAnswer(BaseModel):
    reflection: str = Field(min_length=1)
    directive: str = Field(min_length=1)


class ReflexionRecoverer:
    name = "reflexion"
    requires_model = True

    def recover(self, trajectory: AgentTrajectory, report: DiagnosticReport) -> RecoveryPlan:
        step, _, _ = resume_point(report)
        answer, audit = ask(
            self.name,
            "recover_reflexion",
            trajectory,
            report,
            ReflexionAnswer,
            step=step,
            purpose="reflection on the failure",
        )
        directive = f"Reflection on your previous attempt: {answer.reflection.strip()}\n{answer.directive.strip()}"
        return plan(
            self.name, trajectory, report, directive, rationale=answer.reflection, audit=audit
        )
