"""What the model-based strategies share: answer schemas, prompts, hypotheses.

Answer schemas are built per trajectory, so the step and agent fields are enums
of the steps and agents that exist: a server that constrains decoding cannot name
a step that is not there. A server that does not gets its answer read leniently
(:mod:`agentdebug.attribute.model_answers`): what can be mended is, with a note,
and what cannot gets a repair round listing every valid value, never a silently
wrong answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, field_validator

from agentdebug.attribute.model_answers import (
    NO_SUCH_AGENT,
    LenientAnswer,
    Steps,
    agent_of,
    enum_of,
    fix_terms_in_run,
    keep_valid,
    mode_of,
)
from agentdebug.attribute.model_answers import narrowed as narrowed
from agentdebug.errors import ConfigError
from agentdebug.llm import (
    BudgetExceeded,
    LLMClient,
    LLMError,
    current_settings,
    get_client,
    render_prompt,
)
from agentdebug.plugins import get_registry
from agentdebug.schema import (
    AgentEvent,
    AgentTrajectory,
    EventType,
    Evidence,
    Finding,
    Hypothesis,
    Severity,
)
from agentdebug.text import compact_json, flatten
from agentdebug.tokens import count_tokens
from agentdebug.views import Step, TraceView, build_view, steps_of, window
from agentdebug.views._steps import is_decision

DEFAULT_PROMPT_BUDGET = 32_000
MIN_VIEW_TOKENS = 200


def prompt_budget() -> int:
    """Tokens a strategy may put in one prompt: ``$AGENTDEBUG_PROMPT_BUDGET`` or 32K."""
    raw = os.environ.get("AGENTDEBUG_PROMPT_BUDGET", "")
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_PROMPT_BUDGET
    return value if value > 0 else DEFAULT_PROMPT_BUDGET


MAX_QUOTES = 3  # as the prompts say ("up to three quotes")


class Quote(BaseModel):
    step: int
    text: str = Field(description="copied verbatim from that step")


UNATTRIBUTED = "unattributed"
_MODEL_TYPES = frozenset({EventType.LLM_CALL, EventType.LLM_RESPONSE})
#: Below this, a model's suspicion of a step is none: a search or a reading that ends
#: with every step judged so names no step (the free tier answers instead)
NO_SUSPICION = 0.05


@dataclass(frozen=True)
class TraceFacts:
    """The blameable steps of a trajectory and who acted in each.

    A step that only records what came to an agent (a tool's output, such as
    Who&When's Computer_terminal, an observation, the user's input) is no agent's
    decision: it is not offered as an answer (``blameable``), and one that names a
    tool's output anyway (Who&When labels some) is blamed on the decision that
    produced it (``produced_by``), with a note and less confidence.
    """

    steps: list[Step]
    agent_at: dict[int, str]
    """The agent (or UNATTRIBUTED model call) that decided at each decision step."""
    event_at: dict[int, str]
    produced_by: dict[int, int] = field(default_factory=dict)
    """Tool-output and observation steps: the decision step that produced each."""
    speakers: tuple[str, ...] = ()
    """Names that only gave input or tool output (a tool, the user): not agents."""
    goal: str = ""

    @classmethod
    def of(cls, trajectory: AgentTrajectory) -> TraceFacts:
        """Steps where an agent acted, and steps with a model call that no agent
        owns (a harness's own LLM call, common in span exports), named
        :data:`UNATTRIBUTED`; user turns and bare tool output are not decisions."""
        steps = steps_of(trajectory)
        agent_at: dict[int, str] = {}
        event_at: dict[int, str] = {}
        step_of = {e.id: e.step_index for e in trajectory.events}
        produced_by: dict[int, int] = {}
        for step in steps:
            # (a tool node's step decides nothing: it is the output of the call that asked)
            tool_step = _only_ran_tools(step.events, step_of)
            acting = (
                None
                if tool_step
                else next((e for e in step.events if e.agent_name and is_decision(e)), None)
            )
            if acting is not None and acting.agent_name:
                agent_at[step.index] = acting.agent_name
                event_at[step.index] = acting.id
                continue
            model_call = (
                None
                if tool_step
                else next((e for e in step.events if e.type in _MODEL_TYPES), None)
            )
            if model_call is not None:
                agent_at[step.index] = UNATTRIBUTED
                event_at[step.index] = model_call.id
                continue
            if all(e.type is EventType.USER_INPUT for e in step.events):
                continue
            # a tool's output: the call it answers, else the latest decision before it
            parents = [step_of.get(e.parent_id or "") for e in step.events]
            called = [p for p in parents if p is not None and p in agent_at and p < step.index]
            earlier = [s for s in agent_at if s < step.index]
            if called or earlier:
                produced_by[step.index] = max(called) if called else max(earlier)
                event_at[step.index] = step.events[0].id
        acted = set(agent_at.values())
        speakers = tuple(
            n for n in trajectory.agent_names() if n not in acted and n != UNATTRIBUTED
        )
        return cls(steps, agent_at, event_at, produced_by, speakers, trajectory.goal or "")

    def agent(self, step: int) -> str | None:
        """The agent acting at ``step`` (at a tool's output, the one whose decision
        produced it); None for an unattributed model call."""
        name = self.agent_at.get(step, self.agent_at.get(self.produced_by.get(step, -1)))
        return None if name == UNATTRIBUTED else name

    @property
    def blameable(self) -> Steps:
        """The decision steps (what a model is offered), with the tool-output steps
        a model may name anyway."""
        return Steps(sorted(self.agent_at), sorted(self.produced_by))

    @property
    def agents(self) -> list[str]:
        return list(dict.fromkeys(self.agent_at.values()))


def _enum(values: Sequence[Any]) -> Any:
    """A field holding one of ``values``, read leniently (``"3"`` is 3; a tool's
    output step is the decision that produced it), refused with every valid
    value listed."""
    numeric = bool(values) and all(isinstance(v, int) for v in values)
    modes = bool(values) and set(values) <= set(get_registry().failure_modes)
    return enum_of(values, what="steps" if numeric else "failure modes" if modes else "values")


def mode_field(modes: Sequence[str]) -> Any:
    """An optional failure mode: unknown ones are left unset, with a note."""
    registry = get_registry().failure_modes
    return mode_of(modes, {m: registry[m].name for m in modes if m in registry})


def quotes_read(value: Any) -> Any:
    """Quotes as a model gave them: the valid ones, at most MAX_QUOTES."""
    return keep_valid(Quote, "evidence", MAX_QUOTES)(value)


class AttributionAnswer(LenientAnswer):
    """The answer of a one-shot attribution; narrowed per trajectory by
    :func:`attribution_schema`."""

    agent: str
    step: int
    failure_mode: str | None = None
    reason: str
    evidence: list[Quote] = Field(default_factory=list, max_length=MAX_QUOTES)
    confidence: float = Field(ge=0.0, le=1.0)

    _lenient_quotes = field_validator("evidence", mode="before")(quotes_read)


class FixedAnswer(AttributionAnswer):
    """An attribution with the model's own concrete fix (optional)."""

    fix: str = ""


def attribution_schema(facts: TraceFacts, mode_ids: Sequence[str]) -> type[FixedAnswer]:
    return narrowed(
        FixedAnswer,
        "Attribution",
        agent=(agent_of(facts.agents, facts.speakers), ...),
        step=(_enum(facts.blameable), ...),
        failure_mode=(mode_field(mode_ids), None),
    )


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


#: The ways a prompt can say how it shows its focus steps (``$shown``): whole, or
#: cut because even alone they do not fit the prompt's share of the budget.
SHOWN_WHOLE = "in full"
SHOWN_CUT = (
    "in as much detail as the prompt allows (too long to show whole: each is cut "
    "in the middle, where it says characters were omitted)"
)


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
    the whole prompt fits. A template that says how its focus steps are shown
    (``$shown``) says "in full" only when they are.
    """
    return fit_prompt(
        trajectory,
        template,
        focus=focus,
        window_range=window_range,
        budget=budget,
        medium_radius=medium_radius,
        system=system,
        **values,
    )[0]


def fit_prompt(
    trajectory: AgentTrajectory,
    template: str,
    *,
    focus: Sequence[int] = (),
    window_range: tuple[int, int] | None = None,
    budget: int | None = None,
    medium_radius: int = 2,
    system: str = "system",
    **values: str,
) -> tuple[str, TraceView]:
    """:func:`fit_view`, with the view it shows."""
    claims = dict(values)
    claims.setdefault("shown", SHOWN_CUT)  # (the longer wording sizes the frame)
    frame = render_prompt(template, trace="", **claims) + render_prompt(system)
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
    if "shown" not in values:
        cut = set(view.truncated_steps) & set(focus)
        claims["shown"] = SHOWN_CUT if cut else SHOWN_WHOLE
    return render_prompt(template, trace=view.text, **claims), view


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


def mode_first(
    findings: Sequence[Finding], facts: TraceFacts, step: int, given: str | None
) -> str | None:
    """The mode of a model's answer at ``step``: a fault a detector found there (or at
    a tool output it produced) first; else the model's own; else a notice found
    there (a timeout a retry got past is no cause to put before the model's)."""
    found = mode_from_findings(
        [f for f in findings if f.severity is not Severity.INFO], facts, step
    )
    return found or given or mode_from_findings(findings, facts, step)


def mode_from_findings(findings: Sequence[Finding], facts: TraceFacts, step: int) -> str | None:
    """The failure mode a detector (the rules, the judge) found at ``step``, or at
    a tool output it produced; faults before notices, then the most confident."""
    produced = {s for s, by in facts.produced_by.items() if by == step}
    at = [f for f in findings if f.step_index == step or f.step_index in produced]
    at.sort(key=lambda f: (f.severity is Severity.INFO, f.step_index != step, -f.confidence))
    return at[0].mode_id if at else None


def _run_text(facts: TraceFacts) -> str:
    parts = [facts.goal]
    for step in facts.steps:
        for e in step.events:
            parts += [flatten(e.input), flatten(e.output), compact_json(e.input)]
            if e.error is not None:
                parts.append(f"{e.error.type or ''}: {e.error.message}")
    return "\n".join(parts)


AGENT_MISMATCH_FACTOR = 0.5
TOOL_OUTPUT_FACTOR = 0.75


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
    fix: str = "",
) -> Hypothesis:
    """A hypothesis about ``step``, as the model answered it.

    The agent defaults to the one acting at that step. A step that is only a
    tool's output is kept (Who&When labels some such steps), but blamed on the
    agent whose decision produced it, at three quarters of the confidence, saying
    so. A name that only gave input or tool output (a tool, the user) is read as
    the agent acting there. A
    model that names an agent that did not act there keeps both answers (the
    Who&When protocol scores agent and step separately), but the claim loses half
    its confidence, the rationale says why, and the mismatch is in the metadata
    (the report says who acted there). ``fix`` is the model's own fix: used (as
    ``metadata["fix"]``) when it names something the run holds (an identifier, a
    value, a quoted text), else set aside for the failure mode's remedy.
    """
    meta = dict(metadata or {})
    acting = facts.agent(step)
    notes: list[str] = []
    decision = facts.produced_by.get(step)
    if decision is not None:
        meta["decision_step"] = decision
        confidence *= TOOL_OUTPUT_FACTOR
        notes.append(
            f"step {step} is a tool's output, not a decision: blamed on "
            f"{acting or 'the agent'}, whose step {decision} produced it; confidence "
            "lowered by a quarter"
        )
    if agent == UNATTRIBUTED:
        agent = None
    if agent == NO_SUCH_AGENT and acting:
        meta["confidence_before_agent_check"] = confidence
        confidence *= AGENT_MISMATCH_FACTOR
        notes.append(f"confidence halved: the answer named no agent of this run, {acting} acted")
        agent = acting
    if agent is not None and agent in facts.speakers and agent != acting:
        notes.append(f"the answer named {agent}, which only gave input or tool output")
        meta["agent_named"] = agent
        agent = acting
    if agent and acting and agent != acting:
        meta["agent_acting_at_step"] = acting
        meta["confidence_before_agent_check"] = confidence
        confidence *= AGENT_MISMATCH_FACTOR
        notes.append(
            f"confidence halved: the answer names {agent}, but at step {step} it was "
            f"{acting} that acted"
        )
        remedy = _remedy(mode_id)
        if remedy and not fix.strip() and "fix" not in meta:
            meta["fix"] = f"At step {step}, {acting}: {remedy}"
    if fix.strip() and "fix" not in meta:
        terms = fix_terms_in_run(fix, _run_text(facts))
        if terms:
            meta["fix"] = fix.strip()
        else:
            meta["fix_set_aside"] = (
                f"{fix.strip()} (it names nothing the run holds; the failure mode's remedy is used)"
            )
    if notes:
        rationale = f"{rationale} ({'; '.join(notes)}.)".strip()
    return Hypothesis(
        agent_name=agent or acting,
        step_index=step,
        event_id=facts.event_at.get(step),
        strategy=strategy,
        confidence=round(max(0.0, min(1.0, confidence)), 3),
        rationale=rationale,
        mode_id=mode_id,
        evidence=list(evidence),
        metadata=meta,
    )


