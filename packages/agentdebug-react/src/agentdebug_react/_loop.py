"""The ReAct loop around the user's step function, and its one-line decorator.

:class:`ReactLoop` wraps the user's step function (``@react_loop`` is the
one-line form). ``loop.run(goal)`` drives it until a final answer; for a loop the
user keeps writing, ``with loop.capture(goal) as run: while not run.done:
run.step()`` records the same thing (see :mod:`._run` for what a run records).
The loop holds what does not change between runs: the step function, the success
check, the snapshotter, how a directive reaches the model, the manual of rules
learnt from earlier failures.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, cast, overload

from agentdebug.capture.auto import ReportCallback
from agentdebug.capture.debugger import AgentDebug
from agentdebug.recover import Manual
from agentdebug.rerun.score import reference_in
from agentdebug.schema import AgentInfo

from agentdebug_react._run import ReactRun, default_directive_message
from agentdebug_react._snapshot import JsonSnapshotter, Snapshotter, snapshotter_name
from agentdebug_react._step import (
    DEFAULT_AGENT,
    FRAMEWORK,
    AsyncStepFunction,
    Message,
    ReactResult,
    S,
    StepContext,
    StepFunction,
)

if TYPE_CHECKING:
    from agentdebug_react._rerun import ReactExecutor

log = logging.getLogger("agentdebug.react")

SuccessCheck = Callable[..., Any]
DirectiveMessage = Callable[[str], Message]


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
    back (the default keeps JSON-able state); messages are checkpointed as JSON
    data, so message objects (pydantic models, say) come back as dicts on a
    rerun. ``on_report`` is called with the automatic diagnosis of a failed run.
    ``manual`` (a :class:`agentdebug.recover.Manual`, its path, or True for the
    project's) puts the rules learnt from earlier failures (AutoManual) first in
    every run's conversation, as a system message.
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
        manual: Manual | str | Path | bool | None = None,
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
        self.manual: Manual | None = (
            manual
            if isinstance(manual, Manual)
            else Manual()
            if manual is True
            else Manual(manual)
            if isinstance(manual, (str, Path))
            else None
        )
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
        rules = self._offer_manual(messages)
        if rules:
            metadata = {**(metadata or {}), "manual_rules": rules}
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

    def _offer_manual(self, messages: list[Message]) -> int:
        """Put the manual's rules for ReAct runs first in the conversation, as a
        system message; returns how many. A manual that cannot be read is logged
        and skipped: it must not stop the agent."""
        if self.manual is None:
            return 0
        try:
            text = self.manual.directive_for(FRAMEWORK)
            count = len(self.manual.rules_for(FRAMEWORK))
        except Exception:
            log.exception(
                "agentdebug: the manual %s could not be read; run goes on without it",
                self.manual.path,
            )
            return 0
        if text:
            messages.insert(0, {"role": "system", "content": text})
        return count

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
        """:meth:`run` for an async step function (a sync one works too). A failed
        run's diagnosis is awaited on a worker thread, so the event loop's other
        tasks go on while it asks its model."""
        async with self.capture(
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
            except AssertionError as exc:  # (an assert in the check: the answer failed it)
                return False, str(exc) or "the final answer failed the success check's assertion"
            except Exception as exc:
                log.exception("agentdebug: the success check raised; the outcome is unknown")
                return None, f"the success check raised {type(exc).__name__}: {exc}"
            if isinstance(verdict, str):  # the reason it failed (as the LangGraph plugin reads one)
                return False, verdict or "the final answer failed the success check"
            if isinstance(verdict, tuple) and len(verdict) != 2:
                log.warning("agentdebug: the success check returned %r", verdict)
                return None, (
                    f"the success check returned a tuple of {len(verdict)} items, "
                    "not (verdict, reason)"
                )
            ok, why = verdict if isinstance(verdict, tuple) else (verdict, "")
            default = "passed the success check" if ok else "failed the success check"
            return bool(ok), str(why) or f"the final answer {default}"
        if reference:
            if reference_in(answer, reference):
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
