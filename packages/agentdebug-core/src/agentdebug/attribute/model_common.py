"""What the model-based strategies share: answer schemas, prompts, hypotheses.

Answer schemas are built per trajectory, so the step and agent fields are enums
of the steps and agents that exist: a server that constrains decoding cannot name
a step that is not there, and one that does not gets a repair round from the
client instead of a silently wrong answer.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, create_model

from agentdebug.errors import ConfigError
from agentdebug.llm import LLMClient, get_client, render_prompt
from agentdebug.plugins import get_registry
from agentdebug.schema import AgentTrajectory, EventType, Evidence, Finding, Hypothesis, Severity
from agentdebug.tokens import count_tokens
from agentdebug.views import Step, build_view, steps_of, window

DEFAULT_PROMPT_BUDGET = 32_000
MIN_VIEW_TOKENS = 200
_M = TypeVar("_M", bound=BaseModel)


def prompt_budget() -> int:
    """Tokens a strategy may put in one prompt: ``$AGENTDEBUG_PROMPT_BUDGET`` or 32K."""
    raw = os.environ.get("AGENTDEBUG_PROMPT_BUDGET", "")
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_PROMPT_BUDGET
    return value if value > 0 else DEFAULT_PROMPT_BUDGET


class Quote(BaseModel):
    step: int
    text: str = Field(description="copied verbatim from that step")


UNATTRIBUTED = "unattributed"
_MODEL_TYPES = frozenset({EventType.LLM_CALL, EventType.LLM_RESPONSE})


@dataclass(frozen=True)
class TraceFacts:
    """The blameable steps of a trajectory and who acted in each."""

    steps: list[Step]
    agent_at: dict[int, str]
    event_at: dict[int, str]

    @classmethod
    def of(cls, trajectory: AgentTrajectory) -> TraceFacts:
        """Steps where an agent acted, and steps with a model call that no agent
        owns (a harness's own LLM call, common in span exports), named
        :data:`UNATTRIBUTED`; user turns and bare tool output are not decisions."""
        steps = steps_of(trajectory)
        agent_at: dict[int, str] = {}
        event_at: dict[int, str] = {}
        for step in steps:
            acting = next(
                (e for e in step.events if e.agent_name and e.type is not EventType.USER_INPUT),
                None,
            )
            if acting is not None and acting.agent_name:
                agent_at[step.index] = acting.agent_name
                event_at[step.index] = acting.id
                continue
            model_call = next((e for e in step.events if e.type in _MODEL_TYPES), None)
            if model_call is not None:
                agent_at[step.index] = UNATTRIBUTED
                event_at[step.index] = model_call.id
        return cls(steps=steps, agent_at=agent_at, event_at=event_at)

    def agent(self, step: int) -> str | None:
        """The agent acting at ``step``; None for an unattributed model call."""
        name = self.agent_at.get(step)
        return None if name == UNATTRIBUTED else name

    @property
    def blameable(self) -> list[int]:
        return sorted(self.agent_at)

    @property
    def agents(self) -> list[str]:
        return list(dict.fromkeys(self.agent_at.values()))


def _enum(values: Sequence[Any]) -> Any:
    return Literal[tuple(values)]


class AttributionAnswer(BaseModel):
    """The answer of a one-shot attribution; narrowed per trajectory by
    :func:`attribution_schema`."""

    agent: str
    step: int
    failure_mode: str | None = None
    reason: str
    evidence: list[Quote] = Field(default_factory=list, max_length=5)
    confidence: float = Field(ge=0.0, le=1.0)


def attribution_schema(facts: TraceFacts, mode_ids: Sequence[str]) -> type[AttributionAnswer]:
    return create_model(
        "Attribution",
        __base__=AttributionAnswer,
        agent=(_enum(facts.agents), ...),
        step=(_enum(facts.blameable), ...),
        failure_mode=(_enum(mode_ids) | None, None),
    )


def narrowed(base: type[_M], name: str, **fields: Any) -> type[_M]:
    """``base`` with some fields narrowed (enums of valid values)."""
    return create_model(name, __base__=base, **fields)


def span_label(steps: Sequence[int]) -> str:
    """``step 4`` or ``steps 4–9``."""
    return f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}–{steps[-1]}"


def checks_block(findings: Sequence[Finding], limit: int = 10) -> str:
    """The rule pack's findings, as a hint the model may weigh (or an empty string)."""
    if not findings:
        return ""
    lines = ["Automatic checks flagged (they show symptoms, not necessarily the cause):"]
    # faults first: an info finding (an error a retry got past) must not push one out
    for f in sorted(findings, key=lambda f: f.severity is Severity.INFO)[:limit]:
        lines.append(
            f"- step {f.step_index} ({f.agent_name or 'no agent'}): {f.mode_id}: {f.message}"
        )
    if len(findings) > limit:
        lines.append(f"- ... and {len(findings) - limit} more")
    return "\n".join(lines) + "\n"


def fit_view(
    trajectory: AgentTrajectory,
    template: str,
    *,
    focus: Sequence[int] = (),
    window_range: tuple[int, int] | None = None,
    budget: int | None = None,
    medium_radius: int = 2,
    system: str = "system",
    **values: str,
) -> str:
    """The prompt ``template`` with ``$trace`` filled by a view that fits the budget.

    The frame (system prompt, instructions, lists) is rendered first with an empty
    trace and its size subtracted from ``budget`` (default: the prompt budget), so
    the whole prompt fits.
    """
    frame = render_prompt(template, trace="", **values) + render_prompt(system)
    limit = prompt_budget()
    framed = count_tokens(frame) + 64
    room = (budget or limit) - framed
    if room < MIN_VIEW_TOKENS and budget is not None:
        # a stage's share of a small run's budget can be less than its instructions
        # need: the view gets the least it is given, within the prompt budget
        room = min(MIN_VIEW_TOKENS, limit - framed)
    if room < MIN_VIEW_TOKENS:
        raise ConfigError(
            f"the prompt budget leaves {room} tokens for the trace after the instructions; "
            f"raise AGENTDEBUG_PROMPT_BUDGET (now {limit})"
        )
    if window_range is not None:
        view = window(
            trajectory,
            window_range[0],
            window_range[1],
            budget_tokens=room,
            focus=focus,
            medium_radius=medium_radius,
        )
    else:
        view = build_view(trajectory, focus=focus, budget_tokens=room, medium_radius=medium_radius)
    return render_prompt(template, trace=view.text, **values)


def one_pass_tokens(trajectory: AgentTrajectory, findings: Sequence[Finding]) -> int:
    """The prompt tokens one all-at-once pass would send for this run: the yardstick
    that the multi-call strategies divide among their calls."""
    prompt = fit_view(
        trajectory, "all_at_once", checks=checks_block(findings), modes=", ".join(mode_ids())
    )
    return count_tokens(prompt) + count_tokens(render_prompt("system"))


def chat_with(system: str, user: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": render_prompt(system)},
        {"role": "user", "content": user},
    ]


def mode_ids() -> list[str]:
    return sorted(get_registry().failure_modes)


def chat(user: str) -> list[dict[str, str]]:
    return chat_with("system", user)


def client() -> LLMClient:
    return get_client()


def evidence_from(quotes: Sequence[Quote], facts: TraceFacts) -> list[Evidence]:
    out: list[Evidence] = []
    for q in quotes:
        if not q.text.strip():
            continue
        out.append(Evidence(event_id=facts.event_at.get(q.step), step_index=q.step, quote=q.text))
    return out


def hypothesis(
    *,
    facts: TraceFacts,
    step: int,
    agent: str | None,
    strategy: str,
    confidence: float,
    rationale: str,
    mode_id: str | None = None,
    evidence: Sequence[Evidence] = (),
    metadata: dict[str, Any] | None = None,
) -> Hypothesis:
    """A hypothesis about ``step``, as the model answered it.

    The agent defaults to the one acting at that step. When the model names an
    agent that did not act there, both answers are kept as given (the Who&When
    protocol scores agent and step separately) and the mismatch is recorded in
    the metadata, so that a reader (or the rerun) can see it.
    """
    meta = dict(metadata or {})
    acting = facts.agent_at.get(step)
    if acting == UNATTRIBUTED:
        acting = None
    if agent == UNATTRIBUTED:
        agent = None
    if agent and acting and agent != acting:
        meta["agent_acting_at_step"] = acting
        acting = agent
    return Hypothesis(
        agent_name=acting or agent,
        step_index=step,
        event_id=facts.event_at.get(step),
        strategy=strategy,
        confidence=round(max(0.0, min(1.0, confidence)), 3),
        rationale=rationale,
        mode_id=mode_id,
        evidence=list(evidence),
        metadata=meta,
    )
