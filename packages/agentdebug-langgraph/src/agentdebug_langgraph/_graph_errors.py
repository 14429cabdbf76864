"""Errors a graph raises outside any node, placed at the node they concern.

Most failures of a graph run are a node's: its ``on_chain_error`` names it. A few
are raised by LangGraph's loop between nodes, where no node is running, and reach
the callback only as the graph's own error. Recorded as they come, diagnosis would
read a ``ValidationError`` as a malformed tool call and blame no one for a timeout.
So the end of a failed run looks at what its last super-step recorded (read back
from the store: this is the failure path, and the diagnosis that follows reads
the run anyway) and places each kind it knows:

- ``GraphRecursionError``: the run hit its recursion limit; at the node whose
  decision kept it going (the latest that called a model, else the last one);
- a ``TimeoutError`` in a graph with ``step_timeout``: at the slowest node of the
  last super-step (LangGraph lets a timed-out node finish; it drops its writes);
- ``NodeTimeoutError`` (a node's ``TimeoutPolicy``) whose cancel the node did not
  report: at the node's latest start;
- ``InvalidUpdateError`` "At key 'k': Can receive only one value per step": at the
  nodes of the super-step that wrote ``k`` (the last of them);
- ``EmptyInputError`` before any node ran (invoked with no input on a thread with
  nothing to go on from): at the run's input, step 0;
- a pydantic ``ValidationError`` raised reading the state for the next task
  ("Before task with name ..."): at the node of the last super-step whose update
  wrote a field it names, or at the run's input when no node has run.

The error event then names the node (agent, step, parent) and carries the failure
mode (``metadata["failure_mode"]``, which core's detectors take over the error's
text) and what was found (``langgraph_error``, ``nodes``, ``key`` or ``fields``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentdebug.detect.signals import ENDED_ITSELF, FAILURE_MODE
from agentdebug.schema import AgentEvent, EventType

# what the prebuilt agent (create_react_agent) answers when RemainingSteps runs low:
# LangGraph's recursion limit, met by the agent before the graph raises it
OUT_OF_STEPS_TEXT = "Sorry, need more steps to process this request."
OUT_OF_STEPS = "out_of_steps"  # the langgraph_event of its error event
# what LangChain's create_agent answers when its call-limit middleware ends the run
# (exit_behavior="end"): ModelCallLimitMiddleware's, ToolCallLimitMiddleware's
_MODEL_LIMIT = "Model call limits exceeded: "
_TOOL_LIMIT = re.compile(r"(?:'[^']*' tool|Tool) call limit reached: .*\(\d+/\d+ calls\)\.$")
CALL_LIMIT = "call_limit"  # the langgraph_event of such an end's error event
# what create_agent answers when its ModelRetryMiddleware gives up (on_failure="continue")
_MODEL_FAILED = re.compile(r"Model call failed after \d+ attempts? with [\w.]+: ")
MODEL_FAILED = "model_failed"  # the langgraph_event of such an end's error event


@dataclass(frozen=True)
class OwnEnd:
    """An agent that ended the run itself at a limit, raising nothing: what its
    error event says, and the run's reason."""

    kind: str  # the error's type
    message: str
    reason: str
    event: str  # the langgraph_event of its error event
    mode: str | None = "planning.step_limit_exhausted"  # None: the error's words tell


def own_end(answer: Any) -> OwnEnd | None:
    """The limit an agent's final answer says it stopped at, if it says so: the
    prebuilt agent's steps running out under the recursion limit, ``create_agent``'s
    model or tool call limit, or its model retries spent (its middleware's own
    words)."""
    if answer.__class__ is not str:
        return None
    if answer == OUT_OF_STEPS_TEXT:
        return OwnEnd(
            "RemainingSteps",
            f"the agent ran out of steps under the recursion limit: {OUT_OF_STEPS_TEXT}",
            "the agent ran out of steps under its recursion limit (RemainingSteps)",
            OUT_OF_STEPS,
        )
    if answer.startswith(_MODEL_LIMIT):
        return OwnEnd(
            "ModelCallLimit",
            f"the agent reached its model call limit: {answer}",
            "the agent reached its model call limit (ModelCallLimitMiddleware)",
            CALL_LIMIT,
        )
    if _MODEL_FAILED.match(answer):
        return OwnEnd(
            "ModelCallFailed",
            f"the model never answered: {answer}",
            "the model call failed, its retries spent (ModelRetryMiddleware)",
            MODEL_FAILED,
            None,
        )
    if _TOOL_LIMIT.match(answer):
        return OwnEnd(
            "ToolCallLimit",
            f"the agent reached its tool call limit: {answer}",
            "the agent reached its tool call limit (ToolCallLimitMiddleware)",
            CALL_LIMIT,
        )
    return None


