"""Checkpoints: the state before every step, on the trajectory, restorable from it alone."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.errors import AgentDebugError
from agentdebug.schema import RerunRequest
from agentdebug_react import (
    CHECKPOINT_KEY,
    ReactExecutor,
    ReactLoop,
    Step,
    StepContext,
    restore_point,
)


def chatty(ctx: StepContext[Any]) -> Step:
    """Appends two messages per step and counts in its state; answers at step 4."""
    if ctx.step == 4:
        return Step.finish(f"saw {len(ctx.messages)} messages")
    ctx.messages.append({"role": "assistant", "content": f"call {ctx.step}"})
    ctx.messages.append({"role": "user", "content": f"Observation: result {ctx.step}"})
    ctx.state["n"] = ctx.state.get("n", 0) + 1
    return Step(thought=f"step {ctx.step}", action="tool", action_input=ctx.step, observation="r")


def test_one_checkpoint_per_step_holding_the_state_before_it(dbg: AgentDebug) -> None:
    loop = ReactLoop(chatty, debugger=dbg)
    result = loop.run("count", state={"n": 0})
    run = result.trajectory()
    checkpoints = [e for e in run.events if e.type is EventType.CHECKPOINT]
    assert [e.step_index for e in checkpoints] == [1, 2, 3, 4]
    for event in checkpoints:
        ref = event.checkpoint
        assert ref is not None and ref.framework == "react" and ref.thread_id == run.id
        assert ref.checkpoint_id == f"{run.id}:{event.step_index}"
        assert ref.extra["restorable"] is True
        # the first event of its step: a rerun forks right there
        assert next(e for e in run.events if e.step_index == event.step_index) is event
    # messages are stored as appended deltas, not a full copy per step
    data = [e.metadata[CHECKPOINT_KEY] for e in checkpoints]
    assert [(d["messages_keep"], len(d["messages_append"])) for d in data] == [
        (0, 1),
        (1, 2),
        (3, 2),
        (5, 2),
    ]
    assert [d["state"] for d in data] == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]
    # every step's state is rebuilt exactly from the trajectory alone
    for k in (1, 2, 3, 4):
        point = restore_point(run, k)
        assert point.step == k
        assert len(point.messages) == 1 + 2 * (k - 1)
        assert point.messages[-1]["content"] == (
            "count" if k == 1 else f"Observation: result {k - 1}"
        )
        assert point.state_data == {"n": k - 1}


def test_a_rewritten_history_is_stored_in_full(dbg: AgentDebug) -> None:
    def trim(ctx: StepContext[None]) -> Step:
        if ctx.step == 3:
            return Step.finish("ok")
        ctx.messages[:] = [{"role": "user", "content": f"summary after {ctx.step}"}]
        return Step(thought="trimmed")

    run = ReactLoop(trim, debugger=dbg).run("go").trajectory()
    cps = [e.metadata[CHECKPOINT_KEY] for e in run.events if e.type is EventType.CHECKPOINT]
    assert [c["messages_keep"] for c in cps] == [0, 0, 0]
    assert restore_point(run, 3).messages == [{"role": "user", "content": "summary after 2"}]


@dataclass
class Notebook:
    """State that is not JSON data: a set and a dataclass."""

    seen: set[str] = field(default_factory=set)
    pages: int = 0


class NotebookSnapshotter:
    name = "notebook"

    def snapshot(self, state: Notebook) -> dict[str, Any]:
        return {"seen": sorted(state.seen), "pages": state.pages}

    def restore(self, data: dict[str, Any]) -> Notebook:
        return Notebook(seen=set(data["seen"]), pages=data["pages"])


def note_taker(ctx: StepContext[Notebook]) -> Step:
    if ctx.directive:
        ctx.state.seen.add("directive")
    if ctx.step == 3:
        return Step.finish(",".join(sorted(ctx.state.seen)))
    ctx.state.seen.add(f"p{ctx.step}")
    ctx.state.pages += 1
    return Step(thought=f"page {ctx.step}")


def test_a_custom_snapshotter_round_trips_through_a_rerun(dbg: AgentDebug) -> None:
    loop = ReactLoop(note_taker, debugger=dbg, snapshotter=NotebookSnapshotter())
    result = loop.run("read", state=Notebook())
    assert result.answer == "p1,p2"
    run = result.trajectory()
    assert run.metadata["react"]["snapshotter"] == "notebook"
    branch = ReactExecutor(loop).rerun(
        RerunRequest(trajectory=run, resume_step=2, directive="note it")
    )
    # restored at step 2: p1 seen, one page; the rerun redoes step 2 with the directive
    assert branch.outcome.final_answer == "directive,p1,p2"


def test_state_that_is_not_json_is_logged_and_refused_at_rerun(
    dbg: AgentDebug, caplog: pytest.LogCaptureFixture
) -> None:
    loop = ReactLoop(note_taker, debugger=dbg)  # the default JSON snapshotter
    with caplog.at_level(logging.WARNING, logger="agentdebug.react"):
        result = loop.run("read", state=Notebook())
    assert result.answer == "p1,p2"  # the agent was not disturbed
    assert any("cannot be rerun from step 1" in r.getMessage() for r in caplog.records)
    run = result.trajectory()
    with pytest.raises(AgentDebugError, match=r"not restorable.*give the loop a Snapshotter"):
        ReactExecutor(loop).rerun(RerunRequest(trajectory=run, resume_step=2, directive="d"))


def test_runs_without_checkpoints_are_refused(dbg: AgentDebug) -> None:
    from agentdebug_react import parse_transcript

    run = parse_transcript("Thought: hi\nFinal Answer: x")
    with pytest.raises(AgentDebugError, match="no ReAct checkpoints"):
        restore_point(run, 1)


def test_an_imported_transcript_is_refused_for_its_missing_checkpoints_first(
    dbg: AgentDebug,
) -> None:
    """Before: the executor with no loop said to give it a factory, which could
    not help; the reason a transcript cannot be rerun comes first."""
    from agentdebug_react import parse_transcript

    run = parse_transcript("Thought: hi\nFinal Answer: x")
    with pytest.raises(AgentDebugError, match=r"no ReAct checkpoints.*imported from a transcript"):
        ReactExecutor().preflight(run)
    with pytest.raises(AgentDebugError, match="no ReAct checkpoints"):
        ReactExecutor().rerun(RerunRequest(trajectory=run, resume_step=1, directive="d"))
