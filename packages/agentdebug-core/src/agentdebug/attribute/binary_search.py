"""Binary search: halve the step range until one step is left.

Each call shows the whole record with the steps of the current range in the most
detail and asks which half holds the decisive error. An "unclear" answer is asked
again once; if it stays unclear the search stops and says so, with a
low-confidence answer at the start of the remaining range (errors propagate
forward, so the earliest step is the principled guess), never a coin flip.
Stopped by ``--budget`` (or a failed call) after at least one verdict, it names a
step of the range left: the one its evidence was last quoted from, else the
earliest, at its confidence divided by the steps left; marked partial, with a note.

A quote comes with the step it was copied from, and a quote given again is listed
once. The last call (one step in each part) also asks for the failure mode and a
concrete fix; a mode a detector found at the chosen step (or in the tool output
it produced) comes first, so the report always has a mode to draw a fix from
when anyone found one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

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
    mode_from_findings,
    mode_ids,
    narrowed,
    span_label,
)
from agentdebug.audit import FALLBACK, note
from agentdebug.llm import LLMError, render_prompt
from agentdebug.schema import AgentTrajectory, Evidence, Finding, Hypothesis

AMBIGUOUS_CONFIDENCE = 0.1
FINAL_QUESTION = """
This is the last question: each part is one step. Also give:
- "failure_mode": the failure mode of the mistake in the part you choose, one of
  these ids, or null: $modes
- "fix": one concrete instruction that, given to that step's agent, would repair
  the run (name the tool, argument, value or fact to change), or ""
"""


class HalfVerdict(LenientAnswer):
    half: Literal["first", "second", "unclear"]
    reason: str
    evidence: str = ""
    evidence_step: int | None = None
    confidence: float = Field(ge=0.0, le=1.0)


class FinalHalfVerdict(HalfVerdict):
    failure_mode: str | None = None
    fix: str = ""


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
        modes = mode_ids()
        final_schema = narrowed(
            FinalHalfVerdict, "FinalHalfVerdict", failure_mode=(mode_field(modes), None)
        )
        lo, hi = 0, len(steps) - 1
        confidence = 1.0
        most = 0.0  # (the surest of its verdicts)
        trail: list[str] = []
        evidence: dict[str, Evidence] = {}
        mode: str | None = None
        fix = ""
        while lo < hi:
            mid = (lo + hi) // 2
            first, second = steps[lo : mid + 1], steps[mid + 1 : hi + 1]
            last = hi - lo == 1
            user = fit_view(
                trajectory,
                "binary_search",
                focus=steps[lo : hi + 1],
                low=str(steps[lo]),
                high=str(steps[hi]),
                first_half=span_label(first),
                second_half=span_label(second),
                final=FINAL_QUESTION.replace("$modes", ", ".join(modes)) if last else "",
            )
            messages = chat(user)
            schema: type[HalfVerdict] = final_schema if last else HalfVerdict
            try:
                answer = llm.structured(
                    messages=messages,
                    schema=schema,
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
                        schema=schema,
                        strategy=self.name,
                        purpose=f"ask again about {span_label(steps[lo : hi + 1])}",
                    ).value
            except LLMError as exc:
                if not trail:  # (nothing found yet: no answer to give)
                    raise
                left = steps[lo : hi + 1]
                return [self._partial(facts, findings, left, confidence, trail, evidence, exc)]
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
                        mode_id=mode_from_findings(findings, facts, steps[lo]),
                        evidence=list(evidence.values()),
                        metadata={"stopped": "ambiguous", "range": [steps[lo], steps[hi]]},
                    )
                ]
            chosen = first if verdict.half == "first" else second
            reason = verdict.reason.strip().rstrip(".")  # (the verdicts are joined with "; ")
            trail.append(f"{span_label(steps[lo : hi + 1])} -> {span_label(chosen)}: {reason}")
            quote = verdict.evidence.strip()
            if quote and quote not in evidence:  # (a quote given twice is listed once)
                cited = verdict.evidence_step
                evidence[quote] = Evidence(
                    step_index=cited,
                    event_id=facts.event_at.get(cited) if cited is not None else None,
                    quote=quote,
                    note=f"supports {span_label(chosen)}",
                )
            if isinstance(verdict, FinalHalfVerdict):
                mode, fix = verdict.failure_mode, verdict.fix
            confidence = min(confidence, verdict.confidence)
            most = max(most, verdict.confidence)
            if verdict.half == "first":
                hi = mid
            else:
                lo = mid + 1
        step = steps[lo]
        if trail and most < NO_SUSPICION:  # (every half chosen at no confidence)
            note(
                self.name,
                f"binary-search named no step: every half was chosen at a confidence under "
                f"{NO_SUSPICION:.0%}",
            )
            return []
        return [
            hypothesis(
                facts=facts,
                step=step,
                agent=facts.agent_at[step],
                strategy=self.name,
                confidence=confidence,
                rationale="; ".join(trail) or "only one step could be responsible",
                mode_id=mode_first(findings, facts, step, mode),
                evidence=list(evidence.values())[-3:],
                fix=fix,
            )
        ]

    def _partial(
        self,
        facts: TraceFacts,
        findings: Sequence[Finding],
        left: list[int],
        confidence: float,
        trail: list[str],
        evidence: dict[str, Evidence],
        exc: LLMError,
    ) -> Hypothesis:
        """The answer of a search stopped with ``left`` to halve: the step its
        evidence was last quoted from, if left, else the earliest left (errors
        propagate forward), at the search's confidence shared over the steps left."""
        stop = Stop.of(exc)
        quoted = [e.step_index for e in evidence.values() if e.step_index in left]
        step = quoted[-1] if quoted else left[0]
        which = "the step its evidence was quoted from" if quoted else "the earliest of them"
        note(
            self.name,
            f"{self.name} stopped with {span_label(left)} left to halve: {stop.why}; "
            f"step {step} is named ({which}), at the search's confidence shared over "
            f"the {len(left)} steps left; {FALLBACK}",
        )
        return hypothesis(
            facts=facts,
            step=step,
            agent=facts.agent_at[step],
            strategy=self.name,
            confidence=confidence / len(left),
            rationale=f"{'; '.join(trail)} (the search stopped with {span_label(left)} "
            f"left: {stop.short}; {which} is named)",
            mode_id=mode_from_findings(findings, facts, step),
            evidence=list(evidence.values())[-3:],
            metadata={**stop.meta, "range": [left[0], left[-1]]},
        )
