"""How a graph run ends: the final answer, the user's success check, the outcome,
the automatic diagnosis of a failure, and a pause at an interrupt.

The third part of :class:`~agentdebug_langgraph.AgentDebugCallback` (after the
tables in :mod:`._base` and the model and tool events in :mod:`._models`); the
callback itself (:mod:`._callback`) records the graph and its nodes.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, wait
from typing import Any

from agentdebug import AgentDebug, EventType, OutcomeStatus, TraceSession
from agentdebug.capture.auto import (
    ReportCallback,
    diagnose_failure,
    diagnose_in_background,
    in_background,
    warm_up,
)
from agentdebug.capture.encode import safe_repr, safe_str
from agentdebug.schema import DiagnosticReport

from agentdebug_langgraph import _convert, _graph_errors, _invocation, _node_failures, _recording
from agentdebug_langgraph._answers import STRUCTURED, answered_by, said_by_model, structured_by
from agentdebug_langgraph._base import log
from agentdebug_langgraph._checkpoints import pending_nodes
from agentdebug_langgraph._live import live_graph
from agentdebug_langgraph._models import ModelAndToolEvents
from agentdebug_langgraph._node_failures import NodeFailureEvents
from agentdebug_langgraph._replay import ANSWERED
from agentdebug_langgraph._retrievals import ProgramEvents
from agentdebug_langgraph._state import (
    BRANCH_AT_INTERRUPT,
    LATEST,
    PAUSED,
    STOPPED,
    GraphRun,
    NodeRun,
    Stopped,
    closed_with_debugger,
    finish_paused,
    retire_paused,
)

SuccessCheck = Callable[[Any], "bool | str | None"]


def checked_success_check(check: Any, what: str) -> SuccessCheck | None:
    """``check`` as given (``what`` names where it was given, for the error), or a
    TypeError that says what to give: a plain function
    of the final state. An ``async def`` cannot be one: it runs as the graph ends,
    inside LangGraph's callback, where nothing can be awaited (its coroutine,
    unawaited, would read as a passing verdict)."""
    if check is None:
        return None
    if not callable(check):
        raise TypeError(f"{what} takes a function of the final state, not {type(check).__name__}")
    call = getattr(check, "__call__", None)  # noqa: B004  (an object with an async __call__)
    if any(
        f(c)
        for f in (inspect.iscoroutinefunction, inspect.isasyncgenfunction)
        for c in (check, call)
    ):
        raise TypeError(
            f"{what} takes a plain function, not an async one: it "
            "runs as the graph ends, inside LangGraph's callback, where nothing can be "
            "awaited; do the async work in the graph, or judge the state after ainvoke"
        )
    return check  # type: ignore[no-any-return]


class UnavailableCheck:
    """Stands in for a success check a rerun cannot restore (the original run was
    judged by a function with no importable name, and it is not alive in this
    process): the branch's outcome is ``unknown``, with this reason, rather than
    a success for want of a check."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __call__(self, state: Any) -> None:  # (never called: _judge reads the reason)
        return None


NOTHING_RAN = (
    "nothing ran: the graph was invoked without input and the thread had no pending "
    "tasks, so its state is the previous run's (not judged again)"
)


def branch_paused(thread_id: str, why: str = ANSWERED) -> str:
    """Why a rerun branch ended at an interrupt (``why`` completes "the branch
    stopped at an interrupt"), and how to go on."""
    if why.startswith(ANSWERED):
        then = "rerun from a step after the interrupt, or resume"
    else:
        then = "to go on, resume"
    return f"{BRANCH_AT_INTERRUPT}{why}: {then} thread '{thread_id}' with Command(resume=...)"


ENDED_KEPT = 8  # sessions of a callback's latest runs kept to read them back


