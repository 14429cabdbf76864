"""The failure taxonomy: seed modes, their crosswalk to published taxonomies."""

from agentdebug.taxonomy.crosswalk import (
    AGENTRX_CATEGORIES,
    MAST_MODES,
    TAXONOMIES,
    TRAIL_CATEGORIES,
    modes_for,
    normalize_trail_category,
)
from agentdebug.taxonomy.model import Category, Crosswalk, FailureMode
from agentdebug.taxonomy.seed import SEED_MODES

__all__ = [
    "AGENTRX_CATEGORIES",
    "MAST_MODES",
    "SEED_MODES",
    "TAXONOMIES",
    "TRAIL_CATEGORIES",
    "Category",
    "Crosswalk",
    "FailureMode",
    "modes_for",
    "normalize_trail_category",
]
