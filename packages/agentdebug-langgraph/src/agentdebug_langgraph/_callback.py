"""``AgentDebugCallback``: a LangChain callback handler that records LangGraph runs.

Each top-level graph invocation becomes one trajectory (framework ``langgraph``):
the input, every node execution (name, LangGraph step, triggers, task id,
namespace for subgraph nodes, the checkpoint it started from), chat-model calls
(prompt, answer, tool calls, token usage), tool calls, results and errors,
interrupts and resumes, ``Send`` fan-out with each branch linked to the node that
sent it, and the final answer. How it ended is decided by the graph (an exception
is a failure) and by the user's ``success_check`` on the final state.

Every handler method is on the graph's hot path: it does a few dict operations
and at most one ``record`` (which only queues a tuple for core's background
writer), inside a ``try`` that logs its own failures and never raises into the
graph. Model and tool events are in :mod:`agentdebug_langgraph._models`, the end of
a run (answer, success check, outcome, diagnosis, interrupt) in
:mod:`agentdebug_langgraph._ending`.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any
from uuid import UUID, uuid4

from agentdebug import AgentDebug, EventType, TraceSession
from agentdebug.capture.auto import ReportCallback, check_mode
from agentdebug.detect.signals import INSTRUCTIONS
from agentdebug.schema import DiagnosticReport
from langgraph.callbacks import GraphInterruptEvent
from langgraph.errors import GraphBubbleUp, GraphInterrupt
from langgraph.types import Command

from agentdebug_langgraph import _cache_hits, _convert, _graph_errors, _node_failures
from agentdebug_langgraph._answers import STRUCTURED, restated
from agentdebug_langgraph._base import checked_arguments
from agentdebug_langgraph._ending import ENDED_KEPT, SuccessCheck, checked_success_check
from agentdebug_langgraph._inner_threads import InnerThreads, isolate_inner
from agentdebug_langgraph._live import (
    default_debugger,
)
from agentdebug_langgraph._paths import parent_namespace, sender_of, task_path_key
from agentdebug_langgraph._specs import factory_spec
from agentdebug_langgraph._starting import RunStarting
from agentdebug_langgraph._state import (
    ERRORS_HELD,
    Decisions,
    GraphRun,
    NodeRun,
)
from agentdebug_langgraph._unanswered import unanswered

log = logging.getLogger("agentdebug.langgraph")

_PUSH = "__pregel_push"
_START = "__start__"  # LangGraph's input task
_AGENT_START = EventType.AGENT_START
_AGENT_END = EventType.AGENT_END
_NODE = "langgraph.node"
# the tag of what a node's own function starts: the function is the first step of
# the node's sequence (its writers and branch functions the later ones)
_NODE_CODE = "seq:step:1"
_clock = time.perf_counter
_new_tuple = tuple.__new__  # a NodeRun from its fields in one C call
_to_json = _convert.to_json
_CACHED = _cache_hits.CACHED
_SERVED = "agentdebug_served_from_cache"  # on_chain_start's keyword for a cache hit
_HANDLER_PATH = _node_failures.HANDLER_PATH
_HANDLES = _node_failures.HANDLES


class AgentDebugCallback(RunStarting):
    """Records every graph run it sees; diagnoses the ones that fail.

    ``graph.invoke(inputs, config={"callbacks": [AgentDebugCallback()]})`` is all it
    takes. Options:

    - ``debugger``: where runs go (default: one shared ``AgentDebug()``, i.e.
      ``$AGENTDEBUG_HOME`` or ``./.agentdebug``).
    - ``goal``, ``reference_answer``, ``metadata``: stored with each run.
    - ``success_check(final_state)``: True or None for success; False, a string
      (the reason) or an ``AssertionError`` for failure. Without it a run that
      completes is a success.
    - ``diagnose``: run the diagnosis when a run fails (default True); the report is
      stored, logged as one paragraph, added to the exception as a note, and given
      to ``on_report``. An async run (``ainvoke``, ``astream``) that fails while a
      model is configured is diagnosed in the background, not to hold the loop up
      for the model's calls (the note then says so; ``wait_for_reports``);
      ``"inline"`` or ``"background"`` decides for every run.
    - ``graph_factory``: ``"module:function"`` returning the compiled graph (with a
      persistent checkpointer), recorded so that a stored run can be rerun from
      another process (``agentdebug`` rerun commands, the closed loop).

    ``session``, ``first_step`` and ``parent_event`` are for rerun executors: record
    the next graph run into an open (branch) session, numbering its node steps
    from ``first_step``, under event ``parent_event``; the session's owner closes it.
    With ``hold_interrupts``, a branch stopped at an interrupt is held (``held``)
    for the executor to resume on its thread or end (``release_held``), and
    ``resume_note`` is added to the next resume's event. ``inner`` (the executor's:
    the branch's tag, the fork's time, threads made) runs a graph a node invokes
    on a thread of its own on a copy of that thread (:mod:`._inner_threads`);
    ``thread_alias`` (the executor's: the user's thread, the branch's) records a
    branch invoked with the user's thread id on the branch's (:mod:`._aliased`).
    """

    inner: InnerThreads | None = None

    def __init__(
        self,
        debugger: AgentDebug | None = None,
        *,
        goal: str | None = None,
        reference_answer: str | None = None,
        success_check: SuccessCheck | None = None,
        diagnose: bool | str = True,
        on_report: ReportCallback | None = None,
        graph_factory: str | Callable[[], Any] | None = None,
        metadata: dict[str, Any] | None = None,
        session: TraceSession | None = None,
        first_step: int = 1,
        parent_event: str | None = None,
        hold_interrupts: bool = False,
    ) -> None:
        super().__init__()
        success_check = checked_success_check(
            success_check, "AgentDebugCallback(success_check=...)"
        )
        checked_arguments(debugger, on_report, metadata, first_step)
        self.debugger = debugger
        graph_factory = factory_spec(graph_factory)
        self.goal = goal
        self.reference_answer = reference_answer
        self.success_check = success_check
        self.diagnose = check_mode(diagnose, "AgentDebugCallback")
        self.on_report = on_report
        self.graph_factory = graph_factory
        self.metadata = dict(metadata or {})
        self._adopt = session  # a branch session the executor opened (used once)
        self._first_step = first_step
        self._parent_event = parent_event
        self.hold_interrupts = hold_interrupts
        self._held: GraphRun | None = None
        self.resume_note: dict[str, Any] | None = None
        # a branch's decisions from before its fork (set by the executor): what a
        # tool call it runs again was asked by
        self.inherited: Decisions | None = None
        self.run_ids: list[str] = []
        self.ended: deque[tuple[str, TraceSession]] = deque(maxlen=ENDED_KEPT)
        self.reports: list[DiagnosticReport] = []
        self._pending: list[Future[DiagnosticReport | None]] = []  # background diagnoses

    # -- reading back -----------------------------------------------------------------

    @property
    def last_run_id(self) -> str | None:
        """The trajectory id of the most recent run this callback finished, or
        left waiting at an interrupt (its outcome ``running`` until a resume ends it)."""
        return self.run_ids[-1] if self.run_ids else None

    def trajectory(self, run_id: str | None = None) -> Any:
        """A finished run (default: the last) read back from the store."""
        rid = run_id or self.last_run_id
        if rid is None:
            raise LookupError("this callback has not finished a graph run yet")
        session = next((s for i, s in list(self.ended) if i == rid), None)  # (threads)
        if session is not None:  # (with what a locked store has not taken yet)
            return session.trajectory()
        debugger = self._debugger()
        if debugger.store is None:
            raise LookupError("the agentdebug store could not be opened (see the log)")
        debugger.flush()  # (an async run's end is written after ainvoke returns)
        return debugger.store.load_trajectory(rid)

    def _debugger(self) -> AgentDebug:
        if self.debugger is None:
            self.debugger = default_debugger()
        return self.debugger

    # -- chains: the graph and its nodes ------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """The graph's start, or a node's: its ``AGENT_START`` event.

        A node's start is written out here rather than in a helper: on the graph's
        thread a call costs a dozen bytecodes, and every step starts a node."""
        try:
            md = metadata or {}
            node = md.get("langgraph_node")
            if node is None:
                if md.get("ls_integration") == "langgraph":
                    self._start_graph(inputs, run_id, md, kwargs.get("name"))
                elif md.get("ls_integration") is not None:  # (a graph marked otherwise)
                    self._start_marked_otherwise(inputs, run_id, md, kwargs.get("name"))
                return
            if kwargs.get("name") != node:
                # A branch function or a runnable inside a node; or a graph invoked
                # inside a node of a graph this callback does not record, given
                # this callback itself.
                if self.inner is not None and parent_run_id is not None:  # (a branch's)
                    isolate_inner(self.inner)
                if parent_run_id is not None:
                    if parent_run_id.int not in self._nodes:
                        self._start_inner_graph(inputs, run_id, parent_run_id, md, kwargs)
                    elif tags and _NODE_CODE in tags:  # started by the node's function
                        # (not its branch; nor the node itself, a subgraph)
                        self._note_graph(run_id, kwargs.get("name"), self._nodes[parent_run_id.int])
                return
            if node == _START:  # (LangGraph's own task that takes the input and routes
                return  # it, a Send from START: no agent's step)
            ns: str = md.get("langgraph_checkpoint_ns") or ""
            if ns in self._by_ns:
                if parent_run_id is None or parent_run_id.int in self._nodes:
                    return  # inside a task already running: a graph compiled with its name
                # another attempt of a task whose attempt before its timeout cut off,
                # before that one's cancel came
                self._superseded(self._by_ns[ns].run, ns)
            parent = None
            handles = None
            if "|" in ns:  # a node inside a subgraph, or a node's error handler
                at = ns
                if (md.get("langgraph_path") or ())[-2:-1] == _HANDLER_PATH:
                    handles, at = _node_failures.handler_namespace(ns)
                if "|" in at:
                    parent = (
                        self._by_ns.get(at.rpartition("|")[0])
                        or self._by_ns.get(parent_namespace(at))
                        or self._persistent_parent(parent_namespace(at))
                    )
            if parent is None:
                found = self._roots.get(parent_run_id.int) if parent_run_id is not None else None
                if found is None:  # (a graph named as the node running it, or given a
                    if parent_run_id is not None:  # thread of its own by a node of ours)
                        parent = self._invoking_node(ns, inputs, run_id, parent_run_id, md, kwargs)
                    if parent is None:
                        return
                else:
                    run = found
            if parent is not None:
                run = parent.run
            lg_step = md.get("langgraph_step", -1)
            path = md.get("langgraph_path") or ()
            step = next(run.steps)  # (GraphRun.next_step, written out)
            if step > run.last_step:
                run.last_step = step
            meta: dict[str, Any] = {
                "node": node,
                "langgraph_step": lg_step,
                "task_id": ns[ns.rfind(":") + 1 :],
                "triggers": md.get("langgraph_triggers") or (),
            }
            doc: dict[str, Any] = {
                "id": None,
                "type": _AGENT_START,
                "step_index": step,
                "timestamp": None,
                "agent_name": node,
                "module": _NODE,
                "parent_id": run.input_event,
                "metadata": meta,
            }
            if run.cancelled and ns in run.cancelled:  # a retry of an attempt cut off
                self._superseded(run, ns)
            if run.failed:  # a retry (RetryPolicy) runs the failed task again
                self._mark_retry(run, ns, meta)
            if _SERVED in kwargs:  # (on_cached_task)
                meta[_CACHED] = True
            root_step = step
            if parent is not None:
                if run.detached and parent.ns in run.detached:  # (inside one: so is it)
                    run.detached.add(ns)
                agent = f"{parent.agent}/{node}"
                if self._graphs and parent_run_id is not None:  # (a graph invoked in code)
                    graph = self._graphs.get(parent_run_id.int)
                    if graph is not None and graph != parent.name:  # (one of several)
                        meta["graph"] = graph
                        agent = f"{parent.agent}/{graph}/{node}"
                doc["agent_name"] = agent
                doc["parent_id"] = parent.event_id
                meta["namespace"] = parent.agent
                root_step = meta["root_step"] = parent.root_step
            else:
                agent = node
            if handles is not None:
                self._handling(run, handles, doc)
            if path and path[0] == _PUSH and handles is None:
                self._start_branch(run, doc, inputs, ns, lg_step, path)
            checkpoint = None
            if parent is None:
                run.last_task = meta["task_id"]
                if run.persists or not run.loop_checked:
                    checkpoint = self._checkpoint(run, lg_step)
                    if run.instructions:  # (the first step's: see _checkpoint)
                        meta[INSTRUCTIONS] = run.instructions
                        run.instructions = None
            elif run.persists and not (run.detached and ns in run.detached):
                checkpoint = self._subgraph_checkpoint(run, parent.ns, lg_step)
                if checkpoint is False:  # (on a thread of its own: see _invoking_node)
                    run.detached.add(ns)
                    checkpoint = None
            if checkpoint is not None:
                doc["checkpoint"] = checkpoint
            rec: NodeRun = _new_tuple(
                NodeRun,
                (
                    run,
                    agent,
                    node,
                    step,
                    run.emit(doc, agent),
                    ns,
                    lg_step if lg_step.__class__ is int else -1,
                    root_step,
                    path,
                    _clock(),
                ),
            )
            self._nodes[run_id.int] = rec
            self._by_ns[ns] = rec
        except Exception:
            self._failed("on_chain_start")

    def _persistent_parent(self, head: str) -> NodeRun | None:
        """The node running a subgraph compiled with ``checkpointer=True``: its
        nodes' namespace names the node without its task id (``sub|inner:<task>``,
        the subgraph keeping one history across runs), so it is the running node
        whose namespace is ``head`` and a task id (``sub:<task>``)."""
        if not head or ":" in head.rpartition("|")[2]:
            return None
        found = [rec for key, rec in list(self._by_ns.items()) if key.rpartition(":")[0] == head]
        return found[-1] if found else None

    def _start_branch(
        self,
        run: GraphRun,
        doc: dict[str, Any],
        inputs: Any,
        ns: str,
        lg_step: Any,
        path: Sequence[Any],
    ) -> None:
        """A node started by a ``Send``: its input (the packet's argument), and the
        node that sent it as its parent."""
        doc["input"] = _convert.branch_input(inputs)
        sender = sender_of(run, ns.rpartition("|")[0], lg_step, path)  # "" at the root
        if sender is not None:
            doc["parent_id"] = sender
        doc["metadata"]["send"] = True

    def _mark_retry(self, run: GraphRun, ns: str, meta: dict[str, Any]) -> None:
        """A node's start that is another attempt of a task that raised: its
        number, and the start of the attempt before."""
        before = run.failed.pop(ns, None)
        if before is not None:
            meta["attempt"] = run.attempts[ns] = before[1] + 1
            meta["retry_of"] = before[0]

    def on_chain_end(
        self,
        outputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            key = run_id.int
            rec = self._nodes.pop(key, None)
            if rec is None:
                root = self._roots.pop(key, None)
                if root is not None:
                    self._end_graph(root, outputs, None)
                elif self._graphs and self._graphs.pop(key, None) is not None:
                    return
                elif outputs.__class__ in _convert.MAY_SEND and parent_run_id is not None:
                    sender = self._nodes.get(parent_run_id.int)  # a branch function's Sends
                    if sender is not None and _convert.has_send(outputs):
                        self._note_sends(sender, outputs)
                return
            self._by_ns.pop(rec.ns, None)
            self._end_node(rec, outputs)
        except Exception:
            self._failed("on_chain_end")

    def on_cached_task(self, task: Any, parent_run_id: UUID | None) -> None:
        """A node LangGraph served from its node cache, for which no callback
        fires (:mod:`agentdebug_langgraph._cache_hits`): its start and its end at
        once, both marked ``cached``, with the update and the ``Send`` packets its
        cached writes hold."""
        try:
            run_id = uuid4()
            config = task.config or {}
            self.on_chain_start(
                None,
                task.input,
                run_id=run_id,
                parent_run_id=parent_run_id,
                tags=config.get("tags"),
                metadata=config.get("metadata"),
                name=task.name,
                **{_SERVED: True},
            )
            rec = self._nodes.pop(run_id.int, None)
            if rec is None:  # not a node of a run this callback records
                return
            self._by_ns.pop(rec.ns, None)
            update, sends = _cache_hits.cached_update(task.writes)
            if sends:
                self._note_sends(rec, sends)
            self._end_node(rec, update, cached=True)
        except Exception:
            self._failed("on_cached_task")

    def _end_node(self, rec: NodeRun, outputs: Any, cached: bool = False) -> None:
        if outputs.__class__ is dict:
            said = outputs.get(rec.run.messages_key)
            if said is not None:
                self._note_written(rec, said)
            if STRUCTURED in outputs:  # (an agent's response_format answer)
                rec.run.structured = (rec.agent, rec.step, rec.event_id)
        else:
            for command in outputs if outputs.__class__ is list else (outputs,):
                # (a supervisor's, a handler's reply; create_agent's model node
                # returns a list of them)
                if command.__class__ is not Command:
                    continue
                if command.goto and command.graph in (None, rec.ns):
                    # (its own route, or one a node of its subgraph sent up with
                    # Command.PARENT, which LangGraph hands it addressed to its task)
                    _graph_errors.unknown_goto(rec, command.goto)
                if command.update.__class__ is dict:
                    said = command.update.get(rec.run.messages_key)
                    if said is not None:
                        self._note_written(rec, said)
                    if STRUCTURED in command.update:
                        rec.run.structured = (rec.agent, rec.step, rec.event_id)
            if _convert.has_send(outputs):
                self._note_sends(rec, outputs)
        run = rec.run
        if run.attempts:  # a retry that succeeded
            run.attempts.pop(rec.ns, None)
        if run.subgraph_loops:  # the subgraph this node ran is done
            run.subgraph_loops.pop(rec.ns, None)
        if run.detached:
            run.detached.discard(rec.ns)
        if run.failed_calls:  # (a model call that failed and was not tried again)
            run.failed_calls.pop(rec.event_id, None)
        agent = rec.agent
        doc = {
            "id": None,
            "type": _AGENT_END,
            "step_index": rec.step,
            "timestamp": None,
            "agent_name": agent,
            "module": _NODE,
            "parent_id": rec.event_id,
            "duration_ms": (_clock() - rec.started) * 1000.0,
            "output": outputs if outputs.__class__ is dict else _convert.payload(outputs),
        }
        if cached:
            doc["metadata"] = {_CACHED: True}
        run.emit(doc, agent)

    def _note_written(self, rec: NodeRun, said: Any) -> None:
        """The last message a node's update wrote: the final answer's author when no
        model call gave it (a node that formats or writes the reply itself)."""
        if rec.run.asked:  # tool answers written without a tool run (see _tool_messages)
            self._tool_messages(rec, said)
        last = said[-1] if said.__class__ is list and said else said
        if _convert.is_message(last) or (  # (or an OpenAI-style dict, as a node that
            last.__class__ is dict and last.get("role") == "assistant"  # calls a client writes)
        ):
            run = rec.run
            written = run.last_written
            if written is None or (  # (not a subgraph handing it up, nor a node that
                written[0] is not last and not restated(written[0], last)
            ):  # wrote the same message again, its words as they were: a tidying hook)
                run.last_written = (last, rec.agent, rec.step, rec.event_id)

    def _note_sends(self, rec: NodeRun, outputs: Any) -> None:
        parent_ns = rec.ns.rpartition("|")[0]
        key = (parent_ns, rec.langgraph_step)
        entry = (task_path_key(rec.path), rec.event_id)
        rec.run.sends.setdefault(key, []).extend([entry] * _convert.count_sends(outputs))

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            rec = self._nodes.pop(run_id.int, None)
            if rec is None:
                root = self._roots.pop(run_id.int, None)
                if root is not None:
                    self._end_graph(root, None, error)
                elif self._graphs:
                    self._graphs.pop(run_id.int, None)
                return
            self._by_ns.pop(rec.ns, None)
            run = rec.run
            if run.subgraph_loops:
                run.subgraph_loops.pop(rec.ns, None)
            if run.failed_calls:
                run.failed_calls.pop(rec.event_id, None)
            if not isinstance(error, Exception):  # Ctrl-C, a cancel, an exit: not its error
                if _node_failures.is_cancel(error):
                    self._cancelled(rec, error)  # (or its timeout: told by what follows)
                else:
                    self._stopped_at(rec, error)
                return
            if not isinstance(error, GraphBubbleUp):  # a RetryPolicy may run it again
                run.failed[rec.ns] = (rec.event_id, run.attempts.pop(rec.ns, 1))
            elif not isinstance(error, GraphInterrupt):
                # A Command for a parent graph (a handoff): this node ends with it, also
                # when it came up from a node inside this one, which ended with it too.
                self._end_node(rec, error.args[0] if error.args else None)
                return
            if _node_failures.is_node_timeout(error) and self._settle_timeout(run, error):
                return  # out of the subgraph this node ran: recorded at its node
            known = run.node_errors.get(id(error))
            if known is not None and known[0] is error and known[1].startswith(rec.ns + "|"):
                return  # recorded where it was raised, in a node inside this one (a subgraph)
            if len(run.node_errors) >= ERRORS_HELD:
                del run.node_errors[next(iter(run.node_errors))]
            run.node_errors[id(error)] = (error, rec.ns)
            if isinstance(error, GraphInterrupt):
                if not (run.detached and rec.ns in run.detached):  # (kept on its thread)
                    run.interrupted, run.interrupt_recorded = "interrupt", True
                asked = _convert.interrupts_of(error)
                ids = [getattr(i, "id", None) for i in asked]
                if ids and set(ids) <= run.interrupt_ids:
                    return  # raised again by the node around a persistent subgraph
                run.interrupt_ids.update(i for i in ids if i)
                run.session.record(
                    EventType.CHECKPOINT,
                    agent_name=rec.agent,
                    step_index=rec.step,
                    output=[_convert.compact(getattr(i, "value", i)) for i in asked]
                    or "paused at a breakpoint in the subgraph",  # (a static one: no value)
                    parent_id=rec.event_id,
                    module="langgraph.interrupt",
                    metadata={
                        "langgraph_event": "interrupt",
                        "node": rec.name,
                        "root_node": rec.ns.split("|", 1)[0].split(":", 1)[0],
                        "interrupt_ids": ids,
                    },
                )
            else:  # (raised by a subgraph's loop: placed at the subgraph's node concerned)
                at = self._locate_inside(rec, error)
                run.session.record(
                    EventType.ERROR,
                    error=error,
                    module="langgraph.node",
                    duration_ms=(time.perf_counter() - rec.started) * 1000.0,
                    **_graph_errors.placed(
                        at,
                        agent=rec.agent,
                        step=rec.step,
                        parent=rec.event_id,
                        meta={"node": rec.name, **unanswered(run, error, self._debugger())},
                    ),
                )
        except Exception:
            self._failed("on_chain_error")

    # -- LangGraph lifecycle (GraphCallbackHandler) -----------------------------------------

    def on_interrupt(self, event: GraphInterruptEvent) -> None:
        try:
            run = self._roots.get(event.run_id.int) if event.run_id is not None else None
            if run is not None and not event.checkpoint_ns:
                run.interrupted = run.interrupted or str(event.status)
                run.interrupt_checkpoint = event.checkpoint_id
        except Exception:
            self._failed("on_interrupt")
