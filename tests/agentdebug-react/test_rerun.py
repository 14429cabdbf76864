"""Rerun from step k with the directive: the branch, its links, and the executor's lookup."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType, OutcomeStatus
from agentdebug.errors import AgentDebugError
from agentdebug.plugins import get_registry
from agentdebug.rerun import closed_loop, find_executor
from agentdebug.schema import AgentTrajectory, RerunRequest
from agentdebug_react import (
    DIRECTIVE_PREFIX,
    ReactExecutor,
    ReactLoop,
    Step,
    StepContext,
    load_loop,
)
from conftest import Counter, make_counter_loop


def failed_run(dbg: AgentDebug, counter: Counter | None = None) -> AgentTrajectory:
    result = make_counter_loop(dbg, counter, auto_diagnose=False).run("q", state={})
    assert result.ok is False
    return result.trajectory()


def test_rerun_from_the_blamed_step_with_the_directive_succeeds(dbg: AgentDebug) -> None:
    original = failed_run(dbg)
    counter = Counter()
    loop = make_counter_loop(dbg, counter)
    request = RerunRequest(trajectory=original, resume_step=1, directive="look up right", attempt=2)

    branch = loop.executor().rerun(request)

    # linked to the original
    assert branch.parent_id == original.id
    checkpoint_1 = next(e for e in original.events if e.step_index == 1)
    assert checkpoint_1.type is EventType.CHECKPOINT
    assert branch.branch_from_event_id == checkpoint_1.id
    meta = branch.metadata["branch"]
    assert meta["parent_id"] == original.id and meta["resume_step"] == 1
    assert meta["directive"] == "look up right" and meta["attempt"] == 2
    assert branch.metadata["react"]["rerun"]["checkpoint_event_id"] == checkpoint_1.id
    # the prefix before step 1 is the original's, event for event
    inherited = [e for e in branch.events if e.step_index < 1]
    assert [e.id for e in inherited] == [e.id for e in original.events if e.step_index < 1]
    assert inherited[0].metadata["inherited_from"] == original.id
    # the model saw the directive in its messages, and the step function on its context
    first_call = counter.seen[0]
    assert first_call[-1] == {"role": "user", "content": DIRECTIVE_PREFIX + "look up right"}
    assert counter.directives == ["look up right", "look up right"]
    directive_event = next(e for e in branch.events if e.metadata.get("react") == "directive")
    assert directive_event.type is EventType.USER_INPUT and directive_event.step_index == 1
    # and the success check decided the outcome
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert branch.outcome.final_answer == "42"
    assert branch.framework == "react" and branch.goal == original.goal
    # the branch is a full run in the store
    assert dbg.store is not None
    assert dbg.store.load_trajectory(branch.id).parent_id == original.id


def test_a_stored_run_reruns_from_the_store_alone(tmp_path: Path) -> None:
    first = AgentDebug(tmp_path / "store")
    run_id = failed_run(first).id
    first.close()
    # another process: only the store and the step function
    later = AgentDebug(tmp_path / "store")
    assert later.store is not None
    stored = later.store.load_trajectory(run_id)
    loop = ReactLoop(Counter(), debugger=later, success=lambda a: a == "42")
    branch = loop.executor().rerun(
        RerunRequest(trajectory=stored, resume_step=1, directive="look up right")
    )
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    later.close()


def test_rerun_from_a_later_step_keeps_the_earlier_steps(dbg: AgentDebug) -> None:
    original = failed_run(dbg)
    counter = Counter()
    branch = (
        make_counter_loop(dbg, counter)
        .executor()
        .rerun(RerunRequest(trajectory=original, resume_step=2, directive="think again"))
    )
    assert [e.id for e in branch.events if e.step_index < 2] == [
        e.id for e in original.events if e.step_index < 2
    ]
    assert len(counter.seen) == 1  # only step 2 was redone
    assert counter.seen[0][-1]["content"].endswith("think again")
    assert branch.outcome.status is OutcomeStatus.FAILURE  # that directive does not help


def test_rerun_from_step_0_resumes_at_the_first_step(dbg: AgentDebug) -> None:
    original = failed_run(dbg)
    branch = (
        make_counter_loop(dbg)
        .executor()
        .rerun(RerunRequest(trajectory=original, resume_step=0, directive="look up right"))
    )
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert branch.metadata["branch"]["resume_step"] == 1
    assert branch.metadata["react"]["rerun"]["requested_resume_step"] == 0
    assert [e.type for e in branch.events][:2] == [EventType.USER_INPUT, EventType.CHECKPOINT]


def test_a_step_function_that_raises_in_the_rerun_is_the_branchs_failure(
    dbg: AgentDebug,
) -> None:
    original = failed_run(dbg)
    loop = make_counter_loop(dbg, Counter(fail_at=2))
    branch = loop.executor().rerun(
        RerunRequest(trajectory=original, resume_step=1, directive="look up right")
    )  # does not raise
    assert branch.outcome.status is OutcomeStatus.FAILURE
    assert branch.outcome.error is not None and branch.outcome.error.type == "RuntimeError"
    assert branch.outcome.reason == "the step function raised RuntimeError at step 2"
    error = branch.events[-1]
    assert error.type is EventType.ERROR and error.step_index == 2
    assert dbg.store is not None and dbg.store.load_reports(branch.id) == []  # not auto-diagnosed


def test_a_state_patch_is_applied_to_dict_state(dbg: AgentDebug) -> None:
    original = failed_run(dbg)
    seen: list[Any] = []

    def step(ctx: StepContext[dict[str, Any]]) -> Step:
        seen.append((dict(ctx.state), ctx.state_patch))
        return Step.finish("42")

    ReactLoop(step, debugger=dbg).executor().rerun(
        RerunRequest(trajectory=original, resume_step=1, directive="d", state_patch={"hint": 1})
    )
    assert seen == [({"hint": 1}, {"hint": 1})]


def test_async_loops_rerun_too(dbg: AgentDebug) -> None:
    original = failed_run(dbg)
    counter = Counter()

    async def step(ctx: StepContext[Any]) -> Step:
        await asyncio.sleep(0)
        return counter(ctx)

    loop = ReactLoop(step, debugger=dbg, success=lambda a: a == "42")
    request = RerunRequest(trajectory=original, resume_step=1, directive="look up right")
    assert loop.executor().rerun(request).outcome.status is OutcomeStatus.SUCCESS

    async def inside_a_running_loop() -> AgentTrajectory:
        return loop.executor().rerun(request)

    assert asyncio.run(inside_a_running_loop()).outcome.status is OutcomeStatus.SUCCESS


# -- the registered executor --------------------------------------------------------------


FACTORY_MODULE = textwrap.dedent(
    """
    from conftest import Counter
    from agentdebug_react import ReactLoop, react_loop, Step

    def make_loop():
        return ReactLoop(Counter(), success=lambda a: a == "42", factory="react_factory:make_loop")

    @react_loop
    def a_loop_object(ctx):
        return Step.finish("42")

    def broken():
        raise OSError("no model credentials")

    not_a_loop = 42
    """
)


@pytest.fixture
def factory_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    folder = tmp_path / "factories"
    folder.mkdir()
    (folder / "react_factory.py").write_text(FACTORY_MODULE)
    monkeypatch.syspath_prepend(str(folder))
    return "react_factory"


def test_the_plugin_registers_the_executor_and_the_importer() -> None:
    reg = get_registry()
    assert isinstance(reg.rerun_executors["react"], ReactExecutor)
    assert "react-transcript" in reg.importers
    assert isinstance(find_executor("react"), ReactExecutor)


def test_the_registered_executor_rebuilds_the_loop_from_the_recorded_factory(
    dbg: AgentDebug, factory_module: str
) -> None:
    loop = make_counter_loop(dbg, auto_diagnose=False, factory=f"{factory_module}:make_loop")
    original = loop.run("q", state={}).trajectory()
    assert original.metadata["react"]["factory"] == "react_factory:make_loop"
    executor = ReactExecutor(debugger=dbg)  # what find_executor("react") gives, with a store
    branch = executor.rerun(
        RerunRequest(trajectory=original, resume_step=1, directive="look up right")
    )
    assert branch.outcome.status is OutcomeStatus.SUCCESS
    assert branch.metadata["react"]["factory"] == "react_factory:make_loop"  # rerunnable again


def test_the_registered_executor_refuses_runs_without_a_factory(dbg: AgentDebug) -> None:
    original = failed_run(dbg)
    with pytest.raises(AgentDebugError, match=r"ReactExecutor\(loop\).*factory=.*--executor"):
        find_executor("react").rerun(
            RerunRequest(trajectory=original, resume_step=1, directive="d")
        )


def test_load_loop_says_what_is_wrong_with_a_spec(factory_module: str) -> None:
    assert isinstance(load_loop("react_factory:make_loop"), ReactLoop)
    assert isinstance(load_loop("react_factory:a_loop_object"), ReactLoop)
    for spec, message in [
        ("react_factory", "expected module:function"),
        ("no_such_module_xyz:f", "cannot import no_such_module_xyz"),
        ("react_factory:missing", "has no 'missing'"),
        ("react_factory:broken", "failed: OSError: no model credentials"),
        ("react_factory:not_a_loop", "gave int"),
    ]:
        with pytest.raises(AgentDebugError, match=message):
            load_loop(spec)


def test_closed_loop_verifies_the_diagnosis_by_rerun(dbg: AgentDebug) -> None:
    """The example's agent through agentdebug's closed loop, in process."""
    import sys

    from conftest import REPO

    sys.path.insert(0, str(REPO))
    try:
        from examples.react.agent import make_executor, run_agent
    finally:
        sys.path.remove(str(REPO))
    result = run_agent(dbg)
    assert result.ok is False and result.report is not None
    root = result.report.root_cause
    assert root is not None and root.step_index == 1 and root.agent_name == "analyst"
    loop = closed_loop(result.trajectory(), debugger=dbg, executor=make_executor(dbg))
    assert loop.status == "succeeded" and loop.verified_by_rerun is True
    assert dbg.store is not None
    branch = dbg.store.load_trajectory(loop.attempts[0].branch_id or "")
    assert branch.outcome.final_answer == "117200"
