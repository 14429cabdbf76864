"""The entry point core loads (group ``agentdebug``): registers the LangGraph rerun
executor. It must not import LangGraph (core loads every plugin when it builds its
registry, and LangGraph takes seconds to import), so the registered object is a
light stand-in that builds the real executor on first use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentdebug.plugins import hookimpl
from agentdebug.schema import AgentTrajectory, RerunRequest


class RegisteredExecutor:
    """``LangGraphRerunExecutor()`` for stored runs, created when first needed: it
    finds the graph that made the run in this process, or rebuilds it from the
    run's recorded ``graph_factory``, and refuses with a clear error otherwise."""

    framework = "langgraph"

    def __init__(self) -> None:
        self._executor: Any = None

    def rerun(self, request: RerunRequest) -> AgentTrajectory:
        if self._executor is None:
            from agentdebug_langgraph._executor import LangGraphRerunExecutor

            self._executor = LangGraphRerunExecutor()
        result: AgentTrajectory = self._executor.rerun(request)
        return result


@hookimpl
def agentdebug_rerun_executors() -> Sequence[Any]:
    return [RegisteredExecutor()]
