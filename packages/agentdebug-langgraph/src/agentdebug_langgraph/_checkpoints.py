"""Finding, in a recorded run and in LangGraph's checkpointer, the state to rerun from.

A blamed step names one node execution (see :mod:`agentdebug_langgraph._state`).
LangGraph restores whole super-steps, not single nodes, so the rerun starts at the
checkpoint taken before the blamed node's super-step (for a node inside a
subgraph: before the super-step of the parent-graph node that contains it); every
node of that super-step runs again. Capture recorded, on each root-level node
start, the task id LangGraph gave it and (with a checkpointer) the checkpoint id;
the task id is what ties a step to a checkpoint exactly, since LangGraph derives
task ids from the checkpoint they run from and lists them as the snapshot's
pending tasks. A branch runs in a thread of its own, made by copying that
checkpoint there (:func:`copy_to_thread`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agentdebug.detect.signals import HANDLES
from agentdebug.errors import AgentDebugError
from agentdebug.schema import AgentEvent, AgentTrajectory, EventType

from agentdebug_langgraph._forks import reader

log = logging.getLogger("agentdebug.langgraph")


@dataclass(frozen=True)
class ResumePoint:
    """The root-level super-step a rerun must redo, as the trajectory recorded it."""

    step: int  # the first step index of the super-step: the branch keeps events before it
    requested_step: int
    nodes: tuple[str, ...]
    task_ids: frozenset[str]
    langgraph_step: int
    checkpoint_id: str | None
    thread_id: str | None


def _is_root_node(event: AgentEvent) -> bool:
    return (
        event.type is EventType.AGENT_START
        and "node" in event.metadata
        and "namespace" not in event.metadata
    )


PRE_MODEL_HOOK = "pre_model_hook"  # the prebuilt agent's node before its model call


def _before_input_hook(
    events: list[AgentEvent], starts: list[AgentEvent], node_event: AgentEvent
) -> AgentEvent:
    """The node to redo for a blamed prebuilt ``agent`` step: its ``pre_model_hook``
    when that ran just before it. The hook makes the model's input
    (``llm_input_messages``) from the messages; forked after it, the agent would read
    the input the hook made before, without the directive. Also when the hook is a
    branch's first node (a later round of the loop): its checkpoint is the branch's
    fork, which is forked again, as the node that fork was made as."""
    if node_event.metadata.get("node") != "agent" or not _is_root_node(node_event):
        return node_event
    before = [e for e in starts if _is_root_node(e) and e.step_index < node_event.step_index]
    if not before or before[-1].metadata.get("node") != PRE_MODEL_HOOK:
        return node_event
    return before[-1]


AFTER_MODEL = ".after_model"  # ends the name of create_agent's hook nodes after its model
AGENT_MODEL = "model"  # create_agent's model node
POST_MODEL_HOOK = "post_model_hook"  # the prebuilt agent's node after its model call
COMMAND_FORK = ", routing with Command(goto)"  # ends a fork's as_node made with a Command


def _before_model_it_checked(starts: list[AgentEvent], node_event: AgentEvent) -> AgentEvent:
    """The node to redo for a blamed hook after a model: ``create_agent``'s
    ``<Middleware>.after_model`` (a guardrail that replaced the model's reply or
    ended the run; several run one after another), the prebuilt agent's
    ``post_model_hook``: the model step it reacted to. Forked before the hook, the
    directive would come after the model's reply, which such a hook reads as the
    last message (a judge model it asks is prompted by the hook, not the state), and
    the model would not run again: no branch could pass."""
    name = node_event.metadata.get("node")
    if not isinstance(name, str) or not _is_root_node(node_event):
        return node_event
    if name.endswith(AFTER_MODEL):
        model = AGENT_MODEL
    elif name == POST_MODEL_HOOK:
        model = "agent"
    else:
        return node_event
    for before in reversed(
        [e for e in starts if _is_root_node(e) and e.step_index < node_event.step_index]
    ):
        node = before.metadata.get("node")
        if model == AGENT_MODEL and isinstance(node, str) and node.endswith(AFTER_MODEL):
            continue  # (create_agent's hooks after the model run one after another)
        return before if node == model else node_event
    return node_event


def resume_point(trajectory: AgentTrajectory, resume_step: int) -> ResumePoint:
    """Where to resume for a blamed ``resume_step``; raises when the run holds no
    LangGraph node events (it was not captured by this plugin)."""
    starts = [
        e for e in trajectory.events if e.type is EventType.AGENT_START and "node" in e.metadata
    ]
    if not starts:
        if isinstance(trajectory.metadata.get("langgraph"), dict):  # captured: nothing ran
            reason = trajectory.outcome.reason or trajectory.outcome.status.value
            raise AgentDebugError(
                f"run '{trajectory.id}' has no node to resume from: it stopped before its "
                f"first node ran ({reason})"
            )
        raise AgentDebugError(
            f"run '{trajectory.id}' has no LangGraph node events to resume from; "
            "capture it with agentdebug_langgraph.AgentDebugCallback (or instrument())"
        )
    at = [e for e in starts if e.step_index == resume_step]
    if not at:
        earlier = [e for e in starts if e.step_index <= resume_step]
        at = earlier[-1:] or starts[:1]
    node_event = at[0]
    handled = node_event.metadata.get(HANDLES)  # an error handler: redo the node it handled
    if isinstance(handled, str):
        node_event = next((e for e in starts if e.id == handled), node_event)
    node_event = _before_model_it_checked(starts, node_event)
    node_event = _before_input_hook(trajectory.events, starts, node_event)
    root_step = node_event.metadata.get("root_step", node_event.step_index)
    # (an error handler is not a task of the checkpoint its failed node started from)
    roots = [e for e in starts if _is_root_node(e) and HANDLES not in e.metadata]
    root = next((e for e in roots if e.step_index == root_step), None)
    if root is None:
        raise AgentDebugError(
            f"run '{trajectory.id}': step {root_step} is not a node of the top-level graph"
        )
    group = _super_step(roots, root)
    meta_lg = trajectory.metadata.get("langgraph")
    lg: dict[str, Any] = meta_lg if isinstance(meta_lg, dict) else {}
    checkpoint = root.checkpoint
    thread = checkpoint.thread_id if checkpoint is not None else None
    return ResumePoint(
        step=min(e.step_index for e in group),
        requested_step=resume_step,
        nodes=tuple(dict.fromkeys(str(e.metadata["node"]) for e in group)),
        task_ids=frozenset(str(e.metadata.get("task_id")) for e in group),
        langgraph_step=int(root.metadata.get("langgraph_step", -1)),
        checkpoint_id=checkpoint.checkpoint_id if checkpoint is not None else None,
        thread_id=thread or (str(lg["thread_id"]) if lg.get("thread_id") else None),
    )


def routed_by_command(trajectory: AgentTrajectory, point: ResumePoint) -> bool | str:
    """Whether a node of the super-step before the resume point ended with a
    ``Command`` that has a ``goto`` (a supervisor routing, a handoff): then, and
    only then, the fork may route with a Command too (an edge's own routing must
    not be overridden). A branch forked so, rerun from its first super-step (a
    loop's next round), is: its router ran before the fork, so it is not among its
    events, and the fork it was made from says so; then the router's name is
    returned, to fork as it again (the checkpoint's own parent names the node it
    routed to, whose edges would start a task of their own)."""
    before = point.langgraph_step - 1
    starts = {
        e.id
        for e in trajectory.events
        if _is_root_node(e)
        and e.step_index < point.step
        and e.metadata.get("langgraph_step") == before
    }
    if not starts:
        lg = trajectory.metadata.get("langgraph")
        fork = lg.get("fork") if isinstance(lg, dict) else None
        fork = fork if isinstance(fork, dict) else {}
        made = str(fork.get("as_node", ""))
        if made.endswith(COMMAND_FORK) and set(point.nodes) <= set(fork.get("nodes") or ()):
            return made.removesuffix(COMMAND_FORK) or True
        return False
    return any(
        e.type is EventType.AGENT_END
        and e.parent_id in starts
        and isinstance(e.output, dict)
        and e.output.get("command") is True
        and bool(e.output.get("goto"))
        for e in trajectory.events
    )


def _super_step(roots: Sequence[AgentEvent], root: AgentEvent) -> list[AgentEvent]:
    """The root-level node starts of ``root``'s super-step: the run of consecutive
    starts with its LangGraph step (a resumed interrupt repeats a step number, so
    only the consecutive ones count)."""
    index = next(i for i, e in enumerate(roots) if e.id == root.id)
    lg_step = root.metadata.get("langgraph_step")
    lo = index
    while lo > 0 and roots[lo - 1].metadata.get("langgraph_step") == lg_step:
        lo -= 1
    hi = index
    while hi + 1 < len(roots) and roots[hi + 1].metadata.get("langgraph_step") == lg_step:
        hi += 1
    group = list(roots[lo : hi + 1])
    if root.checkpoint is not None:
        same = [
            e
            for e in group
            if e.checkpoint is None or e.checkpoint.checkpoint_id == root.checkpoint.checkpoint_id
        ]
        group = same or [root]
    return group


def inheritable(trajectory: AgentTrajectory, point: ResumePoint) -> AgentTrajectory:
    """The trajectory as the branch may inherit it: tool calls that a model decided
    before the resume step but that ran in a node being redone are left out (the
    rerun issues them again)."""
    keep = [
        e
        for e in trajectory.events
        if not (
            e.step_index < point.step
            and isinstance(e.metadata.get("executed_step"), int)
            and e.metadata["executed_step"] >= point.step
        )
    ]
    if len(keep) == len(trajectory.events):
        return trajectory
    return trajectory.model_copy(update={"events": keep})


def find_snapshot(graph: Any, point: ResumePoint, run_id: str) -> Any:
    """The ``StateSnapshot`` taken before the resume point's super-step."""
    thread = {"configurable": {"thread_id": point.thread_id, "checkpoint_ns": ""}}
    if point.checkpoint_id is not None:
        config = {"configurable": {**thread["configurable"], "checkpoint_id": point.checkpoint_id}}
        snap = graph.get_state(config)
        if snap.metadata is not None and _pending(snap, point):
            return snap
    fallback = None
    later = False  # a checkpoint of a step after the resume point's
    snap_count = 0
    for snap in graph.get_state_history(thread):
        snap_count += 1
        if any(task.id in point.task_ids for task in snap.tasks):
            return snap
        step = (snap.metadata or {}).get("step")
        if isinstance(step, int) and step >= point.langgraph_step:
            later = True
        if fallback is None and step == point.langgraph_step - 1 and _pending(snap, point):
            fallback = snap
    if fallback is not None:
        return fallback
    missing = (
        f"run '{run_id}': no checkpoint before step {point.step} (node "
        f"{', '.join(point.nodes)}, LangGraph step {point.langgraph_step}) in thread "
        f"'{point.thread_id}'."
    )
    if later:  # the thread has the run's later state, not the steps in between
        raise AgentDebugError(
            f"{missing} The thread has checkpoints from after that step but not one "
            "for each step, as a run made with durability='exit' leaves them (it saves "
            "only the last). Run the graph with durability 'async' (LangGraph's default) "
            "or 'sync' to rerun it from a step"
        )
    if BRANCH_MARK in str(point.thread_id) and snap_count == 0:
        raise AgentDebugError(
            f"{missing} It is a rerun branch's thread, and the graph's checkpointer has "
            "none of its checkpoints: it was deleted (prune_branch_threads), and the "
            "branch can no longer be rerun (rerun the run it branched from), or the "
            "checkpointer is not the one the branch ran with (an InMemorySaver lives "
            "only as long as its process)"
        )
    raise AgentDebugError(
        f"{missing} The graph's checkpointer must be the one the run was captured with "
        "(an InMemorySaver lives only as long as its process; use SqliteSaver to rerun "
        "stored runs later)"
    )


def _pending(snap: Any, point: ResumePoint) -> bool:
    return set(point.nodes) <= set(snap.next)


def writers_of(graph: Any, snap: Any) -> list[str]:
    """The nodes that wrote ``snap``: the tasks pending in its parent checkpoint."""
    if snap.parent_config is None:
        return []
    parent = graph.get_state(snap.parent_config)
    return list(dict.fromkeys(task.name for task in parent.tasks))


BRANCH_MARK = "~agentdebug-"


def branch_thread(thread_id: str) -> str:
    """A new thread id for a branch of a run on ``thread_id``, named after it."""
    return f"{thread_id}{BRANCH_MARK}{uuid.uuid4().hex[:12]}"


def branch_threads(graph_or_saver: Any, thread_id: str | None = None) -> list[str]:
    """The threads rerun branches made in a graph's checkpointer (``graph_or_saver``:
    the compiled graph, or the checkpointer itself): every one, or those of the
    user's thread ``thread_id``, the least recently used first."""
    return _branches(_saver_of(graph_or_saver), thread_id, "branch_threads")


def _branches(saver: Any, thread_id: str | None, what: str, latest: bool = False) -> list[str]:
    """The branch threads (of ``thread_id``), least recently used first; with
    ``latest`` the order of the newest thread of each branch's mark (its copies'
    too), so that a branch's threads sort together."""
    prefix = f"{thread_id}{BRANCH_MARK}" if thread_id is not None else None
    found: dict[str, str] = {}  # thread -> its latest checkpoint id (ids sort by time)
    try:
        for tid, cid in _threads_of(saver):
            if BRANCH_MARK not in tid or (prefix is not None and not tid.startswith(prefix)):
                continue
            if tid not in found or cid > found[tid]:
                found[tid] = cid
    except asyncio.InvalidStateError as exc:
        raise _on_its_loop(saver, what) from exc
    if latest:
        marks: dict[str, str] = {}
        for tid, cid in found.items():
            mark = tid.rpartition(BRANCH_MARK)[2]
            marks[mark] = max(marks.get(mark, cid), cid)
        return sorted(found, key=lambda t: (marks[t.rpartition(BRANCH_MARK)[2]], found[t]))
    return sorted(found, key=found.__getitem__)


def _on_its_loop(saver: Any, what: str) -> AgentDebugError:
    """An async saver's sync methods were called on its own event loop."""
    return AgentDebugError(
        f"{what}() reads the checkpointer with its synchronous methods, which "
        f"{type(saver).__name__} refuses on its own event loop: call it from a "
        "thread of its own (await asyncio.to_thread(...)), or pass the synchronous "
        "saver on the same database (for SQLite: "
        "SqliteSaver(sqlite3.connect(path, check_same_thread=False)))"
    )


def _namespaces_of(saver: Any, thread_id: str) -> list[str] | None:
    """The checkpoint namespaces a thread has checkpoints in, read from the tables of
    ``InMemorySaver`` and ``SqliteSaver`` without loading a checkpoint; None for
    another saver (read through its ``list``)."""
    from langgraph.checkpoint.memory import InMemorySaver

    storage = getattr(saver, "storage", None)
    if isinstance(saver, InMemorySaver) and isinstance(storage, dict):
        return [str(ns) for ns in list(storage.get(thread_id, {}))]
    if is_sqlite_saver(saver):
        with saver.cursor(transaction=False) as cur:
            rows = cur.execute(
                "SELECT DISTINCT checkpoint_ns FROM checkpoints WHERE thread_id = ?",
                (thread_id,),
            ).fetchall()
        return [str(row[0]) for row in rows]
    return None


def _threads_of(saver: Any) -> Iterator[tuple[str, str]]:
    """(thread id, checkpoint id) of the saver's checkpoints: read from the tables
    of ``InMemorySaver`` and ``SqliteSaver`` without loading a checkpoint, else
    through the saver's ``list``."""
    from langgraph.checkpoint.memory import InMemorySaver

    storage = getattr(saver, "storage", None)
    if isinstance(saver, InMemorySaver) and isinstance(storage, dict):
        for tid, by_ns in list(storage.items()):
            for checkpoints in list(by_ns.values()):
                for cid in list(checkpoints):
                    yield str(tid), str(cid)
        return
    if is_sqlite_saver(saver):
        with saver.cursor(transaction=False) as cur:
            rows = cur.execute(
                "SELECT thread_id, max(checkpoint_id) FROM checkpoints GROUP BY thread_id"
            ).fetchall()
        for tid, cid in rows:
            yield str(tid), str(cid)
        return
    for tup in saver.list(None):
        conf = tup.config["configurable"]
        yield str(conf.get("thread_id")), str(conf.get("checkpoint_id"))


def is_sqlite_saver(saver: Any) -> bool:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:  # (langgraph-checkpoint-sqlite is an extra)
        return False
    return isinstance(saver, SqliteSaver)


def prune_branch_threads(
    graph_or_saver: Any, thread_id: str | None = None, *, keep: int = 0
) -> list[str]:
    """Delete the threads rerun branches made (see :func:`branch_threads`), but the
    newest ``keep`` branches; the deleted thread ids. A branch's copies of the
    threads of graphs its nodes ran go with it. The user's own threads are never
    touched; the branches' recorded runs stay in agentdebug's store, but can no
    longer be rerun or resumed from their threads."""
    if keep < 0:
        raise AgentDebugError(f"prune_branch_threads(keep={keep}): keep must be 0 or more")
    saver = _saver_of(graph_or_saver)
    every = _branches(saver, None, "prune_branch_threads", latest=True)
    # a branch: its thread, and the copies it made of the threads of graphs its nodes
    # ran (``research-1~agentdebug-<its mark>``), pruned together
    groups: dict[str, list[str]] = {}
    for tid in every:
        groups.setdefault(tid.rpartition(BRANCH_MARK)[2], []).append(tid)
    prefix = f"{thread_id}{BRANCH_MARK}" if thread_id is not None else None
    mains = [g for g in groups.values() if prefix is None or any(t.startswith(prefix) for t in g)]
    doomed = [tid for group in mains[: max(0, len(mains) - keep)] for tid in group]
    try:
        for tid in doomed:
            saver.delete_thread(tid)
    except asyncio.InvalidStateError as exc:
        raise _on_its_loop(saver, "prune_branch_threads") from exc
    return doomed


def _saver_of(graph_or_saver: Any) -> Any:
    saver = getattr(graph_or_saver, "checkpointer", graph_or_saver)
    if not callable(getattr(saver, "list", None)) or not callable(
        getattr(saver, "delete_thread", None)
    ):
        raise AgentDebugError(
            f"expected a compiled LangGraph graph with a checkpointer, or a checkpointer, "
            f"not {type(graph_or_saver).__name__}"
        )
    return saver


def delete_thread(graph: Any, thread: str) -> None:
    """Best effort: a saver that cannot delete keeps the thread (prune it later)."""
    try:
        graph.checkpointer.delete_thread(thread)
    except Exception:
        log.warning("agentdebug: branch thread %s could not be deleted", thread, exc_info=True)


def copy_to_thread(graph: Any, snap: Any, thread_id: str) -> Any:
    """``snap``'s checkpoint, and the one before it (which the fork reads to know
    who wrote ``snap``), copied into thread ``thread_id`` as they are stored, their
    pending writes included; the snapshot there. The checkpointer's own ``put``
    and ``put_writes``, so any saver with the synchronous methods takes them."""
    saver = graph.checkpointer
    saved = saver.get_tuple(snap.config)
    if saved is None:  # (find_snapshot just read it)
        raise AgentDebugError(f"checkpoint {snap.config['configurable']} is gone")
    chain = [saved]
    if saved.parent_config is not None:
        parent = saver.get_tuple(saved.parent_config)
        if parent is not None:
            chain.insert(0, parent)
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for tup in chain:
        config = _put_copy(saver, config, tup)
    fork_point = str(snap.config["configurable"]["checkpoint_id"])
    for tup in _kept_subgraphs(saver, snap.config["configurable"]["thread_id"], fork_point):
        ns = tup.config["configurable"]["checkpoint_ns"]
        _put_copy(saver, {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}, tup)
    return graph.get_state(config)


def _put_copy(saver: Any, config: Any, tup: Any) -> Any:
    """One checkpoint and its pending writes, put where ``config`` says."""
    versions = dict(tup.checkpoint.get("channel_versions") or {})
    config = saver.put(config, tup.checkpoint, tup.metadata, versions)
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in tup.pending_writes or ():
        by_task.setdefault(task_id, []).append((channel, value))
    for task_id, writes in by_task.items():
        saver.put_writes(config, writes, task_id)
    return config


def _kept_subgraphs(saver: Any, thread_id: str, before: str) -> list[Any]:
    """For each subgraph that keeps its own history on the thread (compiled with
    ``checkpointer=True``: a namespace without a task id, ``sub``), its latest
    checkpoint from before ``before`` (checkpoint ids sort by time): the memory it
    starts the blamed step with, which the branch's subgraph must start with too."""
    spaces = _namespaces_of(saver, thread_id)
    if spaces is not None:  # (read by namespace: a long thread's root history is not)
        found = []
        for ns in spaces:
            if not ns or ":" in ns.rpartition("|")[2]:
                continue
            where = {"thread_id": thread_id, "checkpoint_ns": ns}
            mark = {"configurable": {**where, "checkpoint_id": before}}
            found += list(saver.list({"configurable": where}, before=mark, limit=1))
        return found
    latest: dict[str, Any] = {}
    for tup in saver.list({"configurable": {"thread_id": thread_id}}):
        conf = tup.config["configurable"]
        ns, cid = conf.get("checkpoint_ns") or "", str(conf.get("checkpoint_id"))
        if not ns or ":" in ns.rpartition("|")[2] or cid >= before:
            continue  # the root's, a subgraph run's own (``sub:<task>``), or later
        if ns not in latest or cid > str(latest[ns].config["configurable"]["checkpoint_id"]):
            latest[ns] = tup
    return list(latest.values())


def pending_nodes(graph: Any, run: Any) -> tuple[str, ...] | None:
    """The nodes a run that paused at a static breakpoint would run next, from its
    thread's state (``get_state(...).next``); empty when nothing is left to run:
    ``interrupt_after`` on the node that ended the graph pauses it all the same.
    None when that cannot be read (no graph alive, no thread, a saver that cannot
    be read from here): the run then waits as at any interrupt."""
    if graph is None or run.thread_id is None:
        return None
    try:  # (on an event loop, through a reader an async saver's file allows)
        saver = reader(graph, bool(run.asynchronous))
        if saver is None:
            return None
        if saver is not graph.checkpointer:
            graph = graph.copy(update={"checkpointer": saver})
        snap = graph.get_state({"configurable": {"thread_id": run.thread_id}})
    except Exception:
        return None
    return () if not snap.next and not snap.interrupts else tuple(map(str, snap.next))


def require_saved_thread(graph: Any, run: AgentTrajectory) -> None:
    """Refuse, before any gate, a rerun on a graph none of whose nodes the run ran
    (another graph of the app given), or whose checkpointer holds nothing of the
    run's thread: a factory's ``InMemorySaver`` in a new process starts empty."""
    ran = {
        str(e.metadata["node"])
        for e in run.events
        if e.type is EventType.AGENT_START and "namespace" not in e.metadata
        and e.metadata.get("node")
    }  # fmt: skip
    nodes = set(getattr(graph, "nodes", None) or ())
    if ran and nodes and not ran & nodes:
        raise AgentDebugError(
            f"cannot rerun run '{run.id}': the graph given is not the one that made it "
            f"(its nodes: {', '.join(sorted(n for n in nodes if not n.startswith('__')))}; "
            f"the run's: {', '.join(sorted(ran))})"
        )
    lg = run.metadata.get("langgraph")
    thread = lg.get("thread_id") if isinstance(lg, dict) else None
    saver = getattr(graph, "checkpointer", None)
    if thread is None or saver is None or saver is True or BRANCH_MARK in str(thread):
        return  # (a branch's thread pruned: the fork says so, naming prune_branch_threads)
    try:
        found = saver.get_tuple({"configurable": {"thread_id": str(thread), "checkpoint_ns": ""}})
    except Exception:  # (a saver with async reads only: the rerun itself finds out)
        return
    if found is None and not ran:
        raise AgentDebugError(f"cannot rerun run '{run.id}': {_nothing_ran(run, str(thread))}")
    if found is None:
        raise AgentDebugError(
            f"cannot rerun run '{run.id}': the graph's checkpointer "
            f"({type(saver).__name__}) holds nothing of its thread '{thread}' (an "
            "InMemorySaver a graph factory makes starts empty in each process: give the "
            "factory's graph a saver on disk, SqliteSaver, to rerun from another process)"
        )


def _nothing_ran(run: AgentTrajectory, thread: str) -> str:
    """Why a run that ran no node has nothing to fork (its thread holds nothing)."""
    error = run.outcome.error if run.outcome is not None else None
    kind = error.type if error is not None else None
    raised = f" (the graph raised {kind} first)" if kind else ""
    said = (
        "LangGraph's EmptyInputError: the graph was invoked with no input on a thread "
        "that holds no checkpoint to go on from (a new thread id, or one another "
        "checkpointer keeps); invoke it with the run's input, or with the thread id of "
        "the run to continue"
        if kind == "EmptyInputError"
        else "fix what it raised and invoke the graph again"
    )
    return (
        f"no node of it ran{raised}, so no state of its thread '{thread}' was saved to fork. {said}"
    )


def forks_at(run: AgentTrajectory, step: int) -> list[AgentEvent]:
    """The forks a branch run recorded at ``step``: rerun from that step again (the
    loop's next round), its state holds their corrections as well as the new one,
    so the new branch records them too (the steps before are inherited anyway)."""
    return [
        e
        for e in run.events
        if e.step_index == step
        and e.type is EventType.USER_INPUT
        and e.metadata.get("langgraph_event") == "fork"
    ]
