"""State a hand-written loop keeps that JSON does not give back as it was, and a
rerun its user stops with Ctrl-C."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from agentdebug import AgentDebug, OutcomeStatus
from agentdebug.errors import AgentDebugError
from agentdebug.rerun import closed_loop
from agentdebug.schema import RerunRequest
from agentdebug_react import JsonSnapshotter, ReactLoop, Step, StepContext
from conftest import Counter, make_counter_loop


def test_a_float_json_cannot_give_back_is_refused_not_turned_into_null(
    dbg: AgentDebug,
) -> None:
    loop = make_counter_loop(dbg, auto_diagnose=False)
    run = loop.run("q", state={"best_score": float("nan")}).trajectory()
    with pytest.raises(AgentDebugError, match=r"state\['best_score'\] is nan"):
        loop.executor().rerun(RerunRequest(trajectory=run, resume_step=1, directive="d"))


def test_unrestorable_state_is_logged_once_a_run(
    dbg: AgentDebug, caplog: pytest.LogCaptureFixture
) -> None:
    def step(ctx: StepContext[Any]) -> Step:
        if ctx.step < 4:
            return Step(thought="t", action="a", action_input=ctx.step, observation="o")
        return Step.finish("done")

    with open(__file__) as handle:
        loop = ReactLoop(step, debugger=dbg, auto_diagnose=False)
        with caplog.at_level(logging.WARNING, logger="agentdebug.react"):
            loop.run("q", state={"log": handle})
    said = [r.getMessage() for r in caplog.records if "cannot be rerun" in r.getMessage()]
    assert len(said) == 1 and "from step 1" in said[0] and "TextIOWrapper" in said[0]


def test_ctrl_c_during_a_rerun_keeps_the_branch_stopped_and_the_round(dbg: AgentDebug) -> None:
    class Stopped(Counter):
        def __call__(self, ctx: StepContext[Any]) -> Step:
            if ctx.directive is not None:
                raise KeyboardInterrupt
            return super().__call__(ctx)

    loop = make_counter_loop(dbg, Stopped())
    original = loop.run("q", state={}).trajectory()
    with pytest.raises(KeyboardInterrupt):
        closed_loop(original, debugger=dbg, executor=loop.executor(), policy="auto")
    store = dbg.store
    assert store is not None
    (branch,) = [r for r in store.list_runs() if r.id != original.id]
    stopped = store.load_trajectory(branch.id)
    assert stopped.outcome.status is OutcomeStatus.UNKNOWN
    assert stopped.outcome.stopped_by == "KeyboardInterrupt"
    rounds = store.load_reports(original.id)[-1].metadata["recovery"]
    assert [(r["branch_id"], r["decision"]["approved"]) for r in rounds] == [(branch.id, True)]


class Label(str):
    """A subclass of a plain type: plain JSON all the same, as before."""


@pytest.mark.parametrize(
    ("state", "refused"),
    [
        ({"pages": [{"n": 1, "text": "x"}], "ok": True, "none": None}, None),
        ({"label": Label("a"), "rows": [[1, 2.5, "x"]]}, None),
        ({"pages": [{"n": 1}, {"at": (1, 2)}]}, "state['pages'][1]['at'] is a tuple"),
        ({"seen": {1, 2}}, "state['seen'] is a set"),
        ({"scores": [1.0, float("nan")]}, "state['scores'][1] is nan"),
        ({"by_id": {3: "x"}}, "state['by_id'] has a int key"),
    ],
)
def test_json_state_is_checked_whole_and_named_where_it_is_not(
    state: Any, refused: str | None
) -> None:
    """The JSON snapshotter's check runs on the whole state before every step (a
    stack walk, not a call a value): what it refuses it names, down to the item."""
    if refused is None:
        assert JsonSnapshotter().snapshot(state) is state
    else:
        with pytest.raises(TypeError) as raised:
            JsonSnapshotter().snapshot(state)
        assert str(raised.value).startswith(refused)
