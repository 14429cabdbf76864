"""Error-lifecycle attribution: track every error through the run, blame a survivor.

For long traces where errors pile up and most do not matter:

1. The trace is read in windows of a few steps. In each prompt the window's steps
   come first: in full when they fit its share, the rest of the run shortened
   around them as the views module does (the prompt says "in full" only when they
   are). All windows and the final call together get the tokens one all-at-once
   pass would send (85 % for the windows, 15 % for the final call), so on long
   traces the whole read costs no more than one pass; a run read in one window
   gets the whole prompt budget, as one pass would, so its steps are in full
   whenever the run fits the prompt.
2. The model names error triggers in the window: (step, conflict type, phase, the
   wrong commitment quoted, the violated reference quoted). Both quotes must be
   found in the trace (the grounding check); a trigger that fails is discarded.
3. Triggers about the same object form one error instance. Later windows report
   when an open instance is resolved or relied on; each instance ends in one state:
   resolved (fixed cleanly), costly (fixed, but only after more than half of the
   rest of the run), active (never fixed and still relied on later), latent (never
   fixed, but nothing later depends on it).
4. Only costly and active instances are candidates; one final call compares their
   causal contribution and names the earliest decisive error.

Every stage is in the audit trail, and the answer carries every instance with its
state, so a reader also sees the errors that did not matter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import NoneType
from typing import Any, Literal

from pydantic import BaseModel, Field

from agentdebug.attribute.model_common import (
    TraceFacts,
    _enum,
    chat_with,
    client,
    fit_view,
    hypothesis,
    mode_field,
    mode_from_findings,
    mode_ids,
    narrowed,
    one_pass_tokens,
    prompt_budget,
)
from agentdebug.audit import record as record_audit
from agentdebug.evidence import Grounder
from agentdebug.schema import AgentTrajectory, AuditEntry, Evidence, Finding, Hypothesis

MIN_WINDOW_TOKENS = 1_800
FINAL_SHARE = 0.15
MIN_FINAL_TOKENS = 1_200


class State(StrEnum):
    RESOLVED = "resolved"
    COSTLY = "costly"
    ACTIVE = "active"
    LATENT = "latent"


class Trigger(BaseModel):
    step: int
    conflict: Literal["task", "history", "self", "environment"]
    phase: Literal["plan", "reason", "act", "observe", "verify"]
    object: str
    continues: str | None = None
    wrong_quote: str
    reference_quote: str
    description: str
    fixed_at: int | None = None
    relied_on: list[int] = Field(default_factory=list, max_length=8)
    failure_mode: str | None = None


class Update(BaseModel):
    error: str
    step: int
    status: Literal["resolved", "relied_on"]
    quote: str = ""


class WindowAnswer(BaseModel):
    triggers: list[Trigger] = Field(default_factory=list, max_length=8)
    updates: list[Update] = Field(default_factory=list, max_length=12)


class FinalAnswer(BaseModel):
    error: str
    reason: str
    failure_mode: str | None = None
    fix: str = ""
    confidence: float = Field(ge=0.0, le=1.0)


@dataclass
class Instance:
    id: str
    object: str
    triggers: list[Trigger] = field(default_factory=list)
    resolved_at: int | None = None
    relied_on: list[int] = field(default_factory=list)
    state: State | None = None

    @property
    def first_step(self) -> int:
        return min(t.step for t in self.triggers)

    def summary(self, facts: TraceFacts) -> dict[str, Any]:
        first = min(self.triggers, key=lambda t: t.step)
        return {
            "id": self.id,
            "object": self.object,
            "state": self.state.value if self.state else None,
            "first_step": self.first_step,
            "agent": facts.agent(self.first_step),
            "steps": sorted({t.step for t in self.triggers}),
            "conflict": first.conflict,
            "phase": first.phase,
            "wrong_quote": first.wrong_quote,
            "reference_quote": first.reference_quote,
            "description": first.description,
            "resolved_at": self.resolved_at,
            "relied_on": sorted(set(self.relied_on)),
        }


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.casefold()).strip()


def _audit(detail: str, outcome: str = "ok") -> None:
    record_audit(
        AuditEntry(stage="lifecycle", strategy="lifecycle", outcome=outcome, detail=detail)
    )


def windows(steps: Sequence[int], window_budget: int) -> list[list[int]]:
    """Contiguous groups of steps, as many as ``window_budget`` (all windows
    together) affords at MIN_WINDOW_TOKENS each, never fewer than 2 steps each."""
    count = max(1, min(math.ceil(len(steps) / 2), window_budget // MIN_WINDOW_TOKENS))
    size = max(1, math.ceil(len(steps) / count))
    return [list(steps[i : i + size]) for i in range(0, len(steps), size)]


class LifecycleAttributor:
    name = "lifecycle"
    requires_model = True

    def attribute(
        self, trajectory: AgentTrajectory, findings: Sequence[Finding]
    ) -> list[Hypothesis]:
        facts = TraceFacts.of(trajectory)
        blameable = facts.blameable
        if not blameable:
            return []
        all_steps = [s.index for s in facts.steps]
        # The whole read costs no more than one all-at-once pass would.
        total = min(prompt_budget(), one_pass_tokens(trajectory, findings))
        final_budget = max(MIN_FINAL_TOKENS, int(total * FINAL_SHARE))
        groups = windows(all_steps, total - final_budget)
        per_window = max(MIN_WINDOW_TOKENS, (total - final_budget) // len(groups))
        # one window is one read of the whole run: it gets what one pass gets
        window_budget = prompt_budget() if len(groups) == 1 else per_window
        grounder = Grounder(trajectory)
        instances: list[Instance] = []
        _audit(
            f"{len(all_steps)} steps read in {len(groups)} window(s) of about {window_budget} tokens"
        )
        for group in groups:
            judged = [s for s in group if s in facts.agent_at]
            if judged:
                self._read_window(
                    trajectory, facts, grounder, instances, group, judged, window_budget
                )
        last = all_steps[-1]
        for inst in instances:
            inst.state = self._state(inst, last)
        _audit(
            "instances: "
            + (
                "; ".join(
                    f"{i.id} {i.object!r} from step {i.first_step}: {i.state}" for i in instances
                )
                or "none"
            )
        )
        return self._decide(trajectory, facts, findings, instances, final_budget)

    # -- stage 2 and 3: triggers, grounding, grouping, updates ---------------------------

    def _read_window(
        self,
        trajectory: AgentTrajectory,
        facts: TraceFacts,
        grounder: Grounder,
        instances: list[Instance],
        group: list[int],
        judged: list[int],
        budget: int,
    ) -> None:
        open_ = [i for i in instances if i.resolved_at is None]
        listing = (
            "\n".join(
                f"- {i.id} (from step {i.first_step}, {i.object}): {i.triggers[0].description}"
                for i in open_
            )
            or "(none)"
        )
        ids = [i.id for i in open_]
        later = [s for s in group if s > judged[0]]
        later_step: Any = _enum(later) if later else int
        trigger_schema = narrowed(
            Trigger,
            "Trigger",
            step=(_enum(judged), ...),
            failure_mode=(mode_field(mode_ids()), None),
            # (NoneType, not None: pydantic before 2.8 reads a field typed None as
            # one without a type)
            continues=((_enum(ids) | None) if ids else NoneType, None),
            fixed_at=((_enum(later) | None) if later else NoneType, None),
            relied_on=(
                list[later_step],
                Field(default_factory=list, max_length=8 if later else 0),
            ),
        )
        update_schema = narrowed(Update, "Update", error=(_enum(ids), ...)) if ids else Update
        schema = narrowed(
            WindowAnswer,
            "WindowAnswer",
            triggers=(list[trigger_schema], Field(default_factory=list, max_length=8)),  # type: ignore[valid-type]
            updates=(
                list[update_schema],  # type: ignore[valid-type]
                Field(default_factory=list, max_length=12 if ids else 0),
            ),
        )
        user = fit_view(
            trajectory,
            "lifecycle_triggers",
            window_range=(0, group[-1]),
            focus=judged,
            budget=budget,
            medium_radius=2,
            system="system_short",
            first=str(group[0]),
            last=str(group[-1]),
            open_errors=listing,
            modes=", ".join(mode_ids()),
        )
        answer = (
            client()
            .structured(
                messages=chat_with("system_short", user),
                schema=schema,
                strategy=self.name,
                purpose=f"error triggers in steps {group[0]}–{group[-1]}",
            )
            .value
        )
        for update in answer.updates:
            self._apply_update(grounder, instances, update, group)
        for trigger in answer.triggers:
            grounded = self._ground(grounder, trigger, group)
            if grounded is None:
                continue
            self._group(instances, grounded)

    def _ground(self, grounder: Grounder, trigger: Trigger, group: list[int]) -> Trigger | None:
        wrong = grounder.find(trigger.wrong_quote, step_index=trigger.step)
        if not wrong.grounded or wrong.source != "event":
            _audit(
                f"step {trigger.step} trigger discarded: the wrong commitment is not in the trace",
                "discarded",
            )
            return None
        if wrong.elsewhere:
            if wrong.step_index not in group:
                _audit(
                    f"step {trigger.step} trigger discarded: its quote is at step {wrong.step_index}, outside the window",
                    "discarded",
                )
                return None
            _audit(
                f"trigger moved from step {trigger.step} to step {wrong.step_index}, where its quote is"
            )
            trigger = trigger.model_copy(update={"step": wrong.step_index})
        ref = grounder.find(trigger.reference_quote, step_index=trigger.step)
        if not ref.grounded:
            _audit(
                f"step {trigger.step} trigger discarded: the violated reference is not in the trace",
                "discarded",
            )
            return None
        if ref.step_index is not None and ref.step_index > trigger.step:
            _audit(
                f"step {trigger.step} trigger discarded: its reference comes later (step {ref.step_index})",
                "discarded",
            )
            return None
        return trigger

    def _group(self, instances: list[Instance], trigger: Trigger) -> None:
        target = self._instance_for(instances, trigger)
        target.triggers.append(trigger)
        # What happens to it later in the same window.
        target.relied_on += [s for s in trigger.relied_on if s > trigger.step]
        if (
            trigger.fixed_at is not None
            and trigger.fixed_at > trigger.step
            and target.resolved_at is None
        ):
            target.resolved_at = trigger.fixed_at
            _audit(f"{target.id} resolved at step {trigger.fixed_at}")

    def _instance_for(self, instances: list[Instance], trigger: Trigger) -> Instance:
        target = next(
            (i for i in instances if trigger.continues and i.id == trigger.continues), None
        )
        if target is None:
            key = _key(trigger.object)
            target = next(
                (i for i in instances if i.resolved_at is None and _key(i.object) == key), None
            )
        if target is None:
            target = Instance(id=f"E{len(instances) + 1}", object=trigger.object)
            instances.append(target)
            _audit(f"{target.id} opened at step {trigger.step}: {trigger.description}")
        elif trigger.step > target.first_step:
            target.relied_on.append(trigger.step)
        return target

    def _apply_update(
        self, grounder: Grounder, instances: list[Instance], update: Update, group: list[int]
    ) -> None:
        inst = next((i for i in instances if i.id == update.error), None)
        if inst is None or update.step not in group or update.step <= inst.first_step:
            _audit(
                f"update for {update.error} at step {update.step} ignored: no such open error or step",
                "discarded",
            )
            return
        if update.quote.strip():
            found = grounder.find(update.quote, step_index=update.step)
            if not found.grounded:
                _audit(
                    f"update for {inst.id} at step {update.step} ignored: its quote is not in the trace",
                    "discarded",
                )
                return
        if update.status == "resolved" and inst.resolved_at is None:
            inst.resolved_at = update.step
            _audit(f"{inst.id} resolved at step {update.step}")
        elif update.status == "relied_on":
            inst.relied_on.append(update.step)

    @staticmethod
    def _state(inst: Instance, last_step: int) -> State:
        start = inst.first_step
        if inst.resolved_at is not None:
            remaining = max(1, last_step - start)
            return State.COSTLY if inst.resolved_at - start > remaining / 2 else State.RESOLVED
        return State.ACTIVE if inst.relied_on else State.LATENT

    # -- stage 4: the decision -------------------------------------------------------------

    def _decide(
        self,
        trajectory: AgentTrajectory,
        facts: TraceFacts,
        findings: Sequence[Finding],
        instances: list[Instance],
        budget: int,
    ) -> list[Hypothesis]:
        table = [i.summary(facts) for i in instances]
        candidates = [i for i in instances if i.state in (State.COSTLY, State.ACTIVE)]
        meta = {"instances": table}
        if not instances:
            _audit("no error instance survived grounding; no answer", "no-answer")
            return []
        if not candidates:
            earliest = min(instances, key=lambda i: i.first_step)
            _audit(
                "every instance was resolved cleanly or latent; the earliest is named at low confidence"
            )
            return [
                self._answer(
                    facts,
                    findings,
                    earliest,
                    0.15,
                    "no tracked error stayed active or was costly to fix; "
                    "this is the earliest error seen",
                    meta,
                )
            ]
        if len(candidates) == 1:
            only = candidates[0]
            _audit(f"{only.id} is the only candidate; no final call needed")
            why = f"the only error that was {only.state}"
            return [self._answer(facts, findings, only, 0.6, why, meta)]
        listing = "\n".join(
            f"- {c.id}: from step {c.first_step} ({facts.agent(c.first_step) or 'no agent'}), {c.state}; "
            f'{c.triggers[0].conflict} conflict in {c.triggers[0].phase}; wrong: "{c.triggers[0].wrong_quote}"; '
            f'contradicts: "{c.triggers[0].reference_quote}"; {c.triggers[0].description}'
            + (f"; relied on at steps {sorted(set(c.relied_on))}" if c.relied_on else "")
            + (f"; fixed at step {c.resolved_at}" if c.resolved_at is not None else "")
            for c in candidates
        )
        user = fit_view(
            trajectory,
            "lifecycle_final",
            focus=[c.first_step for c in candidates],
            budget=budget,
            medium_radius=0,
            system="system_short",
            instances=listing,
            modes=", ".join(mode_ids()),
        )
        schema = narrowed(
            FinalAnswer,
            "FinalAnswer",
            error=(_enum([c.id for c in candidates]), ...),
            failure_mode=(mode_field(mode_ids()), None),
        )
        answer = client().structured(
            messages=chat_with("system_short", user),
            schema=schema,
            strategy=self.name,
            purpose=f"compare {len(candidates)} candidate errors",
        )
        chosen = next(c for c in candidates if c.id == answer.value.error)
        others = sorted((c for c in candidates if c is not chosen), key=lambda c: c.first_step)
        ranked = [chosen, *others]
        final = answer.value
        out = [
            self._answer(
                facts,
                findings,
                chosen,
                final.confidence,
                final.reason,
                meta,
                final.failure_mode,
                final.fix,
            )
        ]
        out += [
            self._answer(facts, findings, c, min(0.3, final.confidence / 2), f"also {c.state}", {})
            for c in ranked[1:]
        ]
        return out

    def _answer(
        self,
        facts: TraceFacts,
        findings: Sequence[Finding],
        inst: Instance,
        confidence: float,
        why: str,
        meta: dict[str, Any],
        mode: str | None = None,
        fix: str = "",
    ) -> Hypothesis:
        """The hypothesis for ``inst``: its failure mode is what a detector found at
        its step, else what the final call (or the trigger itself) said."""
        first = min(inst.triggers, key=lambda t: t.step)
        found = mode_from_findings(findings, facts, first.step)
        return hypothesis(
            facts=facts,
            step=first.step,
            agent=facts.agent_at.get(first.step),
            strategy=self.name,
            confidence=confidence,
            rationale=f"{inst.id} ({inst.object}, {inst.state}): {first.description} {why}",
            mode_id=found or mode or first.failure_mode,
            fix=fix,
            evidence=[
                Evidence(
                    step_index=first.step,
                    event_id=facts.event_at.get(first.step),
                    quote=first.wrong_quote,
                    note="the wrong commitment",
                ),
                Evidence(quote=first.reference_quote, note="what it contradicts"),
            ],
            metadata=meta,
        )
