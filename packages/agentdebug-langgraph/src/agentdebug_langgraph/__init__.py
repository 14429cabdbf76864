"""agentdebug for LangGraph: one-line capture, automatic diagnosis, checkpoint rerun.

    from agentdebug_langgraph import AgentDebugCallback
    graph.invoke(inputs, config={"callbacks": [AgentDebugCallback()]})

or, once for the whole process, ``agentdebug_langgraph.instrument()``. A run that
raises or fails ``success_check`` is diagnosed on the spot. ``LangGraphRerunExecutor``
reruns a run from the checkpoint before the blamed node, with the fix injected.

Names are imported on first use, so that core's plugin loading (which imports this
package to reach ``agentdebug_langgraph._plugin``) does not pay for importing
LangGraph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from agentdebug_langgraph._callback import AgentDebugCallback
    from agentdebug_langgraph._checkpoints import branch_threads, prune_branch_threads
    from agentdebug_langgraph._executor import LangGraphRerunExecutor
    from agentdebug_langgraph._instrument import instrument, instrumented, uninstrument

_LAZY = {
    "AgentDebugCallback": "agentdebug_langgraph._callback",
    "LangGraphRerunExecutor": "agentdebug_langgraph._executor",
    "branch_threads": "agentdebug_langgraph._checkpoints",
    "prune_branch_threads": "agentdebug_langgraph._checkpoints",
    "instrument": "agentdebug_langgraph._instrument",
    "instrumented": "agentdebug_langgraph._instrument",
    "uninstrument": "agentdebug_langgraph._instrument",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentdebug_langgraph' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "AgentDebugCallback",
    "LangGraphRerunExecutor",
    "__version__",
    "branch_threads",
    "instrument",
    "instrumented",
    "prune_branch_threads",
    "uninstrument",
]