class RunEnding(ModelAndToolEvents, NodeFailureEvents, ProgramEvents):
    """Ends graph runs; the options it reads are set by AgentDebugCallback."""

    success_check: SuccessCheck | None
    diagnose: bool | str
    _pending: list[Future[DiagnosticReport | None]]
    hold_interrupts: bool
    _held: GraphRun | None
    on_report: ReportCallback | None
    run_ids: list[str]
    reports: list[DiagnosticReport]
    # the latest runs' sessions, read back with what the store has not taken yet
    ended: deque[tuple[str, TraceSession]]

    def _debugger(self) -> AgentDebug:
        raise NotImplementedError

    def _end_graph(self, run: GraphRun, outputs: Any, error: BaseException | None) -> None:
        run.loop = None
        run.frame = None
        _recording.release(run.held)
        run.held = None
        if run.watch is not None:  # (RunStarting._watch_task: ended as usual)
            task, ended = run.watch
            run.watch = None
            task.remove_done_callback(ended)
        # the cancels held for what came after (_node_failures): told apart now, also
        # when the run pauses at an interrupt (a resume is a run segment of its own)
        if error is not None and _node_failures.is_node_timeout(error):
            self._settle_timeout(run, error)  # at the attempt it cut off, not the graph
        if run.cancelled:
            self._settle_stops(run)
        try:
            self._forget(run)
        except Exception:  # never in the way of closing the run
            log.exception("agentdebug: a finished run's table entries could not be dropped")
        session = run.session
        if error is None and (run.interrupted or _has_interrupt(outputs)):
            static = run.interrupted and not run.interrupt_recorded and not _has_interrupt(outputs)
            pending = pending_nodes(live_graph(session.id), run) if static else None
            if pending != ():  # (a breakpoint after the node that ended the graph: done)
                self._pause(run, pending)
                return
        if (
            error is None
            and run.owns_session
            and run.last_step == run.base_step
            and run.input_event is None
        ):
            # invoke(None) on a thread with nothing pending: LangGraph returns the
            # state as the previous run left it; judging it again would fail (and
            # diagnose) that run twice.
            session.set_outcome(OutcomeStatus.UNKNOWN, reason=NOTHING_RAN)
            self._finish(run, False, None)
            return
        failed_exc: Exception | None = None
        if error is not None:
            known = run.node_errors.get(id(error))
            if not isinstance(error, Exception):  # stopped by the caller: not an error
                # (else recorded at its node: an async cancel reaches each task as an
                # exception of its own)
                if (known is None or known[0] is not error) and not run.stopped_at_node:
                    session.record(
                        EventType.CHECKPOINT,
                        step_index=run.last_step,
                        parent_id=run.input_event,
                        module="langgraph.graph",
                        metadata={
                            "langgraph_event": "stopped",
                            "by": type(error).__name__,
                            "graph": run.graph_name,
                        },
                    )
            elif known is None or known[0] is not error:  # not recorded at a node
                at = self._locate(run, error)
                if (
                    at is not None
                    and run.input_event is None
                    and at.metadata.get("langgraph_error") == "empty_input"
                ):  # (invoke(None): the input it was not given)
                    at.parent_id = run.input_event = session.record(
                        EventType.USER_INPUT,
                        step_index=0,
                        metadata={"langgraph_event": "input", "empty": True},
                    )
                session.record(
                    EventType.ERROR,
                    error=error,
                    module="langgraph.graph",
                    **_graph_errors.placed(
                        at,
                        agent=None,
                        step=run.last_step + 1,
                        parent=run.input_event,
                        meta={"graph": run.graph_name},
                    ),
                )
            key = run.thread_key
            if key is not None and LATEST.get(key) == session.id:  # invoke(None) goes on
                STOPPED.park(key, Stopped.of_run(run))
            if isinstance(error, Exception):
                failed_exc = error
                session.set_outcome(
                    OutcomeStatus.FAILURE,
                    error=error,
                    reason=f"the graph raised {type(error).__name__}",
                )
            else:  # stopped by the caller (generator closed, cancelled, Ctrl-C)
                session.set_outcome(
                    OutcomeStatus.UNKNOWN,
                    reason=f"the run was stopped ({type(error).__name__})",
                    stopped_by=type(error).__name__,
                )
            failed = failed_exc is not None
        else:
            try:
                answer = self._record_answer(run, outputs)
            except Exception:  # an odd final state: the run is still closed
                log.exception("agentdebug: the final answer could not be recorded")
                answer = None
            # an agent's own end at a limit (the prebuilt agent's steps run out,
            # create_agent's call limits): the run's failure without a success
            # check; with one, an error only where the check fails
            ran_out = _graph_errors.own_end(answer)
            if ran_out is not None and said_by_model(run, outputs):
                ran_out = None  # (a model's own answer in those words, not an agent's end)
            try:
                if run.lost_route is not None and self.success_check is None:
                    # (the route a node gave was dropped: the run ended short of it)
                    session.set_outcome(
                        OutcomeStatus.FAILURE, final_answer=answer, reason=run.lost_route
                    )
                    failed = True
                elif ran_out is not None and self.success_check is None:
                    reason = self._out_of_steps(run, outputs, ran_out)
                    session.set_outcome(OutcomeStatus.FAILURE, final_answer=answer, reason=reason)
                    failed = True
                else:
                    state = _convert.as_invoked(outputs, run.output_keys)
                    failed = not self._judge(session, state, answer)
                    if failed and ran_out is not None:
                        self._out_of_steps(run, outputs, ran_out)
            except BaseException as stop:  # Ctrl-C or exit in the success check
                session.set_outcome(
                    OutcomeStatus.UNKNOWN,
                    reason=f"the success check was stopped ({type(stop).__name__})",
                    stopped_by=type(stop).__name__,
                )
                self._finish(run, False, None)
                raise
        self._finish(run, failed, failed_exc)

    def _locate(self, run: GraphRun, error: Exception) -> _graph_errors.Located | None:
        """The node an error the graph raised outside its nodes concerns
        (:mod:`agentdebug_langgraph._graph_errors`), from what the run recorded."""
        try:
            graph = live_graph(run.session.id)
            step_timeout = getattr(graph, "step_timeout", None) if graph is not None else None
            if not _graph_errors.may_place(error) and not (
                isinstance(error, TimeoutError) and step_timeout
            ):
                return None  # (a kind it does not place: the run is not read back)
            events = run.session.trajectory().events
            return _graph_errors.locate(
                events, error, input_event=run.input_event, step_timeout=step_timeout
            )
        except Exception:
            log.exception("agentdebug: the graph's error could not be placed at a node")
            return None

    def _locate_inside(self, rec: NodeRun, error: Exception) -> _graph_errors.Located | None:
        """The node of the subgraph it ran that an error of a node running a
        subgraph concerns, when the subgraph's loop raised it (its recursion limit,
        a state schema's error...): no node of the subgraph raised it."""
        if not _graph_errors.may_place(error):
            return None
        try:
            events = rec.run.session.trajectory().events
            at = next((i for i, e in enumerate(events) if e.id == rec.event_id), None)
            if at is None:
                return None
            return _graph_errors.locate(
                events[at:], error, input_event=rec.event_id, step_timeout=None, scope=rec.event_id
            )
        except Exception:
            log.exception("agentdebug: the subgraph's error could not be placed at a node")
            return None

    def _forget(self, run: GraphRun) -> None:
        """Drop what is left of a finished run (nodes cut short by an interrupt or an
        error in a parallel branch), so a long-lived handler does not grow; a model
        call or a retrieval still open is recorded first, as stopped. The
        tables are copied before they are read (``list`` of a dict's items runs in
        C, so no other thread changes it meanwhile): a handler shared by graphs
        running in other threads (``instrument()``) fills them as this runs."""
        for run_id, rec in list(self._nodes.items()):
            if rec.run is run:
                self._nodes.pop(run_id, None)
        for ns, rec in list(self._by_ns.items()):
            if rec.run is run:
                self._by_ns.pop(ns, None)
        for run_id, call in list(self._calls.items()):
            if call[0].run is run and self._calls.pop(run_id, None) is not None:
                if call[1].__class__ is list:  # a model call it was making as it stopped
                    self._stopped_call(run_id, call, "the run ended before the model answered")
                self._streamed.pop(run_id, None)
        for run_id, started in list(self._retrievals.items()):  # (a cancel fires no end)
            if started[0].run is run and self._retrievals.pop(run_id, None) is not None:
                self._retrieved(started, stopped="the run ended before the retriever answered")
        if self._streamed:  # (an entry a chunk made as its call was being ended)
            for key in list(self._streamed):
                if key not in self._calls:
                    self._streamed.pop(key, None)

    def _out_of_steps(self, run: GraphRun, outputs: Any, end: _graph_errors.OwnEnd) -> str:
        """An agent that ended the run itself at a limit (no error raised): its
        error event, at the node that said so; the run's reason."""
        try:
            agent, step, parent = answered_by(
                run, _convert.last_ai_text(outputs, run.messages_key)[1]
            )
            fields = _graph_errors.out_of_steps(
                end, agent=agent, step=step, parent=parent, graph=run.graph_name
            )
            run.session.record(EventType.ERROR, **fields)
        except Exception:
            log.exception("agentdebug: an agent's out-of-steps end could not be recorded")
        return end.reason

    def _record_answer(self, run: GraphRun, outputs: Any) -> Any:
        text, msg = _convert.last_ai_text(outputs, run.messages_key)
        if text is None:  # (ended on a tool's answer: a return_direct tool's)
            text, msg = _convert.tool_ending(outputs, run.messages_key)
        structured = None
        if run.structured is not None and outputs.__class__ is dict:  # (written in this
            structured = outputs.get(STRUCTURED)  # run, not left by a turn before)
        if structured is not None:  # (response_format: the app's answer is this)
            answer: Any = _convert.compact(structured)
            agent, step, parent = structured_by(run, run.structured)
        else:
            answer = (  # (the final state: secret-named fields as its input's)
                text if text is not None else _invocation.redacted(_convert.compact(outputs))
            )
            agent, step, parent = answered_by(run, msg)
            if msg is None or text is None:
                agent, step = None, run.last_step
        run.session.record(
            EventType.FINAL_ANSWER,
            agent_name=agent,
            step_index=step,
            output=answer,
            parent_id=parent,
            module="langgraph.graph",
            metadata={"langgraph_event": "final_state"},
        )
        return answer

    def _judge(self, session: TraceSession, outputs: Any, answer: Any) -> bool:
        """Apply the success check; True when the run counts as a success."""
        verdict: Any = True
        reason = "the graph completed"
        if isinstance(self.success_check, UnavailableCheck):
            session.set_outcome(
                OutcomeStatus.UNKNOWN, final_answer=answer, reason=self.success_check.reason
            )
            return True
        if self.success_check is not None:
            try:
                verdict = self.success_check(outputs)
            except AssertionError as exc:
                verdict = safe_str(exc) or "the success check's assertion failed"
            except Exception as exc:
                log.exception("agentdebug: the success check raised; the outcome is unknown")
                said = safe_str(exc)
                session.set_outcome(
                    OutcomeStatus.UNKNOWN,
                    final_answer=answer,
                    reason=f"the success check raised {type(exc).__name__}"
                    + (f": {said}" if said else ""),
                )
                return True
            reason = "the success check passed"
        else:
            reason = "the graph completed (no success check given)"
        if inspect.isawaitable(verdict):  # (a sync function that returned a coroutine)
            closing = getattr(verdict, "close", None)
            if closing is not None:
                closing()  # not awaited: closed, so Python does not warn of it
            session.set_outcome(
                OutcomeStatus.UNKNOWN,
                final_answer=answer,
                reason="the success check returned a coroutine, not its verdict "
                "(it runs inside LangGraph's callback, where nothing can be awaited)",
            )
            return True
        if isinstance(verdict, tuple) and len(verdict) == 2 and isinstance(verdict[0], bool):
            ok, why = verdict  # (ok, why), as the ReAct plugin's checks return it
            verdict = True if ok else (why if isinstance(why, str) else False)
        if isinstance(verdict, (tuple, list, dict)):  # ({"passed": False}: truthy, a "pass")
            session.set_outcome(
                OutcomeStatus.UNKNOWN,
                final_answer=answer,
                reason=f"the success check returned {_short_repr(verdict)}, a "
                f"{type(verdict).__name__}: return True (or None) for a pass, and a "
                "string, the reason, or False for a failure",
            )
            return True
        if verdict is not None and not isinstance(verdict, (bool, str)):
            try:  # 1, numpy.bool_(True), ...: as Python reads it
                verdict = bool(verdict) or f"the success check returned {_short_repr(verdict)}"
            except Exception:
                verdict = f"the success check returned {type(verdict).__name__}, not a bool"
        if verdict is True or verdict is None:
            session.set_outcome(OutcomeStatus.SUCCESS, final_answer=answer, reason=reason)
            return True
        said = verdict.strip() if isinstance(verdict, str) else ""
        why = said or "the success check failed"
        session.set_outcome(OutcomeStatus.FAILURE, final_answer=answer, reason=why)
        return False

    def _finish(self, run: GraphRun, failed: bool, exc: Exception | None) -> None:
        session = run.session
        if not run.owns_session:
            session.flush()
            return
        # (a run on an event loop: its end written by the writer thread, the loop not
        # held for the disk, nor for seconds by a store another process locked)
        session.close(wait=not run.asynchronous)
        _keep_last(self.run_ids, session.id)
        self.ended.append((session.id, session))  # (a deque with maxlen: atomic)
        if session.outcome is not None and session.outcome.status is OutcomeStatus.SUCCESS:
            _invocation.succeeded(session.id)  # (its live context is kept for fewer runs)
        if run.asynchronous and self.diagnose and not failed:
            warm_up()  # (between runs: a later failure would import it on the loop)
        if failed and self.diagnose:
            trajectory = session.trajectory()
            if in_background(self.diagnose, run.asynchronous):  # (a loop is not held up)
                future = diagnose_in_background(
                    self._debugger(), trajectory, exc=exc, on_report=self._reported
                )
                _keep(self._pending, future)
                return
            report = diagnose_failure(
                self._debugger(), trajectory, exc=exc, on_report=self.on_report
            )
            if report is not None:
                _keep(self.reports, report)

    def _reported(self, report: DiagnosticReport) -> None:
        """A background diagnosis is done (on the diagnosis thread)."""
        _keep(self.reports, report)
        if self.on_report is not None:
            self.on_report(report)

    def wait_for_reports(self, timeout: float | None = None) -> list[DiagnosticReport]:
        """Wait (at most ``timeout`` seconds) for the diagnoses this callback left
        to the background; the reports of those done since the last call (the
        latest 100; ``reports`` lists them too), in the order the runs failed."""
        pending = list(self._pending)
        _, waiting = wait(pending, timeout=timeout)
        collected = [f for f in pending if f not in waiting]
        for f in collected:
            self._pending.remove(f)
        return [r for f in collected if (r := f.result()) is not None]

    def _pause(self, run: GraphRun, pending: tuple[str, ...] | None) -> None:
        """An interrupt: the run waits for ``Command(resume=...)`` on its thread (at a
        static breakpoint, to run the ``pending`` nodes, when known)."""
        session = run.session
        run.node_errors.clear()  # the exceptions are not kept while the run waits
        run.subgraph_loops.clear()
        if not run.interrupt_recorded:  # a static interrupt (interrupt_before/after)
            where = {"interrupt_before": "before", "interrupt_after": "after"}.get(
                str(run.interrupted), ""
            )
            said = f"paused at a breakpoint{f' ({where} a node)' if where else ''}"
            session.record(
                EventType.CHECKPOINT,
                step_index=run.last_step,
                parent_id=run.input_event,
                module="langgraph.interrupt",
                output=f"{said}; next: {', '.join(pending)}" if pending else said,
                metadata={
                    "langgraph_event": "interrupt",
                    "checkpoint_id": run.interrupt_checkpoint,
                    "breakpoint": where or None,
                    "next": list(pending) if pending else None,
                },
            )
        if run.thread_id is None or not run.owns_session:
            if run.thread_id is not None and self.hold_interrupts:  # the executor decides
                session.flush()
                self._held = run
                return
            why = "the graph stopped at an interrupt"
            if not run.owns_session and run.thread_id is not None:  # a rerun branch
                why = branch_paused(run.thread_id)
            self.release_held(why, run)
            return
        session.flush()
        _keep_last(self.run_ids, session.id)  # (readable while it waits)
        # the prompts its model calls were diffed against: a resume restores the state
        # from the checkpoint (new message objects, never the same), so its calls record
        # their prompts whole anyway; kept, each waiting run would hold its conversation
        run.prompts.clear()
        evicted = PAUSED.park(run.pause_key or run.thread_id, run)  # (pause_key: see _state)
        closed_with_debugger(run)
        if evicted is not None and evicted is not run:
            retire_paused(evicted, "too many runs were waiting at an interrupt")

    @property
    def held(self) -> GraphRun | None:
        """The branch run waiting at an interrupt for the executor (``hold_interrupts``)."""
        return self._held

    def release_held(self, why: str, run: GraphRun | None = None) -> None:
        """End a run stopped at an interrupt (by default the held one): its outcome
        is unknown, for the reason ``why``."""
        if run is None:
            run, self._held = self._held, None
        if run is None:
            return
        run.session.set_outcome(OutcomeStatus.UNKNOWN, reason=why)
        self._finish(run, False, None)

    def _finish_paused(self, run: GraphRun, why: str) -> None:
        finish_paused(run, why)


KEPT = 100  # the runs and reports a callback lists (the store has them all)


def _keep(items: list[Any], item: Any) -> None:
    """Append, keeping the last ``KEPT``: a callback that lives as long as a
    service must not grow with every run it records."""
    items.append(item)
    if len(items) > KEPT:
        del items[: len(items) - KEPT]


def _keep_last(run_ids: list[str], run_id: str) -> None:
    """List ``run_id`` as the latest run: a run that paused at an interrupt is
    listed then, and moves to the end when it finishes."""
    if run_id in run_ids:
        run_ids.remove(run_id)
    _keep(run_ids, run_id)


def _short_repr(value: Any, limit: int = 80) -> str:
    text = safe_repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _has_interrupt(outputs: Any) -> bool:
    return isinstance(outputs, dict) and "__interrupt__" in outputs
