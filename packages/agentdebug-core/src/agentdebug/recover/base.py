"""What every recoverer shares: where to resume, how to describe the diagnosis to a
model, and how a model-backed recoverer asks its question and keeps the cost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from agentdebug.audit import audit_scope
from agentdebug.detect.signals import tool_name
from agentdebug.errors import AgentDebugError
from agentdebug.llm import NoModelConfigured, current_settings
from agentdebug.schema import (
    AgentTrajectory,
    AuditEntry,
    Cost,
    DiagnosticReport,
    EventType,
    RecoveryPlan,
)

T = TypeVar("T", bound=BaseModel)


class RecoveryError(AgentDebugError):
    """A recoverer could not produce a plan (no root cause, no model, a failed call)."""


def resume_point(report: DiagnosticReport) -> tuple[int, str | None, str | None]:
    """The step to rerun from (the blamed step: the loop tests exactly that claim),
    its event and its agent. Raises RecoveryError when the report blames no step."""
    root = report.root_cause
    if report.fix is not None and report.fix.target_step is not None:
        return report.fix.target_step, root.event_id if root else None, report.fix.target_agent
    if root is None or root.step_index is None:
        raise RecoveryError(
            f"report {report.id} names no root-cause step, so there is no step to rerun from"
        )
    return root.step_index, root.event_id, root.agent_name


def diagnosis_block(report: DiagnosticReport) -> str:
    """The report as a model reads it: symptom, root cause, rationale, suggested fix."""
    lines = [report.summary]
    root = report.root_cause
    if root is not None:
        lines.append(
            f"Blamed: {root.agent_name or 'unnamed agent'} at step {root.step_index}"
            + (f" ({root.mode_id})" if root.mode_id else "")
        )
        if root.rationale:
            lines.append(f"Why: {root.rationale}")
    if report.fix is not None:
        lines.append(f"Suggested fix: {report.fix.directive}")
    return "\n".join(lines)


def tool_names(trajectory: AgentTrajectory) -> list[str]:
    """Every tool the run's agents have or called, in first-seen order."""
    seen: dict[str, None] = {}
    for agent in trajectory.agents:
        for tool in agent.tools:
            seen.setdefault(tool, None)
    for event in trajectory.events:
        if event.type is EventType.TOOL_CALL:
            name = tool_name(event)
            if name:
                seen.setdefault(name, None)
    return list(seen)


def require_model(name: str, *, instead: str = "--recover native") -> None:
    """Refuse, saying what to do, when no model is configured for ``name``."""
    if not current_settings().configured:
        raise NoModelConfigured(
            f"{name} needs a model and none is configured "
            f"(set AGENTDEBUG_MODEL / AGENTDEBUG_BASE_URL, or use {instead})"
        )


def ask(
    name: str,
    template: str,
    trajectory: AgentTrajectory,
    report: DiagnosticReport,
    schema: type[T],
    *,
    step: int,
    purpose: str,
    tools: str = "",
    manual: str = "",
) -> tuple[T, list[AuditEntry]]:
    """One structured model call about the blamed step, with its audit entries."""
    from agentdebug.attribute.model_common import chat, client, fit_view

    require_model(f"recoverer '{name}'")
    user = fit_view(
        trajectory,
        template,
        focus=[step],
        diagnosis=diagnosis_block(report),
        step=str(step),
        tools=tools,
        manual=manual,
    )
    with audit_scope() as log:
        answer = client().structured(
            messages=chat(user), schema=schema, strategy=name, purpose=purpose
        )
    return answer.value, list(log.entries)


def plan(
    name: str,
    trajectory: AgentTrajectory,
    report: DiagnosticReport,
    directive: str,
    *,
    rationale: str = "",
    audit: Sequence[AuditEntry] = (),
    rules: Sequence[str] = (),
    new_rules: Sequence[str] = (),
    notes: Sequence[str] = (),
    state_patch: dict[str, Any] | None = None,
) -> RecoveryPlan:
    step, event_id, agent = resume_point(report)
    directive = directive.strip()
    if not directive:
        raise RecoveryError(f"recoverer '{name}' produced an empty directive")
    return RecoveryPlan(
        strategy=name,
        directive=directive,
        resume_step=step,
        resume_event_id=event_id,
        target_agent=agent,
        mode_id=report.root_cause.mode_id if report.root_cause else None,
        rationale=rationale,
        state_patch=state_patch,
        rules=list(rules),
        new_rules=list(new_rules),
        report_id=report.id,
        trajectory_id=trajectory.id,
        audit=list(audit),
        cost=Cost.of(list(audit)),
        notes=list(notes),
    )
