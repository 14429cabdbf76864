"""Automatic diagnosis: when the loop raises or its answer fails the success check."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug, DiagnosticReport, EventType, OutcomeStatus
from agentdebug.store import open_store
from agentdebug_react import ReactLoop, Step, StepContext
from conftest import Counter, make_counter_loop


class ToolBroke(Exception):
    """The user's own exception type."""


def test_an_exception_propagates_unchanged_with_the_diagnosis_as_a_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    reports: list[DiagnosticReport] = []
    raised = ToolBroke("the search API is down")

    def step(ctx: StepContext[None]) -> Step:
        if ctx.step == 1:
            return Step(thought="search", action="search", action_input="x", observation="ok")
        raise raised

    dbg = AgentDebug(tmp_path / "store")
    loop = ReactLoop(step, debugger=dbg, on_report=reports.append)
    with caplog.at_level(logging.WARNING, logger="agentdebug"), pytest.raises(ToolBroke) as info:
        loop.run("find x")

    assert info.value is raised  # the same object, the same type
    notes = getattr(raised, "__notes__", [])
    assert len(notes) == 1 and notes[0].startswith("agentdebug diagnosis ")
    assert f"agentdebug --store {tmp_path / 'store'} show" in notes[0]  # (its absolute path)
    assert len(reports) == 1
    report = reports[0]
    assert report.id in notes[0]
    assert any(report.id in r.getMessage() for r in caplog.records)  # the one-paragraph summary
    # the run and its report are in the SQLite store, side by side
    dbg.close()
    store = open_store(tmp_path / "store")
    run = store.load_trajectory(report.trajectory_id)
    assert [r.id for r in store.load_reports(run.id)] == [report.id]
    error = run.events[-1]
    assert error.type is EventType.ERROR and error.step_index == 2
    assert error.error is not None and error.error.type == "ToolBroke"
    assert "Traceback" in (error.error.traceback or "")
    assert run.outcome.status is OutcomeStatus.FAILURE
    assert run.outcome.reason == "the step function raised ToolBroke at step 2"
    assert [e.type for e in run.events].count(EventType.ERROR) == 1  # recorded once


def test_an_exception_in_the_users_loop_between_steps(dbg: AgentDebug) -> None:
    reports: list[DiagnosticReport] = []
    loop = make_counter_loop(dbg, on_report=reports.append)
    with pytest.raises(KeyError) as info, loop.capture("q") as run:
        run.step()
        raise KeyError("the user's own bug")
    assert run.result is not None and run.result.report is reports[0]
    assert info.value.__notes__[0].startswith("agentdebug diagnosis")
    out = run.result.trajectory().outcome
    assert out.reason == "the loop raised KeyError between steps"


def test_a_failed_success_check_is_diagnosed_and_blames_the_decisive_step(
    dbg: AgentDebug,
) -> None:
    reports: list[DiagnosticReport] = []
    result = make_counter_loop(dbg, on_report=reports.append).run("q")
    assert result.ok is False
    assert result.report is not None and reports == [result.report]
    assert result.report.tier == "free"
    root = result.report.root_cause
    assert root is not None and root.step_index == 1 and root.agent_name == "agent"
    stored = dbg.store.load_reports(result.run_id) if dbg.store else []
    assert [r.id for r in stored] == [result.report.id]


def test_no_diagnosis_when_it_passes_or_is_turned_off(dbg: AgentDebug) -> None:
    reports: list[DiagnosticReport] = []
    ok = make_counter_loop(dbg, success=lambda a: True, on_report=reports.append).run("q")
    off = make_counter_loop(dbg, auto_diagnose=False, on_report=reports.append).run("q")
    assert ok.report is None and off.report is None and reports == []
    assert off.ok is False


