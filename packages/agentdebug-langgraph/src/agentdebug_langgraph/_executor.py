"""Rerun a LangGraph run from the checkpoint before the blamed node, the LangGraph way.

``LangGraphRerunExecutor.rerun(request)``:

1. finds the checkpoint before the blamed node's super-step in the graph's own
   checkpointer (``get_state`` / ``get_state_history``);
2. copies that checkpoint and the one before it (with their pending writes) into a
   thread of the branch's own, so that the run's thread, the user's conversation,
   is left as it was (``isolate=False`` forks on it instead, LangGraph's own time
   travel, and the branch then becomes the thread's latest state); the graph's
   long-term store is read as of the fork, and not written (:mod:`._branch_store`);
3. forks it with ``update_state``: the directive goes in as a human message on the
   state's ``messages`` key (or the recoverer's ``state_patch`` is applied), made
   ``as_node`` the node that wrote that checkpoint, so the edges LangGraph
   re-evaluates lead to the blamed node again; the fork is checked to have the
   blamed node pending before anything runs (:mod:`agentdebug_langgraph._fork`);
4. runs from the fork with ``graph.invoke(None, fork_config)``, recording the
   branch with :class:`AgentDebugCallback` into a trajectory that starts with the
   original's events before the resume step and points at the original
   (``parent_id``, ``metadata['branch']``); a branch that stops at an interrupt the
   original's human answered is given that answer
   (:mod:`agentdebug_langgraph._replay`).

It needs the graph that made the run, with the same checkpointer. Give it
directly (``LangGraphRerunExecutor(graph)``); or, for stored runs, let it find the
graph: still alive in this process, or rebuilt from the ``graph_factory``
(``"module:function"``) the run was captured with.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.capture.encode import safe_str
from agentdebug.errors import AgentDebugError
from agentdebug.rerun.branch import branch_debugger, start_branch
from agentdebug.schema import AgentTrajectory, CheckpointRef, RecoveryPlan, RerunRequest

from agentdebug_langgraph import _invocation
from agentdebug_langgraph._aliased import aliasing
from agentdebug_langgraph._branch_invoke import invoker, made_async, runs_async
from agentdebug_langgraph._branch_store import branch_view, node_spans, store_note
from agentdebug_langgraph._callback import AgentDebugCallback
from agentdebug_langgraph._checkpoints import (
    ResumePoint,
    branch_thread,
    copy_to_thread,
    delete_thread,
    find_snapshot,
    forks_at,
    inheritable,
    resume_point,
    routed_by_command,
)
from agentdebug_langgraph._convert import compact, messages_key, short_text
from agentdebug_langgraph._ending import (
    SuccessCheck,
    UnavailableCheck,
    branch_paused,
    checked_success_check,
)
from agentdebug_langgraph._fork import (
    directive_message,
    directive_text,
    fork,
    no_key,
    over_budget,
    remaining_budget,
    require_delivered,
    require_rerunnable,
    require_state_keys,
    require_subgraph_reads,
    state_keys,
)
from agentdebug_langgraph._inner_threads import inner_threads
from agentdebug_langgraph._live import (
    default_debugger,
    live_graph,
    note_check,
    note_graph,
    recording_branch,
)
from agentdebug_langgraph._replay import (
    Answer,
    check_policy,
    recorded_answers,
    replay_for,
    replay_note,
    stop_of,
    waiting,
)
from agentdebug_langgraph._requirements import (
    HOW_TO_CHECKPOINT,
    require_checkpointer,
    require_state_graph,
)
from agentdebug_langgraph._specs import UNJUDGED, checked_update, load_spec, recorded_check, updated
from agentdebug_langgraph._state import ASYNC, FRAMEWORK, decisions_of, forget_stopped
from agentdebug_langgraph._tool_steps import retried

log = logging.getLogger("agentdebug.langgraph")
_CACHE_KEY = "__pregel_cache"  # LangGraph's configurable key for a run's node cache


DirectiveUpdate = Callable[[RerunRequest, Any], dict[str, Any]]


class LangGraphRerunExecutor:
    """The ``RerunExecutor`` for LangGraph (``framework = "langgraph"``).

    ``graph``: the compiled graph (found from the run when omitted). ``debugger``:
    where the branch is recorded (default: the store the closed loop names in the
    request, else the shared ``AgentDebug()``). The branch is invoked with the run's
    own ``configurable`` keys, runtime ``context`` and recursion limit (the very
    objects when the run was made in this process, else as recorded; see
    :mod:`agentdebug_langgraph._invocation`); ``config``: run config for the branch
    over them (``recursion_limit``, ``configurable`` keys), ``context``: the runtime
    context instead of the run's.
    ``success_check``: judges the branch's final state, as in
    :class:`AgentDebugCallback` (default: the one the run was captured with, when it
    was an importable function). ``directive_key``: the state key that takes the
    directive as a message (default: the graph's conversation, ``messages`` or the
    key an ``add_messages`` reducer keeps). ``directive_update(request, snapshot)``:
    build the state update yourself (for graphs without a message list).
    ``asynchronous``: run the branch with ``ainvoke`` (graphs whose nodes are
    coroutines), or with ``invoke`` when False; by default as the run was made
    (``ainvoke``/``astream`` record it, ``metadata["langgraph"]["asynchronous"]``).
    The checkpoints are read and forked with the synchronous methods, so give the
    graph with ``InMemorySaver`` or ``SqliteSaver`` (the branch itself then runs
    through ``AsyncSqliteSaver`` on the same file). ``isolate=False``: fork on the
    run's own thread (LangGraph's time travel) instead of a thread of the branch's
    own, on the graph's store itself. ``replay_answers``: how a branch that
    stops at an interrupt gets the answer the original's human gave there:
    ``"same-question"`` (default), ``"same-node"`` or ``"never"`` (see
    :mod:`agentdebug_langgraph._replay`).
    """

    framework = FRAMEWORK

    def __init__(
        self,
        graph: Any = None,
        *,
        debugger: AgentDebug | None = None,
        config: dict[str, Any] | None = None,
        context: Any = None,
        success_check: SuccessCheck | None = None,
        directive_key: str | None = None,
        directive_update: DirectiveUpdate | None = None,
        asynchronous: bool | None = None,
        isolate: bool = True,
        replay_answers: str = "same-question",
    ) -> None:
        self.graph = graph
        self.debugger = debugger
        self.config = _invocation.checked_config(config)
        self.context = context
        self.success_check = checked_success_check(
            success_check, "LangGraphRerunExecutor(success_check=...)"
        )
        self.directive_key = directive_key
        self.directive_update = checked_update(directive_update)
        if asynchronous not in (None, True, False) or not isinstance(isolate, bool):
            name, value = (
                ("asynchronous", asynchronous)
                if asynchronous not in (None, True, False)
                else ("isolate", isolate)
            )
            raise TypeError(
                f"LangGraphRerunExecutor({name}=...) takes True or False"
                + (" (or None: as the run was made)" if name == "asynchronous" else "")
                + f", not {value!r}"
            )
        self.asynchronous = asynchronous
        self.isolate = isolate
        self.replay_answers = check_policy(replay_answers)
        self._made: dict[str, Any] = {}  # factory -> the graph a preflight made with it

    # -- the protocol ---------------------------------------------------------------------

    def rerun(self, request: RerunRequest) -> AgentTrajectory:
        original = request.trajectory
        graph, factory = self._graph_for(original)
        require_state_graph(graph, original.id, factory)
        require_checkpointer(
            graph, original.id, factory, saved=any(e.checkpoint for e in original.events)
        )
        invocation = self._invocation_for(original, graph)
        lg = original.metadata.get("langgraph")
        lg = lg if isinstance(lg, dict) else {}
        asynchronous = runs_async(graph, self.asynchronous, made_async(original), original.id)
        invoke = invoker(graph, invocation.context, asynchronous)  # (refused first)
        require_rerunnable(graph, original, self.directive_key)  # (another graph given)
        point = resume_point(original, request.resume_step)
        if point.thread_id is None:
            raise AgentDebugError(
                f"cannot rerun run '{original.id}' from a checkpoint: it was captured "
                f"without a thread id, so LangGraph saved no state for it. To fix: "
                f"{HOW_TO_CHECKPOINT}"
            )
        snap = find_snapshot(graph, point, original.id)
        thread = point.thread_id
        before = lg.get("fork")
        first_fork = before.get("as_of") if isinstance(before, dict) else None
        users = (before.get("original_thread_id") if isinstance(before, dict) else None) or (
            point.thread_id  # the user's thread, also for a branch's branch
        )
        # the branch's own thread; with isolate=False a scratch copy the fork is tried
        # on first, so that a refusal leaves the run's thread untouched
        copy, kept = branch_thread(str(users)), True
        try:
            trial = copy_to_thread(graph, snap, copy)
            if self.isolate:
                thread, snap = copy, trial
            else:
                self._fork(graph, trial, request, original, point)
                delete_thread(graph, copy)
                kept = False
            values, fork_config, as_node = self._fork(graph, snap, request, original, point)
        except Exception:
            if kept:  # no branch, so no branch thread left behind
                delete_thread(graph, copy)
            raise
        runner = graph  # (isolated: on the store as of the fork, its writes kept apart)
        if self.isolate:
            noted = before.get("store") if before else None  # (a dict; before, a text)
            first = noted.get("read_as_of") if isinstance(noted, dict) else None
            spans = node_spans(original, point.step)
            runner = branch_view(graph, str(point.thread_id), snap.created_at, thread, first, spans)
        else:  # the user's thread goes on from the branch now
            forget_stopped(graph, thread)
        # its nodes see the user's thread id, its checkpoints go to the branch's (with
        # isolate=False, to the thread forked: a branch's, for a branch of a branch)
        alias = (str(users), thread) if str(users) != thread else None
        invoke = invoker(runner, invocation.context, asynchronous, alias)
        fork_id = str(fork_config["configurable"]["checkpoint_id"])
        budget = remaining_budget(original, (snap.metadata or {}).get("step"))
        limit = budget[0] if budget is not None and "recursion_limit" not in self.config else None
        # the executor's own debugger, else the store the closed loop keeps branches in
        debugger = self.debugger or (
            branch_debugger(request) if request.store else default_debugger()
        )
        effective = request.model_copy(
            update={"resume_step": point.step, "trajectory": inheritable(original, point)}
        )
        fork_info = {
            "from_checkpoint_id": snap.config["configurable"]["checkpoint_id"],
            "checkpoint_id": fork_id,
            "thread_id": thread,
            "original_thread_id": users,
            "forked_thread_id": point.thread_id,
            "as_node": as_node,
            "nodes": list(point.nodes),
            "requested_resume_step": point.requested_step,
            "resume_step": point.step,
            "as_of": min(snap.created_at, first_fork or snap.created_at),  # (the chain's)
        }
        if limit is not None and budget is not None:
            fork_info.update(recursion_limit=limit, steps_left=budget[1])
        if runner is not graph:  # (see _branch_store)
            fork_info["store"] = store_note(runner.store)
        retry = not values and not request.state_patch and self.directive_update is None
        if retry:
            fork_info["directive"] = (
                f"not given: {', '.join(point.nodes)} runs the model's tool calls and reads "
                "no directive, so its step is rerun as it was (a retry)"
            )
        # no node cache, the graph's or a subgraph's own: a node served from it would
        # replay what the run did (LangGraph takes the key wherever it is set)
        uncached = True
        fork_info["cache"] = "off"
        meta = {"langgraph": {**lg, "thread_id": thread, "fork": fork_info}}  # (its own)
        meta["langgraph"].pop(ASYNC, None)
        if asynchronous:  # as the branch ran (a branch of it runs so too)
            meta["langgraph"][ASYNC] = True
        check = self._success_check(original)
        given = effective.model_copy(update={"directive": ""}) if retry else effective
        with start_branch(debugger, given, framework=FRAMEWORK, metadata=meta) as session:
            if check is not None and not isinstance(check, UnavailableCheck):
                note_check(session.id, check)  # a later round reruns this branch
            _invocation.note_invocation(session.id, invocation)  # (as the check)
            for earlier in forks_at(original, point.step):  # in the forked state too
                session.record_event(earlier, metadata={"inherited_from": original.id})
            fork_event = session.record(
                EventType.USER_INPUT,
                step_index=point.step,
                input=compact(values) if values else None,
                module="agentdebug.rerun",
                metadata={
                    "langgraph_event": "fork",
                    "as_node": as_node,
                    **({"retry": True} if retry else {}),
                },
                checkpoint=CheckpointRef(
                    framework=FRAMEWORK,
                    checkpoint_id=fork_id,
                    thread_id=thread,
                    namespace="",
                    extra={"forked_from": fork_info["from_checkpoint_id"]},
                ),
            )
            callback = AgentDebugCallback(
                debugger,
                session=session,
                first_step=point.step,
                parent_event=fork_event,
                diagnose=False,
                success_check=check,
                hold_interrupts=True,
            )
            callback.inherited = decisions_of(effective.trajectory)
            config = self._run_config(fork_config, callback, invocation, limit, uncached)
            if self.isolate:  # (isolate=False: the branch is the run's continuation)
                callback.inner = inner_threads(
                    session.id, original, snap.created_at, alias, graph.checkpointer
                )
            if alias is not None:
                callback.thread_alias = alias
                config["configurable"]["thread_id"] = users  # (what its nodes read)
            stopped = "the branch stopped before finishing"
            try:
                with recording_branch(callback), aliasing(graph, alias):
                    invoke(config, None)
                    answers = recorded_answers(original, point.step)
                    self._replay(graph, invoke, callback, answers, config, original.id, thread)
            except Exception as exc:  # the branch failed; its trajectory says how
                log.info("agentdebug: branch of run %s raised %s", original.id, exc)
                said = f"{type(exc).__name__}: {safe_str(exc)}"
                stopped = f"{stopped} ({said})"
                why = f", and giving it the original's answer failed ({said})"
                callback.release_held(branch_paused(thread, why))  # (if held)
            finally:
                callback.release_held(branch_paused(thread, ", and the rerun was stopped"))
                note_graph(session.id, graph)  # (not an async twin: a later round reruns it)
            if session.outcome is None:  # (it raised before the graph started)
                session.set_outcome(OutcomeStatus.UNKNOWN, reason=stopped)
            passed = session.outcome is not None and session.outcome.status is OutcomeStatus.SUCCESS
            if limit is not None and budget is not None and passed:
                late = over_budget(session.trajectory(), budget[1])
                if late is not None:  # (it passed where the run could not have gone)
                    session.set_outcome(OutcomeStatus.FAILURE, reason=late)
        return session.trajectory()

    # -- the pieces ------------------------------------------------------------------------

    def preflight(
        self,
        trajectory: AgentTrajectory,
        *,
        scorer: str | None = None,
        resume_step: int | None = None,
        state_patch: dict[str, Any] | None = None,
    ) -> None:
        """What :meth:`rerun` would refuse that is known without running anything:
        no graph and no recorded factory, a factory that cannot be imported or that
        raises, a run recorded with no checkpointer, a graph that is not a
        ``StateGraph`` or has no checkpointer, ``asynchronous=False`` for nodes that
        only run as coroutines, what the run was invoked with that this process
        cannot give (a secret's configurable key, a runtime context); and, for a
        branch the ``scorer`` judges by its recorded outcome (the default one, when
        the run has no reference answer), a success check that cannot be had here
        (the branch would run, tools and all, to no verdict). The closed loop asks
        before its gate, so no one approves a rerun that cannot run. A recorded
        factory is called here (its graph is the one the rerun then uses); a
        recorded check is imported, not called. ``resume_step``, the step the plan
        reruns from: also a blamed step a directive cannot reach (inside a tool);
        with ``state_patch`` (the plan's, ``{}`` for none), a directive alone that
        the graph's state has no messages key to carry."""
        check = self._success_check(trajectory)
        unjudged = None
        if isinstance(check, UnavailableCheck) and (
            scorer in ("outcome", None) or (scorer == "default" and not trajectory.reference_answer)
        ):
            why = check.reason.replace(UNJUDGED, "a branch's outcome would be left unknown")
            unjudged = f"a branch could not be judged: {why}"
        try:  # (first what no option fixes: the graph; then the check, or both at once)
            self._preflight_graph(trajectory, resume_step, state_patch)
        except AgentDebugError as exc:
            raise AgentDebugError(f"{exc}. Also, {unjudged}" if unjudged else str(exc)) from exc
        if unjudged is not None:
            raise AgentDebugError(unjudged)

    def _preflight_graph(
        self, trajectory: AgentTrajectory, resume_step: int | None, patch: Any = None
    ) -> None:
        graph, spec = self._found(trajectory)
        saved = any(e.checkpoint for e in trajectory.events)
        if graph is None:
            load_spec(str(spec), "graph factory")
            if not saved:
                require_checkpointer(None, trajectory.id, spec, saved=False)
            graph, spec = self._graph_for(trajectory)
            self._made[str(spec)] = graph  # (for the rerun: the factory is called once)
        require_state_graph(graph, trajectory.id, spec)
        require_checkpointer(graph, trajectory.id, spec, saved=saved)
        runs_async(graph, self.asynchronous, made_async(trajectory), trajectory.id)
        self._invocation_for(trajectory, graph)
        require_rerunnable(graph, trajectory, self.directive_key)  # (before any gate)
        if resume_step is not None and self.directive_update is None:
            try:
                point = resume_point(trajectory, resume_step)
            except AgentDebugError:  # (the rerun says why)
                return
            # (refused here when it cannot help)
            if not retried(graph, trajectory, point) and patch == {}:
                key = self._directive_key(graph)  # (a directive alone: somewhere to go)
                keys = state_keys(graph) | set(getattr(graph, "channels", None) or ())
                if "__root__" in keys:  # (a state of one value: the keys it holds there)
                    held = find_snapshot(graph, point, trajectory.id).values
                    keys = set(held) if isinstance(held, dict) else set()
                    if key not in keys:
                        raise no_key(key, keys)
                elif key not in keys:
                    raise no_key(key, state_keys(graph))

    def _invocation_for(self, trajectory: AgentTrajectory, graph: Any) -> _invocation.Invocation:
        """What the branch is invoked with (refused when this process cannot give it)."""
        given = self.config.get("configurable")
        configurable = dict(given) if isinstance(given, dict) else {}
        return _invocation.for_branch(
            trajectory, graph, configurable=configurable, context=self.context
        )

    def plan_notes(self, trajectory: AgentTrajectory, plan: RecoveryPlan) -> list[str]:
        """For the gate: a blamed tool node's step is a retry, with no directive; the
        original's answers the branch, forked where it will be (a subgraph's node, a
        fan-out's group: before the blamed step), is given."""
        step = plan.resume_step
        if step is None:
            return []
        notes: list[str] = []
        with contextlib.suppress(AgentDebugError):  # (not this plugin's run: as given)
            point = resume_point(trajectory, step)
            step = point.step
            found, spec = self._found(trajectory)  # (or the graph the preflight made)
            graph = found if found is not None else self._made.get(str(spec))
            plain = not plan.state_patch and self.directive_update is None
            if plain and retried(graph, trajectory, point):
                notes.append(
                    f"{', '.join(point.nodes)} runs the model's tool calls and reads no "
                    "directive: its step is rerun as it was (a retry), without the directive"
                )
        note = replay_note(trajectory, step, self.replay_answers)
        return [*notes, note] if note else notes

    def _graph_for(self, trajectory: AgentTrajectory) -> tuple[Any, str | None]:
        """The graph to rerun, and the recorded factory that made it (None: given,
        or alive in this process), for the refusals to name."""
        graph, spec = self._found(trajectory)
        if graph is not None:
            return graph, None
        made = self._made.pop(str(spec), None)  # (made by the preflight)
        if made is not None:
            return made, spec
        factory = load_spec(str(spec), "graph factory")
        try:
            made = factory()
        except (Exception, SystemExit) as exc:  # the user's code: its error, named (an
            raise AgentDebugError(  # app's "sys.exit('no database')" too), not a traceback
                f"cannot rerun run '{trajectory.id}': its graph factory '{spec}' raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        return made, spec

    def _found(self, trajectory: AgentTrajectory) -> tuple[Any, str | None]:
        """The graph given or alive in this process (and None), else None and the
        spec of the factory the run recorded; neither is an error saying what to do."""
        if self.graph is not None:
            return self.graph, None
        for run_id in (trajectory.id, trajectory.parent_id):
            graph = live_graph(run_id) if run_id else None
            if graph is not None:
                return graph, None
        lg = trajectory.metadata.get("langgraph")
        spec = lg.get("graph_factory") if isinstance(lg, dict) else None
        if isinstance(spec, str) and spec:
            return None, spec
        raise AgentDebugError(
            f"cannot rerun run '{trajectory.id}': its graph is not in this process and "
            "the run did not record how to rebuild it. Capture with "
            "AgentDebugCallback(graph_factory='module:function') (a function returning "
            "the compiled graph, with a persistent checkpointer), or construct "
            "LangGraphRerunExecutor(graph) with the compiled graph yourself"
        )

    def _success_check(self, trajectory: AgentTrajectory) -> SuccessCheck | None:
        """What judges the branch: the executor's own check, else the one that
        judged the run (alive in this process, or imported by its recorded name).
        A run judged by a check that can be neither gets an ``unknown`` branch
        saying so: judged without it, the branch would pass for want of a check."""
        if self.success_check is not None:
            return self.success_check
        return recorded_check(trajectory)  # type: ignore[no-any-return]

    def _fork(
        self,
        graph: Any,
        snap: Any,
        request: RerunRequest,
        original: AgentTrajectory,
        point: ResumePoint,
    ) -> tuple[dict[str, Any], Any, str]:
        """The update, forked on ``snap``'s thread and checked to reach the blamed
        node: (the update, the fork's config, the node it was made as)."""
        routed = routed_by_command(original, point)
        plain = not request.state_patch and self.directive_update is None
        if plain and retried(graph, original, point):
            # A node that runs the model's tool calls, blamed itself, reads no
            # directive; one after the model's call would leave the call unanswered
            # (tools_condition then routes to END). Its step is rerun as it was: a
            # retry (an outage's fix; refused where it could not change the step).
            fork_config, as_node = fork(graph, snap, {}, point, routed_by_command=routed)
            return {}, fork_config, as_node
        values = self._update(graph, request, snap)
        if not request.state_patch and self.directive_update is None:
            require_subgraph_reads(graph, original, point, self._directive_key(graph))
        fork_config, as_node = fork(graph, snap, values, point, routed_by_command=routed)
        if not request.state_patch and self.directive_update is None:
            require_delivered(graph, fork_config, original, point, directive_text(request))
        return values, fork_config, as_node

    def _update(self, graph: Any, request: RerunRequest, snap: Any) -> dict[str, Any]:
        """The state update that carries the correction into the fork: the directive
        added to the messages (to those the state holds, for a key without a reducer,
        which an update replaces)."""
        if request.state_patch:
            require_state_keys(graph, request.state_patch, request.trajectory.id)
            return dict(request.state_patch)
        if self.directive_update is not None:
            return updated(self.directive_update, request, snap, graph)
        return directive_message(graph, snap, self._directive_key(graph), request)

    def _directive_key(self, graph: Any) -> str:
        """The state key the directive goes to: as given, else the graph's
        conversation (``messages``, or the key an ``add_messages`` reducer keeps)."""
        return self.directive_key or messages_key(graph)

    def _replay(
        self,
        graph: Any,
        invoke: Callable[[Any, Any], Any],
        callback: AgentDebugCallback,
        answers: list[Answer],
        config: Any,
        original_id: str,
        thread: str,
    ) -> None:
        """While the branch waits at an interrupt, resume it on its thread with the
        original's next answer, if the policy lets it; else end it saying why."""
        configurable = {k: v for k, v in config["configurable"].items() if k != "checkpoint_id"}
        config = {**config, "configurable": configurable}  # the thread's latest state
        state = {"configurable": {**configurable, "thread_id": thread}}  # (as stored)
        used = 0
        while (held := callback.held) is not None:
            answer = answers[used] if used < len(answers) else None
            snapshot = graph.get_state(state)
            pending = waiting(snapshot)
            stop = None if pending else stop_of(snapshot)
            plan = replay_for(answer, pending, self.replay_answers, given=used, stop=stop)
            if plan.refused is not None:
                callback.release_held(branch_paused(str(held.thread_id), plan.refused))
                return
            used += 1
            note = plan.note or {}
            if note.get("question_matches") is False:  # (same-node: say so where it shows)
                log.warning(
                    "agentdebug: the branch was given the original human's answer to %s "
                    "for another question (replay_answers='same-node')",
                    short_text(note.get("original_question"), 120),
                )
            callback.resume_note = {**note, "replayed_from_run": original_id}
            invoke(config, plan.resume)

    def _run_config(
        self,
        fork_config: dict[str, Any],
        callback: AgentDebugCallback,
        invocation: _invocation.Invocation,
        budget: int | None = None,
        uncached: bool = False,
    ) -> Any:
        """The branch's run config: the run's configurable keys (the executor's over
        them) and recursion limit (what was left of it, for a run that hit it), the
        fork's thread and checkpoint, the executor's other config, its callbacks and
        the branch's recorder."""
        extra = dict(self.config)
        extra.pop("configurable", None)  # (in the invocation already)
        configurable = {**invocation.configurable, **fork_config["configurable"]}
        if uncached:  # (LangGraph's key for the run's node cache; its subgraphs' too)
            configurable[_CACHE_KEY] = None
        callbacks = list(extra.pop("callbacks", None) or [])
        limit = budget if budget is not None else invocation.recursion_limit
        if limit is not None:
            extra.setdefault("recursion_limit", limit)
        return {**extra, "configurable": configurable, "callbacks": [*callbacks, callback]}
