"""The automatic diagnosis plugins run when a captured run fails."""

from __future__ import annotations

import logging
import shlex
from pathlib import Path
from typing import Any

import pytest
from agentdebug import AgentDebug
from agentdebug.capture.auto import configured_attributor, diagnose_failure
from agentdebug.llm import LLMSettings, use_settings
from agentdebug.schema import AgentTrajectory, DiagnosticReport
from conftest import run_cli
from toy_agent import failing_run


def test_the_report_is_stored_noted_on_the_exception_and_handed_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    exc = ValueError("the agent gave up")
    got: list[DiagnosticReport] = []
    with caplog.at_level(logging.WARNING, logger="agentdebug.auto"):
        report = diagnose_failure(dbg, run, exc=exc, on_report=got.append)
    assert report is not None and got == [report]
    assert dbg.store is not None and [r.id for r in dbg.store.load_reports(run.id)] == [report.id]
    (note,) = exc.__notes__
    assert note.startswith(f"agentdebug diagnosis {report.id} of run {run.id}:")
    assert "researcher at step 1" in note and "Suggested fix:" in note
    assert note in caplog.text
    assert str(exc) == "the agent gave up"  # the exception itself is unchanged
    # (a review: the commands lacked --store, so pasted they found no store)
    show = note.rsplit("(", 1)[1].split(" / ")[0]
    dbg.close()
    said = run_cli(*shlex.split(show)[1:], env={"AGENTDEBUG_HOME": str(tmp_path / "elsewhere")})
    assert said.returncode == 0 and f"Run {run.id}" in said.stdout, said.stderr


def test_failures_of_the_diagnosis_or_the_callback_are_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)

    def broken(report: DiagnosticReport) -> None:
        raise RuntimeError("callback bug")

    with caplog.at_level(logging.ERROR, logger="agentdebug.auto"):
        assert diagnose_failure(dbg, run, on_report=broken) is not None
        assert diagnose_failure(dbg, run, attributor="no-such-attributor") is None
    assert "the on_report callback failed" in caplog.text
    assert "the automatic diagnosis of run" in caplog.text
    empty = AgentTrajectory(id="empty")
    assert diagnose_failure(dbg, empty) is None


REFUSAL = "I can't help with that request."


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize(
    ("kw", "said"),
    [
        ({"content": "boom", "status": 500}, "HTTP 500"),
        ({"refusal": REFUSAL}, f"the model refused to answer: {REFUSAL}"),
    ],
    ids=["http-500", "refusal"],
)
def test_a_model_that_fails_is_said_in_the_note_not_fallen_back_from_silently(
    tmp_path: Path, strict: bool, kw: dict[str, Any], said: str
) -> None:
    """The model answers HTTP 500, or refuses (OpenAI's ``refusal``, no content):
    the diagnosis gives the rules' and heuristic's answer, and the note on the
    exception (and the log) says the model could not be used and why, so the user
    does not take it for the model's reading (a refusal read, before, as an empty
    answer that did not match the schema). With ``no_fallback`` the failure ends
    the diagnosis: no report, and the note says why and how to try again."""
    from agentdebug.llm.testing import Reply, ScriptedServer

    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    exc = ValueError("the agent gave up")
    with ScriptedServer(lambda body: Reply(**kw)) as server:
        settings = LLMSettings(
            model="m", base_url=server.base_url, api_key="k", cache=False, max_retries=0
        )
        with use_settings(settings.model_copy(update={"no_fallback": strict})):
            report = diagnose_failure(dbg, run, exc=exc)
    (note,) = exc.__notes__
    if strict:
        assert report is None and said in note
        assert note.startswith(f"agentdebug could not diagnose run {run.id}:")
        assert f"agentdebug --store {tmp_path / 'store'} diagnose {run.id}" in note
    else:
        assert report is not None and report.root_cause is not None
        assert "A model stage did not answer: all-at-once failed" in note and said in note