def test_a_broken_on_report_callback_is_logged(
    dbg: AgentDebug, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(report: DiagnosticReport) -> None:
        raise RuntimeError("callback bug")

    with caplog.at_level(logging.ERROR, logger="agentdebug"):
        result = make_counter_loop(dbg, on_report=explode).run("q")
    assert result.report is not None
    assert any("on_report callback failed" in r.getMessage() for r in caplog.records)


def test_keyboard_interrupt_is_recorded_but_not_diagnosed(dbg: AgentDebug) -> None:
    def stop(ctx: StepContext[None]) -> Step:
        raise KeyboardInterrupt

    reports: list[DiagnosticReport] = []
    loop: ReactLoop[None] = ReactLoop(stop, debugger=dbg, on_report=reports.append)
    with pytest.raises(KeyboardInterrupt):
        loop.run("q")
    assert reports == []


def test_failure_before_anything_useful_still_propagates(dbg: AgentDebug) -> None:
    counter = Counter(fail_at=1)
    with pytest.raises(RuntimeError, match="model crashed at step 1") as info:
        make_counter_loop(dbg, counter).run("q")
    assert info.value.__notes__  # the diagnosis ran on the recorded error


def test_a_step_that_raises_is_blamed_not_the_good_step_before_it(dbg: AgentDebug) -> None:
    """Step 1 looked the factor up and got it; step 2's own code raised before it
    chose anything. The failure is step 2's: the call step 1 made did not fail."""

    def crashing(ctx: StepContext[None]) -> Step:
        if ctx.step == 2:
            raise RuntimeError("model server exploded")
        return Step(thought="t", action="lookup", action_input="mile_km", observation="1.609")

    reports: list[DiagnosticReport] = []
    loop: ReactLoop[None] = ReactLoop(crashing, debugger=dbg, on_report=reports.append)
    with pytest.raises(RuntimeError, match="model server exploded"):
        loop.run("convert 10 miles")
    (report,) = reports
    assert report.root_cause is not None and report.root_cause.step_index == 2
    assert report.symptom is not None
    assert "raised: RuntimeError: model server exploded" in report.symptom.message
    assert "error failed" not in report.summary


async def wrong_capital(ctx: StepContext[None]) -> Step:
    """Searches for the largest city instead of the capital, and answers with it."""
    if ctx.step == 1:
        return Step(
            thought="the capital is the largest city",
            action="search",
            action_input="largest city of Australia",
            observation="Sydney",
        )
    return Step.finish("Sydney")


def slow_model(body: dict[str, Any]) -> Any:
    """A scripted model's answer, after a model's thinking time."""
    from agentdebug.llm.testing import schema_answerer

    reply = schema_answerer(body)
    reply.delay = 0.3
    return reply


def _model(monkeypatch: pytest.MonkeyPatch, server: Any) -> None:
    monkeypatch.setenv("AGENTDEBUG_MODEL", "scripted")
    monkeypatch.setenv("AGENTDEBUG_BASE_URL", server.base_url)
    monkeypatch.setenv("AGENTDEBUG_API_KEY", "test-key")


def test_an_async_run_awaits_its_diagnosis_without_holding_up_the_loop(
    dbg: AgentDebug, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a model configured (a real local OpenAI-compatible server, slow to
    answer), a failed answer's diagnosis asks the model on a worker thread:
    another task of the loop keeps ticking while each request waits, the result
    has the report, and ``on_report`` runs on the loop."""
    import asyncio
    import time

    from agentdebug.llm.testing import Reply, ScriptedServer, schema_answerer

    ticks: list[int] = []
    ticked_while_asked: list[int] = []

    def answer(body: dict[str, object]) -> Reply:
        before = len(ticks)
        time.sleep(0.3)  # a model thinking
        ticked_while_asked.append(len(ticks) - before)
        return schema_answerer(body)

    told: list[tuple[DiagnosticReport, object]] = []  # the report, and the loop it was on
    loop = ReactLoop(
        wrong_capital,
        debugger=dbg,
        success=lambda answer: answer == "Canberra",
        on_report=lambda r: told.append((r, asyncio.get_running_loop())),
    )

    async def app() -> Any:
        async def ticker() -> None:
            while True:
                ticks.append(1)
                await asyncio.sleep(0.01)

        beat = asyncio.create_task(ticker())
        try:
            return await loop.arun("Name the capital of Australia.")
        finally:
            beat.cancel()

    with ScriptedServer(answer) as server:
        _model(monkeypatch, server)
        result = asyncio.run(app())
        assert server.requests
    assert ticked_while_asked and min(ticked_while_asked) > 5  # the loop went on
    assert result.ok is False and result.report is not None
    assert result.report.tier == "model"
    assert [r.id for r, _ in told] == [result.report.id]  # on_report ran on the loop


def test_an_async_run_that_raises_is_diagnosed_in_the_background(
    dbg: AgentDebug, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's exception reaches the caller at once, also under a deadline
    shorter than the diagnosis (waiting for it would let the deadline replace
    the exception): noted that the diagnosis goes on; closing the debugger waits
    for it, and its report is stored and handed to ``on_report``."""
    import asyncio

    from agentdebug.llm.testing import ScriptedServer

    async def step(ctx: StepContext[None]) -> Step:
        raise ToolBroke("the search API is down")

    told: list[DiagnosticReport] = []
    loop = ReactLoop(step, debugger=dbg, on_report=told.append)

    async def app() -> None:
        await asyncio.wait_for(loop.arun("find x"), timeout=0.2)

    with ScriptedServer(slow_model) as server:
        _model(monkeypatch, server)
        with pytest.raises(ToolBroke) as raised:
            asyncio.run(app())
        (note,) = raised.value.__notes__
        assert "in the background" in note
        assert dbg.store is not None
        (summary,) = dbg.store.list_runs()
        assert summary.id in note
        dbg.close()  # waits for the diagnosis
    store = open_store(tmp_path / "store")  # (the dbg fixture's)
    (report,) = store.load_reports(summary.id)
    assert report.tier == "model" and [r.id for r in told] == [report.id]
    store.close()


def test_a_cancel_while_an_answer_is_diagnosed_passes_on(
    dbg: AgentDebug, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that raised nothing has nothing to keep: a deadline that runs out
    while its diagnosis is awaited ends the wait as usual; the diagnosis finishes
    all the same (``close()`` waits), its report stored."""
    import asyncio

    from agentdebug.llm.testing import ScriptedServer

    loop = ReactLoop(wrong_capital, debugger=dbg, success=lambda answer: answer == "Canberra")

    async def app() -> None:
        await asyncio.wait_for(loop.arun("Name the capital of Australia."), timeout=0.2)

    with ScriptedServer(slow_model) as server:
        _model(monkeypatch, server)
        with pytest.raises(TimeoutError):
            asyncio.run(app())
        assert dbg.store is not None
        (summary,) = dbg.store.list_runs()
        dbg.close()
    store = open_store(tmp_path / "store")
    (report,) = store.load_reports(summary.id)
    assert report.tier == "model"
    store.close()


def test_an_async_run_on_the_free_tier_is_diagnosed_on_the_loop(dbg: AgentDebug) -> None:
    """No model to wait for: the diagnosis takes milliseconds where the run ended
    (so it needs no asyncio worker thread, and works under any event loop)."""
    import asyncio
    import threading

    threads: list[str] = []

    async def step(ctx: StepContext[None]) -> Step:
        raise ToolBroke("the search API is down")

    loop = ReactLoop(
        step, debugger=dbg, on_report=lambda r: threads.append(threading.current_thread().name)
    )
    with pytest.raises(ToolBroke) as raised:
        asyncio.run(loop.arun("find x"))
    assert threads == [threading.current_thread().name]
    assert raised.value.__notes__[0].startswith("agentdebug diagnosis ")
