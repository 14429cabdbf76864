"""Binary search: halve the step range until one step is left.

Each call shows the whole record with the steps of the current range in the most
detail and asks which half holds the decisive error. An "unclear" answer is asked
again once; if it stays unclear the search stops and says so, with a
low-confidence answer at the start of the remaining range (errors propagate
forward, so the earliest step is the principled guess), never a coin flip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from agentdebug.attribute.model_common import (
    TraceFacts,
    chat,
    client,
    fit_view,
    hypothesis,
    span_label,
)
from agentdebug.llm import render_prompt
from agentdebug.schema import AgentTrajectory, Evidence, Finding, Hypothesis

AMBIGUOUS_CONFIDENCE = 0.1


class HalfVerdict(BaseModel):
    half: Literal["first", "second", "unclear"]
    reason: str
    evidence: str = ""
    confidence: float = Field(ge=0.0, le=1.0)


class BinarySearchAttributor:
    name = "binary-search"
    requires_model = True

    def attribute(
        self, trajectory: AgentTrajectory, findings: Sequence[Finding]
    ) -> list[Hypothesis]:
        facts = TraceFacts.of(trajectory)
        steps = facts.blameable
        if not steps:
            return []
        llm = client()
        lo, hi = 0, len(steps) - 1
        confidence = 1.0
        trail: list[str] = []
        evidence: list[Evidence] = []
        while lo < hi:
            mid = (lo + hi) // 2
            first, second = steps[lo : mid + 1], steps[mid + 1 : hi + 1]
            user = fit_view(
                trajectory,
                "binary_search",
                focus=steps[lo : hi + 1],
                low=str(steps[lo]),
                high=str(steps[hi]),
                first_half=f"The first part is {span_label(first)}",
                second_half=f"the second part is {span_label(second)}",
            )
            messages = chat(user)
            answer = llm.structured(
                messages=messages,
                schema=HalfVerdict,
                strategy=self.name,
                purpose=f"halve {span_label(steps[lo : hi + 1])}",
            )
            verdict = answer.value
            if verdict.half == "unclear":
                retry = [
                    *messages,
                    {"role": "assistant", "content": answer.raw},
                    {"role": "user", "content": render_prompt("binary_search_retry")},
                ]
                verdict = llm.structured(
                    messages=retry,
                    schema=HalfVerdict,
                    strategy=self.name,
                    purpose=f"ask again about {span_label(steps[lo : hi + 1])}",
                ).value
            if verdict.half == "unclear":
                trail.append(f"{span_label(steps[lo : hi + 1])}: unclear twice, search stopped")
                return [
                    hypothesis(
                        facts=facts,
                        step=steps[lo],
                        agent=facts.agent_at[steps[lo]],
                        strategy=self.name,
                        confidence=AMBIGUOUS_CONFIDENCE,
                        rationale="the model could not tell which half holds the error; the earliest step of the remaining range is named, at low confidence ("
                        + "; ".join(trail)
                        + ")",
                        evidence=evidence,
                        metadata={"stopped": "ambiguous", "range": [steps[lo], steps[hi]]},
                    )
                ]
            chosen = first if verdict.half == "first" else second
            trail.append(
                f"{span_label(steps[lo : hi + 1])} -> {span_label(chosen)}: {verdict.reason}"
            )
            if verdict.evidence.strip():
                evidence.append(
                    Evidence(
                        step_index=chosen[0],
                        quote=verdict.evidence,
                        note=f"supports {span_label(chosen)}",
                    )
                )
            confidence = min(confidence, verdict.confidence)
            if verdict.half == "first":
                hi = mid
            else:
                lo = mid + 1
        step = steps[lo]
        return [
            hypothesis(
                facts=facts,
                step=step,
                agent=facts.agent_at[step],
                strategy=self.name,
                confidence=confidence,
                rationale="; ".join(trail) or "only one step could be responsible",
                evidence=evidence[-3:],
            )
        ]
