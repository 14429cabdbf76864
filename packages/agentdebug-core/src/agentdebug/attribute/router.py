"""The router (``--attributor auto``): spend model calls only where they pay.

1. The free tier first: the rule findings and the heuristic attributor.
2. With a model configured, one cheap pass: all-at-once.
3. If the two agree, or the model is confident, stop there. Confident means after
   its quotes were checked against the trace (:mod:`agentdebug.evidence`): a 0.8
   resting on a quote that is not there is a 0.6, below the bar, and escalates.
4. Otherwise escalate, one costlier strategy at a time: step-by-step on short
   traces (≤ 16 steps), binary search on middling ones, error-lifecycle tracking
   on long ones (> 30 steps); DeepDebug last, only when the strategies still
   disagree. Stop as soon as two strategies agree; otherwise the best-supported
   answer wins.
An answer that carries no weight (a model's confidence of 0, or a strategy that
found nothing decisive: step-by-step judging no step decisive, binary search unable
to tell the halves apart) is no agreement and no confident answer: it never stops
the router, never joins another strategy's candidate, and ranks below every
candidate that carries weight, the free tier's included, so the report keeps the
free tier's root cause and fix rather than a shrug.
Every stage respects the budget the user set (``--budget``); when it runs out the
router stops and answers with what it has, and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentdebug.attribute.heuristic import HeuristicAttributor
from agentdebug.attribute.model_common import MIN_WEIGHT, TraceFacts
from agentdebug.audit import FALLBACK, note
from agentdebug.detect.signals import CODE_FIX
from agentdebug.errors import ConfigError
from agentdebug.evidence import Grounder, ground_hypotheses
from agentdebug.llm import BudgetExceeded, LLMError, current_settings
from agentdebug.plugins import get_registry
from agentdebug.schema import AgentTrajectory, Finding, Hypothesis

SHORT_TRACE = 16
LONG_TRACE = 30


def _key(h: Hypothesis) -> tuple[str | None, int | None]:
    return (h.agent_name, h.step_index)


def weightless(h: Hypothesis) -> str | None:
    """Why a strategy's answer carries no weight, or None when it does: a confidence
    under ``MIN_WEIGHT`` (a model's shrug, a dry-run server's 0), or an answer that says it
    found nothing decisive (``metadata["decisive"]`` false: step-by-step judging no
    step decisive; binary search stopped on an ambiguous range)."""
    if round(h.confidence, 2) < MIN_WEIGHT:
        return f"confidence under {MIN_WEIGHT:g}"
    meta = h.metadata
    if meta.get("decisive") is False or meta.get("stopped") == "ambiguous":
        return "nothing decisive"
    return None


@dataclass
class _Vote:
    hypothesis: Hypothesis
    strategies: list[str] = field(default_factory=list)
    confidences: list[float] = field(default_factory=list)  # each strategy's own
    weightless: bool = False  # named only by an answer that carries no weight

    def combined(self) -> float:
        """The confidence of a culprit named by several strategies: the chance that
        at least one of them is right, as if they erred independently (at most
        0.95). A strategy that agrees at confidence 0 adds nothing; before, any
        agreement halved the doubt, so a model's shrug lifted a 0.2 to 0.6."""
        doubt = 1.0
        for confidence in self.confidences:
            doubt *= 1 - confidence
        return min(0.95, 1 - doubt)


