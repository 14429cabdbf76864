"""What the diagnosis stages produce: findings, hypotheses, fixes and the report.

These objects point at a trajectory's events by id and step; they are stored beside
the trajectory, never inside it.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentdebug.schema.trace import utcnow


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"


class Evidence(BaseModel):
    """A piece of the trace that supports a claim.

    ``quote`` is text the claim says appears in event ``event_id``. ``grounded`` is
    None until the grounding check has looked; then True when the quote was found.
    """

    model_config = ConfigDict(frozen=True)

    event_id: str | None = None
    step_index: int | None = None
    field: str | None = None
    quote: str | None = None
    note: str | None = None
    grounded: bool | None = None
    match: str | None = None
    after_blamed_step: bool = False


class Finding(BaseModel):
    """A detector's claim that something went wrong at one event."""

    model_config = ConfigDict(frozen=True)

    detector: str
    mode_id: str
    message: str
    event_id: str | None = None
    step_index: int | None = None
    agent_name: str | None = None
    severity: Severity = Severity.ERROR
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    evidence: list[Evidence] = Field(default_factory=list)
    rule_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Hypothesis(BaseModel):
    """A ranked answer to "which agent and step caused this failure?"."""

    model_config = ConfigDict(frozen=True)

    agent_name: str | None
    step_index: int | None
    strategy: str
    confidence: float = Field(ge=0.0, le=1.0)
    rationale: str = ""
    event_id: str | None = None
    mode_id: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Fix(BaseModel):
    """One concrete change that, applied at the responsible step, should repair the run."""

    model_config = ConfigDict(frozen=True)

    directive: str
    target_agent: str | None = None
    target_step: int | None = None
    rationale: str | None = None


class AuditEntry(BaseModel):
    """One unit of diagnostic work: a rule pass, a model call, an inspection."""

    model_config = ConfigDict(frozen=True)

    stage: str
    strategy: str
    outcome: str = "ok"
    model: str | None = None
    prompt_hash: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    cached: bool = False
    detail: str | None = None
    timestamp: datetime = Field(default_factory=utcnow)


class Cost(BaseModel):
    """What a diagnosis spent; counts are the server's, never estimates."""

    model_config = ConfigDict(frozen=True)

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    cached_calls: int = 0
    cached_input_tokens: int = 0
    cached_output_tokens: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            **{name: getattr(self, name) + getattr(other, name) for name in Cost.model_fields}
        )

    @classmethod
    def of(cls, audit: list[AuditEntry]) -> Cost:
        """Every request sent to a server is a call (failed attempts and malformed
        answers included), with the tokens the server reported; answers replayed from
        the cache are counted apart, with the usage recorded when they were made."""
        # (refused by the budget, or not sent after a 401 or a server not reached)
        llm = [a for a in audit if a.stage == "llm" and a.outcome not in ("budget", "unsent")]
        live = [a for a in llm if not a.cached]
        cached = [a for a in llm if a.cached]
        return cls(
            calls=len(live),
            input_tokens=sum(a.input_tokens for a in live),
            output_tokens=sum(a.output_tokens for a in live),
            latency_ms=sum(a.latency_ms for a in live),
            cached_calls=len(cached),
            cached_input_tokens=sum(a.input_tokens for a in cached),
            cached_output_tokens=sum(a.output_tokens for a in cached),
        )


class Verification(BaseModel):
    """What a rerun said about a report's root cause.

    ``verified_by_rerun``: a branch that corrected only the blamed step succeeded,
    so the blamed step was decisive. ``not_confirmed``: the branch still failed (or
    could not run), so the claim stands untested or wrong; or it passed with the
    blamed step deciding as before (``branch_passed``: a later step made the
    difference)."""

    model_config = ConfigDict(frozen=True)

    status: Literal["verified_by_rerun", "not_confirmed"]
    branch_id: str | None = None
    resume_step: int | None = None
    directive: str | None = None
    score: float | None = None
    detail: str = ""
    branch_passed: bool | None = None  # (None: recorded before it was kept)
    checked_at: datetime = Field(default_factory=utcnow)
    # not confirmed, but a later round's branch passed: {round, branch_id, run_id,
    # agent, step} (the blame it corrected, in the run it forked)
    later: dict[str, Any] | None = None


class DiagnosticReport(BaseModel):
    """The answer to one diagnosis: what failed, who caused it, what to change."""

    model_config = ConfigDict(frozen=True)

    id: str
    trajectory_id: str
    created_at: datetime = Field(default_factory=utcnow)
    tier: str = "free"
    detectors: list[str] = Field(default_factory=list)
    attributor: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    hypotheses: list[Hypothesis] = Field(default_factory=list)
    symptom: Finding | None = None
    summary: str = ""
    fix: Fix | None = None
    audit: list[AuditEntry] = Field(default_factory=list)
    cost: Cost = Field(default_factory=Cost)
    notes: list[str] = Field(default_factory=list)
    verified_by_rerun: bool | None = None
    verification: Verification | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def root_cause(self) -> Hypothesis | None:
        return self.hypotheses[0] if self.hypotheses else None

    @property
    def failure_modes(self) -> list[str]:
        return sorted({f.mode_id for f in self.findings})
