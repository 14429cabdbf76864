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
    Verification,
)
from agentdebug.schema.labels import GoldLabel
from agentdebug.schema.rerun import (
    Attempt,
    GateDecision,
    LoopResult,
    RecoveryPlan,
    RerunRequest,
    Score,
)
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
    "Attempt",
    "AuditEntry",
    "CheckpointRef",
    "Cost",
    "DiagnosticReport",
    "ErrorInfo",
    "EventType",
    "Evidence",
    "Finding",
    "Fix",
    "GateDecision",
    "GoldLabel",
    "Hypothesis",
    "LoopResult",
    "Outcome",
    "OutcomeStatus",
    "RecoveryPlan",
    "RerunRequest",
    "Score",
    "Severity",
    "Verification",
]
