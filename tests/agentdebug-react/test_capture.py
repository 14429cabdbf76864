"""Capture: what a user of a hand-written ReAct loop sees recorded, step by step."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus, record
from agentdebug.schema import AgentTrajectory
from agentdebug_react import ReactLoop, Step, StepContext, react_loop
from conftest import Counter, make_counter_loop


def kinds(run: AgentTrajectory) -> list[tuple[int, str]]:
    return [(e.step_index, e.type.value) for e in run.events]


def test_decorator_records_thought_action_observation_and_answer(dbg: AgentDebug) -> None:
    @react_loop(debugger=dbg, agent_name="solver", success=lambda a: a == "4")
    def solver(ctx: StepContext[None]) -> Step:
        if ctx.step == 1:
            return Step(
                thought="I should add.",
                action="add",
                action_input={"a": 2, "b": 2},
                observation=4,
            )
        return Step.finish("4", thought="The sum is 4.")

    result = solver.run("What is 2 + 2?")

    assert isinstance(solver, ReactLoop)
    assert (result.answer, result.ok, result.answered, result.steps) == ("4", True, True, 2)
    assert result.report is None  # a passing run is not diagnosed
    run = result.trajectory()
    assert run.framework == "react"
    assert run.goal == "What is 2 + 2?"
    assert run.agents[0].name == "solver"
    assert kinds(run) == [
        (0, "user.input"),
        (1, "checkpoint"),
        (1, "reasoning"),
        (1, "tool.call"),
        (1, "tool.result"),
        (2, "checkpoint"),
        (2, "reasoning"),
        (2, "final_answer"),
    ]
    by_type = {e.type: e for e in run.events if e.step_index == 1}
    thought, call, result_ = (
        by_type[EventType.REASONING],
        by_type[EventType.TOOL_CALL],
        by_type[EventType.TOOL_RESULT],
    )
    assert thought.output == "I should add." and thought.agent_name == "solver"
    assert call.input == {"a": 2, "b": 2}
    assert call.metadata["tool_name"] == "add" and call.module == "add"
    assert call.parent_id == thought.id
    assert result_.parent_id == call.id and result_.output == 4
    final = run.events[-1]
    assert final.output == "4" and final.parent_id == run.events[-2].id
    assert run.outcome.status is OutcomeStatus.SUCCESS
    assert run.outcome.final_answer == "4"
    assert run.metadata["react"]["agent_name"] == "solver"


def test_bare_decorator_and_default_agent(dbg: AgentDebug) -> None:
    @react_loop
    def answer(ctx: StepContext[None]) -> Step:
        return Step.finish("done")

    answer._debugger = dbg
    result = answer.run("Say done")
    run = result.trajectory()
    assert run.events[-1].agent_name == "agent"
    # no success check and no reference answer: nobody knows if "done" is right
    assert result.ok is None
    assert run.outcome.status is OutcomeStatus.UNKNOWN
    assert "no success check" in (run.outcome.reason or "")


def test_context_manager_around_a_hand_written_loop(dbg: AgentDebug) -> None:
    loop = make_counter_loop(dbg, Counter())
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q?"}]
    with loop.capture(messages=messages, state={}) as run:
        while not run.done:
            step = run.step()
            assert isinstance(step, Step)
    assert run.result is not None
    assert run.result.answer == "0" and run.result.ok is False
    assert run.result.messages is messages  # the user's own list, used in place
    assert run.result.state == {"lookups": 1}
    assert run.result.trajectory().goal == "q?"  # the last user message


def test_stopping_early_is_a_failure_that_says_why(dbg: AgentDebug) -> None:
    loop = make_counter_loop(dbg, auto_diagnose=False)
    with loop.capture("q?") as run:
        run.step()  # one step, then the user's loop gives up
    assert run.result is not None and run.result.answered is False
    out = run.result.trajectory().outcome
    assert out.status is OutcomeStatus.FAILURE
    assert out.reason == "the loop ended after 1 step(s) without a final answer"
    with pytest.raises(RuntimeError, match="finished"):
        run.step()
    with pytest.raises(RuntimeError, match="use it as a context manager"):
        loop.capture("q?").step()


def test_step_limit_is_recorded_as_an_error_event(dbg: AgentDebug) -> None:
    @react_loop(debugger=dbg, max_steps=3)
    def dawdle(ctx: StepContext[None]) -> Step:
        return Step(thought=f"still thinking ({ctx.step})")

    result = dawdle.run("q")
    assert result.answered is False and result.ok is False and result.steps == 3
    run = result.trajectory()
    last = run.events[-1]
    assert last.type is EventType.ERROR and last.step_index == 3
    assert last.error is not None and last.error.type == "StepLimitReached"
    assert run.outcome.reason == "no final answer after 3 step(s) (max_steps 3)"
    assert result.report is not None
    assert "planning.step_limit_exhausted" in result.report.failure_modes


def test_observation_without_action_and_step_metadata(dbg: AgentDebug) -> None:
    @react_loop(debugger=dbg)
    def watch(ctx: StepContext[None]) -> Step:
        if ctx.step == 1:
            return Step(thought="look", observation="it is raining", metadata={"lat_ms": 3})
        return Step.finish(None)  # done, with an answer that is legitimately None

    result = watch.run("weather?")
    run = result.trajectory()
    assert kinds(run)[2:4] == [(1, "reasoning"), (1, "observation")]
    assert run.events[2].metadata["lat_ms"] == 3  # the step's metadata, on its first event
    assert "lat_ms" not in run.events[3].metadata
    assert run.events[3].parent_id == run.events[2].id
    assert result.answered is True and result.answer is None


def test_success_check_forms(dbg: AgentDebug) -> None:
    seen: list[Any] = []

    def with_context(answer: str, ctx: StepContext[dict[str, int]]) -> tuple[bool, str]:
        seen.append(ctx.state)
        return False, "state says no"

    loop = make_counter_loop(dbg, success=with_context, auto_diagnose=False)
    result = loop.run("q", state={})
    assert seen == [{"lookups": 1}]
    assert result.ok is False and result.reason == "state says no"

    def broken(answer: str) -> bool:
        raise ValueError("bad check")

    result = make_counter_loop(dbg, success=broken).run("q")
    assert result.ok is None
    assert result.trajectory().outcome.status is OutcomeStatus.UNKNOWN
    assert "ValueError" in (result.reason or "")
    assert result.report is None  # an unknown outcome is not a failure to diagnose


def test_reference_answer_is_the_default_check(dbg: AgentDebug) -> None:
    loop = ReactLoop(Counter(), debugger=dbg, auto_diagnose=False)
    assert loop.run("q", reference_answer="0").ok is True
    result = loop.run("q", reference_answer="42")
    assert result.ok is False
    assert result.trajectory().reference_answer == "42"


def test_events_recorded_inside_the_step_go_to_the_run(dbg: AgentDebug) -> None:
    @react_loop(debugger=dbg)
    def step(ctx: StepContext[None]) -> Step:
        record(EventType.LLM_CALL, agent_name="agent", input=ctx.messages)
        return Step.finish("ok")

    run = step.run("hi").trajectory()
    call = next(e for e in run.events if e.type is EventType.LLM_CALL)
    # at the step under way, beside its own events (before: the next step, one that
    # never began, where a diagnosis would have blamed it)
    checkpoint = next(e for e in run.events if e.type is EventType.CHECKPOINT)
    answer = next(e for e in run.events if e.type is EventType.FINAL_ANSWER)
    assert call.step_index == checkpoint.step_index == answer.step_index == 1


def test_a_step_s_own_step_given_to_record_is_kept(dbg: AgentDebug) -> None:
    @react_loop(debugger=dbg)
    def step(ctx: StepContext[None]) -> Step:
        record(EventType.OBSERVATION, agent_name="agent", output="seen", step_index=7)
        return Step.finish("ok")

    run = step.run("hi").trajectory()
    assert next(e for e in run.events if e.type is EventType.OBSERVATION).step_index == 7


def test_step_must_return_a_step(dbg: AgentDebug) -> None:
    @react_loop(debugger=dbg, auto_diagnose=False)
    def wrong(ctx: StepContext[None]) -> Any:
        return 42

    with pytest.raises(TypeError, match=r"must return an agentdebug_react\.Step"):
        wrong.run("q")

    @react_loop(debugger=dbg)
    def mapping(ctx: StepContext[None]) -> Any:
        return {"thought": "t", "final_answer": "a"}

    assert mapping.run("q").answer == "a"


def test_async_step_function(dbg: AgentDebug) -> None:
    @react_loop(debugger=dbg, success=lambda a: a == "pong")
    async def ping(ctx: StepContext[None]) -> Step:
        await asyncio.sleep(0)
        return Step.finish("pong")

    assert ping.is_async
    result = asyncio.run(ping.arun("ping"))
    assert result.ok is True
    with pytest.raises(TypeError, match="async"):
        ping.run("ping")


def test_goal_or_messages_are_required(dbg: AgentDebug) -> None:
    with pytest.raises(ValueError, match="goal or a message list"):
        make_counter_loop(dbg).run()
    with pytest.raises(ValueError, match="max_steps"):
        ReactLoop(Counter(), max_steps=0)


def test_the_manual_of_earlier_failures_is_offered_to_every_run(
    dbg: AgentDebug, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from agentdebug.recover import Manual

    manual = Manual(tmp_path / "manual.json")
    manual.add(
        ["List a folder before reading from it."], framework="react", mode_id=None, source_run="r0"
    )
    manual.add(["Only for LangGraph."], framework="langgraph", mode_id=None, source_run="r1")
    seen: list[list[Any]] = []

    def step(ctx: StepContext[Any]) -> Step:
        seen.append(list(ctx.messages))
        return Step.finish("done")

    result = ReactLoop(step, debugger=dbg, manual=manual.path, auto_diagnose=False).run("q")
    first = seen[0][0]
    assert first["role"] == "system" and "List a folder before reading from it." in first["content"]
    assert "Only for LangGraph." not in first["content"]
    assert result.trajectory().metadata["manual_rules"] == 1

    (tmp_path / "broken.json").write_text("{")
    broken = ReactLoop(step, debugger=dbg, manual=tmp_path / "broken.json", auto_diagnose=False)
    assert broken.run("q").answer == "done"  # an unreadable manual does not stop the agent
    assert "could not be read" in caplog.text
