"""Capture never breaks the agent: its own failures are logged, the loop goes on."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.capture.session import TraceSession
from agentdebug_react import ReactLoop, Step, StepContext
from conftest import Counter, make_counter_loop


class BrokenSnapshotter:
    name = "broken"

    def snapshot(self, state: Any) -> Any:
        raise RuntimeError("snapshot bug")

    def restore(self, data: Any) -> Any:  # pragma: no cover - never reached
        return data


def test_a_snapshotter_that_raises_does_not_stop_the_loop(
    dbg: AgentDebug, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agentdebug.react"):
        result = make_counter_loop(dbg, snapshotter=BrokenSnapshotter()).run("q", state={})
    assert result.answer == "0" and result.steps == 2
    assert any("snapshot bug" in r.getMessage() for r in caplog.records)


def test_a_recording_failure_is_logged_and_the_loop_goes_on(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken_record(self: TraceSession, *args: Any, **kwargs: Any) -> str:
        raise OSError("disk on fire")

    monkeypatch.setattr(TraceSession, "record", broken_record)
    counter = Counter()
    with caplog.at_level(logging.ERROR, logger="agentdebug"):
        result = make_counter_loop(dbg, counter, auto_diagnose=False).run("q", state={})
    assert result.answer == "0" and len(counter.seen) == 2  # the agent ran as usual
    assert any("could not be recorded" in r.getMessage() for r in caplog.records)


def test_a_broken_directive_builder_still_delivers_the_directive(dbg: AgentDebug) -> None:
    from agentdebug.schema import RerunRequest

    original = make_counter_loop(dbg, auto_diagnose=False).run("q", state={}).trajectory()

    def broken(directive: str) -> dict[str, Any]:
        raise ValueError("template bug")

    loop = make_counter_loop(dbg, directive_message=broken)
    branch = loop.executor().rerun(
        RerunRequest(trajectory=original, resume_step=1, directive="look up right")
    )
    assert branch.outcome.final_answer == "42"  # the default message carried it


def test_unserialisable_payloads_are_kept_as_text(dbg: AgentDebug) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque>"

    def step(ctx: StepContext[None]) -> Step:
        if ctx.step == 1:
            return Step(thought="t", action="make", action_input=Opaque(), observation=Opaque())
        return Step.finish(Opaque())

    result = ReactLoop(step, debugger=dbg).run("q")
    run = result.trajectory()
    assert [e.input for e in run.events if e.type.value == "tool.call"] == ["<Opaque>"]
    assert run.events[-1].output == "<Opaque>"


def test_a_store_that_cannot_open_keeps_the_run_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    dbg = AgentDebug(blocker / "store")  # a folder under a file: cannot exist
    counter = Counter()
    result = make_counter_loop(dbg, counter).run("q", state={})
    assert result.answer == "0" and len(counter.seen) == 2
    assert result.trajectory().outcome.status.value == "failure"
