"""DeepDebug: a multi-turn, read-only diagnosis agent.

1. Global read: the whole record, as one all-at-once pass sees it (in full when
   it fits the prompt budget, else shortened oldest first, the first error
   last); the model reconstructs goal and history, says where the failure
   becomes visible, and names a first candidate with its evidence and a fix.
2. Structure-guided probe, by the trace's shape, without showing the first
   candidate (so the second is independent):
   - several agents: walk the handoff chain upstream from the visible failure and
     read those steps in full, with their neighbours;
   - one agent: bisect the steps before the failure on a cheap overview, then
     re-read the surviving region in full.
3. Cross-examination: if both candidates name the same step, accept; otherwise
   put the two side by side with their inputs, outputs and downstream effects and
   let the model pick the stronger causal explanation.
4. The answer: agent, step, explanation, quoted evidence (grounded by the
   pipeline) and one concrete fix, usable by recovery as a retry directive.

Stopped by ``--budget`` (or a failed call) after the global read, it answers with
what it paid for, as the router does with its earlier stages: the global read's
agent, step, mode and fix at its own confidence; stopped before the
cross-examination of two candidates that disagree, the more confident at 0.5 at
most, the other below it. Either is marked ``metadata["partial"]`` and said in a
note. Stopped before the global read answered, it has nothing to give, and fails.

Usually two to five calls, each recorded in the audit trail with what it read.
Budget: measured against what one all-at-once pass would send (A): the global read
gets what that pass gets (the prompt budget: a run that fits it is read whole),
the probe 15 % of A and the cross-examination 15 % (each at least 900 tokens), so
that DeepDebug stays within about 1.3x the one-pass tokens even when every stage
runs. (Before, the global read got what was left of 1.25 A, about 0.75 A: on a
small run, under its own instructions, it showed the model one folded line.) Past
cases can come in as hints through the ``agentdebug_debugging_hints`` hook (a
plugin feeds it; the Error Hub, once built, is to).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, field_validator

from agentdebug.attribute.binary_search import HalfVerdict
from agentdebug.attribute.model_answers import LenientAnswer, agent_of
from agentdebug.attribute.model_common import (
    MAX_QUOTES,
    MIN_WEIGHT,
    AttributionAnswer,
    FixedAnswer,
    Quote,
    Stop,
    TraceFacts,
    _enum,
    attribution_schema,
    chat,
    chat_with,
    checks_block,
    client,
    evidence_from,
    fit_view,
    hypothesis,
    mode_field,
    mode_ids,
    narrowed,
    one_pass_tokens,
    prompt_budget,
    quotes_read,
    span_label,
)
from agentdebug.audit import FALLBACK, note
from agentdebug.audit import record as record_audit
from agentdebug.detect.signals import handoff_target
from agentdebug.llm import LLMError
from agentdebug.plugins import get_registry
from agentdebug.schema import AgentTrajectory, AuditEntry, EventType, Finding, Hypothesis

PROBE_SHARE, CROSS_SHARE = 0.15, 0.15  # of one all-at-once pass
UNDECIDED = 0.5  # the most a candidate gets that another disagreed with, undecided
MIN_CALL_TOKENS = 900
REGION = 3
MAX_HINTS = 3


class GlobalRead(AttributionAnswer):
    goal: str
    history: str
    failure_step: int
    fix: str


class CrossAnswer(LenientAnswer):
    choice: Literal["A", "B"]
    reason: str
    evidence: list[Quote] = Field(default_factory=list, max_length=MAX_QUOTES)
    fix: str
    confidence: float = Field(ge=0.0, le=1.0)

    _lenient_quotes = field_validator("evidence", mode="before")(quotes_read)


def _inspect(detail: str) -> None:
    record_audit(AuditEntry(stage="inspect", strategy="deepdebug", detail=detail))


class DeepDebugAttributor:
    name = "deepdebug"
    requires_model = True

    def attribute(
        self, trajectory: AgentTrajectory, findings: Sequence[Finding]
    ) -> list[Hypothesis]:
        facts = TraceFacts.of(trajectory)
        if not facts.blameable:
            return []
        one_pass = one_pass_tokens(trajectory, findings)
        first = self._global_read(trajectory, findings, facts)
        failure = min(max(first.failure_step, facts.blameable[0]), facts.blameable[-1])
        try:
            if len(facts.agents) > 1:
                second = self._chain_probe(trajectory, facts, failure, one_pass)
            else:
                second = self._bisect_probe(trajectory, facts, failure, one_pass)
        except LLMError as exc:
            return [self._global_read_only(facts, first, failure, Stop.of(exc))]
        if second.step == first.step:
            _inspect("candidates agree")
            # (agreeing adds 0.15 when one of them carries weight: two shrugs, no more)
            best = max(first.confidence, second.confidence)
            confidence = min(0.95, best + 0.15) if best >= MIN_WEIGHT else best
            return [
                self._result(
                    facts,
                    first.step,
                    first.agent,
                    confidence,
                    first.reason,
                    first.evidence,
                    first.fix,
                    first.failure_mode,
                    {"agreed": True, "failure_step": failure},
                )
            ]
        try:
            return self._cross_examine(trajectory, facts, first, second, failure, one_pass)
        except LLMError as exc:
            return self._undecided(facts, first, second, failure, Stop.of(exc))

    # -- a stage stopped: the answers already paid for ------------------------------------------

    def _global_read_only(
        self, facts: TraceFacts, first: GlobalRead, failure: int, stop: Stop
    ) -> Hypothesis:
        """The global read's answer, when the probe could not be made: it named
        agent, step, mode and fix, and it was paid for."""
        note(
            self.name,
            f"{self.name} stopped after its global read: {stop.why}; the probe and the "
            f"cross-examination were not made, and the global read's answer is given "
            f"unconfirmed; {FALLBACK}",
        )
        return self._result(
            facts,
            first.step,
            first.agent,
            first.confidence,
            f"{first.reason} (the global read's answer alone: {stop.short} before the probe)",
            first.evidence,
            first.fix,
            first.failure_mode,
            {**stop.meta, "failure_step": failure},
        )

    def _undecided(
        self,
        facts: TraceFacts,
        first: GlobalRead,
        second: AttributionAnswer,
        failure: int,
        stop: Stop,
    ) -> list[Hypothesis]:
        """Two candidates that disagree, and no cross-examination to decide: the more
        confident first (the global read's on a tie), at most UNDECIDED."""
        won, lost = (second, first) if second.confidence > first.confidence else (first, second)
        note(
            self.name,
            f"{self.name} stopped before its cross-examination: {stop.why}; the global "
            f"read named step {first.step}, the probe step {second.step}, and the more "
            f"confident, step {won.step}, is given at confidence {UNDECIDED} at most; "
            f"{FALLBACK}",
        )
        fix = won.fix if isinstance(won, (GlobalRead, FixedAnswer)) else ""
        meta = {**stop.meta, "failure_step": failure, "candidates": [first.step, second.step]}
        best = self._result(
            facts,
            won.step,
            won.agent,
            min(UNDECIDED, won.confidence),
            f"{won.reason} (not cross-examined against step {lost.step}: {stop.short})",
            won.evidence,
            fix,
            won.failure_mode,
            meta,
        )
        other = self._result(
            facts,
            lost.step,
            lost.agent,
            min(0.3, lost.confidence),
            lost.reason,
            lost.evidence,
            "",
            lost.failure_mode,
            {**stop.meta, "not_cross_examined": True},
        )
        return [best, other]

    # -- budgets ----------------------------------------------------------------------------

    @staticmethod
    def _share(one_pass: int, share: float) -> int:
        return max(MIN_CALL_TOKENS, int(one_pass * share))

    # -- 1. global read --------------------------------------------------------------------------

    def _hints(self, trajectory: AgentTrajectory) -> str:
        hints, problems = get_registry().debugging_hints(trajectory)
        for problem in problems:  # (a plugin's bug costs its hints, not the diagnosis)
            note(self.name, f"{problem}; its hints were left out")
        if not hints:
            return ""
        _inspect(f"{len(hints)} hint(s) from past cases; {min(len(hints), MAX_HINTS)} shown")
        lines = ["Similar past cases (hints; they may not apply here):"]
        lines += [f"- {h}" for h in hints[:MAX_HINTS]]
        return "\n" + "\n".join(lines) + "\n"

    def _global_read(
        self,
        trajectory: AgentTrajectory,
        findings: Sequence[Finding],
        facts: TraceFacts,
    ) -> GlobalRead:
        modes = mode_ids()
        schema = narrowed(
            GlobalRead,
            "GlobalRead",
            agent=(agent_of(facts.agents, facts.speakers), ...),
            step=(_enum(facts.blameable), ...),
            failure_step=(_enum(facts.blameable), ...),
            failure_mode=(mode_field(modes), None),
        )
        # the whole prompt budget, as the all-at-once pass: a run that fits it is
        # read whole, never cut to make room for later stages
        budget = prompt_budget()
        user = fit_view(
            trajectory,
            "deepdebug_global",
            hints=self._hints(trajectory),
            checks=checks_block(findings),
        )
        _inspect(f"global read of the whole run within {budget} tokens")
        return (
            client()
            .structured(
                messages=chat(user), schema=schema, strategy=self.name, purpose="global read"
            )
            .value
        )

    # -- 2. structure-guided probe -------------------------------------------------------------

    def chain(
        self, trajectory: AgentTrajectory, facts: TraceFacts, failure: int, length: int = 4
    ) -> list[int]:
        """Steps along the handoffs that led to ``failure``, newest first: each step's
        agent got its work from the latest handoff (or message) addressed to it,
        else from the latest step of another agent."""
        handoffs: dict[int, str] = {}
        for event in trajectory.events:
            if event.type in (EventType.HANDOFF, EventType.MESSAGE):
                target = handoff_target(event)
                if target is not None:
                    handoffs[event.step_index] = target
        out = [failure]
        current = failure
        while len(out) < length:
            agent = facts.agent(current)
            earlier = [s for s in facts.blameable if s < current]
            given = [s for s in earlier if agent is not None and handoffs.get(s) == agent]
            other = [s for s in earlier if facts.agent(s) != agent]
            previous = (given or other)[-1:]
            if not previous:
                break
            current = previous[0]
            out.append(current)
        return out

    def _candidate_schema(self, facts: TraceFacts) -> type[AttributionAnswer]:
        return attribution_schema(facts, mode_ids())

    def _chain_probe(
        self, trajectory: AgentTrajectory, facts: TraceFacts, failure: int, one_pass: int
    ) -> AttributionAnswer:
        steps = self.chain(trajectory, facts, failure)
        budget = self._share(one_pass, PROBE_SHARE)
        user = fit_view(
            trajectory,
            "deepdebug_chain",
            focus=sorted(steps),
            budget=budget,
            medium_radius=1,
            system="system_short",
            failure_step=str(failure),
            chain=" <- ".join(f"step {s} ({facts.agent(s) or 'no agent'})" for s in steps),
        )
        _inspect(
            f"probe: handoff chain {' <- '.join(map(str, steps))} read in full within {budget} tokens"
        )
        return (
            client()
            .structured(
                messages=chat_with("system_short", user),
                schema=self._candidate_schema(facts),
                strategy=self.name,
                purpose="probe the handoff chain",
            )
            .value
        )

    def _bisect_probe(
        self, trajectory: AgentTrajectory, facts: TraceFacts, failure: int, one_pass: int
    ) -> AttributionAnswer:
        steps = [s for s in facts.blameable if s <= failure] or facts.blameable
        budget = self._share(one_pass, PROBE_SHARE)
        rounds = max(0, (len(steps) // REGION).bit_length() - 1)
        per_call = max(MIN_CALL_TOKENS, budget // (rounds + 1))
        lo, hi = 0, len(steps) - 1
        llm = client()
        while hi - lo + 1 > REGION:
            mid = (lo + hi) // 2
            first, second = steps[lo : mid + 1], steps[mid + 1 : hi + 1]
            user = fit_view(
                trajectory,
                "deepdebug_bisect",
                window_range=(steps[lo], steps[hi]),
                budget=per_call,
                medium_radius=0,
                system="system_short",
                failure_step=str(failure),
                low=str(steps[lo]),
                high=str(steps[hi]),
                first_half=span_label(first),
                second_half=span_label(second),
            )
            _inspect(f"probe: overview of {span_label(steps[lo : hi + 1])} to halve it")
            verdict = llm.structured(
                messages=chat_with("system_short", user),
                schema=HalfVerdict,
                strategy=self.name,
                purpose=f"bisect {span_label(steps[lo : hi + 1])}",
            ).value
            if verdict.half == "unclear":
                _inspect(f"bisection stopped: {span_label(steps[lo : hi + 1])} unclear")
                break
            lo, hi = (lo, mid) if verdict.half == "first" else (mid + 1, hi)
        region = steps[lo : hi + 1]
        user = fit_view(
            trajectory,
            "deepdebug_region",
            window_range=(region[0], failure if failure >= region[-1] else region[-1]),
            focus=region,
            budget=per_call,
            medium_radius=1,
            system="system_short",
            failure_step=str(failure),
            low=str(region[0]),
            high=str(region[-1]),
        )
        _inspect(f"probe: re-read {span_label(region)} in full")
        return llm.structured(
            messages=chat_with("system_short", user),
            schema=self._candidate_schema(facts),
            strategy=self.name,
            purpose=f"read {span_label(region)}",
        ).value

    # -- 3. cross-examination -------------------------------------------------------------------

    def _cross_examine(
        self,
        trajectory: AgentTrajectory,
        facts: TraceFacts,
        first: GlobalRead,
        second: AttributionAnswer,
        failure: int,
        one_pass: int,
    ) -> list[Hypothesis]:
        budget = self._share(one_pass, CROSS_SHARE)
        user = fit_view(
            trajectory,
            "deepdebug_cross",
            focus=sorted({first.step, second.step}),
            budget=budget,
            medium_radius=1,
            system="system_short",
            step_a=str(first.step),
            agent_a=first.agent or facts.agent(first.step) or "no agent",
            reason_a=first.reason,
            step_b=str(second.step),
            agent_b=second.agent or facts.agent(second.step) or "no agent",
            reason_b=second.reason,
        )
        _inspect(f"cross-examination of step {first.step} against step {second.step}")
        verdict = (
            client()
            .structured(
                messages=chat_with("system_short", user),
                schema=CrossAnswer,
                strategy=self.name,
                purpose="cross-examine two candidates",
            )
            .value
        )
        won, lost = (first, second) if verdict.choice == "A" else (second, first)
        meta = {"agreed": False, "failure_step": failure, "candidates": [first.step, second.step]}
        quotes = list(verdict.evidence) + list(won.evidence)
        best = self._result(
            facts,
            won.step,
            won.agent,
            verdict.confidence,
            verdict.reason,
            quotes[:4],
            verdict.fix,
            won.failure_mode,
            meta,
        )
        other = self._result(
            facts,
            lost.step,
            lost.agent,
            min(0.3, lost.confidence),
            lost.reason,
            lost.evidence,
            "",
            lost.failure_mode,
            {"rejected_by": "cross-examination"},
        )
        return [best, other]

    # -- 4. the answer ---------------------------------------------------------------------------

    def _result(
        self,
        facts: TraceFacts,
        step: int,
        agent: str,
        confidence: float,
        reason: str,
        quotes: Sequence[Quote],
        fix: str,
        mode: str | None,
        meta: dict[str, object],
    ) -> Hypothesis:
        metadata = dict(meta)
        if fix.strip():
            metadata["fix"] = fix.strip()
        return hypothesis(
            facts=facts,
            step=step,
            agent=agent,
            strategy=self.name,
            confidence=confidence,
            rationale=reason,
            mode_id=mode,
            evidence=evidence_from(quotes, facts),
            metadata=metadata,
        )