_ONE_VALUE = re.compile(r"At key '([^']+)': Can receive only one value per step")
_BEFORE_TASK = "Before task with name "


@dataclass
class Located:
    """Where a graph-level error belongs: the event fields for its ``error`` event."""

    agent: str | None
    step: int | None  # None: at the step after the run's last (the node is not known)
    parent_id: str | None
    metadata: dict[str, Any] = field(default_factory=dict)


def placed(
    at: Located | None, *, agent: str | None, step: int, parent: str | None, meta: dict[str, Any]
) -> dict[str, Any]:
    """The ``record`` fields of an error event: where ``at`` places it, what it does
    not say (or no ``at``) as given."""
    if at is None:
        return {"agent_name": agent, "step_index": step, "parent_id": parent, "metadata": meta}
    return {
        "agent_name": at.agent if at.agent is not None else agent,
        "step_index": at.step if at.step is not None else step,
        "parent_id": at.parent_id,
        "metadata": {**meta, **at.metadata},
    }


@dataclass
class _Node:
    start: AgentEvent
    end: AgentEvent | None

    @property
    def name(self) -> str:
        return str(self.start.metadata.get("node") or self.start.agent_name or "")

    def wrote(self, key: str) -> bool:
        output = self.end.output if self.end is not None else None
        return isinstance(output, dict) and key in output


def locate(
    events: Sequence[AgentEvent],
    error: BaseException,
    *,
    input_event: str | None,
    step_timeout: float | None,
    scope: str | None = None,
) -> Located | None:
    """Where ``error`` (raised by the graph, not by a node) belongs, or None when
    it is not a kind this knows or its node cannot be found. ``scope``: the graph
    that raised it is the subgraph run by the node whose start event has this id
    (``input_event``), not the top-level graph."""
    from langgraph.errors import GraphRecursionError, InvalidUpdateError

    own = _starts_of(events, scope)
    nodes = _last_super_step(events, own, scope)
    if isinstance(error, GraphRecursionError):
        if not nodes:
            return None
        node = _deciding(events, nodes, own)
        return _at(node, "planning.step_limit_exhausted", "recursion_limit", nodes)
    if isinstance(error, TimeoutError) and step_timeout:
        if not nodes:
            return None
        slowest = max(nodes, key=_duration)
        over = [n for n in nodes if _duration(n) >= step_timeout * 1000.0]
        located = _at(slowest, "system.timeout", "step_timeout", over or [slowest])
        located.metadata["step_timeout"] = step_timeout
        return located
    if type(error).__name__ == "NodeTimeoutError":  # (LangGraph 1.2: a node's TimeoutPolicy)
        name = getattr(error, "node", None)
        last = next(
            (e for e in reversed(events) if e.id in own and e.metadata.get("node") == name),
            None,
        )
        if last is None:
            return None
        located = _at(_Node(last, None), "system.timeout", "node_timeout", [_Node(last, None)])
        located.metadata["timeout"] = getattr(error, "timeout", None)
        return located
    if isinstance(error, InvalidUpdateError):
        match = _ONE_VALUE.search(str(error))
        writers = [n for n in nodes if match and n.wrote(match.group(1))]
        if not match or not writers:
            return None
        located = _at(writers[-1], "system.schema_violation", "concurrent_update", writers)
        located.metadata["key"] = match.group(1)
        return located
    if type(error).__name__ == "EmptyInputError" and not own and scope is None:
        # the run invoked with no input (None, or nothing the input schema reads) on a
        # thread with nothing to go on from: the invocation's fault, before any node
        # (not a graph a node invokes so, whose error is that node's)
        return Located(
            None,
            0,
            input_event,
            {
                FAILURE_MODE: "system.schema_violation",
                "langgraph_error": "empty_input",
                "written_by": "input",
            },
        )
    before = _before_task(error)
    if before is not None and _is_validation_error(error):
        fields = _fields(error)
        located_at = _writer(nodes, fields, events, input_event)
        meta: dict[str, Any] = {
            FAILURE_MODE: "system.schema_violation",
            "langgraph_error": "invalid_state",
            "fields": fields,
            "before_node": before,
        }
        if isinstance(located_at, _Node):
            meta["nodes"] = [located_at.name]
            return Located(
                located_at.start.agent_name, located_at.start.step_index, located_at.start.id, meta
            )
        if located_at is None:  # (the mode is known, the writer is not)
            return Located(None, None, input_event, meta)
        meta["written_by"] = "input"
        return Located(None, located_at.step_index, located_at.id, meta)
    return None


