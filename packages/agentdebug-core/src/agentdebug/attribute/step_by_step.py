"""Step-by-step: judge each step in order, stop at the first decisive error.

Each call shows the record up to the step being judged (that step in full, its
neighbours in medium detail, the older past coarser), so the model decides with
what the agents knew at the time. Tool results and user turns are not agent
decisions and are not asked about. Expensive on long traces: one call per step
until an answer. Stopped by ``--budget`` (or a failed call) before a decisive step,
it names the step read that was judged most likely to be the error, as when none is
decisive, if that was judged at least 30 % likely (the steps not read may hold the
error otherwise), marked partial, with a note.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from agentdebug.attribute.model_answers import LenientAnswer
from agentdebug.attribute.model_common import (
    NO_SUSPICION,
    Stop,
    TraceFacts,
    chat,
    client,
    fit_view,
    hypothesis,
    mode_field,
    mode_first,
    mode_ids,
    narrowed,
)
from agentdebug.audit import FALLBACK, note
from agentdebug.llm import LLMError
from agentdebug.schema import AgentTrajectory, Evidence, Finding, Hypothesis

NOT_DECISIVE = 0.3  # the most a step gets that no answer judged decisive


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
            try:
                verdict = llm.structured(
                    messages=chat(user),
                    schema=schema,
                    strategy=self.name,
                    purpose=f"judge step {step}",
                ).value
            except LLMError as exc:
                partial = self._partial(facts, verdicts, exc, findings)
                if partial is None:
                    raise
                return [partial]
            verdicts.append((step, verdict))
            if verdict.decisive and verdict.error_probability >= self.threshold:
                return [
                    self._hypothesis(
                        facts,
                        step,
                        verdict,
                        f"the first step judged decisive ({len(verdicts)} steps read)",
                        findings=findings,
                    )
                ]
        if not verdicts:
            return []
        # No step was judged decisive: say so, and name the most suspicious one (none,
        # when no step was judged at all likely: the free tier answers instead)
        step, verdict = max(verdicts, key=lambda sv: (sv[1].error_probability, -sv[0]))
        if verdict.error_probability < NO_SUSPICION:
            note(
                self.name,
                f"step-by-step named no step: no step read was judged {NO_SUSPICION:.0%} "
                "likely or more to be the error",
            )
            return []
        return [
            self._hypothesis(
                facts,
                step,
                verdict,
                "no step was judged decisive; this is the step judged most likely to be the error",
                confidence=min(verdict.error_probability, NOT_DECISIVE),
                metadata={"decisive": False},  # (the router counts it as no agreement)
                findings=findings,
            )
        ]

    def _partial(
        self,
        facts: TraceFacts,
        verdicts: list[tuple[int, StepVerdict]],
        exc: LLMError,
        findings: Sequence[Finding] = (),
    ) -> Hypothesis | None:
        """The answer of a reading stopped before a decisive step: the step judged
        most likely to be the error among those read, as when none is decisive, if
        it was judged at least NOT_DECISIVE likely (None: nothing to give; the
        steps not read may hold the error)."""
        if not verdicts:
            return None
        step, verdict = max(verdicts, key=lambda sv: (sv[1].error_probability, -sv[0]))
        if verdict.error_probability < NOT_DECISIVE:
            return None
        stop = Stop.of(exc)
        read = f"{len(verdicts)} of {len(facts.blameable)} steps"
        note(
            self.name,
            f"{self.name} stopped after reading {read}: {stop.why}; none read was judged "
            f"decisive, and step {step}, the one judged most likely to be the error, is "
            f"named; {FALLBACK}",
        )
        return self._hypothesis(
            facts,
            step,
            verdict,
            f"{stop.short} after {read} were read; none read was judged decisive, this "
            "is the one judged most likely to be the error",
            confidence=min(verdict.error_probability, NOT_DECISIVE),
            metadata={**stop.meta, "decisive": False},
            findings=findings,
        )

    def _hypothesis(
        self,
        facts: TraceFacts,
        step: int,
        verdict: StepVerdict,
        how: str,
        *,
        confidence: float | None = None,
        metadata: dict[str, object] | None = None,
        findings: Sequence[Finding] = (),
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
            # (a mode a detector found at the step comes first, as in binary search)
            mode_id=mode_first(findings, facts, step, verdict.failure_mode),
            evidence=evidence,
            fix=verdict.fix,
            metadata=metadata,
        )
