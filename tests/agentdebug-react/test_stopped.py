"""A loop its caller stopped (a stream closed early, a cancel, Ctrl-C) ends
unknown, stopped by what stopped it, with no error and no one blamed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug_react import ReactLoop, Step, StepContext


def searching(ctx: StepContext[Any]) -> Step:
    return Step(thought="Look it up.", action="search", action_input="q", observation="...")


def stream(loop: ReactLoop[Any], runs: list[Any]) -> Iterator[Step]:
    with loop.capture("What is the capital of France?", state={}) as run:
        runs.append(run)
        while not run.done:
            yield run.step()


def test_a_stream_closed_early_is_stopped_not_failed(dbg: AgentDebug) -> None:
    loop: ReactLoop[Any] = ReactLoop(searching, debugger=dbg, max_steps=10)
    runs: list[Any] = []
    steps = stream(loop, runs)
    next(steps)
    next(steps)
    steps.close()  # the client went away
    trajectory = runs[0].session.trajectory()
    outcome = trajectory.outcome
    assert outcome.status is OutcomeStatus.UNKNOWN  # before: failure, GeneratorExit blamed
    assert outcome.stopped_by == "GeneratorExit"
    assert "stopped (GeneratorExit) at step 2" in (outcome.reason or "")
    assert not [e for e in trajectory.events if e.type is EventType.ERROR]
    assert runs[0].result.report is None  # nothing diagnosed


def test_a_cancelled_async_loop_is_stopped_not_failed(dbg: AgentDebug) -> None:
    async def slow(ctx: StepContext[Any]) -> Step:
        await asyncio.sleep(10)
        return Step(final_answer="never")

    loop: ReactLoop[Any] = ReactLoop(slow, debugger=dbg)
    runs: list[Any] = []

    async def drive() -> None:
        async with loop.capture("q?", state={}) as run:
            runs.append(run)
            await run.astep()

    async def main() -> None:
        task = asyncio.ensure_future(drive())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    outcome = runs[0].session.trajectory().outcome
    assert outcome.status is OutcomeStatus.UNKNOWN
    assert outcome.stopped_by == "CancelledError"


@pytest.mark.parametrize(
    ("check", "status", "reason"),
    [
        (lambda answer: "the capital is Paris, not Lyon", OutcomeStatus.FAILURE, "not Lyon"),
        (lambda answer: (False, "wrong city", 3), OutcomeStatus.UNKNOWN, "tuple of 3 items"),
        (lambda answer: True, OutcomeStatus.SUCCESS, "passed"),
    ],
)
def test_a_success_check_that_returns_a_reason_fails_the_answer(
    dbg: AgentDebug, check: Any, status: OutcomeStatus, reason: str
) -> None:
    def answering(ctx: StepContext[Any]) -> Step:
        return Step(final_answer="Lyon")

    loop: ReactLoop[Any] = ReactLoop(answering, debugger=dbg, success=check, auto_diagnose=False)
    result = loop.run("What is the capital of France?", state={})
    outcome = result._session.trajectory().outcome
    assert outcome.status is status  # before: a non-empty string read as a pass
    assert reason in (outcome.reason or "")


def test_an_assertion_in_the_success_check_fails_the_answer(dbg: AgentDebug) -> None:
    def check(answer: Any) -> None:
        assert answer == "Paris", f"expected Paris, got {answer}"

    def answering(ctx: StepContext[Any]) -> Step:
        return Step(final_answer="Lyon")

    loop: ReactLoop[Any] = ReactLoop(answering, debugger=dbg, success=check, auto_diagnose=False)
    result = loop.run("What is the capital of France?", state={})
    assert result.ok is False and (result.reason or "").startswith("expected Paris, got Lyon")
