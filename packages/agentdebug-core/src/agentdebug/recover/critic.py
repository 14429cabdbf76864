"""CRITIC: a critique of the blamed step that names what the agent took on trust
and which tool verifies it, before the agent answers again (after Gou et al.,
2024: tool-checked self-correction). One model call."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agentdebug.recover.base import ask, plan, resume_point, tool_names
from agentdebug.schema import AgentTrajectory, DiagnosticReport, RecoveryPlan


class Check(BaseModel):
    claim: str
    tool: str = "none"
    how: str = ""


class CriticAnswer(BaseModel):
    critique: str = Field(min_length=1)
    checks: list[Check] = Field(default_factory=list, max_length=3)
    directive: str = Field(min_length=1)


class CriticRecoverer:
    name = "critic"
    requires_model = True

    def recover(self, trajectory: AgentTrajectory, report: DiagnosticReport) -> RecoveryPlan:
        step, _, _ = resume_point(report)
        tools = tool_names(trajectory)
        answer, audit = ask(
            self.name,
            "recover_critic",
            trajectory,
            report,
            CriticAnswer,
            step=step,
            purpose="critique of the blamed step",
            tools=", ".join(tools) if tools else "(none recorded)",
        )
        notes = [
            f"check '{c.claim}' names tool '{c.tool}', which the run never had"
            for c in answer.checks
            if c.tool not in ("none", "") and tools and c.tool not in tools
        ]
        lines = [answer.directive.strip()]
        if answer.checks:
            lines.append("Before answering, verify:")
            for c in answer.checks:
                via = f" with {c.tool}" if c.tool not in ("none", "") else ""
                how = f" ({c.how})" if c.how else ""
                lines.append(f"- {c.claim}{via}{how}")
        return plan(
            self.name,
            trajectory,
            report,
            "\n".join(lines),
            rationale=answer.critique,
            audit=audit,
            notes=notes,
        )
