"""Checkpoints: the state before every step, on the trajectory, restorable from it alone."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from agentdebug import AgentDebug, EventType
from agentdebug.errors import AgentDebugError
from agentdebug.rerun import closed_loop
from agentdebug.schema import RerunRequest
from agentdebug_react import (
    CHECKPOINT_KEY,
    ReactExecutor,
    ReactLoop,
    Step,
    StepContext,
    restore_point,
)
from agentdebug_react._snapshot import appended


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
    # so is the state: whole at first, then the keys that changed
    assert data[0]["state"] == {"n": 0}
    assert [d["state_delta"] for d in data[1:]] == [{"set": {"n": n}} for n in (1, 2, 3)]
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
    # the closed loop, which cannot score it either (no outcome, no reference), says
    # first that it cannot be rerun at all: a scorer set up for it would only get there
    with pytest.raises(AgentDebugError) as raised:
        closed_loop(run, debugger=dbg)
    assert str(raised.value).startswith(
        f"run '{run.id}': the 'react' executor cannot rerun it: run '{run.id}' has no ReAct "
        "checkpoints to restore"
    )
    assert "; and the default scorer cannot judge run" in str(raised.value)


def reader(ctx: StepContext[Any]) -> Step:
    """Reads a page a step into a growing notebook; answers at step 60."""
    if ctx.step == 60:
        return Step.finish("done")
    ctx.state["pages"].append({"url": f"https://example.org/{ctx.step}", "text": "x" * 400})
    ctx.state["last"] = ctx.step
    if ctx.step == 30:
        ctx.state["pages"] = ctx.state["pages"][10:]  # (not an append: stored whole)
        del ctx.state["topic"]
    return Step(thought="read", action="read", action_input=ctx.step, observation="ok")


def test_a_growing_state_is_stored_once_and_rebuilt_at_every_step(dbg: AgentDebug) -> None:
    loop = ReactLoop(reader, debugger=dbg, max_steps=100)
    run = loop.run("read", state={"pages": [], "topic": "t"})
    run = run.trajectory()
    data = [e.metadata[CHECKPOINT_KEY] for e in run.events if e.type is EventType.CHECKPOINT]
    assert data[1]["state_delta"] == {
        "set": {"last": 1},
        "extend": {"pages": [{"url": "https://example.org/1", "text": "x" * 400}]},
    }
    assert data[30]["state_delta"]["drop"] == ["topic"]  # the state before step 31
    assert len(data[30]["state_delta"]["set"]["pages"]) == 20  # cut, so stored whole
    whole = 0  # what the 60 checkpoints would hold with the state whole in each
    for k in range(1, 61):
        state = restore_point(run, k).state_data
        whole += len(orjson.dumps(state))
        pages = list(range(1, k)) if k <= 30 else list(range(11, k))
        assert [p["url"].rpartition("/")[2] for p in state["pages"]] == [str(p) for p in pages]
        assert ("topic" in state) is (k <= 30)
        assert state.get("last") == (k - 1 if k > 1 else None)
    # each page once (and the 20 kept at the cut once more), not a copy a step
    stored = sum(len(orjson.dumps(d)) for d in data)
    assert stored < 3 * len(orjson.dumps(state)) and 10 * stored < whole


def test_a_list_state_is_stored_as_what_was_appended(dbg: AgentDebug) -> None:
    def grow(ctx: StepContext[Any]) -> Step:
        if ctx.step == 4:
            return Step.finish("ok")
        ctx.state.append([ctx.step, "seen"])
        return Step(thought="grow")

    run = ReactLoop(grow, debugger=dbg).run("go", state=[]).trajectory()
    data = [e.metadata[CHECKPOINT_KEY] for e in run.events if e.type is EventType.CHECKPOINT]
    assert [d.get("state", d.get("state_append")) for d in data] == [
        [],
        [[1, "seen"]],
        [[2, "seen"]],
        [[3, "seen"]],
    ]
    assert restore_point(run, 4).state_data == [[1, "seen"], [2, "seen"], [3, "seen"]]


def test_runs_stored_in_the_first_format_still_restore(dbg: AgentDebug) -> None:
    run = ReactLoop(chatty, debugger=dbg).run("count", state={"n": 0}).trajectory()
    for event in run.events:  # as agentdebug-react 0.x stored them: the state whole
        data = event.metadata.get(CHECKPOINT_KEY)
        if data is not None:
            n = restore_point(run, event.step_index).state_data["n"]
            data.pop("state_delta", None)
            data.update(format=1, state={"n": n})
    assert [restore_point(run, k).state_data for k in (1, 4)] == [{"n": 0}, {"n": 3}]


@pytest.mark.parametrize(
    ("before", "now", "added"),
    [
        ([], [1, 2], [1, 2]),
        ([1], [1, 2], [2]),
        ([[1]], [[1], [2, 3]], [[2, 3]]),
        ([{"a": "x]"}], [{"a": "x]"}, "y"], ["y"]),
        ([1], [12], None),  # a figure that grew is not an item appended
        ([[1]], [[1, 2]], None),  # an inner list grew: not an append to the outer one
        ([1, 2], [1], None),
        ([1, 2], [2, 1, 3], None),
        ("[1]", ["[1]", 2], None),  # a string is not a list
    ],
)
def test_what_was_appended_is_read_from_the_json(before: Any, now: Any, added: Any) -> None:
    assert appended(orjson.dumps(before), orjson.dumps(now)) == added


def test_a_step_whose_state_could_not_be_stored_breaks_no_later_checkpoint(
    dbg: AgentDebug,
) -> None:
    def odd(ctx: StepContext[Any]) -> Step:
        if ctx.step == 4:
            return Step.finish("ok")
        ctx.state["n"] = ctx.step
        if ctx.step == 2:
            ctx.state["seen"] = {1, 2}  # a set: not JSON data, so that checkpoint fails
        else:
            ctx.state.pop("seen", None)
        return Step(thought="odd")

    run = ReactLoop(odd, debugger=dbg).run("go", state={"n": 0}).trajectory()
    data = [e.metadata[CHECKPOINT_KEY] for e in run.events if e.type is EventType.CHECKPOINT]
    assert [d["restorable"] for d in data] == [True, True, False, True]
    assert data[3]["state"] == {"n": 3}  # after the gap, whole again
    with pytest.raises(AgentDebugError, match="before step 3 was not restorable"):
        restore_point(run, 3)
    assert restore_point(run, 4).state_data == {"n": 3}
