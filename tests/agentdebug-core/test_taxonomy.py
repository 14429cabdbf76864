"""The seed taxonomy is complete, consistent, and crosswalks every published mode."""

from __future__ import annotations

import pytest
from agentdebug.taxonomy import (
    AGENTRX_CATEGORIES,
    MAST_MODES,
    SEED_MODES,
    TAXONOMIES,
    TRAIL_CATEGORIES,
    Category,
    modes_for,
    normalize_trail_category,
)


def test_seed_has_at_least_19_modes_across_every_category() -> None:
    assert len(SEED_MODES) >= 19
    assert {m.category for m in SEED_MODES} == set(Category)
    ids = [m.id for m in SEED_MODES]
    assert len(ids) == len(set(ids))
    for mode in SEED_MODES:
        assert mode.id.split(".")[0] == mode.category.value
        assert mode.definition and mode.evidence and mode.remedy and mode.name


@pytest.mark.parametrize("taxonomy", sorted(TAXONOMIES))
def test_every_published_mode_maps_to_at_least_one_of_ours(taxonomy: str) -> None:
    unmapped = [name for name in TAXONOMIES[taxonomy] if not modes_for(taxonomy, name, SEED_MODES)]
    assert unmapped == []


def test_crosswalk_names_are_the_published_ones() -> None:
    assert len(MAST_MODES) == 14 and len(TRAIL_CATEGORIES) == 20
    for mode in SEED_MODES:
        assert set(mode.crosswalk.mast) <= set(MAST_MODES), mode.id
        assert set(mode.crosswalk.trail) <= set(TRAIL_CATEGORIES), mode.id
        assert set(mode.crosswalk.agentrx) <= set(AGENTRX_CATEGORIES), mode.id


def test_trail_spelling_variants_are_normalised() -> None:
    assert normalize_trail_category(" Context Handling Failure") == "Context Handling Failures"
    assert normalize_trail_category("Goal deviation") == "Goal Deviation"
    assert normalize_trail_category("Tool Selection") == "Tool Selection Errors"
    assert modes_for("trail", "goal deviation", SEED_MODES)
    with pytest.raises(ValueError, match="unknown taxonomy"):
        modes_for("nope", "x", SEED_MODES)


def test_a_sub_agents_failed_task_has_a_mode_of_its_own() -> None:
    """A declared sub-run failure was reported as a tool or runtime error."""
    from agentdebug.plugins import get_registry

    mode = get_registry().failure_modes["coordination.delegated_task_failed"]
    assert mode.name == "Delegated task failed"
    assert "sub-agent" in mode.definition and "sub-run" in mode.evidence
