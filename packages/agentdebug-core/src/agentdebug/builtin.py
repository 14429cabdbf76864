"""The built-in plugin: registered through the same hooks as third-party ones."""

from __future__ import annotations

from collections.abc import Sequence

from agentdebug.plugins import hookimpl
from agentdebug.stages import Attributor, Detector, Importer
from agentdebug.taxonomy.model import FailureMode


@hookimpl
def agentdebug_failure_modes() -> Sequence[FailureMode]:
    from agentdebug.taxonomy.seed import SEED_MODES

    return SEED_MODES


@hookimpl
def agentdebug_detectors() -> Sequence[Detector]:
    from agentdebug.detect.rules import RulePack

    return [RulePack()]


@hookimpl
def agentdebug_attributors() -> Sequence[Attributor]:
    from agentdebug.attribute.heuristic import HeuristicAttributor

    return [HeuristicAttributor()]


@hookimpl
def agentdebug_importers() -> Sequence[Importer]:
    from agentdebug.io import builtin_importers

    return builtin_importers()