def _at(node: _Node, mode: str, kind: str, nodes: Sequence[_Node]) -> Located:
    return Located(
        node.start.agent_name,
        node.start.step_index,
        node.start.id,
        {
            FAILURE_MODE: mode,
            "langgraph_error": kind,
            "nodes": list(dict.fromkeys(n.name for n in nodes)),
        },
    )


def _starts_of(events: Sequence[AgentEvent], scope: str | None) -> set[str]:
    """The ids of the node starts of the graph that raised: the top-level graph's
    (``scope`` None), or the subgraph's run by the node whose start is ``scope``:
    its nodes, and what they sent or handed to (a ``Send`` branch, an error
    handler), followed down from that start (several ``Send`` branches may run the
    same subgraph node at once; only this one's nodes are its)."""
    if scope is None:
        return {
            e.id
            for e in events
            if e.type is EventType.AGENT_START
            and "node" in e.metadata
            and "namespace" not in e.metadata
        }
    head = next((e for e in events if e.id == scope), None)
    if head is None:
        return set()
    linked, own = {scope}, set()
    for e in events:
        if (
            e.type is EventType.AGENT_START
            and e.parent_id in linked
            and e.metadata.get("namespace") == head.agent_name
        ):
            linked.add(e.id)
            own.add(e.id)
    return own


def _last_super_step(events: Sequence[AgentEvent], own: set[str], scope: str | None) -> list[_Node]:
    """The nodes of the last LangGraph super-step of the graph that raised, with
    their ends, in the order they started (none from before the run's latest input
    or resume, or before the start of the node running the subgraph)."""
    starts: list[AgentEvent] = []
    step: Any = None
    for event in reversed(events):
        if event.type is EventType.USER_INPUT or event.id == scope:
            break
        if event.id not in own:
            continue
        lg_step = event.metadata.get("langgraph_step")
        if step is None:
            step = lg_step
        elif lg_step != step:
            break
        starts.append(event)
    starts.reverse()
    ids = {s.id for s in starts}
    ends = {e.parent_id: e for e in events if e.type is EventType.AGENT_END and e.parent_id in ids}
    return [_Node(s, ends.get(s.id)) for s in starts]


def _duration(node: _Node) -> float:
    """A node's duration in ms (a node that never ended counts as the longest)."""
    if node.end is None or node.end.duration_ms is None:
        return float("inf")
    return node.end.duration_ms


def _deciding(events: Sequence[AgentEvent], nodes: Sequence[_Node], own: set[str]) -> _Node:
    """The node whose decision kept the loop going: the latest top-level node that
    called a model (a tool node of the last super-step only carried out what it
    asked for), else the last node of the last super-step."""
    by_id = {e.id: e for e in events}
    for event in reversed(events):
        if event.type is EventType.LLM_RESPONSE and event.parent_id:
            start = by_id.get(event.parent_id)
            if start is not None and start.id in own:
                end = next(
                    (
                        e
                        for e in events
                        if e.type is EventType.AGENT_END and e.parent_id == start.id
                    ),
                    None,
                )
                return _Node(start, end)
    return nodes[-1]


def _before_task(error: BaseException) -> str | None:
    """The task LangGraph was preparing when the error came (its note), if any."""
    for note in getattr(error, "__notes__", None) or ():
        if isinstance(note, str) and note.startswith(_BEFORE_TASK):
            name = note[len(_BEFORE_TASK) :].split(" and path", 1)[0]
            return name.strip("'")
    return None


def _is_validation_error(error: BaseException) -> bool:
    try:
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover - langgraph depends on pydantic
        return False
    return isinstance(error, ValidationError)


def _fields(error: BaseException) -> list[str]:
    """The top-level fields a pydantic error names."""
    out: list[str] = []
    try:
        for entry in error.errors():  # type: ignore[attr-defined]
            loc = entry.get("loc") or ()
            if loc and isinstance(loc[0], str):
                out.append(loc[0])
    except Exception:
        return out
    return list(dict.fromkeys(out))


