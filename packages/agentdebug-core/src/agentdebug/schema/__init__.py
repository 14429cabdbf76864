"""Typed objects that flow between the stages of the loop."""

from agentdebug.schema.diagnosis import (
    AuditEntry,
    Cost,
    DiagnosticReport,
    Evidence,
    Finding,
    Fix,
    Hypothesis,
    Severity,
)
from agentdebug.schema.labels import GoldLabel
from agentdebug.schema.trace import (
    SCHEMA_VERSION,
    AgentEvent,
    AgentInfo,
    AgentTrajectory,
    Artifact,
    CheckpointRef,
    ErrorInfo,
    EventType,
    Outcome,
    OutcomeStatus,
)

__all__ = [
    "SCHEMA_VERSION",
    "AgentEvent",
    "AgentInfo",
    "AgentTrajectory",
    "Artifact",
    "AuditEntry",
    "CheckpointRef",
    "Cost",
    "DiagnosticReport",
    "ErrorInfo",
    "EventType",
    "Evidence",
    "Finding",
    "Fix",
    "GoldLabel",
    "Hypothesis",
    "Outcome",
    "OutcomeStatus",
    "Severity",
]
