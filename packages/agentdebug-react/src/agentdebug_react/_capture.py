"""Capture of a hand-written ReAct loop: the loop object and the run it records.

:class:`ReactLoop` wraps the user's step function (``@react_loop`` is the
one-line form). ``loop.run(goal)`` drives it until a final answer; for a loop the
user keeps writing, ``with loop.capture(goal) as run: while not run.done:
run.step()`` records the same thing. Every step is recorded as the events the
rest of agentdebug reads (REASONING, TOOL_CALL, TOOL_RESULT or OBSERVATION,
FINAL_ANSWER, ERROR), preceded by a CHECKPOINT holding the state before it, so
the run can be rerun from any step later, from the store alone.

Capture never breaks the agent: a failure of the recording (a snapshot that
cannot be taken, a store that is gone) is logged and the loop goes on. The user's
own exceptions propagate unchanged; the run is then diagnosed and the summary
added to the exception as a note.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, cast, overload

from agentdebug.capture.auto import ReportCallback, diagnose_failure
from agentdebug.capture.session import AgentDebug, TraceSession
from agentdebug.rerun.score import words
from agentdebug.schema import (
    AgentInfo,
    CheckpointRef,
    DiagnosticReport,
    ErrorInfo,
    EventType,
    OutcomeStatus,
)

from agentdebug_react._snapshot import (
    CHECKPOINT_KEY,
    Checkpointer,
    JsonSnapshotter,
    Snapshotter,
    snapshotter_name,
)
from agentdebug_react._step import (
    DEFAULT_AGENT,
    FRAMEWORK,
    AsyncStepFunction,
    Message,
    ReactResult,
    S,
    Step,
    StepContext,
    StepFunction,
)

if TYPE_CHECKING:
    from agentdebug_react._rerun import ReactExecutor

log = logging.getLogger("agentdebug.react")

#: How the directive reaches the model on a rerun, unless the loop says otherwise.
DIRECTIVE_PREFIX = (
    "A review of an earlier attempt at this task found the mistake that made it fail. "
    "Correction to follow from here on: "
)

SuccessCheck = Callable[..., Any]
DirectiveMessage = Callable[[str], Message]


def default_directive_message(directive: str) -> Message:
    """The directive as a user message the model reads before redoing the step."""
    return {"role": "user", "content": f"{DIRECTIVE_PREFIX}{directive}"}


def reference_matches(answer: Any, reference: str) -> bool:
    """The closed loop's reference test (the reference's words appear, in order, as
    a phrase in the answer), so a run and its branches are judged the same way."""
    want = words(reference)
    got = words(answer if isinstance(answer, str) else str(answer))
    n = len(want)
    return bool(want) and any(got[i : i + n] == want for i in range(len(got) - n + 1))


class ReactLoop(Generic[S]):
    """A ReAct loop around the user's step function, recorded by agentdebug.

    ``step(ctx) -> Step`` is called once per iteration until it returns a final
    step or ``max_steps`` is reached. ``success(answer)`` (or
    ``success(answer, ctx)``) says whether a final answer is right; it may return
    a bool or ``(bool, reason)``. Without it the run's ``reference_answer`` is
    used, and without either the outcome stays ``unknown``.

    ``factory`` is a ``module:function`` spec that rebuilds this loop in another
    process; it is stored on every run so that ``agentdebug act RUN --rerun`` can
    rerun a stored run. ``snapshotter`` turns the user's state into JSON data and
    back (the default keeps JSON-able state). ``on_report`` is called with the
    automatic diagnosis of a failed run.
    """

    def __init__(
        self,
        step: StepFunction[S] | AsyncStepFunction[S],
        *,
        debugger: AgentDebug | None = None,
        agent_name: str = DEFAULT_AGENT,
        max_steps: int = 10,
        success: SuccessCheck | None = None,
        snapshotter: Snapshotter[S] | None = None,
        factory: str | None = None,
        tools: Sequence[str] = (),
        instructions: str | None = None,
        auto_diagnose: bool = True,
        on_report: ReportCallback | None = None,
        directive_message: DirectiveMessage = default_directive_message,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.step_fn = step
        self._debugger = debugger
        self.agent_name = agent_name
        self.max_steps = max_steps
        self.success = success
        self.snapshotter: Snapshotter[Any] = snapshotter or JsonSnapshotter()
        self.factory = factory
        self.tools = list(tools) or list(getattr(step, "tool_names", ()))
        self.instructions = instructions
        self.auto_diagnose = auto_diagnose
        self.on_report = on_report
        self.directive_message = directive_message
        self._success_takes_context = _takes_two(success) if success is not None else False

    @property
    def debugger(self) -> AgentDebug:
        """The debugger runs are recorded with (``AgentDebug()`` unless one was given)."""
        if self._debugger is None:
            self._debugger = AgentDebug()
        return self._debugger

    @property
    def is_async(self) -> bool:
        fn = self.step_fn
        call = type(fn).__dict__.get("__call__")  # an object with an async __call__
        return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)

    def describe(self) -> dict[str, Any]:
        """What a run records about the loop (``metadata['react']``)."""
        return {
            "factory": self.factory,
            "agent_name": self.agent_name,
            "max_steps": self.max_steps,
            "snapshotter": snapshotter_name(self.snapshotter),
            "step_function": getattr(self.step_fn, "__qualname__", type(self.step_fn).__name__),
        }

    # -- running -------------------------------------------------------------------

    def capture(
        self,
        goal: str | None = None,
        *,
        messages: list[Message] | None = None,
        state: S | None = None,
        reference_answer: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ReactRun[S]:
        """A run to drive by hand: ``with loop.capture(goal) as run: while not
        run.done: run.step()``. ``messages`` (used in place) defaults to the goal as
        one user message; the goal defaults to the last user message."""
        if goal is None and not messages:
            raise ValueError("give the run a goal or a message list")
        if messages is None:
            messages = [{"role": "user", "content": goal}]
        if goal is None:
            goal = _last_user_text(messages)
        session = self.debugger.trace(
            goal,
            framework=FRAMEWORK,
            run_id=run_id,
            agents=[
                AgentInfo(
                    name=self.agent_name,
                    role="ReAct agent",
                    instructions=self.instructions,
                    tools=self.tools,
                )
            ],
            reference_answer=reference_answer,
            metadata={**(metadata or {}), FRAMEWORK: self.describe()},
        )
        ctx: StepContext[S] = StepContext(
            messages=messages, state=cast(S, state), step=1, goal=goal, run_id=session.id
        )
        return ReactRun(self, session, ctx, first_step=1, record_goal=True)

    def run(
        self,
        goal: str | None = None,
        *,
        messages: list[Message] | None = None,
        state: S | None = None,
        reference_answer: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ReactResult[S]:
        """Run the loop to a final answer (or ``max_steps``) and return how it ended.

        An exception from the step function propagates unchanged, after the run is
        recorded as failed and diagnosed (the summary is added as a note)."""
        with self.capture(
            goal,
            messages=messages,
            state=state,
            reference_answer=reference_answer,
            run_id=run_id,
            metadata=metadata,
        ) as run:
            while not run.done:
                run.step()
        assert run.result is not None
        return run.result

    async def arun(
        self,
        goal: str | None = None,
        *,
        messages: list[Message] | None = None,
        state: S | None = None,
        reference_answer: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ReactResult[S]:
        """:meth:`run` for an async step function (a sync one works too)."""
        with self.capture(
            goal,
            messages=messages,
            state=state,
            reference_answer=reference_answer,
            run_id=run_id,
            metadata=metadata,
        ) as run:
            while not run.done:
                await run.astep()
        assert run.result is not None
        return run.result

    def executor(self, *, debugger: AgentDebug | None = None) -> ReactExecutor:
        """The rerun executor for this loop (for ``closed_loop(..., executor=...)``)."""
        from agentdebug_react._rerun import ReactExecutor

        return ReactExecutor(self, debugger=debugger)

    # -- judging --------------------------------------------------------------------

    def judge(
        self, answer: Any, ctx: StepContext[S], reference: str | None
    ) -> tuple[bool | None, str]:
        """(verdict, reason) for a final answer. Never raises: a success check that
        fails is logged and leaves the verdict unknown."""
        if self.success is not None:
            try:
                verdict = (
                    self.success(answer, ctx)
                    if self._success_takes_context
                    else self.success(answer)
                )
            except Exception as exc:
                log.exception("agentdebug: the success check raised; the outcome is unknown")
                return None, f"the success check raised {type(exc).__name__}: {exc}"
            ok, why = verdict if isinstance(verdict, tuple) else (verdict, "")
            default = "passed the success check" if ok else "failed the success check"
            return bool(ok), str(why) or f"the final answer {default}"
        if reference:
            if reference_matches(answer, reference):
                return True, "the final answer matches the reference answer"
            return False, f"the final answer does not match the reference answer {reference!r}"
        return None, "no success check or reference answer to judge the final answer by"


def _takes_two(fn: Callable[..., Any]) -> bool:
    """Whether a success check wants ``(answer, ctx)`` rather than ``(answer)``."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return len(positional) >= 2


