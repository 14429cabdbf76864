"""What every part of the callback shares: the tables of runs, nodes and calls in
flight, the rule that capture never raises into the graph, where a step's
checkpoint is found, and which node's run is current in a node's own code (for
``agentdebug.record``: :func:`node_run`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

from agentdebug import AgentDebug
from agentdebug.capture.current import register_finder
from agentdebug.schema import CheckpointRef, EventType
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.callbacks import GraphCallbackHandler

from agentdebug_langgraph import _pregel
from agentdebug_langgraph._state import FRAMEWORK, GraphRun, NodeRun

if TYPE_CHECKING:
    from agentdebug.capture.session import TraceSession

log = logging.getLogger("agentdebug.langgraph")


class CaptureBase(GraphCallbackHandler):
    """The handler's state. Tables are keyed by ``run_id.int``: a UUID hashes in
    Python code, an int in C, and these dicts are touched several times per node
    on the graph's hot path."""

    run_inline = True  # called in the graph's own thread or event loop, in order
    raise_error = False
    # Plain attributes rather than the base class's properties: LangChain reads one
    # before every event it hands a handler. Retriever, retry and custom events
    # are not recorded, so LangChain need not call for them at all (tool events
    # go by ``ignore_agent``).
    ignore_chain = False
    ignore_llm = False
    ignore_chat_model = False
    ignore_agent = False
    ignore_retriever = True  # (recorded: see _retrievals.ProgramEvents)
    ignore_retry = True
    ignore_custom_event = True  # (recorded: see _retrievals.ProgramEvents)
    # a rerun branch's (the user's thread, the branch's): its nodes' config names the
    # user's, its checkpoints are on the branch's (_aliased)
    thread_alias: tuple[str, str] | None = None

    def __init__(self) -> None:
        super().__init__()
        self._roots: dict[int, GraphRun] = {}
        self._nodes: dict[int, NodeRun] = {}
        self._by_ns: dict[str, NodeRun] = {}
        # graphs a node's code or a tool invoked, until they end: run id -> the name
        # they were compiled with, which their nodes are recorded under
        self._graphs: dict[int, str] = {}
        # model and tool calls in flight: run id -> (node, prompt or (event id, tool call
        # id), start, name)
        self._calls: dict[int, tuple[NodeRun, Any, float, Any]] = {}
        # the chunks a streamed model call gave so far, until it ends: by its run id
        self._streamed: dict[int, list[Any]] = {}
        # retrievals in flight: run id -> (node, query, start, retriever's name)
        self._retrievals: dict[int, tuple[NodeRun, Any, float, str]] = {}
        self._errors_logged = 0

    def _failed(self, where: str) -> None:
        """A bug in capture: logged (a few times, then quietly), never raised."""
        self._errors_logged += 1
        if self._errors_logged <= 5:
            log.exception("agentdebug: capture failed in %s; the graph goes on", where)

    def _node_for(self, parent_run_id: UUID | None, md: dict[str, Any] | None) -> NodeRun | None:
        """The node a model or tool call runs in: its parent run, when the node
        calls it directly, else the node of its checkpoint namespace (a call
        inside a runnable inside the node)."""
        if parent_run_id is not None:
            rec = self._nodes.get(parent_run_id.int)
            if rec is not None:
                return rec
        ns = md.get("langgraph_checkpoint_ns") if md else None
        if ns is None and parent_run_id is None and self._by_ns:
            # a call given metadata of its own (config={"callbacks": [h], "metadata":
            # {...}}: the node's namespace replaced), reached through the configure
            # hook: the node whose config LangChain keeps current in this context
            config = var_child_runnable_config.get() or {}
            ns = (config.get("metadata") or {}).get("langgraph_checkpoint_ns")
        return self._by_ns.get(ns) if ns is not None else None

    def _node_of(self, run_id: UUID | None, md: dict[str, Any] | None) -> NodeRun | None:
        """The node a run inside it belongs to: :meth:`_node_for`, or the node that
        called the tool ``run_id`` is (a retriever or a note inside a tool)."""
        rec = self._node_for(run_id, md)
        if rec is None and run_id is not None:
            call = self._calls.get(run_id.int)
            rec = call[0] if call is not None else None
        return rec

    def _checkpoint(self, run: GraphRun, lg_step: Any) -> Any:
        """The checkpoint this root-level step starts from, when one is persisted."""
        if not run.loop_checked:
            run.loop_checked = True
            run.loop = _pregel.loop_of(run.frame)
            run.frame = None  # do not keep the graph's frame alive
            if run.loop is not None:
                run.persists = _pregel.persists_steps(run.loop)
                # the instructions the conversation holds (an earlier turn's on a
                # thread too): an answer given without them is a rule's to find
                # (recorded with this first step's start)
                run.instructions = _pregel.system_messages(run.loop, run.messages_key) or None
        if not run.persists:
            return None
        found = _pregel.current_checkpoint(run.loop)
        if found is None:
            return None
        thread_id = self._stored_on(found[1])
        if thread_id is not None:
            run.thread_id = thread_id
        return run.checkpoint_ref(found[0], thread_id, lg_step)

    def _stored_on(self, thread_id: str | None) -> str | None:
        """The thread a checkpoint of the loop's thread ``thread_id`` is stored on: a
        rerun branch's for the user's, which its config names."""
        alias = self.thread_alias
        return alias[1] if alias is not None and thread_id == alias[0] else thread_id

    def _subgraph_checkpoint(self, run: GraphRun, outer: str, lg_step: Any) -> Any:
        """The checkpoint a subgraph node's step starts from: the subgraph's own,
        under its namespace (``outer`` is the namespace of the node running it);
        False for a graph on a thread of its own (no checkpoint of this run's)."""
        loops = run.subgraph_loops
        loop = loops.get(outer)
        found = None
        if loop is None:
            loop = _pregel.running_loop()
            if loop is None:  # (a worker thread: a later node of the subgraph may find it)
                return None
            found = _pregel.current_checkpoint(loop) if _pregel.persists_steps(loop) else None
            if found is not None:  # (a branch's subgraph, before its first save: the
                found = (found[0], self._stored_on(found[1]))  # user's thread id)
            if found is not None and run.thread_id is not None and found[1] != run.thread_id:
                # a graph the node runs on a thread of its own, which an older LangGraph
                # (1.2.4) names as a subgraph (not kept: a later one may be a subgraph)
                return False
            loops[outer] = loop = loop if _pregel.persists_steps(loop) else False
        if loop is False:
            return None
        found = found or _pregel.current_checkpoint(loop)
        if found is None:
            return None
        checkpoint_id, thread_id = found[0], self._stored_on(found[1])
        return CheckpointRef(
            framework=FRAMEWORK,
            checkpoint_id=checkpoint_id,
            thread_id=thread_id,
            namespace=_pregel.checkpoint_namespace(loop),
            extra={"langgraph_step": lg_step, "before": "this step"},
        )


