"""The automatic diagnosis of a failed run never holds the user's program up for
long: its model calls have a deadline in all (``auto_deadline``), after which the
free tier answers; a slow model is said in one log line; and a model that fails
with ``no_fallback`` on is one warning line, not a crash's traceback. Driven
through the real client against a scripted local server."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.capture import auto
from agentdebug.capture.auto import diagnose_failure, diagnose_in_background
from agentdebug.llm import LLMCallFailed, LLMClient, LLMSettings, load_settings
from agentdebug.llm.testing import Reply, ScriptedServer, schema_answerer
from agentdebug.schema import DiagnosticReport
from agentdebug.testing import finishes_within
from pydantic import BaseModel
from toy_agent import failing_run

HUNG = 30.0  # seconds the hung server sleeps before it answers


def hung(body: dict[str, Any]) -> Reply:
    return Reply(content=schema_answerer(body).content, delay=HUNG)


def configure(monkeypatch: pytest.MonkeyPatch, server: ScriptedServer, **env: str) -> None:
    """The model set as a user sets it: through the environment."""
    monkeypatch.setenv("AGENTDEBUG_MODEL", "scripted")
    monkeypatch.setenv("AGENTDEBUG_BASE_URL", server.base_url)
    monkeypatch.setenv("AGENTDEBUG_API_KEY", "k")
    monkeypatch.setenv("AGENTDEBUG_CACHE", "false")
    for name, value in env.items():
        monkeypatch.setenv(f"AGENTDEBUG_{name.upper()}", value)


def agentdebug_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name.startswith("agentdebug") and r.levelno >= logging.WARNING
    ]


def test_the_setting_is_read_as_the_other_model_settings_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert LLMSettings().auto_deadline == 60.0
    monkeypatch.setenv("AGENTDEBUG_AUTO_DEADLINE", "2.5")
    assert load_settings().auto_deadline == 2.5
    assert load_settings({"auto_deadline": 0}).auto_deadline == 0  # (0: no deadline)


def test_a_hung_model_gives_way_to_the_free_tier_when_the_deadline_runs_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server never answers in time (before: 60 s timeout x 5 attempts, about
    5 minutes of a frozen ``graph.invoke()``). With a 1.5 s deadline the diagnosis
    returns in seconds with the free tier's answer, and says why."""
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    exc = ValueError("the agent gave up")
    with ScriptedServer(hung) as server:
        configure(monkeypatch, server, auto_deadline="1.5")
        started = time.monotonic()
        report = finishes_within(25, lambda: diagnose_failure(dbg, run, exc=exc))
        elapsed = time.monotonic() - started
        asked = len(server.requests)
    assert elapsed < 15  # (1.5 s and slack; before: minutes)
    assert asked == 1  # nothing retried past the deadline
    assert report is not None and report.root_cause is not None  # the free tier's
    assert report.root_cause.agent_name == "researcher"
    said = [n for n in report.notes if "deadline" in n]
    assert said and "all-at-once failed" in said[0]
    assert "the automatic diagnosis's 1.5 s deadline for model calls ran out" in said[0]
    assert "AGENTDEBUG_AUTO_DEADLINE" in said[0]
    (note,) = exc.__notes__
    assert "A model stage did not answer" in note and "deadline for model calls ran out" in note


def test_a_long_retry_after_is_not_waited_for_past_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 429 asking for 30 s (before: four waits of 30 s, two minutes): the
    deadline would pass first, so the diagnosis stops asking at once."""
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    busy = Reply(content="slow down", status=429, headers={"Retry-After": "30"})
    with ScriptedServer(lambda body: busy) as server:
        configure(monkeypatch, server, auto_deadline="10")
        report = finishes_within(20, lambda: diagnose_failure(dbg, run))
        asked = len(server.requests)
    assert asked == 1
    assert report is not None and report.root_cause is not None
    said = [n for n in report.notes if "deadline" in n]
    assert said and "HTTP 429" in said[0] and "10 s deadline for model calls ran out" in said[0]


def test_a_background_diagnosis_ends_at_the_deadline_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An async run's diagnosis, on agentdebug's thread: the interpreter's exit
    waits for it, so it too ends at the deadline (before: minutes)."""
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    with ScriptedServer(hung) as server:
        configure(monkeypatch, server, auto_deadline="1")
        future = diagnose_in_background(dbg, run)
        report = future.result(timeout=15)
    assert isinstance(report, DiagnosticReport) and report.root_cause is not None
    assert any("1 s deadline for model calls ran out" in n for n in report.notes)
    dbg.close()


