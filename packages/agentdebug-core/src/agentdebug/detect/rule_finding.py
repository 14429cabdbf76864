"""A finding of one of the built-in rules, at the event that shows it."""

from __future__ import annotations

from typing import Any

from agentdebug.schema import AgentEvent, Evidence, Finding, Severity


def rule_finding(
    rule: str,
    mode_id: str,
    event: AgentEvent,
    message: str,
    *,
    confidence: float,
    evidence: list[Evidence] | None = None,
    severity: Severity = Severity.ERROR,
    metadata: dict[str, Any] | None = None,
) -> Finding:
    return Finding(
        detector="rules",
        rule_id=rule,
        mode_id=mode_id,
        message=message,
        event_id=event.id,
        step_index=event.step_index,
        agent_name=event.agent_name,
        confidence=confidence,
        severity=severity,
        evidence=evidence or [],
        metadata=metadata or {},
    )


def quoted(event: AgentEvent, field: str, quote: str | None) -> Evidence:
    """Evidence quoting ``field`` of ``event``."""
    return Evidence(event_id=event.id, step_index=event.step_index, field=field, quote=quote)
