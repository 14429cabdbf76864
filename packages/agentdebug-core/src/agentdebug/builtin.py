"""The built-in plugin: registered through the same hooks as third-party ones."""

from __future__ import annotations

from collections.abc import Sequence

from agentdebug.plugins import hookimpl
from agentdebug.stages import Attributor, Detector, Importer, Recoverer
from agentdebug.taxonomy.model import FailureMode


@hookimpl
def agentdebug_failure_modes() -> Sequence[FailureMode]:
    from agentdebug.taxonomy.seed import SEED_MODES

    return SEED_MODES


@hookimpl
def agentdebug_detectors() -> Sequence[Detector]:
    from agentdebug.detect.judge import LLMJudge
    from agentdebug.detect.pack import RulePack

    return [RulePack(), LLMJudge()]


@hookimpl
def agentdebug_attributors() -> Sequence[Attributor]:
    from agentdebug.attribute.all_at_once import AllAtOnceAttributor
    from agentdebug.attribute.binary_search import BinarySearchAttributor
    from agentdebug.attribute.deepdebug import DeepDebugAttributor
    from agentdebug.attribute.heuristic import HeuristicAttributor
    from agentdebug.attribute.lifecycle import LifecycleAttributor
    from agentdebug.attribute.router import RouterAttributor
    from agentdebug.attribute.step_by_step import StepByStepAttributor

    return [
        HeuristicAttributor(),
        AllAtOnceAttributor(),
        StepByStepAttributor(),
        BinarySearchAttributor(),
        LifecycleAttributor(),
        DeepDebugAttributor(),
        RouterAttributor(),
    ]


@hookimpl
def agentdebug_importers() -> Sequence[Importer]:
    from agentdebug.io import builtin_importers

    return builtin_importers()


@hookimpl
def agentdebug_recoverers() -> Sequence[Recoverer]:
    from agentdebug.recover import (
        AutoManualRecoverer,
        CriticRecoverer,
        NativeRecoverer,
        ReflexionRecoverer,
    )

    return [NativeRecoverer(), ReflexionRecoverer(), CriticRecoverer(), AutoManualRecoverer()]
