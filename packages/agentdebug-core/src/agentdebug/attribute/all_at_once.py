"""All-at-once: one read of the whole (budget-fitted) trace, one answer."""

from __future__ import annotations

from collections.abc import Sequence

from agentdebug.attribute.model_common import (
    TraceFacts,
    attribution_schema,
    chat,
    checks_block,
    client,
    evidence_from,
    fit_view,
    hypothesis,
    mode_first,
    mode_ids,
)
from agentdebug.schema import AgentTrajectory, Finding, Hypothesis


class AllAtOnceAttributor:
    """The cheapest model strategy: one call. Reads every step, those far from the
    end shortened when the trace does not fit the prompt budget."""

    name = "all-at-once"
    requires_model = True

    def attribute(
        self, trajectory: AgentTrajectory, findings: Sequence[Finding]
    ) -> list[Hypothesis]:
        facts = TraceFacts.of(trajectory)
        if not facts.blameable:
            return []
        modes = mode_ids()
        user = fit_view(
            trajectory,
            "all_at_once",
            checks=checks_block(findings),
            modes=", ".join(modes),
        )
        answer = client().structured(
            messages=chat(user),
            schema=attribution_schema(facts, modes),
            strategy=self.name,
            purpose="attribute the whole run",
        )
        v = answer.value
        return [
            hypothesis(
                facts=facts,
                step=v.step,
                agent=v.agent,
                strategy=self.name,
                confidence=v.confidence,
                rationale=v.reason,
                # (a mode a detector found at the step comes first, as in binary search)
                mode_id=mode_first(findings, facts, v.step, v.failure_mode),
                evidence=evidence_from(v.evidence, facts),
                fix=v.fix,
            )
        ]