class RouterAttributor:
    name = "auto"
    requires_model = False

    def __init__(self, *, accept_confidence: float = 0.7, short_trace: int = SHORT_TRACE) -> None:
        self.accept_confidence = accept_confidence
        self.short_trace = short_trace

    def escalation(self, trajectory: AgentTrajectory) -> list[str]:
        """Costlier strategies to try, for this trace's length; DeepDebug, the most
        thorough, only when the others still disagree."""
        n = len(TraceFacts.of(trajectory).blameable)
        if n <= self.short_trace:
            order = ["step-by-step"]
        elif n <= LONG_TRACE:
            order = ["binary-search"]
        else:
            order = ["lifecycle"]  # long traces: errors pile up, most do not matter
        known = get_registry().attributors
        return [s for s in [*order, "deepdebug"] if s in known]

    def attribute(
        self, trajectory: AgentTrajectory, findings: Sequence[Finding]
    ) -> list[Hypothesis]:
        free = HeuristicAttributor().attribute(trajectory, findings)
        if not current_settings().configured:
            return free
        # Quotes are checked as each answer comes, so that what decides whether to
        # stop is the confidence the report will show (the report does not check
        # them twice).
        grounder = Grounder(trajectory)
        free = ground_hypotheses(free, grounder)
        votes: list[_Vote] = []
        route: list[str] = []

        def vote(strategy: str, answer: list[Hypothesis]) -> Hypothesis | None:
            if not answer:
                route.append(f"{strategy}: no answer")
                return None
            top = answer[0]
            light = weightless(top) if strategy != "heuristic" else None
            route.append(
                f"{strategy}: {top.agent_name} at step {top.step_index} ({top.confidence:.2f})"
                + (f", {light}: not counted" if light else "")
            )
            if light:  # (no agreement: a candidate of its own, ranked below the others)
                votes.append(_Vote(top, [strategy], [top.confidence], weightless=True))
                return None
            for v in votes:
                if _key(v.hypothesis) == _key(top) and not v.weightless:
                    v.strategies.append(strategy)
                    v.confidences.append(top.confidence)
                    if strategy != "heuristic":  # the model's rationale and evidence are
                        v.hypothesis = _filled(top, v.hypothesis)  # richer, where it gave them
                    return top
            votes.append(_Vote(top, [strategy], [top.confidence]))
            return top

        vote("heuristic", free)
        registry = get_registry()
        for strategy in ["all-at-once", *self.escalation(trajectory)]:
            try:
                answer = registry.attributor(strategy).attribute(trajectory, findings)
            except BudgetExceeded as exc:
                note(
                    self.name,
                    f"budget exhausted before {strategy} ({exc}); {FALLBACK}",
                )
                break
            except (LLMError, ConfigError) as exc:  # (a stage that cannot fit its prompt)
                if current_settings().no_fallback:
                    raise
                note(self.name, f"{strategy} failed ({exc}); {FALLBACK}")
                route.append(f"{strategy}: failed")
                break
            top = vote(strategy, ground_hypotheses(answer, grounder))
            if top is None:
                continue
            agreed = next(v for v in votes if _key(v.hypothesis) == _key(top) and not v.weightless)
            if len(agreed.strategies) >= 2 or (
                strategy == "all-at-once" and top.confidence >= self.accept_confidence
            ):
                break
        return self._ranked(votes, free, route)

    def _ranked(
        self, votes: list[_Vote], free: list[Hypothesis], route: list[str]
    ) -> list[Hypothesis]:
        """Answers that carry weight first (see :func:`weightless`); among them most
        agreement first; without agreement the most thorough strategy asked (the
        last rung of the ladder) decides; confidence breaks remaining ties."""
        asked = [line.split(":", 1)[0] for line in route]

        def strength(v: _Vote) -> tuple[bool, int, int, float]:
            # (a strategy a budget or a failed call stopped midway is not the more
            # thorough for being asked later: its answer is partial)
            partial = bool(v.hypothesis.metadata.get("partial"))
            thoroughness = -1 if partial else max(asked.index(s) for s in v.strategies)
            return (not v.weightless, len(v.strategies), thoroughness, v.hypothesis.confidence)

        ordered = sorted(votes, key=strength, reverse=True)
        out: list[Hypothesis] = []
        seen: set[tuple[str | None, int | None]] = set()
        for rank, v in enumerate(ordered):
            if v.weightless and _key(v.hypothesis) in seen:
                continue  # (a shrug at a candidate already listed: nothing to add)
            seen.add(_key(v.hypothesis))
            agreement = len(v.strategies)
            conf = v.combined() if agreement >= 2 else v.hypothesis.confidence
            meta = {**v.hypothesis.metadata, "supported_by": v.strategies}
            if rank == 0:
                meta["route"] = route
            out.append(
                v.hypothesis.model_copy(
                    update={
                        "confidence": round(conf, 3),
                        "metadata": meta,
                        "strategy": f"{self.name}:{'+'.join(v.strategies)}",
                    }
                )
            )
        out += [h for h in free[1:] if _key(h) not in seen]
        return out


def _filled(answer: Hypothesis, agreed: Hypothesis) -> Hypothesis:
    """A model's hypothesis that agrees with ``agreed`` (the same agent and step),
    with what it left empty taken from that one: a model that names no failure
    mode, quotes nothing, gives no reason or no fix must not erase what a detector
    found there (the report's mode, and the fix that comes from it). A fix the model
    gave that names nothing the run holds (set aside for the mode's remedy) counts
    as none: a detector's concrete fix is kept over it."""
    update: dict[str, Any] = {}
    if not answer.mode_id and agreed.mode_id:
        update["mode_id"] = agreed.mode_id
    if not answer.evidence and agreed.evidence:
        update["evidence"] = agreed.evidence
    if not answer.rationale.strip() and agreed.rationale:
        update["rationale"] = agreed.rationale
    if answer.event_id is None and agreed.event_id is not None:
        update["event_id"] = agreed.event_id
    # (not the rest of its metadata: what a strategy noted there, "stopped:
    # ambiguous", is its own)
    fix = agreed.metadata.get("fix")
    if not _own_fix(answer) and isinstance(fix, str) and fix.strip():
        code = agreed.metadata.get(CODE_FIX)
        kept = {"fix": fix, **({CODE_FIX: code} if code else {})}
        update["metadata"] = {**answer.metadata, **kept}
    return answer.model_copy(update=update) if update else answer


def _own_fix(h: Hypothesis) -> bool:
    fix = h.metadata.get("fix")
    return isinstance(fix, str) and bool(fix.strip())
