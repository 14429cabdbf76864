"""A model answer cut at its output-token limit.

A model that runs out of output tokens stops mid-sentence (or mid-JSON), and its
API says so: ``finish_reason: "length"`` (OpenAI and compatible servers, GenAI
semantic conventions), ``stop_reason: "max_tokens"`` (Anthropic),
``MAX_TOKENS`` (Gemini). The text reads like an answer; the agent, and whoever
reads the run, may take it for a whole one. Integrations record the reason on
the model call's event (``metadata["finish_reason"]``, or beside the text in its
output); this rule finds it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from agentdebug.detect.rule_finding import rule_finding
from agentdebug.schema import AgentEvent, EventType, Evidence, Finding, OutcomeStatus, Severity
from agentdebug.text import flatten

if TYPE_CHECKING:
    from agentdebug.detect.rules import RuleContext

#: What a model's API says when it stopped at its output-token limit.
CUT_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS", "max_output_tokens"})
_KEYS = ("finish_reason", "stop_reason")
_MODEL_EVENTS = (EventType.LLM_RESPONSE, EventType.LLM_CALL)
TAIL = 80  # characters of the cut text quoted: where it stopped


def cut_reason(event: AgentEvent) -> str | None:
    """Why the model of this call stopped, when it was its token limit."""
    for source in (event.metadata, event.output):
        if isinstance(source, Mapping):
            for key in _KEYS:
                value = source.get(key)
                if isinstance(value, str) and value in CUT_REASONS:
                    return value
    return None


def rule_cut_answer(ctx: RuleContext) -> Iterator[Finding]:
    """Model answers cut at the output-token limit; resolved (information, at a
    third of the confidence) when a later call of the same agent's model ended as
    answers do."""
    events = ctx.trajectory.events
    for i, event in enumerate(events):
        if event.type not in _MODEL_EVENTS:
            continue
        reason = cut_reason(event)
        if reason is None:
            continue
        text = _text_of(event.output)
        tail = text[-TAIL:].strip() if text else ""
        who = event.agent_name or "the agent"
        message = (
            f"{who}'s model stopped at its output-token limit ({reason}): its answer is "
            "cut off" + (f', ending "…{tail}"' if tail else "")
        )
        confidence, severity = 0.8, Severity.ERROR
        whole = next(
            (
                later
                for later in events[i + 1 :]
                if later.type in _MODEL_EVENTS
                and later.agent_name == event.agent_name
                and cut_reason(later) is None
            ),
            None,
        )
        if whole is not None:  # (the agent asked again, and got a whole answer)
            message += f" (resolved: its model's answer at step {whole.step_index} was whole)"
            confidence, severity = round(confidence * 0.3, 3), Severity.INFO
        elif ctx.trajectory.outcome.status is OutcomeStatus.SUCCESS:
            message += " (the run succeeded all the same)"
            confidence, severity = round(confidence * 0.3, 3), Severity.INFO
        yield rule_finding(
            "cut_answer",
            "system.resource_exhaustion",
            event,
            message,
            confidence=confidence,
            severity=severity,
            evidence=[
                Evidence(event_id=event.id, step_index=event.step_index, field="output", quote=tail)
            ]
            if tail
            else [],
            metadata={"finish_reason": reason},
        )


def _text_of(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping):
        content = output.get("content")
        return content if isinstance(content, str) else flatten(content) if content else ""
    return flatten(output) if output is not None else ""
