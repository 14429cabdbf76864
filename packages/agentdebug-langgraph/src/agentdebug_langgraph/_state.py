"""What the callback keeps about a graph run while it is running.

One :class:`GraphRun` per top-level graph invocation (a resumed interrupt continues
the same one), one :class:`NodeRun` per node execution. Step indexes are handed out
per node execution in start order: the graph's input is step 0, each node
execution (parallel branches and subgraph nodes included) gets the next index,
and every event inside a node (model calls, tool results) shares the node's
index. Attribution blames steps and reruns resume at steps, so a blamed step
always names one node execution, and the checkpoint before it.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Generic, NamedTuple, TypeVar

from agentdebug import AgentTrajectory, EventType, OutcomeStatus, TraceSession
from agentdebug.capture import RunMark
from agentdebug.capture.emit import Emit
from agentdebug.capture.process import was_abandoned
from agentdebug.schema import CheckpointRef
from agentdebug.store import RunQuery

FRAMEWORK = "langgraph"
ASYNC = "asynchronous"  # metadata["langgraph"] of a run made by ainvoke/astream
AT_INTERRUPT = "stopped at an interrupt"  # how the reason of a run left at one begins
BRANCH_AT_INTERRUPT = f"the branch {AT_INTERRUPT}"  # and of a rerun branch left at one
T = TypeVar("T")


@dataclass(eq=False)
class GraphRun:
    """A top-level graph run being recorded into one trace session."""

    session: TraceSession
    emit: Emit  # the session's emitter (TraceSession.emitter), payloads made small
    owns_session: bool
    steps: Iterator[int]
    graph_name: str
    thread_id: str | None = None
    input_event: str | None = None
    frame: FrameType | None = None
    asynchronous: bool | None = None  # run by astream (None: not known)
    messages_key: str = "messages"  # the state key of its conversation (_convert.messages_key)
    nodes: frozenset[str] = frozenset()  # the graph's own nodes (a Command's goto checked)
    graph_nodes: frozenset[tuple[str, str]] = frozenset()  # (_convert.graph_nodes)
    output_keys: frozenset[str] | None = None  # what invoke returns (_convert.output_keys)
    lost_route: str | None = None  # a node's goto LangGraph ignored (no such node): why
    loop: Any = None
    loop_checked: bool = False
    instructions: list[str] | None = None  # for the first step's start (signals.INSTRUCTIONS)
    persists: bool = False
    last_checkpoint: tuple[str, CheckpointRef] | None = None
    last_task: str | None = None  # the task id of its latest top-level node start
    # tool_call_id -> (LLM_RESPONSE event id, step, agent) of the decision that asked for it
    tool_calls: dict[str, tuple[str | None, int, str]] = field(default_factory=dict)
    # tool_call_id -> the call ({"id", "name", "args"}) of a model call of this run; the
    # calls (id, the decision's event) a tool callback ran or a node's update answered;
    # and, by node run (its start event), the tools it ran with no call id
    # (ModelAndToolEvents)
    asked: dict[str, dict[str, Any]] = field(default_factory=dict)
    answered: set[tuple[str, str | None]] = field(default_factory=set)
    unlabelled: dict[str | None, list[str]] = field(default_factory=dict)
    # the ToolMessages a node's update wrote that answer those calls, by id(): one
    # written again (a node returning the whole history) is not an answer again,
    # also when the model used its call id again since
    tool_messages: dict[int, Any] = field(default_factory=dict)
    # tool_call_id -> TOOL_CALL event id of a call an interrupt paused (a resume runs it again)
    paused_calls: dict[str, str | None] = field(default_factory=dict)
    # (tool_call_id, decision event, node run's start event) -> (failed TOOL_RESULT,
    # attempt): a call that failed, which the node may run again (ToolRetryMiddleware)
    tool_failures: dict[tuple[str, str | None, str | None], tuple[str | None, int]] = field(
        default_factory=dict
    )
    # (namespace, langgraph step) -> (sender's task path key, sender's event id), one
    # per Send packet; sorted by the key, they are in the order LangGraph numbers them
    sends: dict[tuple[str, int], list[tuple[str, str | None]]] = field(default_factory=dict)
    # exceptions recorded at a node, by id: (the exception, its node's namespace), so that
    # the nodes it bubbles up through do not record it again (the last ERRORS_HELD kept)
    node_errors: dict[int, tuple[BaseException, str]] = field(default_factory=dict)
    # namespace of a node running a subgraph -> the subgraph run's loop (False when
    # it saves no checkpoints), while that node runs
    subgraph_loops: dict[str, Any] = field(default_factory=dict)
    detached: set[str] = field(default_factory=set)  # (nodes of a graph on its own thread)
    # task namespace -> (start event id, attempt number) of an attempt that raised,
    # and the attempt number of a task being retried
    failed: dict[str, tuple[str | None, int]] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    # task namespace -> (node run, when, the CancelledError) of a node cancelled and not
    # yet told apart: its timeout, or a stop (_node_failures.NodeFailureEvents)
    cancelled: dict[str, tuple[NodeRun, float, BaseException]] = field(default_factory=dict)
    stopped_at_node: bool = False  # a stop recorded at a node (the graph's is the same)
    interrupted: str | None = None  # "interrupt", or a breakpoint's interrupt_before/after
    interrupt_recorded: bool = False
    interrupt_checkpoint: str | None = None
    interrupt_ids: set[str] = field(default_factory=set)  # recorded since the last resume
    # node run (its start event) -> (event id, when, prompt) of its latest model call
    # that failed, until a later call of that node run with the same prompt answers
    # (with_retry, with_fallbacks)
    failed_calls: dict[str | None, tuple[str | None, float, Any]] = field(default_factory=dict)
    # agent -> (message, step, event id, when its call started) of its latest model
    # answer without tool calls
    answers: dict[str, tuple[Any, int, str | None, float]] = field(default_factory=dict)
    # (message, agent, step, start event id) of the last message a node's update wrote
    last_written: tuple[Any, str, int, str | None] | None = None
    # (agent, step, start event) of the node run that wrote structured_response
    structured: tuple[str, int, str | None] | None = None
    # agent -> its previous model prompt (the list the callback was given)
    prompts: dict[str, list[Any] | None] = field(default_factory=dict)
    last_step: int = 0
    base_step: int = 0  # the last step before this run's own (a run continuing another)
    segments: int = 1  # invocations recorded into this run (a resume adds one)
    thread_key: str | None = None  # its thread in its graph's checkpointer (thread_key)
    pause_key: str | None = None  # where it waits at an interrupt (pause_key)
    watch: tuple[Any, Any] | None = None  # (asyncio task, done callback): _watch_task
    held: Any = None  # its hold on _recording.RECORDING, let go when it ends

    def next_step(self) -> int:
        step = next(self.steps)
        if step > self.last_step:
            self.last_step = step
        return step

    def checkpoint_ref(self, checkpoint_id: str, thread_id: str | None, step: Any) -> CheckpointRef:
        """One ref per checkpoint (parallel nodes of a step share it)."""
        cached = self.last_checkpoint
        if cached is not None and cached[0] == checkpoint_id:
            return cached[1]
        ref = CheckpointRef(
            framework=FRAMEWORK,
            checkpoint_id=checkpoint_id,
            thread_id=thread_id,
            namespace="",
            extra={"langgraph_step": step, "before": "this step"},
        )
        self.last_checkpoint = (checkpoint_id, ref)
        return ref


class NodeRun(NamedTuple):
    """One node execution: its step index and the event that opened it.

    A named tuple, made with ``tuple.__new__`` in one C call: a graph step makes
    one of these on its hot path, where a dataclass's ``__init__`` costs half a
    microsecond."""

    run: GraphRun
    agent: str
    name: str
    step: int
    event_id: str | None
    ns: str
    langgraph_step: int
    root_step: int
    path: tuple[Any, ...]
    started: float  # time.perf_counter()


ERRORS_HELD = 16


def start_counter(first: int) -> Iterator[int]:
    return itertools.count(first)


class ByThread(Generic[T]):
    """Process-wide runs by thread id, bounded: the oldest is pushed out (and
    handed back to the caller) when too many are kept."""

    def __init__(self, limit: int = 256) -> None:
        self._runs: dict[str, T] = {}
        self._lock = threading.Lock()
        self.limit = limit

    def park(self, thread_id: str, run: T) -> T | None:
        """Keep ``run``; returns a run pushed out (to be finished by the caller)."""
        with self._lock:
            evicted = self._runs.pop(thread_id, None)
            self._runs[thread_id] = run
            if evicted is None and len(self._runs) > self.limit:
                oldest = next(iter(self._runs))
                evicted = self._runs.pop(oldest)
            return evicted

    def take(self, thread_id: str | None) -> T | None:
        if thread_id is None:
            return None
        with self._lock:
            return self._runs.pop(thread_id, None)

    def get(self, thread_id: str) -> T | None:
        return self._runs.get(thread_id)

    def __contains__(self, thread_id: object) -> bool:
        return thread_id in self._runs

    def drain(self) -> list[T]:
        """Every kept run, taken out."""
        with self._lock:
            runs = list(self._runs.values())
            self._runs.clear()
            return runs


class Waiting:
    """Runs waiting at an interrupt, by where they wait (:func:`pause_key`), several
    under one key when graphs alike (unnamed, the same nodes) with savers of their
    own name a thread alike; bounded, the oldest pushed out (handed back to the
    caller to finish)."""

    def __init__(self, limit: int = 1024) -> None:
        self._runs: dict[str, list[GraphRun]] = {}
        self._order: dict[int, tuple[str, GraphRun]] = {}  # id(run) -> where, oldest first
        self._lock = threading.Lock()
        self.limit = limit

    def park(self, key: str, run: GraphRun) -> GraphRun | None:
        with self._lock:
            self._drop(run)
            self._runs.setdefault(key, []).append(run)
            self._order[id(run)] = (key, run)
            if len(self._order) <= self.limit:
                return None
            oldest = next(iter(self._order.values()))[1]
            self._drop(oldest)
            return oldest

    def take(self, key: str | None, belongs: Callable[[GraphRun], bool]) -> GraphRun | None:
        """The latest run waiting under ``key`` that ``belongs`` (to this graph's saver)."""
        if key is None:
            return None
        with self._lock:
            candidates = list(reversed(self._runs.get(key, ())))
        for run in candidates:  # (asked outside the lock: it reads the saver)
            if belongs(run):
                with self._lock:
                    if id(run) in self._order and self._order[id(run)][1] is run:
                        self._drop(run)
                        return run
        return None

    def _drop(self, run: GraphRun) -> None:
        where = self._order.pop(id(run), None)
        if where is not None:
            runs = self._runs[where[0]]
            runs.remove(run)
            if not runs:
                del self._runs[where[0]]

    def __len__(self) -> int:
        return len(self._order)

    def drain(self, which: Callable[[GraphRun], bool] | None = None) -> list[GraphRun]:
        """Every run waiting (``which``: those it holds for), taken out."""
        with self._lock:
            runs = [run for _, run in self._order.values() if which is None or which(run)]
            for run in runs:
                self._drop(run)
            return runs


class Decisions(NamedTuple):
    """What a run that stopped leaves to the run that continues it on its thread
    (GraphRun's tables of the same names): the tool calls its model asked for (by
    id: the decision's event, step and agent; and the call itself), those a tool
    run or a node's update answered, the call events an interrupt paused, and the
    tasks that raised, which a retry runs again (its node's start then names the
    attempt it retries, as a RetryPolicy attempt does). So a tool call asked for
    before the stop and run after it, or answered by a node's ``ToolMessage``, is
    filed under the decision that asked for it, once."""

    tool_calls: dict[str, tuple[str | None, int, str]]
    asked: dict[str, dict[str, Any]]
    answered: set[tuple[str, str | None]]
    paused_calls: dict[str, str | None]
    failed: dict[str, tuple[str | None, int]]

    @classmethod
    def of_run(cls, run: GraphRun) -> Decisions:
        return cls(
            dict(run.tool_calls),
            _unanswered(run.asked, run.tool_calls, run.answered),
            set(run.answered),
            dict(run.paused_calls),
            dict(run.failed),
        )

    def carry_into(self, run: GraphRun) -> None:
        run.tool_calls.update(self.tool_calls)
        run.asked.update(self.asked)
        run.answered.update(self.answered)
        run.paused_calls.update(self.paused_calls)
        run.failed.update(self.failed)


def _unanswered(
    asked: dict[str, dict[str, Any]],
    decided: dict[str, tuple[str | None, int, str]],
    answered: set[tuple[str, str | None]],
) -> dict[str, dict[str, Any]]:
    """The calls (with their arguments) no tool run or node's update answered yet,
    and those of the latest decision, answered or not (a retry runs its calls
    again, and a node that runs them by their arguments is matched to them): all a
    continuing run needs of them (a stopped run is kept while its thread may be
    retried, and its arguments can be large)."""
    latest = decided.get(next(reversed(asked)), (None,))[0] if asked else None
    return {
        call_id: call
        for call_id, call in asked.items()
        if (event := decided.get(call_id, (None,))[0]) == latest or (call_id, event) not in answered
    }


class Stopped(NamedTuple):
    """A run that ended before its graph did (an error, a stop; in another process,
    also an interrupt): a later ``invoke(None)`` or resume on its thread continues
    it, numbering its steps and events on from ``mark``."""

    mark: RunMark
    at_interrupt: bool = False  # (then invoke(None) is a resume past a static stop)
    decisions: Decisions | None = None
    # what the run was invoked with, as its metadata records it (_invocation.record):
    # a retry with invoke(None) and no context runs with the run's, so records it too
    invoked_with: dict[str, Any] | None = None
    # the checkpoint its last top-level step started from: when that is an edit
    # (update_state), invoke(None) after the stop retries the run, not the edit
    started_from: str | None = None
    # its task id: tells it where none was recorded (durability="exit")
    started_task: str | None = None

    @classmethod
    def of_run(cls, run: GraphRun) -> Stopped:
        last = run.last_checkpoint
        return cls(
            run.session.mark(),
            False,
            Decisions.of_run(run),
            invoked_with(run.session.metadata),
            last[0] if last is not None else None,
            run.last_task,
        )

    @property
    def run_id(self) -> str:
        return self.mark.run_id


# Runs stopped at an interrupt, waiting for ``Command(resume=...)`` (process-wide:
# a resume is often invoked with a fresh callback; one pushed out is finished,
# outcome unknown), and the last run on a thread that raised or was stopped.
PAUSED = Waiting(limit=1024)
# by thread_key: the last run on a thread that raised or was stopped, and the
# latest run started on a thread (a stop that arrives after a newer run started,
# as an async stream's does, is not one a later run continues)
STOPPED: ByThread[Stopped] = ByThread(limit=1024)
LATEST: ByThread[str] = ByThread(limit=1024)


def thread_key(graph: Any, thread_id: str) -> str:
    """A thread of one graph's checkpointer: two graphs of an app may name their
    threads alike (a conversation id), and their runs do not continue (or resume,
    or end) each other. A ``SqliteSaver`` is known by its file, so a graph built
    again for each request, with a connection of its own, is on the same threads;
    any other saver by the object."""
    return f"{_saver_identity(getattr(graph, 'checkpointer', None))}\x1f{thread_id}"


def pause_key(graph_name: str, nodes: list[str], thread_id: str) -> str:
    """Where a run waits at an interrupt for its resume (PAUSED): its thread, of its
    graph as known by its name and nodes. Not by the checkpointer object: a service
    may build the graph, with a saver of its own (Postgres, Redis, AsyncSqliteSaver
    opened per request), for every request, and the approval's request resumes the
    run the first one left waiting; while another graph of the app that names its
    threads alike neither resumes nor ends it."""
    return "\x1f".join([graph_name, *nodes, thread_id])


def _saver_identity(saver: Any) -> str:
    from agentdebug_langgraph._forks import saver_file  # (no cycle at import)

    path = saver_file(saver)
    return f"sqlite:{path}" if path else str(id(saver))


def stopped_elsewhere(
    debugger: Any, thread_id: str, graph_name: str, nodes: list[str]
) -> Stopped | None:
    """The run a resume or a retry in this process continues when no run of this
    process stopped on the thread: the store's latest run of the graph (its name
    and nodes) on it, if that run stopped (at an interrupt, by an error, or by the
    caller) in another process, a resume there being often served by another
    worker. Never raises."""
    if not nodes:  # (a graph not known by its nodes is not told apart)
        return None
    try:
        store = debugger.store
        if store is None:
            return None
        index_threads(store)
        where: tuple[tuple[str, str | tuple[str, ...]], ...] = (
            ("langgraph.thread_id", thread_id),
            ("langgraph.graph", graph_name),
            ("langgraph.nodes", tuple(nodes)),
        )
        runs = store.list_runs(RunQuery(framework=FRAMEWORK, metadata=where, limit=1))
        if not runs or runs[0].status == OutcomeStatus.SUCCESS.value:
            return None
        run = store.load_trajectory(runs[0].id)
    except Exception:
        logging.getLogger("agentdebug.langgraph").exception(
            "agentdebug: the store could not be asked for the thread's last run"
        )
        return None
    lg = run.metadata.get("langgraph")
    lg = lg if isinstance(lg, dict) else {}
    if lg.get("thread_id") != thread_id or lg.get("nodes") != nodes:
        return None  # (a store that does not filter by metadata)
    if not _stopped(run.outcome):
        return None
    if run.outcome.status is OutcomeStatus.RUNNING or was_abandoned(run.outcome):
        waiting = _waits_at_interrupt(run)  # (or its process died in the middle of it)
    else:
        waiting = at_interrupt(run.outcome.reason or "")
    made = (RunMark.of(run), waiting, decisions_of(run), invoked_with(run.metadata))
    return Stopped(*made, *_started_from(run))


def _started_from(run: AgentTrajectory) -> tuple[str | None, str | None]:
    """The checkpoint a stored run's last top-level step started from, and the task
    id of its last top-level step (which tells it where none was recorded)."""
    roots = [
        e
        for e in run.events
        if e.type is EventType.AGENT_START
        and "node" in e.metadata
        and "namespace" not in e.metadata
    ]
    ref = next((e.checkpoint for e in reversed(roots) if e.checkpoint is not None), None)
    task = roots[-1].metadata.get("task_id") if roots else None
    return (ref.checkpoint_id if ref else None), (str(task) if task is not None else None)


def invoked_with(metadata: Any) -> dict[str, Any] | None:
    """A run's record of what it was invoked with (``langgraph.invoked_with``)."""
    lg = metadata.get("langgraph") if isinstance(metadata, dict) else None
    got = lg.get("invoked_with") if isinstance(lg, dict) else None
    return got if isinstance(got, dict) else None


def index_threads(store: Any) -> None:
    """Runs indexed by thread in the store (once per file; a user's store may not
    index), so that the lookup reads one run, not every run's header. An index
    that cannot be made (a read-only file, say) leaves the lookup slower only."""
    index = getattr(store, "index_metadata", None)
    if index is None:
        return
    try:
        index("langgraph.thread_id")
    except Exception as exc:
        logging.getLogger("agentdebug.langgraph").debug("agentdebug: no thread index: %s", exc)


def _waits_at_interrupt(run: AgentTrajectory) -> bool:
    """Whether a run still open in the store waits at an interrupt in its process:
    its last invocation (since its input or resume) recorded one. Otherwise its
    process ended in the middle of it (killed, crashed), and the next call on the
    thread is a retry, not an answer."""
    for e in reversed(run.events):
        if e.type is EventType.CHECKPOINT and e.metadata.get("langgraph_event") == "interrupt":
            return True
        if e.type is EventType.USER_INPUT:
            return False
    return False


def decisions_of(run: AgentTrajectory) -> Decisions:
    """A stored run's :class:`Decisions`, as the callback keeps them while it runs
    (the root-level tasks that raised and were not run again, by namespace)."""
    tool_calls: dict[str, tuple[str | None, int, str]] = {}
    asked: dict[str, dict[str, Any]] = {}
    answered: set[tuple[str, str | None]] = set()
    paused: dict[str, str | None] = {}
    failed: dict[str, tuple[str | None, int]] = {}
    starts: dict[str, tuple[str, int]] = {}  # root node start event id -> (ns, attempt)
    for e in run.events:
        if e.type is EventType.AGENT_START and e.module == "langgraph.node":
            md = e.metadata
            if "namespace" not in md and md.get("task_id"):
                ns = f"{md.get('node')}:{md['task_id']}"
                attempt = md.get("attempt")
                starts[e.id] = (ns, attempt if isinstance(attempt, int) else 1)
                if md.get("retry_of"):
                    failed.pop(ns, None)
            continue
        if e.type is EventType.ERROR and e.parent_id in starts:
            ns, attempt = starts[e.parent_id]
            failed[ns] = (e.parent_id, attempt)
            continue
        if e.type is EventType.LLM_RESPONSE and isinstance(e.output, dict):
            for call in e.output.get("tool_calls") or ():
                if isinstance(call, dict) and isinstance(call.get("id"), str) and call["id"]:
                    tool_calls[call["id"]] = (e.id, e.step_index, e.agent_name or "")
                    asked[call["id"]] = call
            continue
        call_id = e.metadata.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            continue
        if e.type is EventType.TOOL_CALL:
            answered.add((call_id, e.parent_id))
            if "executed_by" in e.metadata:  # filed under a decision of a run it continued
                tool_calls.setdefault(call_id, (e.parent_id, e.step_index, e.agent_name or ""))
                args = e.input if isinstance(e.input, dict) else {}
                asked.setdefault(call_id, {"id": call_id, "name": e.module, "args": args})
        elif e.metadata.get("langgraph_event") == "tool_interrupted":
            paused[call_id] = e.parent_id
    return Decisions(tool_calls, _unanswered(asked, tool_calls, answered), answered, paused, failed)


def _stopped(outcome: Any) -> bool:
    """Whether a run ended before its graph did: still running (waiting at an
    interrupt in its process), closed at an interrupt, raised, or stopped; not one
    that completed (a failed success check) or in which nothing ran."""
    if outcome.status is OutcomeStatus.RUNNING or outcome.error is not None:
        return True
    if was_abandoned(outcome):  # (its process was killed: settled, as it stood)
        return True
    reason = outcome.reason or ""
    return at_interrupt(reason) or reason.startswith(("the run was stopped", "the graph raised"))


def at_interrupt(reason: str) -> bool:
    """Whether a run's outcome reason says it was left waiting at an interrupt (a
    run, or a rerun branch whose answers ran out: its thread's resume continues it)."""
    return reason.startswith((AT_INTERRUPT, BRANCH_AT_INTERRUPT))


def forget_stopped(graph: Any, thread_id: str) -> None:
    """No later ``invoke(None)`` on the thread continues its stopped run (a rerun
    forked on the thread itself, which then goes on from the branch)."""
    STOPPED.take(thread_key(graph, thread_id))


def finish_paused(run: GraphRun, why: str) -> None:
    """End a run waiting at an interrupt that no resume will reach here: outcome
    unknown, ``why`` in the reason."""
    run.session.set_outcome(OutcomeStatus.UNKNOWN, reason=f"{AT_INTERRUPT}; {why}")
    run.session.close()


def retire_paused(run: GraphRun, why: str) -> None:
    """Finish a run waiting at an interrupt that is let go of in this process (too
    many wait; its debugger closed): its resume, when it comes, continues it, as a
    resume in another process does."""
    finish_paused(run, why)
    key = run.thread_key
    if key is not None and LATEST.get(key) == run.session.id:
        STOPPED.park(key, Stopped.of_run(run)._replace(at_interrupt=True))


_CLOSED_WITH: weakref.WeakSet[Any] = weakref.WeakSet()  # debuggers told (on_close)


def closed_with_debugger(run: GraphRun) -> None:
    """Have the runs of ``run``'s debugger that wait at an interrupt retired when
    it closes (``AgentDebug.close``, before its store closes): else they would be
    written at exit to a closed store, and left "running" for good."""
    debugger = run.session.debugger
    if debugger in _CLOSED_WITH or not callable(getattr(debugger, "on_close", None)):
        return
    _CLOSED_WITH.add(debugger)

    def retire() -> None:
        _CLOSED_WITH.discard(debugger)  # (one reused after close is told again)
        for waiting in PAUSED.drain(lambda r: r.session.debugger is debugger):
            retire_paused(waiting, "its debugger was closed before a resume")

    debugger.on_close(retire)


def _close_paused_at_exit() -> None:
    """Runs still waiting at an interrupt when the process ends are closed (outcome
    unknown), not left "running" in the store for good: a resume in another
    process records a run of its own."""
    for run in PAUSED.drain():
        try:
            finish_paused(run, "the process ended before a resume")
        except Exception:
            logging.getLogger("agentdebug.langgraph").exception(
                "agentdebug: a run waiting at an interrupt could not be closed at exit"
            )


atexit.register(_close_paused_at_exit)
