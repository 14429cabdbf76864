"""The published taxonomies agentdebug maps to, and the mapping back from them.

The names below are those the papers use, so that a user can compare a report with
work labelled in MAST, TRAIL or AgentRx terms.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agentdebug.taxonomy.model import FailureMode

# MAST (Cemri et al., 2025): 14 modes in three groups.
MAST_MODES: tuple[str, ...] = (
    "1.1 Disobey task specification",
    "1.2 Disobey role specification",
    "1.3 Step repetition",
    "1.4 Loss of conversation history",
    "1.5 Unaware of termination conditions",
    "2.1 Conversation reset",
    "2.2 Fail to ask for clarification",
    "2.3 Task derailment",
    "2.4 Information withholding",
    "2.5 Ignored other agent's input",
    "2.6 Reasoning-action mismatch",
    "3.1 Premature termination",
    "3.2 No or incomplete verification",
    "3.3 Incorrect verification",
)

# TRAIL (Deshpande et al., 2025): leaf categories of its error taxonomy.
TRAIL_CATEGORIES: tuple[str, ...] = (
    "Language-only",
    "Tool-related",
    "Poor Information Retrieval",
    "Tool Output Misinterpretation",
    "Incorrect Problem Identification",
    "Tool Selection Errors",
    "Formatting Errors",
    "Instruction Non-compliance",
    "Tool Definition Issues",
    "Environment Setup Errors",
    "Rate Limiting",
    "Authentication Errors",
    "Service Errors",
    "Resource Not Found",
    "Resource Exhaustion",
    "Timeout Issues",
    "Context Handling Failures",
    "Resource Abuse",
    "Goal Deviation",
    "Task Orchestration",
)

# AgentRx: root-cause categories for failed agent trajectories.
AGENTRX_CATEGORIES: tuple[str, ...] = (
    "Plan Adherence Failure",
    "Invention of New Information",
    "Invalid Invocation",
    "Misinterpretation of Tool Output",
    "Intent-Plan Misalignment",
    "Under-specified User Intent",
    "Intent Not Supported",
    "Guardrails Triggered",
    "System Failure",
)

TAXONOMIES: dict[str, tuple[str, ...]] = {
    "mast": MAST_MODES,
    "trail": TRAIL_CATEGORIES,
    "agentrx": AGENTRX_CATEGORIES,
}


def _category_key(text: str) -> str:
    key = re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()
    for suffix in (" errors", " error", " issues", " issue", " failures", " failure"):
        if key.endswith(suffix):
            key = key[: -len(suffix)]
            break
    return key.rstrip("s")


_TRAIL_INDEX = {_category_key(c): c for c in TRAIL_CATEGORIES}


def normalize_trail_category(raw: object) -> str:
    """TRAIL's canonical spelling for an annotated category.

    The annotations spell some categories several ways (" Context Handling Failure",
    "Goal deviation", "Tool Selection"); case, spacing, punctuation, singular or
    plural and a missing "Errors" do not matter. A category outside TRAIL's
    taxonomy comes back trimmed, not invented.
    """
    text = " ".join(str(raw or "").split())
    return _TRAIL_INDEX.get(_category_key(text), text)


def modes_for(taxonomy: str, name: str, modes: Iterable[FailureMode]) -> list[str]:
    """Our mode ids that map to ``name`` of the given published taxonomy."""
    if taxonomy not in TAXONOMIES:
        raise ValueError(f"unknown taxonomy '{taxonomy}' (known: {', '.join(TAXONOMIES)})")
    wanted = normalize_trail_category(name) if taxonomy == "trail" else name
    return [m.id for m in modes if wanted in getattr(m.crosswalk, taxonomy)]