def current_node_runs() -> list[NodeRun]:
    """The node runs the code running now is in, one for each recording handler:
    found from the config LangChain keeps current while a runnable runs, whose
    callbacks are the node's children (their parent the node's run, or a tool's or a
    runnable's inside the node). Empty outside any recorded node."""
    config = var_child_runnable_config.get()
    if not config:
        return []
    manager = config.get("callbacks")
    parent = getattr(manager, "parent_run_id", None)
    if parent is None:
        return []
    found = []
    for handler in getattr(manager, "handlers", None) or ():
        if isinstance(handler, CaptureBase):
            rec = handler._node_of(parent, config.get("metadata"))
            if rec is not None:
                found.append(rec)
    return found


def record_note(rec: NodeRun, module: str, output: Any, metadata: dict[str, Any]) -> None:
    """An ``observation`` of the node's own (a custom event, a stream write)."""
    rec.run.session.record(
        EventType.OBSERVATION,
        agent_name=rec.agent,
        step_index=rec.step,
        parent_id=rec.event_id,
        module=module,
        output=output,
        metadata=metadata,
    )


def node_run() -> tuple[TraceSession, Mapping[str, Any]] | None:
    """The graph run a node's own code runs in, and the fields an event recorded
    there has unless given (the node's agent, step and start event); None elsewhere.
    Of several (a graph given a callback of its own inside a recorded node is
    recorded twice, nested in the outer run and as a run of its own), its own: the
    innermost run, as a ``dbg.trace()`` begun in a node is."""
    found = None
    for rec in current_node_runs():
        if found is None or rec.run.session.started_at >= found.run.session.started_at:
            found = rec
    if found is None:
        return None
    return found.run.session, {
        "agent_name": found.agent,
        "step_index": found.step,
        "parent_id": found.event_id,
    }


register_finder(node_run)


def checked_arguments(debugger: Any, on_report: Any, metadata: Any, first_step: Any) -> None:
    """AgentDebugCallback's arguments a run would otherwise fail on inside the
    handler (logged only) or quietly ignore, refused when the callback is made."""
    if debugger is not None and not isinstance(debugger, AgentDebug):
        raise TypeError(
            "AgentDebugCallback(debugger) takes an AgentDebug (AgentDebug(path) for "
            f"a store at a path), not {type(debugger).__name__}"
        )
    if on_report is not None and not callable(on_report):
        raise TypeError(
            "AgentDebugCallback(on_report=...) takes a function of the report, "
            f"not a {type(on_report).__name__}"
        )
    if metadata is not None and not isinstance(metadata, Mapping):
        raise TypeError(
            "AgentDebugCallback(metadata=...) takes a dict stored with each run, "
            f"not a {type(metadata).__name__}"
        )
    if isinstance(first_step, bool) or not isinstance(first_step, int) or first_step < 0:
        raise ValueError(
            f"AgentDebugCallback(first_step=...) takes a step number, 0 or more, not {first_step!r}"
        )
