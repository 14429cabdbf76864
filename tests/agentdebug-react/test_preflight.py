"""The executor's checks before the gate: a rerun that cannot run is said before
anyone is asked to approve it, not after they said yes."""

from __future__ import annotations

from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.errors import AgentDebugError
from agentdebug.rerun import closed_loop
from agentdebug_react import ReactExecutor, ReactLoop, Step, StepContext
from conftest import make_counter_loop


def _asked(_plan: Any) -> bool:  # pragma: no cover - must never be reached
    raise AssertionError("the gate asked about a rerun that cannot run")


def test_a_run_recorded_without_a_factory_is_refused_before_the_gate(dbg: AgentDebug) -> None:
    original = make_counter_loop(dbg, auto_diagnose=False).run("q", state={}).trajectory()
    with pytest.raises(AgentDebugError, match=r"does not say how to rebuild.*factory="):
        ReactExecutor().preflight(original)
    # the closed loop, as `agentdebug act RUN --rerun` runs it: an error, no question asked
    loop = closed_loop(original, debugger=dbg, executor=ReactExecutor(), policy=_asked)
    assert loop.status == "error"
    (attempt,) = loop.attempts
    assert attempt.decision is None
    assert attempt.error is not None and "does not say how to rebuild" in attempt.error
    # a loop given in code has nothing to check
    ReactExecutor(make_counter_loop(dbg)).preflight(original)


def test_a_factory_that_cannot_be_imported_is_refused_before_the_gate(dbg: AgentDebug) -> None:
    loop = make_counter_loop(dbg, auto_diagnose=False, factory="no_such_module_xyz:make")
    original = loop.run("q", state={}).trajectory()
    with pytest.raises(AgentDebugError, match="cannot import no_such_module_xyz"):
        ReactExecutor().preflight(original)


def test_state_that_was_never_restorable_is_refused_before_the_gate(dbg: AgentDebug) -> None:
    def step(ctx: StepContext[Any]) -> Step:
        ctx.state["seen"].add(ctx.step)
        if ctx.step == 1:
            return Step(
                thought="read",
                action="read_file",
                action_input="q3.csv",
                observation="No such file",
                error=FileNotFoundError("q3.csv"),
            )
        return Step.finish("107550")

    loop: ReactLoop[Any] = ReactLoop(
        step, debugger=dbg, success=lambda a: a == "117200", auto_diagnose=False
    )
    original = loop.run("Q3 revenue?", state={"seen": set()}).trajectory()
    with pytest.raises(AgentDebugError, match=r"no step's state was restorable.*set"):
        ReactExecutor(loop).preflight(original)
    result = closed_loop(original, debugger=dbg, executor=ReactExecutor(loop), policy=_asked)
    assert result.status == "error" and result.attempts[0].decision is None


def test_a_rerunnable_run_passes_the_preflight(dbg: AgentDebug) -> None:
    loop = make_counter_loop(dbg, auto_diagnose=False)
    original = loop.run("q", state={}).trajectory()
    ReactExecutor(loop).preflight(original)  # nothing raised


def _restorable_until_step_one(dbg: AgentDebug) -> ReactLoop[Any]:
    """A loop whose state stops being JSON at step 1 (it keeps a set from then on):
    restorable before step 1, not before steps 2 and 3; its failure is at step 2."""

    def step(ctx: StepContext[Any]) -> Step:
        if ctx.step == 1:
            ctx.state["seen"] = {"q3.csv"}
            return Step(thought="list files", action="ls", action_input=".", observation="q3.csv")
        if ctx.step == 2:
            return Step(
                thought="read",
                action="read_file",
                action_input="q4.csv",
                observation="No such file",
                error=FileNotFoundError("q4.csv"),
            )
        return Step.finish("107550")

    return ReactLoop(step, debugger=dbg, success=lambda a: a == "117200", auto_diagnose=False)


def test_a_plan_from_a_step_whose_state_was_not_restorable_is_refused_before_the_gate(
    dbg: AgentDebug,
) -> None:
    loop = _restorable_until_step_one(dbg)
    original = loop.run("Q3 revenue?", state={}).trajectory()
    executor = ReactExecutor(loop)
    executor.preflight(original)  # some step can be restored
    executor.preflight(original, resume_step=1)
    with pytest.raises(AgentDebugError, match=r"before step 2 was not restorable.*set"):
        executor.preflight(original, resume_step=2)
    # the closed loop tells the preflight its plan's step: refused, and no one asked
    result = closed_loop(original, debugger=dbg, executor=executor, policy=_asked)
    (attempt,) = result.attempts
    assert attempt.plan is not None and attempt.plan.resume_step == 2
    assert result.status == "error" and attempt.decision is None
    assert attempt.error is not None and "before step 2 was not restorable" in attempt.error
