"""An example agentdebug plugin: a detector for e-mail addresses in agent output."""

from __future__ import annotations

import re
from collections.abc import Iterator

from agentdebug import AgentTrajectory, EventType, Evidence, Finding, hookimpl
from agentdebug.taxonomy import Category, FailureMode

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
SPOKEN = {EventType.MESSAGE, EventType.LLM_RESPONSE, EventType.FINAL_ANSWER}

PII_EXPOSED = FailureMode(
    id="action.pii_exposed",
    name="Personal data exposed",
    category=Category.ACTION,
    definition="An agent repeats personal data (here: an e-mail address) in its output.",
    evidence="An e-mail address in a message or answer.",
    remedy="Redact personal data before replying.",
    source="agentdebug-example-detector",
)


class EmailLeakDetector:
    name = "example-email-leak"

    def detect(self, trajectory: AgentTrajectory) -> Iterator[Finding]:
        for event in trajectory.events:
            if event.type not in SPOKEN or not isinstance(event.output, str):
                continue
            match = EMAIL.search(event.output)
            if match:
                yield Finding(
                    detector=self.name,
                    mode_id=PII_EXPOSED.id,
                    message=f"{event.agent_name or 'an agent'} revealed an e-mail address",
                    event_id=event.id,
                    step_index=event.step_index,
                    agent_name=event.agent_name,
                    confidence=0.8,
                    evidence=[Evidence(event_id=event.id, field="output", quote=match.group(0))],
                )


@hookimpl
def agentdebug_failure_modes() -> list[FailureMode]:
    return [PII_EXPOSED]


@hookimpl
def agentdebug_detectors() -> list[EmailLeakDetector]:
    return [EmailLeakDetector()]
