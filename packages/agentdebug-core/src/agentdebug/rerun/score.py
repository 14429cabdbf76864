"""Scorers: did a branch reach the run's goal?

- ``default``: the branch's recorded outcome when it has one (``success`` or
  ``failure``: the framework plugin sets it from the user's success check), else
  the reference answer.
- ``reference``: the branch's final answer matches the run's reference answer
  (normalised: case, punctuation, thousands separators and whitespace ignored,
  signs and percent kept; the reference must appear as a whole phrase).
- ``outcome``: the branch's own outcome is ``success``.
- a callable: ``fn(branch) -> bool | float | Score``.
- ``llm``: a model judges the final answer against the goal (and the reference).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from agentdebug.audit import audit_scope
from agentdebug.errors import AgentDebugError
from agentdebug.schema import AgentTrajectory, EventType, OutcomeStatus, Score
from agentdebug.stages import Scorer
from agentdebug.text import shorten

_NUMBER_SEP = re.compile(r"(?<=\d)[,_](?=\d{3}\b)")
# words and numbers; a minus sign before a number and a trailing percent are kept,
# so "-5" is not "5" and "3.5%" is not "3.5"
_WORD = re.compile(r"(?<![a-z0-9])-(?=[0-9])[0-9]+(?:\.[0-9]+)?%?|[a-z0-9]+(?:\.[0-9]+)?%?")


def final_answer(trajectory: AgentTrajectory) -> Any:
    """The run's final answer: its outcome's, else the last final-answer event's."""
    if trajectory.outcome.final_answer is not None:
        return trajectory.outcome.final_answer
    for event in reversed(trajectory.events):
        if event.type is EventType.FINAL_ANSWER:
            return event.output
    return None


def words(text: str) -> list[str]:
    return _WORD.findall(_NUMBER_SEP.sub("", text.lower()))


def reference_in(answer: Any, reference: str) -> bool:
    """Whether ``reference`` appears as a whole phrase in ``answer`` (normalised)."""
    want = words(reference)
    got = words(answer if isinstance(answer, str) else str(answer))
    n = len(want)
    return bool(want) and any(got[i : i + n] == want for i in range(len(got) - n + 1))


class ReferenceScorer:
    """Success when the reference answer appears, as a phrase, in the final answer."""

    name = "reference"

    def score(self, branch: AgentTrajectory, original: AgentTrajectory) -> Score:
        reference = branch.reference_answer or original.reference_answer
        if not reference:
            raise AgentDebugError(
                f"run '{original.id}' has no reference answer to score against "
                "(use the outcome, llm or a callable scorer)"
            )
        answer = final_answer(branch)
        if answer is None:
            return Score(success=False, score=0.0, scorer=self.name, reason="no final answer")
        want, got = words(reference), words(answer if isinstance(answer, str) else str(answer))
        if not want:
            raise AgentDebugError(f"run '{original.id}': the reference answer has no words")
        found = reference_in(answer, reference)
        recall = sum(1 for w in set(want) if w in set(got)) / len(set(want))
        return Score(
            success=found,
            score=1.0 if found else round(recall * 0.99, 3),
            scorer=self.name,
            reason=f"final answer {'contains' if found else 'does not contain'} the reference "
            f"{shorten(reference, 80)!r}",
        )


class OutcomeScorer:
    """Success when the branch's recorded outcome is ``success``."""

    name = "outcome"

    def score(self, branch: AgentTrajectory, original: AgentTrajectory) -> Score:
        status = branch.outcome.status
        ok = status is OutcomeStatus.SUCCESS
        reason = branch.outcome.reason or f"the run's outcome is '{status.value}'"
        return Score(success=ok, score=1.0 if ok else 0.0, scorer=self.name, reason=reason)


