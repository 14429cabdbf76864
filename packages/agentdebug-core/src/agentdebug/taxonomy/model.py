"""The shape of a failure mode; the seed and the registry build on it."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Category(StrEnum):
    """Where in an agent's work a failure mode lives."""

    PLANNING = "planning"
    MEMORY = "memory"
    ACTION = "action"
    OBSERVATION = "observation"
    REFLECTION = "reflection"
    VERIFICATION = "verification"
    COORDINATION = "coordination"
    SYSTEM = "system"


class Crosswalk(BaseModel):
    """The nearest modes of other published taxonomies, by their own names."""

    model_config = ConfigDict(frozen=True)

    mast: list[str] = Field(default_factory=list)
    trail: list[str] = Field(default_factory=list)
    agentrx: list[str] = Field(default_factory=list)


class FailureMode(BaseModel):
    """One way an agent run goes wrong, defined so that two people label it alike."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(pattern=r"^[a-z]+\.[a-z0-9_]+$")
    name: str
    category: Category
    definition: str
    evidence: str
    remedy: str
    crosswalk: Crosswalk = Field(default_factory=Crosswalk)
    source: str = "agentdebug"
