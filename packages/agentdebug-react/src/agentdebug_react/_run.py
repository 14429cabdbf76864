"""The run of a ReAct loop being recorded: checkpoints, steps, the outcome.

A :class:`ReactRun` is what ``loop.capture(goal)`` returns and what
``loop.run(goal)`` drives. Every step is recorded as the events the rest of
agentdebug reads (REASONING, TOOL_CALL, TOOL_RESULT or OBSERVATION, FINAL_ANSWER,
ERROR), preceded by a CHECKPOINT holding the state before it, so the run can be
rerun from any step later, from the store alone.

Capture never breaks the agent: a failure of the recording (a snapshot that
cannot be taken, a store that is gone) is logged and the loop goes on. The user's
own exceptions propagate unchanged; the run is then diagnosed and the summary
added to the exception as a note.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic

from agentdebug.capture.auto import diagnose_failure, diagnose_in_background, in_background
from agentdebug.capture.session import TraceSession
from agentdebug.schema import (
    CheckpointRef,
    DiagnosticReport,
    ErrorInfo,
    EventType,
    OutcomeStatus,
)

from agentdebug_react._snapshot import CHECKPOINT_KEY, Checkpointer
from agentdebug_react._step import FRAMEWORK, Message, ReactResult, S, Step, StepContext

if TYPE_CHECKING:
    from agentdebug_react._loop import ReactLoop

log = logging.getLogger("agentdebug.react")

#: How the directive reaches the model on a rerun, unless the loop says otherwise.
DIRECTIVE_PREFIX = (
    "A review of an earlier attempt at this task found the mistake that made it fail. "
    "Correction to follow from here on: "
)


def default_directive_message(directive: str) -> Message:
    """The directive as a user message the model reads before redoing the step."""
    return {"role": "user", "content": f"{DIRECTIVE_PREFIX}{directive}"}


class ReactRun(Generic[S]):
    """One run of the loop being recorded. Use as a context manager; call
    :meth:`step` (or :meth:`astep`) until :attr:`done`; read :attr:`result` after."""

    def __init__(
        self,
        loop: ReactLoop[S],
        session: TraceSession,
        ctx: StepContext[S],
        *,
        first_step: int,
        record_goal: bool,
        directive: str | None = None,
        diagnose: bool = True,
    ) -> None:
        self.loop = loop
        self.session = session
        self.ctx = ctx
        self.done = False
        self.answer: Any = None
        self.answered = False
        self.steps = 0
        self.result: ReactResult[S] | None = None
        self._next = first_step
        self._record_goal = record_goal
        self._pending_directive = directive
        self._diagnose = diagnose and loop.auto_diagnose
        self._raised: BaseException | None = None
        self._stopped_at_limit = False
        self._checkpointer = Checkpointer(loop.snapshotter)
        self._entered = False
        self._messages_at_start = 0  # (of the step under way)
        self._unrestorable: set[str | None] = set()  # the checkpoint problems logged

    @property
    def id(self) -> str:
        return self.session.id

    # -- context management -----------------------------------------------------------

    def __enter__(self) -> ReactRun[S]:
        self.session.__enter__()
        self._entered = True
        if self._record_goal:
            self._safely(
                "the user input",
                lambda: self.session.record(
                    EventType.USER_INPUT, step_index=0, input=self.ctx.goal
                ),
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        ok, reason, diagnose = self._close(exc)
        self._result(ok, reason, self._diagnosis(exc) if diagnose else None)

    def _close(self, exc: BaseException | None) -> tuple[bool | None, str | None, bool]:
        """End the run: its outcome, the session closed; whether to diagnose it."""
        self.done = True  # the run is recorded as ended: no more steps into it
        try:
            status, reason, ok = self._finish(exc)
        except Exception:  # pragma: no cover - _finish guards itself; belt and braces
            log.exception("agentdebug: the run's outcome could not be set")
            status, reason, ok = OutcomeStatus.UNKNOWN, None, None
        finally:
            try:
                self.session.__exit__(None, None, None)
            except Exception:  # pragma: no cover - the session guards itself
                log.exception("agentdebug: closing the run failed")
        diagnose = (
            status is OutcomeStatus.FAILURE
            and self._diagnose
            and (exc is None or isinstance(exc, Exception))
        )
        return ok, reason, diagnose

    def _result(self, ok: bool | None, reason: str | None, report: DiagnosticReport | None) -> None:
        self.result = ReactResult(
            run_id=self.session.id,
            answer=self.answer,
            answered=self.answered,
            ok=ok,
            steps=self.steps,
            messages=self.ctx.messages,
            state=self.ctx.state,
            reason=reason,
            report=report,
            _session=self.session,
        )

    async def __aenter__(self) -> ReactRun[S]:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """As ``__exit__``, but a diagnosis that would ask a model on an asyncio
        loop does not hold the loop up. A run that raised is diagnosed in the
        background (its exception propagates at once, noted so: awaiting the
        diagnosis would let a deadline that runs out meanwhile replace it); a run
        whose answer failed awaits its diagnosis on a worker thread, so the result
        has the report, and ``on_report`` is called here, on the loop (a cancel
        while it waits passes on; the diagnosis finishes, and its report goes to
        the store and to ``on_report`` from the worker thread)."""
        ok, reason, diagnose = self._close(exc)
        if not diagnose or not in_background(True):  # (the free tier: milliseconds)
            self._result(ok, reason, self._diagnosis(exc) if diagnose else None)
            return
        if exc is not None:
            self._result(ok, reason, None)
            try:
                trajectory = self.session.trajectory()
            except Exception:
                log.exception("agentdebug: run %s could not be read back", self.session.id)
                return
            diagnose_in_background(
                self.loop.debugger, trajectory, exc=exc, on_report=self.loop.on_report
            )
            return
        done: Future[DiagnosticReport | None] = Future()
        self.loop.debugger.keep_open_for(done, self.session.id)  # (close() waits for it)
        work = functools.partial(self._diagnosis, None, done, on_report=False)
        job = asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, work)
        report = None
        try:
            report = await asyncio.shield(job)  # (a cancel here does not cancel the job)
        except asyncio.CancelledError:
            done.add_done_callback(lambda f: self._tell(f.result()))
            raise
        finally:
            self._result(ok, reason, report)
        self._tell(report)

    def _tell(self, report: DiagnosticReport | None) -> None:
        if report is not None and self.loop.on_report is not None:
            try:
                self.loop.on_report(report)
            except Exception:
                log.exception("agentdebug: the on_report callback failed")

    # -- stepping -------------------------------------------------------------------

    def step(self) -> Step:
        """Take one step: checkpoint, call the step function, record what it did.
        An exception from the step function is recorded and propagates."""
        k = self._begin()
        self._under_way(k)
        try:
            out: Any = self.loop.step_fn(self.ctx)
            if inspect.isawaitable(out):
                _close(out)
                raise TypeError(
                    "the step function is async: use loop.arun(...) or await run.astep()"
                )
            step = _as_step(out)
        except BaseException as exc:
            self._fail(k, exc)
            raise
        finally:
            self._done_with()
        return self._end(k, step)

    async def astep(self) -> Step:
        """:meth:`step` for an async step function (a sync one works too)."""
        k = self._begin()
        self._under_way(k)
        try:
            out: Any = self.loop.step_fn(self.ctx)
            if inspect.isawaitable(out):
                out = await out
            step = _as_step(out)
        except BaseException as exc:
            self._fail(k, exc)
            raise
        finally:
            self._done_with()
        return self._end(k, step)

    def _under_way(self, k: int) -> None:
        """Step ``k`` is running: what ``agentdebug.record`` records in it is step
        ``k``'s (before, with no step given, it was the next step's), and a ReAct run
        begun in it is a sub-run at ``k`` (core's ``trace`` takes these fields as
        where in this run it was begun)."""
        self.session._defaults = {"step_index": k}

    def _done_with(self) -> None:
        self.session._defaults = {}

    def _begin(self) -> int:
        if not self._entered:
            raise RuntimeError(
                "a run records between its start and its end: use it as a context manager, "
                "with loop.capture(...) as run: while not run.done: run.step()"
            )
        if self.done:
            raise RuntimeError(
                f"run {self.session.id} is finished (a final answer, the step limit, an "
                "error, or the end of its with block); check run.done before calling step()"
            )
        k = self._next
        self.ctx.step = k
        self._safely(f"the checkpoint before step {k}", lambda: self._checkpoint(k))
        if self._pending_directive is not None:
            directive, self._pending_directive = self._pending_directive, None
            self._inject(k, directive)
        messages = self.ctx.messages  # (a step may have set it to anything)
        self._messages_at_start = len(messages) if isinstance(messages, list) else 0
        return k

    def _end(self, k: int, step: Step) -> Step:
        self._safely(f"step {k}", lambda: self._record(k, step))
        self.steps += 1
        self._next = k + 1
        if step.is_final:
            self.done, self.answered, self.answer = True, True, step.final_answer
        elif k >= self.loop.max_steps:
            self.done = self._stopped_at_limit = True
            self._safely(
                "the step limit",
                lambda: self.session.record(
                    EventType.ERROR,
                    agent_name=self.loop.agent_name,
                    step_index=k,
                    error=ErrorInfo(
                        type="StepLimitReached",
                        message=f"max steps ({self.loop.max_steps}) reached without a final answer",
                    ),
                ),
            )
        return step

    def _fail(self, k: int, exc: BaseException) -> None:
        self.done = True
        self._raised = exc
        self._next = k + 1
        if not isinstance(exc, Exception):  # a stop (Ctrl-C, a cancel), not the step's error
            return
        try:
            said = self._said(k)
        except Exception:
            log.exception("agentdebug: the model's reply at step %d could not be recorded", k)
            said = None
        self._safely(
            f"the error of step {k}",
            lambda: self.session.record(
                EventType.ERROR,
                agent_name=self.loop.agent_name,
                step_index=k,
                error=exc,
                parent_id=said,
                metadata={"react": "the step function raised"},
            ),
        )

    def _said(self, k: int) -> str | None:
        """The model's decision at a step that raised (a tool that raised before the
        step could return its Step): the assistant messages the step function
        appended, as a loop appends the reply before it runs the tool. Without
        them the record would hold the error and not what was decided."""
        messages = self.ctx.messages
        if not isinstance(messages, list) or len(messages) <= self._messages_at_start:
            return None
        last = None
        for appended in messages[self._messages_at_start :]:
            message = _as_dict(appended)
            if message is not None and message.get("role") == "assistant":
                last = self.session.record(
                    EventType.LLM_RESPONSE,
                    agent_name=self.loop.agent_name,
                    step_index=k,
                    output=message,
                    parent_id=last,
                    metadata={"react": "the model's reply, before the step raised"},
                )
        return last

    # -- recording --------------------------------------------------------------------

    def _safely(self, what: str, action: Callable[[], object]) -> None:
        """Run a piece of recording; a failure is logged, never raised (the agent goes on)."""
        try:
            action()
        except Exception:
            log.exception("agentdebug: %s of run %s could not be recorded", what, self.session.id)

    def _checkpoint(self, k: int) -> None:
        data = self._checkpointer.take(k, self.ctx.messages, self.ctx.state)
        problem = data.get("problem")
        if not data["restorable"] and problem not in self._unrestorable:
            self._unrestorable.add(problem)  # (said once a run, not at every step)
            log.warning(
                "agentdebug: run %s cannot be rerun from step %d (nor from a later step "
                "whose state has the same problem): %s",
                self.session.id,
                k,
                problem,
            )
        self.session.record(
            EventType.CHECKPOINT,
            agent_name=self.loop.agent_name,
            step_index=k,
            output=f"state before step {k}: {len(self.ctx.messages)} message(s)",
            metadata={CHECKPOINT_KEY: data},
            checkpoint=CheckpointRef(
                framework=FRAMEWORK,
                checkpoint_id=f"{self.session.id}:{k}",
                thread_id=self.session.id,
                extra={"step": k, "restorable": data["restorable"]},
            ),
        )

    def _inject(self, k: int, directive: str) -> None:
        """Put the directive where the model and the step function see it."""
        self.ctx.directive = directive
        try:
            message = self.loop.directive_message(directive)
        except Exception:
            log.exception("agentdebug: the directive message could not be built; the default used")
            message = default_directive_message(directive)
        self._safely("the directive message", lambda: self.ctx.messages.append(message))
        self._safely(
            "the directive",
            lambda: self.session.record(
                EventType.USER_INPUT,
                step_index=k,
                input=message.get("content", directive),
                metadata={"react": "directive", "directive": directive},
            ),
        )

    def _record(self, k: int, step: Step) -> None:
        rec = self.session.record
        agent = self.loop.agent_name
        extra: dict[str, Any] | None = dict(step.metadata) if step.metadata else None

        def meta(more: dict[str, Any] | None = None) -> dict[str, Any] | None:
            nonlocal extra
            merged = {**(extra or {}), **(more or {})} or None
            extra = None  # the step's own metadata goes on its first event only
            return merged

        thought_id = None
        if step.thought:
            thought_id = rec(
                EventType.REASONING,
                agent_name=agent,
                step_index=k,
                output=step.thought,
                metadata=meta(),
            )
        failed = step.error is not None
        if step.action is not None:
            tool = {"tool_name": step.action}
            self._record_call(
                k,
                step.action,
                step.action_input,
                step.observation,
                step.error,
                tool,
                thought_id,
                meta,
            )
        for call in step.calls:  # (a model's parallel tool calls, each paired with its result)
            tool = {**call.metadata, "tool_name": call.name}
            if call.id is not None:
                tool["tool_call_id"] = call.id
            self._record_call(
                k, call.name, call.input, call.observation, call.error, tool, thought_id, meta
            )
        if step.action is None and (step.observation is not None or failed):
            rec(
                EventType.OBSERVATION,
                agent_name=agent,
                step_index=k,
                output=step.observation,
                error=step.error,
                parent_id=thought_id,
                metadata=meta(),
            )
        if step.is_final:
            rec(
                EventType.FINAL_ANSWER,
                agent_name=agent,
                step_index=k,
                output=step.final_answer,
                parent_id=thought_id,
                metadata=meta(),
            )

    def _record_call(
        self,
        k: int,
        name: str,
        given: Any,
        observation: Any,
        error: BaseException | str | None,
        tool: dict[str, Any],
        thought_id: str | None,
        meta: Callable[[dict[str, Any] | None], dict[str, Any] | None],
    ) -> None:
        """A tool call at step ``k`` and, when it has an observation or failed, its result."""
        rec = self.session.record
        agent = self.loop.agent_name
        call_id = rec(
            EventType.TOOL_CALL,
            agent_name=agent,
            step_index=k,
            module=name,
            input=given,
            parent_id=thought_id,
            metadata=meta(tool),
        )
        if observation is not None or error is not None:
            rec(
                EventType.TOOL_RESULT,
                agent_name=agent,
                step_index=k,
                module=name,
                output=observation,
                error=error,
                parent_id=call_id,
                metadata=meta(tool),
            )

    # -- ending ---------------------------------------------------------------------

    def _finish(self, exc: BaseException | None) -> tuple[OutcomeStatus, str | None, bool | None]:
        """Record an error the loop raised outside a step, and set the outcome."""
        last = max(self._next - 1, 0)
        stop = exc if exc is not None else self._raised
        if stop is not None and not isinstance(stop, Exception):
            # its caller stopped it (a stream closed early, a cancel, Ctrl-C): how it
            # would have ended is unknown, and no one is to blame
            name = type(stop).__name__
            reason = f"the loop was stopped ({name}) at step {last}"
            self.session.set_outcome(OutcomeStatus.UNKNOWN, reason=reason, stopped_by=name)
            return OutcomeStatus.UNKNOWN, reason, None
        if exc is not None and exc is not self._raised:
            self._safely(
                "the loop's error",
                lambda: self.session.record(
                    EventType.ERROR, agent_name=self.loop.agent_name, step_index=last, error=exc
                ),
            )
        failure = exc if exc is not None else self._raised
        if failure is not None:
            if failure is self._raised:
                reason = f"the step function raised {type(failure).__name__} at step {last}"
            else:
                reason = f"the loop raised {type(failure).__name__} between steps"
            self.session.set_outcome(OutcomeStatus.FAILURE, reason=reason, error=failure)
            return OutcomeStatus.FAILURE, reason, False
        if not self.answered:
            if self._stopped_at_limit:
                reason = (
                    f"no final answer after {self.steps} step(s) (max_steps {self.loop.max_steps})"
                )
            else:
                reason = f"the loop ended after {self.steps} step(s) without a final answer"
            self.session.set_outcome(OutcomeStatus.FAILURE, reason=reason)
            return OutcomeStatus.FAILURE, reason, False
        ok, reason = self.loop.judge(self.answer, self.ctx, self.session.reference_answer)
        status = (
            OutcomeStatus.UNKNOWN
            if ok is None
            else (OutcomeStatus.SUCCESS if ok else OutcomeStatus.FAILURE)
        )
        self.session.set_outcome(status, final_answer=self.answer, reason=reason)
        return status, reason, ok

    def _diagnosis(
        self,
        exc: BaseException | None,
        done: Future[DiagnosticReport | None] | None = None,
        *,
        on_report: bool = True,
    ) -> DiagnosticReport | None:
        """The run's diagnosis (``done`` gets its report, for whoever waits); the
        report goes to ``on_report`` unless the caller hands it on itself."""
        report = None
        try:
            trajectory = self.session.trajectory()
            tell = self.loop.on_report if on_report else None
            report = diagnose_failure(self.loop.debugger, trajectory, exc=exc, on_report=tell)
        except Exception:
            log.exception("agentdebug: run %s could not be read back to diagnose", self.session.id)
        finally:
            if done is not None:
                done.set_result(report)
        return report


def _as_step(out: Any) -> Step:
    if isinstance(out, Step):
        return out
    if out is None:
        return Step()
    if isinstance(out, Mapping):
        try:
            return Step(**out)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"the step function returned a mapping Step() refuses: {exc}") from None
    raise TypeError(
        f"the step function must return an agentdebug_react.Step, got {type(out).__name__}"
    )


def _close(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()


def _as_dict(message: Any) -> dict[str, Any] | None:
    """A message as a dict: as it is, or a pydantic one's fields (the OpenAI SDK's
    ``choices[0].message``, appended as it came); None for anything else."""
    if isinstance(message, dict):
        return message
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        try:
            dumped = dump(mode="json", exclude_none=True)
        except Exception:
            return None
        return dumped if isinstance(dumped, dict) else None
    return None
