"""What a rerun can do at a step of a node that runs the model's tool calls.

Such a node (LangGraph's ``ToolNode``, or a node of the app's that runs the calls of
the last model message) reads no directive: a message added after the model's call
would leave the call unanswered. So a rerun from it is a retry, the node run again
as it was, which can only help where the step failed (an outage, also one a
sub-agent behind a tool met). Where the blamed step ran without failing (what a tool
returned, a model call a tool made, a sub-agent graph a tool invokes), a retry would
redo it unchanged and the right blame would read as refuted: the rerun is refused
before the gate, naming the model call that asked for the tool.
"""

from __future__ import annotations

from typing import Any

from agentdebug import EventType
from agentdebug.detect.signals import failure_of
from agentdebug.errors import AgentDebugError
from agentdebug.schema import AgentTrajectory

from agentdebug_langgraph._checkpoints import ResumePoint


def runs_tools(graph: Any, point: Any) -> bool:
    """Whether every blamed node is a tool node (LangGraph's ``ToolNode``): it runs
    the tool calls of the last model message, and reads nothing a directive says."""
    from langgraph.prebuilt import ToolNode

    try:
        nodes = [graph.nodes[name] for name in point.nodes]
    except (KeyError, TypeError, AttributeError):
        return False
    return bool(nodes) and all(isinstance(getattr(n, "bound", None), ToolNode) for n in nodes)


def runs_calls(graph: Any, original: AgentTrajectory, point: ResumePoint) -> bool:
    """Whether the blamed node runs the model's tool calls: a ``ToolNode``, or a node
    of the app's that the run shows running them (the calls it ran name it)."""
    return runs_tools(graph, point) or bool(_calls_ran(original, point))


def _calls_ran(original: AgentTrajectory, point: ResumePoint) -> list[Any]:
    """The model's tool calls the blamed node ran (as the run recorded them)."""
    steps = (point.step, point.requested_step)
    return [
        e
        for e in original.events
        if e.type is EventType.TOOL_CALL
        and e.metadata.get("executed_by") in point.nodes
        and e.metadata.get("executed_step") in steps
    ]


def retried(graph: Any, original: AgentTrajectory, point: ResumePoint) -> bool:
    """Whether the fork is a retry of a node that runs the model's tool calls, blamed
    itself (a step of its own, not one before the run moved to it); refused, before
    that, when such a retry could not change the blamed step (:func:`require_retryable`)."""
    if point.requested_step < point.step or not runs_calls(graph, original, point):
        return False
    require_retryable(original, point)
    return True


def require_retryable(original: AgentTrajectory, point: ResumePoint) -> None:
    """Refuse a retry that would redo the blamed step unchanged: the node's own step
    that ran without failing, or one inside a tool (a graph a tool invokes) unless it
    failed in a way a retry may get past (:func:`_passing`)."""
    at = [e for e in original.events if e.step_index == point.requested_step]
    starts = [e for e in at if e.type is EventType.AGENT_START]
    inside = bool(starts) and all("namespace" in e.metadata for e in starts)
    failures = [
        e
        for e in at
        if e.type in (EventType.TOOL_RESULT, EventType.ERROR, EventType.LLM_RESPONSE)
        and (e.error is not None or e.metadata.get("stopped"))
    ]
    if failures and (not inside or any(_passing(e) for e in failures)):
        return  # (an outage, also one a sub-agent behind a tool met: a retry is its fix)
    node = ", ".join(point.nodes)
    asked = sorted({e.step_index for e in _calls_ran(original, point)})
    where = f" (step {asked[0]})" if asked else ""
    if inside:
        what = (
            f"{starts[0].agent_name} at step {point.requested_step} runs inside a tool of "
            f"node '{node}' (a graph the tool invokes)"
        )
        other = "add the sub-agent to the graph as a node or subgraph, whose steps a fork reaches"
    else:
        said = next((e for e in at if e.type is EventType.LLM_RESPONSE), None)
        what = (
            f"node '{node}' at step {point.requested_step} ran the tool calls the model "
            "asked for without failing"
            + (" (the model call a tool made there is blamed)" if said is not None else "")
        )
        other = "fix the tool, if what it returned is wrong"
    raise AgentDebugError(
        f"cannot carry the directive there: {what}. A fork reruns '{node}' with the tool "
        "calls the model asked for, which no directive changes, so the branch would redo "
        "the step unchanged. Rerun from the model call that asked for the tool"
        f"{where}, so that it asks otherwise, or {other}"
    )


# failures a retry may get past: the service, not the call, was at fault
_PASSING = frozenset({"system.service_unavailable", "system.timeout", "system.rate_limited"})


def _passing(event: Any) -> bool:
    """Whether a failure is one a retry may get past (an outage, a timeout, a rate
    limit), not one it would meet again (a sub-agent's bad argument)."""
    if event.metadata.get("stopped"):
        return True
    found = failure_of(event)
    return found is not None and found[0] in _PASSING
