"""Gold labels from benchmarks, kept apart from the trajectory they describe.

A label never travels inside an ``AgentTrajectory``: importers hand it back
separately, the store keeps it in its own table, and only benchmarks read it, so no
diagnosis strategy can see the answer it is scored against.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class GoldLabel(BaseModel):
    """The responsible agent and step (or span) of a failed run, per a benchmark."""

    model_config = ConfigDict(frozen=True)

    source: str
    agent_name: str | None = None
    step_index: int | None = None
    reason: str | None = None
    errors: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