def test_a_slow_model_is_said_once_in_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Waiting on the model is said, once, while it lasts: the user knows why the
    program has not gone on, and for how long at most it will not."""
    monkeypatch.setattr(auto, "WAIT_NOTICE", 0.2)
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    with ScriptedServer(hung) as server:
        configure(monkeypatch, server, auto_deadline="2")
        with caplog.at_level(logging.WARNING, logger="agentdebug"):
            report = finishes_within(25, lambda: diagnose_failure(dbg, run))
    assert report is not None
    waiting = [r.getMessage() for r in caplog.records if "is waiting for model" in r.getMessage()]
    assert len(waiting) == 1
    assert f"the diagnosis of run {run.id} is waiting for model 'scripted'" in waiting[0]
    assert "answers with the free tier after at most" in waiting[0]
    assert "auto_deadline = 2 s" in waiting[0]


@pytest.mark.parametrize("answer", ["malformed", "hung"])
def test_with_no_fallback_a_failed_model_is_one_warning_line_and_a_bug_a_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    answer: str,
) -> None:
    """An answer that never matches the schema, or none within the deadline, with
    ``no_fallback`` on: expected, so one warning line naming the run and the
    error, and no traceback (before: ERROR and ~50 lines of chained traceback, as
    if agentdebug had crashed). A fault of agentdebug's own still logs its
    traceback."""
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    exc = ValueError("the agent gave up")

    def garbage(body: dict[str, Any]) -> Reply:
        return Reply(content="lol not json at all, I am a teapot")

    with ScriptedServer(garbage if answer == "malformed" else hung) as server:
        configure(monkeypatch, server, no_fallback="true", auto_deadline="1")
        with caplog.at_level(logging.WARNING, logger="agentdebug"):
            report = finishes_within(20, lambda: diagnose_failure(dbg, run, exc=exc))
    assert report is None
    (record,) = agentdebug_records(caplog)
    assert record.levelno == logging.WARNING and record.exc_info is None
    line = record.getMessage()
    assert "\n" not in line and "Traceback" not in caplog.text
    assert line.startswith(f"agentdebug could not diagnose run {run.id}:")
    expected = "MalformedAnswer" if answer == "malformed" else "DeadlineExceeded"
    assert expected in line
    (note,) = exc.__notes__
    assert expected in note

    caplog.clear()

    def broken(*args: Any, **kwargs: Any) -> DiagnosticReport:
        raise RuntimeError("a bug in agentdebug")

    monkeypatch.setattr(dbg, "diagnose", broken)
    with caplog.at_level(logging.WARNING, logger="agentdebug"):
        assert diagnose_failure(dbg, run) is None
    (record,) = agentdebug_records(caplog)
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert "a bug in agentdebug" in caplog.text and "Traceback" in caplog.text


class Verdict(BaseModel):
    half: str


def test_the_client_does_not_wait_for_a_slot_past_the_deadline() -> None:
    """The one slot of a concurrency-1 endpoint is held by a hung request: a call
    under a 1 s deadline does not wait for it past the deadline, and says it was
    not sent."""
    from agentdebug.llm.budget import DeadlineExceeded, deadline_scope

    with ScriptedServer(lambda body: Reply(content='{"half": "first"}', delay=3)) as server:
        settings = LLMSettings(
            model="m", base_url=server.base_url, api_key="k", cache=False, concurrency=1
        )
        client = LLMClient(settings)
        ask = [{"role": "user", "content": "which half?"}]
        holder = threading.Thread(
            target=lambda: client.structured(messages=ask, schema=Verdict, strategy="t"),
            daemon=True,
        )
        holder.start()
        while not server.requests:
            time.sleep(0.02)
        started = time.monotonic()
        with deadline_scope(1.0), pytest.raises(DeadlineExceeded) as caught:
            client.structured(messages=ask, schema=Verdict, strategy="t")
        assert time.monotonic() - started < 5
        assert isinstance(caught.value, LLMCallFailed) and caught.value.attempts == 0
        assert str(caught.value).startswith("model call to model 'm' at ")
        assert "not sent: the 1 s deadline for model calls ran out" in str(caught.value)
        assert len(server.requests) == 1
        holder.join(15)


def test_diagnoses_after_one_ran_out_get_a_short_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review: each failed run queued behind a hung endpoint waited the whole
    deadline again (3 failed async runs: three minutes to exit). Once a diagnosis's
    deadline runs out, the next ones get a short one, and say so; a model that
    answers again is given the whole deadline back."""
    monkeypatch.setattr(auto, "SHORT_DEADLINE", 0.3)
    monkeypatch.setattr(auto, "_ran_out", {})
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    answering = threading.Event()

    def hung_until_told(request: dict[str, Any]) -> Any:
        return schema_answerer(request) if answering.is_set() else hung(request)

    with ScriptedServer(hung_until_told) as server:
        configure(monkeypatch, server, auto_deadline="2")
        first = finishes_within(25, lambda: diagnose_failure(dbg, run))
        started = time.monotonic()
        second = finishes_within(25, lambda: diagnose_failure(dbg, run))
        elapsed = time.monotonic() - started
        assert auto._ran_out  # (still not answering)
        answering.set()
        third = finishes_within(25, lambda: diagnose_failure(dbg, run))
        assert auto._ran_out == {}  # (it answered: the whole deadline again next time)
    assert first is not None and second is not None and third is not None
    assert elapsed < 1.8  # (0.3 s and slack: not the 2 s again)
    said = " ".join(n for n in second.notes if "deadline" in n)
    assert "0.3 s deadline for model calls (shortened: the model gave no answer within 2 s" in said
    assert not [n for n in third.notes if "deadline" in n]


