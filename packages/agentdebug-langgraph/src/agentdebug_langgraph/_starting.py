"""How a graph run starts: a new run and its session, a resume of a run paused at
an interrupt (the same run goes on), and a run that continues one that stopped
(``invoke(None)`` after an error, a resume served by another worker): a run of its
own that names the run before it and numbers its steps and events on from it, so
that diagnosis and reruns read the two as one history
(:func:`agentdebug.store.history.with_history`).

The fourth part of :class:`~agentdebug_langgraph.AgentDebugCallback` (after
:mod:`._base`, :mod:`._models` and :mod:`._ending`); the callback itself
(:mod:`._callback`) records the graph's nodes.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
from typing import Any
from uuid import UUID

from agentdebug import AgentDebug, AgentInfo, EventType, TraceSession
from agentdebug.capture.current import framework_runs_ignored
from agentdebug.detect.signals import STATE_SCHEMA
from agentdebug.store.base import CONTINUES_BEFORE
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.types import Command

from agentdebug_langgraph import (
    _cache_hits,
    _convert,
    _forks,
    _invocation,
    _pregel,
    _recording,
    _stream_writes,
)
from agentdebug_langgraph._ending import RunEnding
from agentdebug_langgraph._live import BRANCH_RECORDER, note_check, note_graph
from agentdebug_langgraph._specs import name_of, spec_of
from agentdebug_langgraph._state import (
    ASYNC,
    FRAMEWORK,
    LATEST,
    PAUSED,
    STOPPED,
    Decisions,
    GraphRun,
    NodeRun,
    Stopped,
    decisions_of,
    invoked_with,
    pause_key,
    start_counter,
    stopped_elsewhere,
    thread_key,
)

log = logging.getLogger("agentdebug.langgraph")
_WARNED: set[tuple[str, str]] = set()  # (factory, check) warned of once a process

# frames from on_chain_start up to the Pregel.stream/astream starting a graph run
# (handle_event, the callback manager; in async runs a few more)
_OWN_START_DEPTH = 6
# what a graph is called when its author named it nothing (``StateGraph.compile()``)
_UNNAMED = frozenset({"LangGraph"})
GRAPH = "LangGraph"  # a graph's name when it has none
_to_json = _convert.to_json


def _stream_over(run: GraphRun) -> bool:
    """Whether a run with no node started is over without an end: its graph's
    ``astream`` generator is finished (its frame, which the run holds until its
    first node, is no live generator's any more). A generator still suspended (a
    stream handed to another task, or one whose close is under way) is not. Read
    from the collector's referrers: only for a run still open when the task that
    started it ended, which a run ended as usual never is."""
    frame = run.frame
    if frame is None or run.last_step != run.base_step:
        return False
    return not any(inspect.isasyncgen(r) or inspect.isgenerator(r) for r in gc.get_referrers(frame))


class RunStarting(RunEnding):
    """Starts graph runs; the options it reads are set by AgentDebugCallback."""

    debugger: AgentDebug | None
    goal: str | None
    reference_answer: str | None
    graph_factory: str | None
    metadata: dict[str, Any]
    resume_note: dict[str, Any] | None
    inherited: Decisions | None
    _adopt: TraceSession | None
    _first_step: int
    _parent_event: str | None
    _warned_twice = False  # (_recorded_twice)

    def _start_inner_graph(
        self, inputs: Any, run_id: UUID, parent_run_id: UUID, md: dict[str, Any], kw: Any
    ) -> None:
        """A graph started inside a node this callback does not record (the outer
        graph runs without it): the graph's own start, called from its ``stream``
        a few frames up, is a run of its own; anything else is not ours."""
        if parent_run_id.int in self._roots or self._by_ns.get(
            md.get("langgraph_checkpoint_ns") or ""
        ):  # inside a run of ours after all (a runnable of a recorded node: a tool's)
            self._note_graph(run_id, kw.get("name"))
            return
        if _pregel.find_graph_frame(depth=_OWN_START_DEPTH) is None:
            return
        self._start_graph(inputs, run_id, md, kw.get("name"), nested=True)

    def _note_graph(self, run_id: UUID, name: Any, node: NodeRun | None = None) -> None:
        """A runnable a node's code or a tool started: should it be a graph, its
        nodes are recorded as ``node/<graph's name>/<its node>``, telling apart the
        sub-agents one node may run (two ``create_agent`` graphs whose nodes are both
        ``model``). A graph with LangGraph's default name adds nothing, nor does a
        subgraph that is the node ``node`` itself (``add_node("review", writer)``:
        started as the node's first step, as a node's function is); the name is
        kept until the runnable ends."""
        if not name or name.__class__ is not str or name in _UNNAMED:
            return
        if node is not None and (node.name, name) in node.run.graph_nodes:
            return
        self._graphs[run_id.int] = name

    def _invoking_node(
        self,
        ns: str,
        inputs: Any,
        run_id: UUID,
        parent_run_id: UUID,
        md: dict[str, Any],
        kw: Any,
    ) -> NodeRun | None:
        """The node of ours that invoked the graph whose node starts here, when its
        namespace tells nothing: a graph given a thread of its own
        (``inner.invoke(x, {"configurable": {"thread_id": ...}})``) starts its
        namespaces afresh, so the node running it is found from the config LangChain
        keeps current (the node's, or a tool's inside it; also on a worker thread
        and in an async run, where LangChain calls this handler on one). Its nodes
        are recorded inside that node, as a subgraph's are (``GraphRun.detached``),
        with no checkpoint, theirs being on another thread, which a rerun of this
        graph does not restore, and an interrupt of theirs, which their own thread
        keeps, does not pause this run.
        Else a graph's own start, or not ours (:meth:`_start_inner_graph`)."""
        if self._nodes:
            config = var_child_runnable_config.get() or {}
            rec = self._node_for(
                getattr(config.get("callbacks"), "parent_run_id", None), config.get("metadata")
            )
            if rec is not None and rec.ns != ns:
                rec.run.detached.add(ns)  # (no checkpoint, no pause of the run: see above)
                return rec
        self._start_inner_graph(inputs, run_id, parent_run_id, md, kw)
        return None

    def _start_marked_otherwise(
        self, inputs: Any, run_id: UUID, md: dict[str, Any], name: Any
    ) -> None:
        """A chain's start that is not a graph node's and carries another
        integration's mark than LangGraph's: LangGraph marks a run ``ls_integration:
        "langgraph"`` only when its metadata names no integration already, and
        LangChain's ``create_agent`` names its own (``langchain_create_agent``), as a
        user's config may. It is a graph run's start when a ``Pregel.stream``/
        ``astream`` a few frames up is starting it (also one a chain runs:
        ``prompt | agent``, ``agent.with_retry()``); a chain with no mark, outside
        any graph, does not come here."""
        if _pregel.find_graph_frame(depth=_OWN_START_DEPTH) is not None:
            self._start_graph(inputs, run_id, md, name)

    def _start_graph(
        self, inputs: Any, run_id: UUID, md: dict[str, Any], name: Any, *, nested: bool = False
    ) -> None:
        if run_id.int in self._roots:
            return  # this callback given twice (with_config(callbacks=[cb]) and invoke's)
        recorder = BRANCH_RECORDER.get()
        if recorder is not None and recorder is not self:
            return  # a rerun branch: the executor's callback records it
        other = _recording.recorded_by(run_id.int)
        if other is not None and other is not self:  # another instance in its callbacks
            self._recorded_twice(other)
            return
        frame = _pregel.find_graph_frame()
        if not nested and _recording.hooked(self) and _pregel.given(frame, self) is False:
            # added by the configure hook while a run of ours goes on in this context,
            # to a graph that is not inside it (one an app's loop over our stream
            # runs, or a worker thread's next request while a stream is left open):
            # not ours to record (a graph inside one of our nodes is, from its nodes)
            return
        _pregel.inherit(frame, self)  # (given as a handler its nodes would not get)
        _cache_hits.install()
        _stream_writes.install()
        graph = _pregel.graph_of(frame)
        invocation = _invocation.read(frame) if self._adopt is None else None
        thread = md.get("thread_id")
        thread_id = str(thread) if thread is not None else None
        alias = self.thread_alias  # (a branch's, seen by its nodes as the user's thread)
        if alias is not None and thread_id == alias[0]:
            thread_id = alias[1]
        # a run of the user's on a thread (a nested graph's thread is its outer's; a
        # branch's session is the executor's)
        own = thread_id is not None and self._adopt is None and not nested
        # its thread in its graph's checkpointer (two graphs of an app may name their
        # threads alike), and where a run of it waits at an interrupt
        nodes = _convert.node_names(graph)
        looped = _pregel.is_async(frame)  # (ainvoke, astream: on an event loop)
        saver = _forks.reader(graph, bool(looped))
        # (on an event loop, an async saver's sync reads fail: what they tell is not
        # known, unless the saver can be read another way)
        blind = bool(looped) and saver is None
        key = thread_key(graph, thread_id) if own and thread_id is not None else None
        waits = (
            pause_key(str(name or GRAPH), nodes, thread_id)
            if own and thread_id is not None
            else None
        )
        resumed = self._held
        branch = resumed is not None and thread_id == resumed.thread_id
        if branch:
            self._held = None  # a rerun branch the executor resumes (hold_interrupts)
        else:
            # one that waits on this graph's saver (another graph alike may name the
            # thread too): the same saver, else one that has the checkpoint it waits
            # at (read with sync methods: where the saver cannot be read, any is taken)
            resumed = PAUSED.take(
                waits,
                lambda run: run.thread_key == key or blind or _forks.on_saver(saver, run),
            )
        if resumed is not None and _convert.is_fresh_input(inputs):
            self._finish_paused(resumed, "a new input was given on the thread instead of a resume")
            resumed = None
        # invoke(None) from a past checkpoint (time travel), or from an edit made with
        # update_state and run with the thread's own config: a fork of its history
        wanted = _forks.requested_checkpoint(frame) if own and inputs is None else None
        if (
            wanted is None
            and own
            and not branch  # (its fork is the executor's update, not the user's edit)
            and (inputs is None or resumed is not None)
            and not blind
        ):
            wanted = _forks.latest_edit(saver, str(thread_id))
            if wanted is not None and self._ran_from(
                wanted, key, str(thread_id), name, nodes, saver
            ):
                wanted = None  # the run that stopped ran from that edit: this is its retry
        fork = _forks.fork_at(saver, str(thread_id), wanted) if wanted is not None else None
        if fork is not None and resumed is not None:
            if fork.base_checkpoint == resumed.interrupt_checkpoint:
                # the checkpoint it waits at (edited by update_state, maybe): a resume
                if fork.edits:
                    self.resume_note = {**(self.resume_note or {}), "edits": fork.edits}
                fork = None
            elif inputs is not None:  # a resume: its answer, not the edits before
                fork = None
            else:
                self._finish_paused(resumed, "the thread was run from an earlier checkpoint")
                resumed = None
        if resumed is not None:
            run = resumed
            run.frame, run.loop, run.loop_checked = frame, None, False
            run.asynchronous = looped
            run.interrupted, run.interrupt_recorded = None, False
            run.interrupt_ids.clear()
            run.segments += 1
            _invocation.note_invocation(run.session.id, invocation)  # (the latest call's)
            note, self.resume_note = self.resume_note or {}, None
            self._record_resume(run, inputs, {"segment": run.segments, **note})
            self._roots[run_id.int] = run
            run.held = _recording.hold(run_id.int, self)
            if looped:
                self._watch_task(run_id.int, run)
            return
        stopped = STOPPED.take(key)
        # invoke(None): go on after it; a resume: answer the interrupt it was closed at
        goes_on = inputs is None or (stopped is not None and stopped.at_interrupt)
        continues = stopped if goes_on and not _convert.is_fresh_input(inputs) else None
        if fork is not None:  # not after the run that stopped: after the checkpoint's
            _forks.find_origin(fork, self._debugger(), str(thread_id))
            continues = _forked(fork)
        elsewhere = key is not None and LATEST.get(key) is None  # (else this process knows)
        if continues is None and fork is None and elsewhere and _convert.goes_on(inputs):
            continues = stopped_elsewhere(
                self._debugger(), str(thread_id), str(name or GRAPH), nodes
            )
        session, owns = self._session_for(
            inputs, md, name, graph, thread_id, continues, invocation, fork, looped
        )
        if key is not None:
            LATEST.park(key, session.id)
        # a run continuing another numbers its steps on from it (one history)
        base = continues.mark.last_step if owns and continues is not None else 0
        run = GraphRun(
            session=session,
            emit=session.emitter(_to_json),
            owns_session=owns,
            steps=start_counter(self._first_step if not owns else base + 1),
            graph_name=str(name or GRAPH),
            thread_id=thread_id,
            frame=frame,
            asynchronous=looped,
            thread_key=key,
            pause_key=waits,
            last_step=base,
            base_step=base,
            messages_key=_convert.messages_key(graph),
            nodes=frozenset(nodes),
            graph_nodes=_convert.graph_nodes(graph),
            output_keys=_convert.output_keys(graph, frame),
        )
        if owns and continues is not None and continues.decisions is not None:
            continues.decisions.carry_into(run)  # what it asked for and what failed, before
        elif not owns and self.inherited is not None:  # (a branch: its calls before the fork)
            self.inherited.carry_into(run)
            self.inherited = None
        if graph is not None:
            note_graph(session.id, graph)
        if not owns:
            run.input_event = self._parent_event
        elif fork is not None:  # what was done to the state before running from it
            run.input_event = session.record(
                EventType.USER_INPUT,
                step_index=run.next_step(),
                input=fork.edits or None,
                metadata={"langgraph_event": "time_travel", **fork.record()},
            )
        elif continues is not None and (isinstance(inputs, Command) or continues.at_interrupt):
            self._record_resume(run, inputs, {})  # as a resume in its session is
        elif inputs is not None:
            run.input_event = session.record(
                EventType.USER_INPUT,
                step_index=0,
                input=_invocation.redacted(_convert.compact(inputs)),
                metadata={"langgraph_event": "input"},
            )
        self._roots[run_id.int] = run
        run.held = _recording.hold(run_id.int, self)
        if looped:
            self._watch_task(run_id.int, run)

    def _recorded_twice(self, other: Any) -> None:
        """A run whose callbacks hold another ``AgentDebugCallback`` too, which
        records it (before: two runs, two diagnoses, two notes on its exception)."""
        if self._warned_twice:
            return
        self._warned_twice = True
        mine = (self._debugger(), self.success_check, self.diagnose, self.on_report)
        theirs = (other._debugger(), other.success_check, other.diagnose, other.on_report)
        log.warning(
            "agentdebug: two AgentDebugCallback instances are in one graph run's callbacks "
            "(one given to with_config and one to invoke, say): the run is recorded once, "
            "by the first%s; give one",
            ""
            if all(a is b or a == b for a, b in zip(mine, theirs, strict=True))
            else " (this one's options are not used for it: its store, success_check, "
            "diagnose and on_report)",
        )

    def _watch_task(self, key: int, run: GraphRun) -> None:
        """End the run if the asyncio task running it is cancelled before LangGraph
        can say so. LangGraph awaits the graph's start on its callback manager
        before it holds the run's manager; a cancel that lands there (another
        handler is async: ``astream_events``' own, a user's ``AsyncCallbackHandler``)
        leaves the graph with no manager to report the stop to, so no end would
        ever come: the run would stay ``running`` until the process exits, and its
        tables and the graph's frame held meanwhile. The task's done callback is
        removed when the run ends as usual (``_end_graph``), so a long-lived task
        running many graphs keeps none of them. (A task that catches the cancel,
        as a handled timeout does, ends the run when it ends.)"""
        try:
            task = asyncio.current_task()
        except RuntimeError:  # (no loop running on this thread after all)
            return
        if task is None:
            return

        def ended(done: Any) -> None:
            try:
                if self._roots.get(key) is not run:
                    return  # (ended as usual: not in a done callback, as a rule)
                # cancelled, timed out, or a cancel the task caught (a timeout it
                # handled): over when its graph's stream is finished with no node
                # started (not a stream handed to another task, whatever this one's end)
                if _stream_over(run):
                    del self._roots[key]
                    run.watch = None
                    self._end_graph(run, None, asyncio.CancelledError())
            except Exception:
                self._failed("the end of a cancelled graph task")

        task.add_done_callback(ended)
        run.watch = (task, ended)

    def _ran_from(
        self,
        checkpoint: str,
        key: str | None,
        thread_id: str,
        name: Any,
        nodes: list[str],
        saver: Any,
    ) -> bool:
        """Whether the run that stopped last on the thread ran its last step from
        ``checkpoint`` (an edit): the one this process keeps, else, where this process
        has not run the thread (another worker, a restart), the store's. A run made
        with ``durability="exit"`` records no checkpoint: its last step's task is
        then looked for among those that ran from the edit."""
        if key is None:
            return False
        before = STOPPED.get(key)
        if before is None and LATEST.get(key) is None:
            before = stopped_elsewhere(self._debugger(), thread_id, str(name or GRAPH), nodes)
        if before is None:
            return False
        if before.started_from is not None or before.started_task is None:
            return before.started_from == checkpoint
        return before.started_task in _forks.tasks_at(saver, thread_id, checkpoint)

    def _record_resume(self, run: GraphRun, inputs: Any, extra: dict[str, Any]) -> None:
        """A resume's ``USER_INPUT`` event: what it gave, and how (``resume_record``)."""
        value, how = _convert.resume_record(inputs)
        if run.asynchronous:  # (a run started with invoke and resumed with ainvoke)
            extra = {**extra, ASYNC: True}
        run.input_event = run.session.record(
            EventType.USER_INPUT,
            step_index=run.next_step(),
            input=_convert.compact(value),
            metadata={"langgraph_event": "resume", **how, **extra},
        )

    def _session_for(
        self,
        inputs: Any,
        md: dict[str, Any],
        name: Any,
        graph: Any,
        thread_id: str | None,
        continues: Stopped | None,
        invocation: _invocation.Invocation | None = None,
        fork: _forks.Fork | None = None,
        asynchronous: bool | None = None,
    ) -> tuple[TraceSession, bool]:
        if self._adopt is not None:
            session, self._adopt = self._adopt, None
            return session, False
        goal = self.goal or _convert.first_human_text(inputs, _convert.messages_key(graph))
        goal = goal or (continues.mark.goal if continues is not None else None)
        if fork is not None and fork.edits and not self.goal:
            goal = _forks.edited_goal(goal, fork.edits, _convert.messages_key(graph))
        if goal is None and inputs is not None and not isinstance(inputs, Command):
            goal = _convert.goal_text(_invocation.redacted(_convert.compact(inputs)))
        nodes = _convert.node_names(graph)
        lg: dict[str, Any] = {"graph": str(name or GRAPH), "thread_id": thread_id}
        if nodes:
            lg["nodes"] = nodes
        if self.graph_factory:
            lg["graph_factory"] = self.graph_factory
        spec = spec_of(self.success_check)
        if spec:
            lg["success_check"] = spec
        elif self.success_check is not None:  # judged by a check a rerun cannot import
            lg["success_check_unimportable"] = name = name_of(self.success_check)
            if self.graph_factory and (self.graph_factory, name) not in _WARNED:
                _WARNED.add((self.graph_factory, name))  # (reruns elsewhere are meant)
                log.warning(
                    "agentdebug: success check %s has no importable name (a lambda, a "
                    "nested function, or one in the script run as __main__): a rerun "
                    "in another process cannot judge its branch by it; define it at "
                    "the top level of a module",
                    name,
                )
        if fork is not None:
            lg[_forks.KEY] = fork.record()
        if asynchronous:  # ainvoke, astream: a rerun goes so too (its nodes may be coroutines)
            lg[ASYNC] = True
        invoked = _invocation.record(invocation)
        if continues is not None:  # (what it does not give again, it goes on with)
            invoked = _invocation.inherited(invoked, continues.invoked_with, continues.run_id)
        if invoked:
            lg[_invocation.KEY] = invoked
        state = _convert.state_schema(graph)  # (what an update may write: see _convert)
        tools = _convert.node_tools(graph)  # (what a model was offered: see _convert)
        with framework_runs_ignored():  # (a graph in a recorded node is recorded there)
            session = self._debugger().trace(
                goal,
                framework=FRAMEWORK,
                agents=[AgentInfo(name=n, role="node", tools=tools.get(n, [])) for n in nodes]
                + [  # (a subgraph's tool nodes: react/tools)
                    AgentInfo(name=n, role="node", tools=t) for n, t in tools.items() if "/" in n
                ],
                reference_answer=self.reference_answer,
                metadata={
                    **self.metadata,
                    "langgraph": lg,
                    **({STATE_SCHEMA: state} if state else {}),
                    **_cut(fork),
                },
                continues=continues.mark if continues is not None else None,
            )
        session._stands_for = lg["graph"]  # (in a run it is a sub-run of: the graph)
        if self.success_check is not None:
            note_check(session.id, self.success_check)
        _invocation.note_invocation(session.id, invocation)
        return session, True


def _forked(fork: _forks.Fork) -> Stopped | None:
    """The run a time-travel run continues, as far as it keeps it (None when no
    recorded run made its checkpoint)."""
    kept, mark = fork.before(), fork.mark()
    if kept is None or mark is None:
        return None
    return Stopped(mark, False, decisions_of(kept), invoked_with(kept.metadata))


def _cut(fork: _forks.Fork | None) -> dict[str, Any]:
    """The metadata that keeps a fork's history to what came before its step."""
    if fork is None or fork.origin is None or fork.step is None:
        return {}
    return {CONTINUES_BEFORE: fork.step}
