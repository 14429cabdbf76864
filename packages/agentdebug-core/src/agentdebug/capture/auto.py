"""Automatic diagnosis when a captured run fails, for framework plugins.

Every plugin does the same thing when the run it watches raises or fails the
user's success check: diagnose in-process with the configured pipeline (the free
tier without a model, the router with one), store the report, log a one-paragraph
summary, add it to the exception as a PEP 678 note, and hand the report to the
user's ``on_report`` callback. None of it may change what the user's code sees:
the exception propagates unchanged (only the note is added) and a failure of the
diagnosis itself is logged, never raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agentdebug.capture.debugger import AgentDebug
from agentdebug.schema import AgentTrajectory, DiagnosticReport

log = logging.getLogger("agentdebug.auto")

ReportCallback = Callable[[DiagnosticReport], Any]


def configured_attributor() -> str:
    """``auto`` (the router) when a model is configured, else the free-tier heuristic."""
    from agentdebug.llm import current_settings

    try:
        return "auto" if current_settings().configured else "heuristic"
    except Exception:  # a broken config file must not stop the diagnosis
        log.exception("agentdebug: model settings unreadable; the free tier is used")
        return "heuristic"


def summary_paragraph(report: DiagnosticReport) -> str:
    """The report in one paragraph: what failed, the root cause, the fix, where to look."""
    parts = [f"agentdebug diagnosis {report.id} of run {report.trajectory_id}:", report.summary]
    if report.fix is not None:
        parts.append(f"Suggested fix: {report.fix.directive}")
    parts.append(
        f"(agentdebug show {report.trajectory_id} / agentdebug diagnose {report.trajectory_id})"
    )
    return " ".join(p for p in parts if p)


def diagnose_failure(
    debugger: AgentDebug,
    trajectory: AgentTrajectory,
    *,
    exc: BaseException | None = None,
    on_report: ReportCallback | None = None,
    attributor: str | None = None,
    **options: Any,
) -> DiagnosticReport | None:
    """Diagnose a failed run, keep the report, tell the user. Never raises.

    ``exc`` (when the run raised) gets the summary as a note; ``options`` go to
    :func:`agentdebug.diagnose.diagnose`. A run that continues another (a resume,
    a retry) is diagnosed with the runs before it (:meth:`AgentDebug.history`):
    the cause of its failure may be there. Returns the report, or None when the
    diagnosis itself failed (logged)."""
    try:
        if not trajectory.events:
            log.warning("agentdebug: run %s failed before recording anything", trajectory.id)
            return None
        report = debugger.diagnose(
            debugger.history(trajectory),
            attributor=attributor or configured_attributor(),
            **options,
        )
    except Exception:
        log.exception("agentdebug: the automatic diagnosis of run %s failed", trajectory.id)
        return None
    paragraph = summary_paragraph(report)
    log.warning("%s", paragraph)
    if exc is not None:
        try:
            exc.add_note(paragraph)
        except Exception:  # an exception type that refuses notes
            log.debug("agentdebug: could not add a note to %r", exc)
    if on_report is not None:
        try:
            on_report(report)
        except Exception:
            log.exception("agentdebug: the on_report callback failed")
    return report