def test_a_slow_model_gets_its_whole_deadline_back_and_no_fallback_counts_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review: a short deadline that ran out started the wait again, so a model
    slower than it (most are) never had its whole deadline back; and with
    no_fallback a run-out was not remembered at all."""
    monkeypatch.setattr(auto, "SHORT_DEADLINE", 0.3)
    monkeypatch.setattr(auto, "COOL_OFF", 1.0)
    monkeypatch.setattr(auto, "_ran_out", {})
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    state = {"delay": 30.0}

    def slow(request: dict[str, Any]) -> Any:
        return Reply(content=schema_answerer(request).content, delay=state["delay"])

    with ScriptedServer(slow) as server:
        configure(monkeypatch, server, auto_deadline="2")
        finishes_within(25, lambda: diagnose_failure(dbg, run))  # (hung: the whole 2 s)
        when = next(iter(auto._ran_out.values()))
        state["delay"] = 0.8  # (answers again, slower than the short deadline)
        finishes_within(25, lambda: diagnose_failure(dbg, run))  # (0.3 s: runs out)
        assert next(iter(auto._ran_out.values())) == when  # (the wait not started again)
        time.sleep(1.1)
        third = finishes_within(25, lambda: diagnose_failure(dbg, run))
    assert third is not None and third.cost.calls >= 1  # (the model answered it)
    assert not [n for n in third.notes if "shortened" in n]  # (its whole deadline)
    monkeypatch.setenv("AGENTDEBUG_NO_FALLBACK", "true")
    with ScriptedServer(hung) as server:
        configure(monkeypatch, server, auto_deadline="1")
        assert finishes_within(25, lambda: diagnose_failure(dbg, run)) is None
        assert auto._ran_out  # (remembered though it raised)
