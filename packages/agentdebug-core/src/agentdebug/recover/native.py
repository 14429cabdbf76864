"""The native recoverer: the diagnosis's own fix as the directive, no model call.

DeepDebug writes a concrete fix for the agent and step it blames; the free tier
writes the remedy of the blamed failure mode, addressed to that agent and step.
Either way the directive is already in the report, so recovery costs nothing.

When no detector found a failure mode, the free tier still blames a step but has
no remedy to offer. The directive is then the run's own failure (the success
check's reason, or the error it ended with) addressed to the blamed step, with
the request to decide differently there: a generic retry, said so in the plan's
rationale and notes, that lets the loop test the blame rather than stop."""

from __future__ import annotations

from agentdebug.recover.base import RecoveryError, plan, resume_point
from agentdebug.schema import AgentTrajectory, DiagnosticReport, RecoveryPlan
from agentdebug.text import shorten

GENERIC_NOTE = (
    "generic directive: the diagnosis gives no fix for the blamed step (no failure mode "
    "named there), so it tells the step how the run failed instead of applying a remedy"
)


class NativeRecoverer:
    name = "native"
    requires_model = False

    def recover(self, trajectory: AgentTrajectory, report: DiagnosticReport) -> RecoveryPlan:
        if report.fix is None:
            return self._generic(trajectory, report)
        source = "the diagnosis's own fix" if report.tier == "model" else "the blamed mode's remedy"
        return plan(
            self.name,
            trajectory,
            report,
            report.fix.directive,
            rationale=report.fix.rationale or f"directive taken from {source}",
        )

    def _generic(self, trajectory: AgentTrajectory, report: DiagnosticReport) -> RecoveryPlan:
        """The run's failure, addressed to the blamed step (see the module's text)."""
        failure = failure_of(trajectory, report)
        if failure is None:
            raise RecoveryError(
                f"report {report.id} has no fix to use as a directive, and run "
                f"{trajectory.id} records no failure reason or error to retry against "
                "(try --recover reflexion or critic with a model configured)"
            )
        step, _, agent = resume_point(report)
        who = agent or "the agent"
        directive = (
            f"At step {step}, {who}: the run failed: {failure}. Reconsider the decision "
            "taken at this step and take a different approach that avoids this failure."
        )
        root = report.root_cause
        confidence = f", blamed with confidence {root.confidence:.2f}" if root else ""
        return plan(
            self.name,
            trajectory,
            report,
            directive,
            rationale=f"{GENERIC_NOTE}{confidence}",
            notes=[GENERIC_NOTE],
        )


def failure_of(trajectory: AgentTrajectory, report: DiagnosticReport) -> str | None:
    """How the run failed, in one line: the outcome's reason, its error, or the
    symptom the detectors found; None when the run records none of them."""
    outcome = trajectory.outcome
    text = outcome.reason or (outcome.error.message if outcome.error else None)
    if not text and report.symptom is not None:
        text = report.symptom.message
    text = " ".join(str(text or "").split())
    return shorten(text.rstrip("."), 300) if text else None