def _remedy(mode_id: str | None) -> str | None:
    mode = get_registry().failure_modes.get(mode_id or "")
    return mode.remedy if mode is not None else None


# the least confidence a model's answer carries weight with: under it, a shrug that
# neither agrees with another strategy nor earns an agreement's bonus (a review:
# 0.01 "agreed" with the free tier, and the model's "not sure at all" replaced its
# reason)
MIN_WEIGHT = 0.1


@dataclass(frozen=True)
class Stop:
    """Why a strategy of several model calls stopped before its answer: the budget
    ran out, or a call failed. What it had found by then, when that names a step,
    is its answer, marked partial (``metadata["partial"]``) and said in a note, as
    the router answers with its earlier stages; with ``no_fallback`` a failed call
    is raised, a spent budget never (it is no failure)."""

    why: str  # for the report's note, with the refusal or failure
    short: str  # for a rationale
    meta: Mapping[str, str]

    @classmethod
    def of(cls, exc: LLMError) -> Stop:
        if isinstance(exc, BudgetExceeded):
            return cls(f"the budget ran out ({exc})", "the budget ran out", {"partial": "budget"})
        if current_settings().no_fallback:
            raise exc
        return cls(f"a model call failed ({exc})", "a model call failed", {"partial": "failed"})


# what frames a node's run: a step of these and tool results only decided nothing
_FRAMING = frozenset({EventType.AGENT_START, EventType.AGENT_END, EventType.ERROR})


def _only_ran_tools(events: Sequence[AgentEvent], step_of: Mapping[str, int]) -> bool:
    """Whether a step only ran tools another step's decision asked for: a graph's
    tool node (LangGraph's ``ToolNode``: its start, the tools' results for calls an
    earlier step made, its end or error; a model call a tool made inside it too),
    which decides nothing of its own; its step is that decision's output. A step
    whose results answer no earlier call (a hand-written ReAct step's own "Action:")
    is an agent's decision."""
    ran = False
    for e in events:
        if e.type is EventType.TOOL_RESULT:
            asked = step_of.get(e.parent_id or "")
            if asked is None or asked >= e.step_index:
                return False  # (no earlier call it answers: not another step's tools)
            ran = True
        elif e.type in _MODEL_TYPES:
            out = e.output
            if isinstance(out, dict) and out.get("tool_calls"):
                return False  # (a model deciding on tools: an agent's step)
        elif e.type not in _FRAMING or e.metadata.get("sub_run"):
            return False
    return ran