@pytest.mark.parametrize(
    "setting", [("AGENTDEBUG_TIMEOUT", "abc"), ("AGENTDEBUG_MAX_RETRIES", "lots")]
)
def test_a_model_setting_that_cannot_be_read_leaves_the_free_tier_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: tuple[str, str]
) -> None:
    """A model setting the environment gives wrongly: the free tier diagnoses the
    run, and the note says the settings could not be read and why (before, no
    report was made, and the user was told nothing)."""
    monkeypatch.setenv("AGENTDEBUG_MODEL", "m")
    monkeypatch.setenv(*setting)
    dbg = AgentDebug(tmp_path / "store")
    exc = ValueError("the agent gave up")
    report = diagnose_failure(dbg, failing_run(dbg), exc=exc)
    assert report is not None and report.root_cause is not None
    (note,) = exc.__notes__
    assert "Model settings unreadable" in note and setting[0] in note
    assert "the free tier is used" in note


def test_the_pipeline_follows_the_model_configuration() -> None:
    assert configured_attributor() == "heuristic"
    with use_settings(LLMSettings(model="m", base_url="http://127.0.0.1:9", api_key="k")):
        assert configured_attributor() == "auto"


def test_a_diagnosis_in_the_background_takes_the_settings_in_force(tmp_path: Path) -> None:
    """The exception is noted at once; the report comes on the diagnosis thread,
    made with the model of the caller's ``use_settings`` (a real local server)."""
    import threading

    from agentdebug.capture.auto import diagnose_in_background
    from agentdebug.llm.testing import ScriptedServer, schema_answerer

    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    exc = ValueError("the agent gave up")
    threads: list[str] = []

    def answer(body: dict[str, object]) -> object:
        threads.append(threading.current_thread().name)
        return schema_answerer(body)

    with ScriptedServer(answer) as server:
        settings = LLMSettings(model="scripted", base_url=server.base_url, api_key="k")
        got: list[DiagnosticReport] = []
        with use_settings(settings):
            future = diagnose_in_background(dbg, run, exc=exc, on_report=got.append)
        assert exc.__notes__ == [
            f"agentdebug is diagnosing run {run.id} in the background; its report will "
            f"be in the store (agentdebug --store {tmp_path / 'store'} show {run.id})"
        ]
        report = future.result(timeout=60)
    assert report is not None and got == [report] and report.tier == "model"
    assert server.requests and dbg.store is not None
    assert [r.id for r in dbg.store.load_reports(run.id)] == [report.id]
    assert exc.__notes__[-1].startswith("agentdebug is diagnosing")  # (no second note)


def test_where_a_diagnosis_runs_by_default() -> None:
    """In the background only when asked, or on an event loop with a model to call."""
    import asyncio

    from agentdebug.capture.auto import check_mode, in_background

    model = LLMSettings(model="m", base_url="http://127.0.0.1:9", api_key="k")

    async def on_a_loop(mode: bool | str) -> bool:
        return in_background(mode)

    assert in_background("background") and not in_background("inline")
    assert not in_background(True) and not in_background(False)  # (no loop here)
    assert not asyncio.run(on_a_loop(True))  # the free tier: milliseconds, inline
    with use_settings(model):
        assert not in_background(True)
        assert asyncio.run(on_a_loop(True)) and not asyncio.run(on_a_loop("inline"))
    for bad in ("later", 1, None):
        with pytest.raises(ValueError, match=r"Plugin\(diagnose=\.\.\.\) takes True"):
            check_mode(bad, "Plugin")


def _script(script: str, home: Path, *args: str) -> Any:
    """Run ``script`` in a Python of its own (home, this folder, ``args``); it must succeed."""
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", script, str(home), str(Path(__file__).parent), *args],
        env={**os.environ, "AGENTDEBUG_MODEL": ""},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def _slow_model(delay: float = 0.2) -> Any:
    from agentdebug.llm.testing import Reply, ScriptedServer, schema_answerer

    def answer(body: dict[str, Any]) -> Reply:
        reply = schema_answerer(body)
        reply.delay = delay
        return reply

    return ScriptedServer(answer)


