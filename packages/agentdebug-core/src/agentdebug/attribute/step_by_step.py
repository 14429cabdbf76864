"""Step-by-step: judge each step in order, stop at the first decisive error.

Each call shows the record up to the step being judged (that step in full, its
neighbours in medium detail, the older past coarser), so the model decides with
what the agents knew at the time. Tool results and user turns are not agent
decisions and are not asked about. Expensive on long traces: one call per step
until an answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from agentdebug.attribute.model_answers import LenientAnswer
from agentdebug.attribute.model_common import (
    TraceFacts,
    chat,
    client,
    fit_view,
    hypothesis,
    mode_field,
    mode_ids,
    narrowed,
)
from agentdebug.schema import AgentTrajectory, Evidence, Finding, Hypothesis


class StepVerdict(LenientAnswer):
    decisive: bool
    error_probability: float = Field(ge=0.0, le=1.0)
    failure_mode: str | None = None
    reason: str
    evidence: str = ""
    fix: str = ""


class StepByStepAttributor:
    name = "step-by-step"
    requires_model = True

    def __init__(self, *, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def attribute(
        self, trajectory: AgentTrajectory, findings: Sequence[Finding]
    ) -> list[Hypothesis]:
        facts = TraceFacts.of(trajectory)
        modes = mode_ids()
        schema = narrowed(StepVerdict, "StepVerdict", failure_mode=(mode_field(modes), None))
        llm = client()
        first_step = min((s.index for s in facts.steps), default=0)
        verdicts: list[tuple[int, StepVerdict]] = []
        for step in facts.blameable:
            agent = facts.agent_at[step]
            user = fit_view(
                trajectory,
                "step_by_step",
                focus=[step],
                window_range=(first_step, step),
                step=str(step),
                agent=agent,
                modes=", ".join(modes),
            )
            verdict = llm.structured(
                messages=chat(user), schema=schema, strategy=self.name, purpose=f"judge step {step}"
            ).value
            verdicts.append((step, verdict))
            if verdict.decisive and verdict.error_probability >= self.threshold:
                return [
                    self._hypothesis(
                        facts,
                        step,
                        verdict,
                        f"the first step judged decisive ({len(verdicts)} steps read)",
                    )
                ]
        if not verdicts:
            return []
        # No step was judged decisive: say so, and name the most suspicious one.
        step, verdict = max(verdicts, key=lambda sv: (sv[1].error_probability, -sv[0]))
        return [
            self._hypothesis(
                facts,
                step,
                verdict,
                "no step was judged decisive; this is the step judged most likely to be the error",
                confidence=min(verdict.error_probability, 0.3),
            )
        ]

    def _hypothesis(
        self,
        facts: TraceFacts,
        step: int,
        verdict: StepVerdict,
        how: str,
        *,
        confidence: float | None = None,
    ) -> Hypothesis:
        evidence = (
            [Evidence(event_id=facts.event_at.get(step), step_index=step, quote=verdict.evidence)]
            if verdict.evidence.strip()
            else []
        )
        return hypothesis(
            facts=facts,
            step=step,
            agent=facts.agent(step),
            strategy=self.name,
            confidence=verdict.error_probability if confidence is None else confidence,
            rationale=f"{verdict.reason} ({how})",
            mode_id=verdict.failure_mode,
            evidence=evidence,
            fix=verdict.fix,
        )
