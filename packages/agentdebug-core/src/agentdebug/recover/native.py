"""The native recoverer: the diagnosis's own fix as the directive, no model call.

DeepDebug writes a concrete fix for the agent and step it blames; the free tier
writes the remedy of the blamed failure mode, addressed to that agent and step.
Either way the directive is already in the report, so recovery costs nothing."""

from __future__ import annotations

from agentdebug.recover.base import RecoveryError, plan
from agentdebug.schema import AgentTrajectory, DiagnosticReport, RecoveryPlan


class NativeRecoverer:
    name = "native"
    requires_model = False

    def recover(self, trajectory: AgentTrajectory, report: DiagnosticReport) -> RecoveryPlan:
        if report.fix is None:
            raise RecoveryError(
                f"report {report.id} has no fix to use as a directive "
                "(try --recover reflexion or critic with a model configured)"
            )
        source = "the diagnosis's own fix" if report.tier == "model" else "the blamed mode's remedy"
        return plan(
            self.name,
            trajectory,
            report,
            report.fix.directive,
            rationale=report.fix.rationale or f"directive taken from {source}",
        )