def test_closing_the_debugger_waits_for_its_diagnoses(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An app that closes its debugger right after a failed run (a ``finally:``)
    still gets the report stored, in the store object it gave; the wait is said,
    naming the run."""
    from agentdebug.capture.auto import diagnose_in_background
    from agentdebug.store import SQLiteStore

    dbg = AgentDebug(SQLiteStore(tmp_path / "s.db"))
    run = failing_run(dbg)
    with _slow_model() as server:
        with use_settings(LLMSettings(model="m", base_url=server.base_url, api_key="k")):
            future = diagnose_in_background(dbg, run)
        with caplog.at_level(logging.WARNING, logger="agentdebug"):
            dbg.close()
        assert future.done()
    said = [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]
    assert said == [
        f"agentdebug: waiting for a diagnosis under way (of run {run.id}) to store its report"
    ]
    report = future.result()
    assert report is not None
    again = SQLiteStore(tmp_path / "s.db")
    assert [r.id for r in again.load_reports(run.id)] == [report.id]
    again.close()


EXITING = """
import logging, sys
sys.path.insert(0, sys.argv[2])
from agentdebug import AgentDebug
from agentdebug.capture.auto import diagnose_in_background
from agentdebug.llm import LLMSettings, use_settings
from conftest import run_cli
from toy_agent import failing_run
logging.basicConfig(level=logging.WARNING)
dbg = AgentDebug(sys.argv[1])
run = failing_run(dbg)
with use_settings(LLMSettings(model="m", base_url=sys.argv[3], api_key="k")):
    diagnose_in_background(dbg, run)
print(run.id, flush=True)
"""


def test_an_exit_with_a_diagnosis_under_way_waits_for_it_and_says_so(tmp_path: Path) -> None:
    """A script that ends (without closing its debugger) right after a failed run:
    the exit says it waits, and the report is stored."""
    from agentdebug.store import SQLiteStore

    home = tmp_path / "home"
    with _slow_model() as server:
        done = _script(EXITING, home, server.base_url)
    assert "the exit waits for a diagnosis under way, to store its report" in done.stderr
    run_id = done.stdout.split()[-1]
    store = SQLiteStore(home / "agentdebug.db")
    assert len(store.load_reports(run_id)) == 1
    store.close()


def test_a_burst_beyond_the_queue_is_not_diagnosed_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentdebug.capture import auto

    monkeypatch.setattr(auto, "MAX_WAITING", 0)
    dbg = AgentDebug(tmp_path / "store")
    run = failing_run(dbg)
    exc = RuntimeError("x")
    assert auto.diagnose_in_background(dbg, run, exc=exc).result() is None
    assert exc.__notes__ == [
        f"agentdebug did not diagnose run {run.id}: 0 diagnoses were already waiting "
        f"(agentdebug --store {tmp_path / 'store'} diagnose {run.id})"
    ]
    assert dbg.store is not None and dbg.store.load_reports(run.id) == []
    dbg.close()


FORKED = """
import multiprocessing, sys
from agentdebug import AgentDebug
from agentdebug.capture.auto import diagnose_in_background
sys.path.insert(0, sys.argv[2])
from conftest import run_cli
from toy_agent import failing_run

def child(home, out):
    dbg = AgentDebug(home)
    report = diagnose_in_background(dbg, failing_run(dbg)).result(timeout=20)
    out.put(report is not None and report.trajectory_id)

if __name__ == "__main__":
    dbg = AgentDebug(sys.argv[1])
    assert diagnose_in_background(dbg, failing_run(dbg)).result(timeout=60) is not None
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    p = ctx.Process(target=child, args=(sys.argv[1] + "-child", out))
    p.start()
    print("child diagnosed", out.get(timeout=30))
    p.join(timeout=60)
"""


def test_a_forked_child_diagnoses_in_the_background_too(tmp_path: Path) -> None:
    """The parent's diagnosis thread is not in a forked child: it starts its own."""
    done = _script(FORKED, tmp_path / "home")
    assert "child diagnosed" in done.stdout and "False" not in done.stdout


def test_the_note_of_a_run_the_store_does_not_hold_says_so_not_a_command(
    tmp_path: Path,
) -> None:
    """A store this process could not write (a read-only home): the commands the note
    gave found no such run (a review's find); it says the run and report are in
    memory only."""
    from agentdebug.capture.auto import summary_paragraph

    dbg = AgentDebug(tmp_path / "home")
    run = failing_run(dbg)
    report = dbg.diagnose(run)
    assert "show" in summary_paragraph(report, dbg)  # (stored: the commands)
    elsewhere = AgentDebug(tmp_path / "other")  # (a store without the run)
    said = summary_paragraph(report, elsewhere)
    assert " show " not in said
    assert said.endswith("which could not be written: they are in this process's memory only)")
    dbg.close()
    elsewhere.close()
