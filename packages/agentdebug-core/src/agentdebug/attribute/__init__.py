"""Attribution: naming the agent and step responsible for a failure."""

from agentdebug.attribute.heuristic import HeuristicAttributor, causing_event

__all__ = ["HeuristicAttributor", "causing_event"]