class DefaultScorer:
    """The run's own verdict when it has one, else the reference answer.

    A plugin records ``success`` or ``failure`` from the user's success check; that
    check knows the task better than a phrase match, so it wins. Runs without a
    verdict (``unknown``) are judged by the reference answer; with neither, the
    scorer says so (use a callable or the llm scorer)."""

    name = "default"

    def score(self, branch: AgentTrajectory, original: AgentTrajectory) -> Score:
        status = branch.outcome.status
        if status in (OutcomeStatus.SUCCESS, OutcomeStatus.FAILURE):
            verdict = OutcomeScorer().score(branch, original)
            return verdict.model_copy(update={"scorer": "outcome"})
        if branch.reference_answer or original.reference_answer:
            return ReferenceScorer().score(branch, original)
        if branch.outcome.reason:  # the run says why it has none: that is what to act on
            raise AgentDebugError(
                f"run '{branch.id}' ended without a verdict ({branch.outcome.reason}), "
                "and there is no reference answer to judge it by"
            )
        raise AgentDebugError(
            f"run '{branch.id}' has no recorded verdict and no reference answer to judge it by "
            "(give a success check, a reference answer, a callable scorer, or --scorer llm)"
        )


class CallableScorer:
    """The user's own check: ``fn(branch)`` returns a bool, a number in [0, 1]
    (success from 0.5), or a Score."""

    def __init__(self, fn: Callable[[AgentTrajectory], Any], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or f"callable:{getattr(fn, '__qualname__', type(fn).__name__)}"

    def score(self, branch: AgentTrajectory, original: AgentTrajectory) -> Score:
        value = self.fn(branch)
        if isinstance(value, Score):
            return value
        if isinstance(value, bool):
            return Score(success=value, score=float(value), scorer=self.name)
        if isinstance(value, (int, float)) and 0 <= value <= 1:
            return Score(success=value >= 0.5, score=float(value), scorer=self.name)
        raise AgentDebugError(
            f"scorer {self.name} returned {value!r}; expected a bool, a number in [0, 1] or a Score"
        )


class JudgeAnswer(BaseModel):
    success: bool
    score: float = Field(ge=0.0, le=1.0)
    reason: str = ""


class LLMJudgeScorer:
    """A model reads the goal, the reference (if any) and the branch, and judges."""

    name = "llm"
    requires_model = True

    def score(self, branch: AgentTrajectory, original: AgentTrajectory) -> Score:
        from agentdebug.attribute.model_common import chat, client, fit_view
        from agentdebug.recover.base import require_model

        require_model("the llm scorer", instead="--scorer outcome or --scorer reference")
        reference = branch.reference_answer or original.reference_answer
        answer = final_answer(branch)
        user = fit_view(
            branch,
            "score_judge",
            goal=branch.goal or original.goal or "(not recorded)",
            reference=f"Reference answer: {reference}" if reference else "",
            answer=shorten(str(answer), 2000) if answer is not None else "(none)",
        )
        with audit_scope() as log:
            verdict = (
                client()
                .structured(
                    messages=chat(user),
                    schema=JudgeAnswer,
                    strategy=self.name,
                    purpose="score branch",
                )
                .value
            )
        return Score(
            success=verdict.success,
            score=verdict.score,
            scorer=self.name,
            reason=verdict.reason,
            audit=list(log.entries),
        )


SCORERS = ("default", "reference", "outcome", "llm")


def make_scorer(spec: str | Scorer | Callable[[AgentTrajectory], Any] | None) -> Scorer:
    """A scorer from a name, an object, a callable, or None (the default scorer)."""
    if spec is None:
        return DefaultScorer()
    if isinstance(spec, str):
        table: dict[str, Callable[[], Scorer]] = {
            "default": DefaultScorer,
            "reference": ReferenceScorer,
            "outcome": OutcomeScorer,
            "llm": LLMJudgeScorer,
        }
        if spec not in table:
            raise AgentDebugError(f"unknown scorer '{spec}' (use one of {', '.join(SCORERS)})")
        return table[spec]()
    if isinstance(spec, Scorer):
        return spec
    if callable(spec):
        return CallableScorer(spec)
    raise AgentDebugError(f"not a scorer: {spec!r}")
