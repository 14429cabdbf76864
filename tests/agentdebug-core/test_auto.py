"""The automatic diagnosis plugins run when a captured run fails."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from agentdebug import AgentDebug
from agentdebug.capture.auto import configured_attributor, diagnose_failure
from agentdebug.llm import LLMSettings, use_settings
from agentdebug.schema import AgentTrajectory, DiagnosticReport
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


def test_the_pipeline_follows_the_model_configuration() -> None:
    assert configured_attributor() == "heuristic"
    with use_settings(LLMSettings(model="m", base_url="http://127.0.0.1:9", api_key="k")):
        assert configured_attributor() == "auto"
