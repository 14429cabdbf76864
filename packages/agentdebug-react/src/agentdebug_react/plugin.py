"""The agentdebug plugin (entry point ``react`` in group ``agentdebug``): the rerun
executor for framework ``react`` and the ReAct transcript importer.

The registered executor has no loop of its own: it rebuilds one from the
``module:factory`` spec a run recorded (``ReactLoop(..., factory=...)``), and
refuses with a clear error for runs that recorded none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentdebug.plugins import hookimpl
from agentdebug.stages import Importer


@hookimpl
def agentdebug_rerun_executors() -> Sequence[Any]:
    from agentdebug_react._rerun import ReactExecutor

    return [ReactExecutor()]


@hookimpl
def agentdebug_importers() -> Sequence[Importer]:
    from agentdebug_react._importer import TranscriptImporter

    return [TranscriptImporter()]
