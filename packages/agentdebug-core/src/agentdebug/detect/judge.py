"""The LLM judge: a model reads the goal and a bounded view of the run and lists
mistakes as typed findings in the shared taxonomy."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agentdebug.attribute.model_common import (
    TraceFacts,
    _enum,
    chat,
    client,
    fit_view,
    mode_ids,
    narrowed,
)
from agentdebug.schema import AgentTrajectory, Evidence, Finding

MAX_FINDINGS = 8


class JudgeFinding(BaseModel):
    step: int
    failure_mode: str
    description: str
    evidence: str = ""
    confidence: float = Field(ge=0.0, le=1.0)


class JudgeAnswer(BaseModel):
    findings: list[JudgeFinding] = Field(default_factory=list, max_length=MAX_FINDINGS)


class LLMJudge:
    """Runs only when asked (``diagnose --judge``): it costs one model call."""

    name = "llm-judge"
    requires_model = True
    on_request = True

    def detect(self, trajectory: AgentTrajectory) -> list[Finding]:
        facts = TraceFacts.of(trajectory)
        if not facts.blameable:
            return []
        modes = mode_ids()
        finding_schema = narrowed(
            JudgeFinding,
            "JudgeFinding",
            step=(_enum(facts.blameable), ...),
            failure_mode=(_enum(modes), ...),
        )
        schema = narrowed(
            JudgeAnswer,
            "JudgeAnswer",
            findings=(list[finding_schema], Field(default_factory=list, max_length=MAX_FINDINGS)),  # type: ignore[valid-type]
        )
        user = fit_view(
            trajectory,
            "judge",
            checks="",
            modes=", ".join(modes),
            max_findings=str(MAX_FINDINGS),
        )
        answer = client().structured(
            messages=chat(user),
            schema=schema,
            strategy=self.name,
            purpose="list the run's mistakes",
        )
        out: list[Finding] = []
        for item in answer.value.findings:
            event_id = facts.event_at.get(item.step)
            out.append(
                Finding(
                    detector=self.name,
                    mode_id=item.failure_mode,
                    message=item.description,
                    event_id=event_id,
                    step_index=item.step,
                    agent_name=facts.agent(item.step),
                    confidence=item.confidence,
                    evidence=[
                        Evidence(
                            event_id=event_id,
                            step_index=item.step,
                            field="output",
                            quote=item.evidence,
                        )
                    ]
                    if item.evidence.strip()
                    else [],
                )
            )
        return out