def _last_user_text(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else None
    return None


@overload
def react_loop(step: StepFunction[S], /) -> ReactLoop[S]: ...


@overload
def react_loop(
    step: None = None, /, **options: Any
) -> Callable[[StepFunction[S] | AsyncStepFunction[S]], ReactLoop[S]]: ...


def react_loop(
    step: StepFunction[S] | None = None, /, **options: Any
) -> ReactLoop[S] | Callable[[StepFunction[S] | AsyncStepFunction[S]], ReactLoop[S]]:
    """Decorator: turn a step function into a recorded :class:`ReactLoop`.

    ``@react_loop`` or ``@react_loop(max_steps=8, success=check, ...)`` (the
    options of ReactLoop); then ``result = my_step.run("question")``."""
    if step is not None:
        return ReactLoop(step, **options)

    def wrap(fn: StepFunction[S] | AsyncStepFunction[S]) -> ReactLoop[S]:
        return ReactLoop(fn, **options)

    return wrap


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
        report: DiagnosticReport | None = None
        if (
            status is OutcomeStatus.FAILURE
            and self._diagnose
            and (exc is None or isinstance(exc, Exception))
        ):
            report = self._diagnosis(exc)
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
        self.__exit__(exc_type, exc, tb)

    # -- stepping -------------------------------------------------------------------

    def step(self) -> Step:
        """Take one step: checkpoint, call the step function, record what it did.
        An exception from the step function is recorded and propagates."""
        k = self._begin()
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
        return self._end(k, step)

    async def astep(self) -> Step:
        """:meth:`step` for an async step function (a sync one works too)."""
        k = self._begin()
        try:
            out: Any = self.loop.step_fn(self.ctx)
            if inspect.isawaitable(out):
                out = await out
            step = _as_step(out)
        except BaseException as exc:
            self._fail(k, exc)
            raise
        return self._end(k, step)

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
        self._safely(
            f"the error of step {k}",
            lambda: self.session.record(
                EventType.ERROR,
                agent_name=self.loop.agent_name,
                step_index=k,
                error=exc,
                metadata={"react": "the step function raised"},
            ),
        )

    # -- recording --------------------------------------------------------------------

    def _safely(self, what: str, action: Callable[[], object]) -> None:
        """Run a piece of recording; a failure is logged, never raised (the agent goes on)."""
        try:
            action()
        except Exception:
            log.exception("agentdebug: %s of run %s could not be recorded", what, self.session.id)

    def _checkpoint(self, k: int) -> None:
        data = self._checkpointer.take(k, self.ctx.messages, self.ctx.state)
        if not data["restorable"]:
            log.warning(
                "agentdebug: run %s cannot be rerun from step %d: %s",
                self.session.id,
                k,
                data.get("problem"),
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
            call_id = rec(
                EventType.TOOL_CALL,
                agent_name=agent,
                step_index=k,
                module=step.action,
                input=step.action_input,
                parent_id=thought_id,
                metadata=meta(tool),
            )
            if step.observation is not None or failed:
                rec(
                    EventType.TOOL_RESULT,
                    agent_name=agent,
                    step_index=k,
                    module=step.action,
                    output=step.observation,
                    error=step.error,
                    parent_id=call_id,
                    metadata=meta(tool),
                )
        elif step.observation is not None or failed:
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

    # -- ending ---------------------------------------------------------------------

    def _finish(self, exc: BaseException | None) -> tuple[OutcomeStatus, str | None, bool | None]:
        """Record an error the loop raised outside a step, and set the outcome."""
        last = max(self._next - 1, 0)
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

    def _diagnosis(self, exc: BaseException | None) -> DiagnosticReport | None:
        try:
            trajectory = self.session.trajectory()
        except Exception:
            log.exception("agentdebug: run %s could not be read back to diagnose", self.session.id)
            return None
        return diagnose_failure(
            self.loop.debugger, trajectory, exc=exc, on_report=self.loop.on_report
        )


def _as_step(out: Any) -> Step:
    if isinstance(out, Step):
        return out
    if out is None:
        return Step()
    if isinstance(out, Mapping):
        try:
            return Step(**out)
        except TypeError as exc:
            raise TypeError(f"the step function returned a mapping Step() refuses: {exc}") from None
    raise TypeError(
        f"the step function must return a agentdebug_react.Step, got {type(out).__name__}"
    )


def _close(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()