def _writer(
    nodes: Sequence[_Node],
    fields: Sequence[str],
    events: Sequence[AgentEvent],
    input_event: str | None,
) -> _Node | AgentEvent | None:
    """Who put the invalid value in the state: the last node of the last super-step
    whose update wrote one of ``fields``, else the input when no node ran after it."""
    for node in reversed(nodes):
        if any(node.wrote(f) for f in fields):
            return node
    if nodes or input_event is None:
        return None
    return next((e for e in events if e.id == input_event), None)


def may_place(error: BaseException) -> bool:
    """Whether ``error`` is of a kind :func:`locate` places (a cheap test first)."""
    name = type(error).__name__
    if name in ("GraphRecursionError", "InvalidUpdateError", "NodeTimeoutError", "EmptyInputError"):
        return True
    return _before_task(error) is not None and _is_validation_error(error)


def out_of_steps(
    end: OwnEnd, *, agent: str | None, step: int, parent: str | None, graph: str
) -> dict[str, Any]:
    """The ``record`` fields of the error event of a run an agent ended itself at a
    limit (:func:`own_end`; no exception): placed at the node that said so."""
    return {
        "error": {"type": end.kind, "message": end.message},
        "module": "langgraph.prebuilt" if end.event == OUT_OF_STEPS else "langchain.agents",
        **placed(
            None,
            agent=agent,
            step=step,
            parent=parent,
            meta={
                **({FAILURE_MODE: end.mode} if end.mode else {}),
                ENDED_ITSELF: True,
                "langgraph_event": end.event,
                "graph": graph,
            },
        ),
    }


def unknown_goto(rec: Any, goto: Any) -> None:
    """A node's ``Command(goto=...)`` naming a node its graph does not have (a
    supervisor that routes by its model's word; a subgraph's node, or a node of a
    subgraph inside it, handing off with ``Command.PARENT``): LangGraph logs "wrote
    to unknown channel" and goes on as if no route was given, so the run (or the
    subgraph) ends short. Recorded as an error at the node,
    ``coordination.unknown_handoff``, and the run's failure unless a success check
    judges it. A node of a subgraph is judged by that subgraph's nodes, where the
    graph holds it as a node (``add_node("team", compiled)``); one a node's code
    invokes is not known, and not judged."""
    run = rec.run
    nodes, where = _graph_of_node(run, rec.ns)
    targets = goto if isinstance(goto, (list, tuple)) else (goto,)
    names = [getattr(t, "node", None) if type(t).__name__ == "Send" else t for t in targets]
    unknown = [t for t in names if isinstance(t, str) and t not in nodes and t != "__end__"]
    if not unknown or not nodes:
        return
    if run.lost_route is None:  # (the run's failure, when no success check judges it)
        run.lost_route = (
            f"{rec.agent} routed to {unknown[0]!r}, which is no node of {where}; "
            "LangGraph ignored the route, and the run ended short of it"
        )
    run.session.record(
        EventType.ERROR,
        agent_name=rec.agent,
        step_index=rec.step,
        parent_id=rec.event_id,
        module="langgraph.node",
        error={
            "type": "UnknownNode",
            "message": f"Command(goto={unknown[0]!r}) names no node of {where} "
            f"(its nodes: {', '.join(sorted(nodes))}); LangGraph ignored the route",
        },
        metadata={
            FAILURE_MODE: "coordination.unknown_handoff",
            "langgraph_error": "unknown_goto",
            "target": unknown[0],
        },
    )


def _graph_of_node(run: Any, ns: str) -> tuple[frozenset[str] | set[str], str]:
    """The node names of the graph a node of namespace ``ns`` belongs to, and how to
    name that graph: the run's graph for a root node; for a subgraph's node, the
    compiled graph its parents hold as nodes, read from the run's graph (empty
    when a node's code invoked it, which the graph does not hold)."""
    if "|" not in ns:
        return run.nodes, "the graph"
    from langgraph.pregel import Pregel

    from agentdebug_langgraph import _convert, _live

    path = [part.split(":", 1)[0] for part in ns.split("|")[:-1]]
    graph = _live.live_graph(run.session.id)
    try:
        for name in path:
            graph = graph.nodes[name].bound
    except (AttributeError, KeyError, TypeError):
        return set(), ""
    if not isinstance(graph, Pregel):
        return set(), ""
    return set(_convert.node_names(graph)), f"the subgraph {'/'.join(path)}"
